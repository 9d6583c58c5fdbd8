"""Page-cache control and honesty checks, all outside the timed window.

* :func:`drop_file` — ``fdatasync`` (when writable) then ``posix_fadvise(DONTNEED)``;
  :func:`resident_fraction` checks with ``mincore`` how much really left the cache.
* :func:`drop_all` — ``/proc/sys/vm/drop_caches`` (root only).
* :func:`preload` — read a region once so it is in the cache (``buffered-warm``).
* :func:`memory_bytes` — RAM the page cache can use (cgroup limit when lower).
* :func:`looks_zero` / :func:`sparse_fraction` — is the data read real data?
"""

from __future__ import annotations

import ctypes
import mmap
import os
import random

from ...env import cgroup_memory_limit

__all__ = ["drop_file", "drop_all", "resident_fraction", "preload", "memory_bytes", "looks_zero", "sparse_fraction"]


def drop_file(fd: int, length: int = 0, writable: bool = False) -> tuple[bool, str]:
    """Ask the kernel to drop this file's pages: (done, method or why not)."""
    if writable:
        try:
            os.fdatasync(fd)
        except OSError:
            pass
    if not hasattr(os, "posix_fadvise"):
        return False, "posix_fadvise unavailable"
    try:
        os.posix_fadvise(fd, 0, length, os.POSIX_FADV_DONTNEED)
    except OSError as exc:
        return False, f"posix_fadvise failed: {exc.strerror}"
    return True, "posix_fadvise(DONTNEED)"


def drop_all() -> tuple[bool, str]:
    """Drop the whole page cache (root): sync, then 1 > /proc/sys/vm/drop_caches."""
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("1\n")
        return True, "/proc/sys/vm/drop_caches"
    except OSError as exc:
        return False, f"/proc/sys/vm/drop_caches: {exc.strerror}"


_libc = None


def resident_fraction(fd: int, length: int) -> float | None:
    """Fraction of the first ``length`` bytes of the file in the page cache (mincore), or None.

    Maps the file copy-on-write (never written, so nothing changes) only to ask mincore."""
    global _libc
    if length <= 0:
        return None
    try:
        if _libc is None:
            _libc = ctypes.CDLL(None, use_errno=True)
            _libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
        page = mmap.PAGESIZE
        length = min(length, 64 << 30)
        mm = mmap.mmap(fd, length, access=mmap.ACCESS_COPY)
    except (OSError, ValueError, AttributeError):
        return None
    anchor = None
    try:
        anchor = ctypes.c_char.from_buffer(mm)
        npages = (length + page - 1) // page
        vec = (ctypes.c_ubyte * npages)()
        if _libc.mincore(ctypes.c_void_p(ctypes.addressof(anchor)), ctypes.c_size_t(length), vec) != 0:
            return None
        return sum(1 for b in bytes(vec) if b & 1) / npages
    finally:
        del anchor
        mm.close()


def preload(fd: int, length: int, bs: int = 1 << 20) -> None:
    """Read ``length`` bytes once (buffered) so they are in the page cache."""
    buf = bytearray(bs)
    off = 0
    while off < length:
        n = os.preadv(fd, [buf], off)
        if n <= 0:
            break
        off += n


def memory_bytes() -> int:
    """RAM available to the page cache here: the machine's, or the cgroup limit when lower."""
    total = 0
    try:
        import psutil

        total = int(psutil.virtual_memory().total)
    except Exception:  # noqa: BLE001
        try:
            total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError):
            total = 0
    try:
        lim = cgroup_memory_limit()
        if lim and (not total or lim < total):
            total = int(lim)
    except Exception:  # noqa: BLE001
        pass
    return total


def looks_zero(fd: int, region: int, bs: int, samples: int = 16, direct: bool = False) -> bool:
    """True when every one of ``samples`` random blocks of the region reads as zeros."""
    if region < bs:
        return False
    blocks = region // bs
    rng = random.Random(1)
    flags = getattr(mmap, "MAP_PRIVATE", 0) | getattr(mmap, "MAP_ANONYMOUS", 0)
    mm = mmap.mmap(-1, bs, flags=flags) if flags else mmap.mmap(-1, bs)
    try:
        for _ in range(min(samples, blocks)):
            off = rng.randrange(blocks) * bs
            try:
                n = os.preadv(fd, [mm], off)
            except OSError:
                return False
            if n <= 0:
                continue
            if mm[:n].count(0) != n:
                return False
        return True
    finally:
        mm.close()


def sparse_fraction(st: os.stat_result) -> float:
    """Fraction of a regular file's size not backed by allocated blocks (holes)."""
    if st.st_size <= 0 or not hasattr(st, "st_blocks"):
        return 0.0
    alloc = st.st_blocks * 512
    return max(0.0, 1.0 - alloc / st.st_size)
