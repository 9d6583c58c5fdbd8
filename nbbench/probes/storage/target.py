"""A storage probe's PATH, inspected once: :class:`StorageTarget`.

What a PATH may be:

* a **directory**: write probes create a new ``.nbbench-*`` temporary file there;
  read probes first write such a file (not timed) and read it back;
* an existing **regular file** or a **block device**: read-only probes only; it is
  never opened for writing, and a write probe aimed at it is refused;
* **anything else** (missing, FIFO, socket, character device, no permission): a
  :class:`~nbbench.results.ProbeError` naming the problem, within a second — the
  path is only ``stat``-ed (in a helper thread with a 1 s limit, so a hung network
  mount cannot hang the caller) and never opened;
* a path on a **pseudo filesystem** (``/proc``, ``/sys``, cgroup, debugfs, …:
  :func:`nbbench.topology.is_pseudo`) is refused as not storage, before anything is
  read or written.  A block device node under ``/dev`` (devtmpfs) is fine.

A target whose data live in RAM — a path on tmpfs, ramfs, hugetlbfs or devtmpfs, or a
zram / RAM disk / loop-over-tmpfs block device — is :attr:`StorageTarget.memory`: its
results are labelled ``cache=memory`` whatever O_DIRECT says, with one warning.

:func:`inspect` makes a :class:`StorageTarget` once (the path's kind, size, and the
filesystem, device and mount it lives on, from :mod:`nbbench.topology`); the probes
take a path or a target made before (``nbbench.probes.storage.target.inspect(path)``: a front
end checks the path before it shows a progress bar) and the target then carries the
rest of what a probe decides about it: the free-space rule (a write never leaves less
than 5 % and 1 GiB free), the cut to whole blocks, the O_DIRECT decision (one aligned
O_DIRECT I/O is tried) and the labels every storage result carries.
"""

from __future__ import annotations

import errno
import mmap
import os
import stat
import threading
from dataclasses import dataclass, field

from ... import topology
from ...results import ProbeError
from ...units import format_bytes

__all__ = [
    "StorageTarget",
    "inspect",
    "check_free_space",
    "open_read",
    "direct_io_supported",
    "memory_device",
    "MIN_FREE_BYTES",
    "MIN_FREE_FRACTION",
    "STAT_TIMEOUT_S",
]

MIN_FREE_BYTES = 1 << 30
MIN_FREE_FRACTION = 0.05
STAT_TIMEOUT_S = 1.0


@dataclass
class StorageTarget:
    """A checked PATH and what a probe decided about it."""

    path: str
    kind: str  # "dir" | "file" | "block"
    size: int = 0  # bytes (file, block device); 0 for a directory
    filesystem: str = ""
    device: str = ""
    mount: str = ""
    extra: dict = field(default_factory=dict)
    direct: bool = False  # O_DIRECT in use (see decide_direct)
    direct_fallback: str | None = None  # why O_DIRECT was refused, when it was
    memory: str | None = None  # why its data live in RAM ("/dev/shm is on tmpfs"), when they do
    blockdev: topology.BlockDevice | None = None  # the block device holding it, as topology found it

    def memory_warning(self) -> str | None:
        """The one sentence a result on a RAM-backed target carries (None for storage)."""
        if not self.memory:
            return None
        return (
            f"this is RAM, not storage: {self.memory} — the figures are the speed of memory whatever "
            "O_DIRECT or the page cache do; run the probe on the disk you want to measure"
        )

    def labels(self) -> dict:
        out = {
            "path": self.path,
            "target": self.kind,
            "filesystem": self.filesystem or "unknown",
            "device": self.device or "unknown",
        }
        if self.extra.get("object_storage"):
            out["object_storage"] = self.extra["object_storage"]
        return out

    def require(self, write: bool = False, read: bool = True) -> StorageTarget:
        """Refuse (ProbeError) a use this target does not allow: writing to a file or device,
        or creating a file in a directory without permission."""
        if self.kind == "dir":
            # reads in a directory first write their own file, so both need write permission
            if (write or read) and not os.access(self.path, os.W_OK | os.X_OK):
                raise ProbeError(f"no permission to create a file in {self.path}")
        elif write:
            what = "an existing file" if self.kind == "file" else "a block device"
            raise ProbeError(
                f"{self.path} is {what}: nbbench never writes to it. Write probes need a directory, where they "
                "create (and remove) their own temporary file; read probes (randread, dd --mode read) "
                "can read it."
            )
        return self

    def ensure_room(self, need_bytes: int) -> None:
        """In a directory, refuse a write of ``need_bytes`` that breaks the free-space rule."""
        if self.kind == "dir":
            check_free_space(self.path, need_bytes)

    def whole_blocks(self, nbytes: int, bs: int, what: str) -> int:
        """``nbytes`` cut to the file or device and to whole blocks of ``bs``; in a directory
        (where the probe writes its own file first) the free space is checked too."""
        if self.kind != "dir":
            nbytes = min(nbytes, self.size)
        nbytes = (nbytes // bs) * bs
        if nbytes < bs:
            raise ProbeError(f"{what} at least one block of {format_bytes(bs, binary=True)}")
        self.ensure_room(nbytes)
        return nbytes

    def read_region(self, size: int | None, in_dir: int) -> int:
        """The bytes a read covers: ``size`` where given, else the whole file or device, or in a
        directory ``in_dir`` (the file the probe writes first)."""
        if size is None:
            return in_dir if self.kind == "dir" else self.size
        return size

    def decide_direct(self, fd: int, write: bool, requested) -> str | None:
        """Use O_DIRECT on ``fd``?  ``requested`` False: no; else try one aligned I/O.

        Sets :attr:`direct` (and :attr:`direct_fallback`); returns the warning for a result
        when O_DIRECT was refused and buffered I/O is used instead.
        """
        self.direct, self.direct_fallback = False, None
        if requested is False:
            return None
        ok, why = direct_io_supported(fd, write=write)
        if ok:
            self.direct = True
            return None
        self.direct_fallback = why
        if self.memory:  # the memory warning says it all
            return None
        return (
            f"O_DIRECT is not available on {self.filesystem or 'this filesystem'} ({why}): measured "
            "buffered, with the page cache dropped by posix_fadvise(DONTNEED) before reads — numbers may "
            "include cache effects"
        )


def _stat_with_timeout(path: str, timeout: float = STAT_TIMEOUT_S) -> os.stat_result:
    box: dict = {}

    def run():
        try:
            box["st"] = os.stat(path)
        except BaseException as exc:  # noqa: BLE001 - handed back
            box["err"] = exc

    t = threading.Thread(target=run, name="nbbench-stat", daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        raise ProbeError(f"{path} did not answer within {timeout:g} s (a hung network mount?)")
    if "err" in box:
        exc = box["err"]
        if isinstance(exc, FileNotFoundError):
            raise ProbeError(f"{path} does not exist") from None
        if isinstance(exc, PermissionError):
            raise ProbeError(f"no permission to reach {path} (a parent directory is not searchable)") from None
        if isinstance(exc, NotADirectoryError):
            raise ProbeError(f"{path} does not exist (a part of it is not a directory)") from None
        if isinstance(exc, OSError):
            raise ProbeError(f"cannot look at {path}: {exc.strerror or exc}") from None
        raise exc
    return box["st"]


_OTHER_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
)


def inspect(path, write: bool = False, read: bool = True) -> StorageTarget:
    """The :class:`StorageTarget` for ``path``, checked for a probe that will ``write`` (a new temp
    file) and/or ``read``; a target made before is checked for that use and returned as it is.

    Raises :class:`ProbeError` with a sentence for every case the probe cannot use.
    """
    if isinstance(path, StorageTarget):
        return path.require(write=write, read=read)
    if path is None or str(path) == "":
        raise ProbeError("give a PATH: a directory, a regular file or a block device")
    p = os.path.abspath(os.path.expanduser(os.fspath(path)))
    st = _stat_with_timeout(p)
    mount = topology.mount_of(os.path.realpath(p))
    if mount is not None and mount.fstype == "autofs":
        raise ProbeError(
            f"{p} is an automount point (autofs) with nothing mounted on it yet — not storage itself: "
            f"list it once (ls {p}) so its filesystem is mounted, then run the probe again"
        )
    if mount is not None and topology.is_pseudo(mount.fstype):
        raise ProbeError(
            f"{p} is on {mount.fstype} ({mount.mount_point}), a pseudo filesystem of the kernel — not storage: "
            "its files are made up when read and their sizes mean nothing; give a directory, file or block "
            "device on the storage you want to measure"
        )
    mode = st.st_mode
    for test, what in _OTHER_KINDS:
        if test(mode):
            raise ProbeError(f"{p} is {what}; storage probes take a directory, a regular file or a block device")
    if stat.S_ISDIR(mode):
        kind, size = "dir", 0
    elif stat.S_ISREG(mode) or stat.S_ISBLK(mode):
        kind, size = ("file" if stat.S_ISREG(mode) else "block"), st.st_size
    else:  # pragma: no cover - door files and such
        raise ProbeError(f"{p} is not a directory, regular file or block device")
    target = StorageTarget(path=p, kind=kind, size=size)
    target.require(write=write, read=read)
    if kind != "dir":
        if not os.access(p, os.R_OK):
            raise ProbeError(f"no permission to read {p}")
        if kind == "block":
            target.size = _block_size(p)
        if target.size == 0:
            raise ProbeError(f"{p} is empty; nothing to read")
    _where(target, st, mount)
    return target


def _where(target: StorageTarget, st: os.stat_result, m: topology.Mount | None) -> None:
    """Filesystem, mount and device of ``target`` (best effort): a block device is itself the device;
    and whether its data live in RAM."""
    if m is not None:
        target.mount, target.filesystem, target.extra["source"] = m.mount_point, m.fstype, m.source
        obj = topology.object_storage_mount(m.fstype, m.source)
        if obj is not None:  # the probes' labels say what such a mount means, once
            target.filesystem = f"{m.fstype}: object storage through {obj[0]} (FUSE)"
            target.extra["object_storage"] = (
                f"{obj[0]} serves object storage as files: O_DIRECT is not honoured, metadata calls are requests "
                f"and a local cache may serve warm reads — the bucket itself: nbbench s3 {obj[1] or 's3://BUCKET/PREFIX'}"
            )
    else:
        target.extra["source"] = ""
    dev = st.st_rdev if stat.S_ISBLK(st.st_mode) else st.st_dev
    bd = topology.device_by_devno(os.major(dev), os.minor(dev))
    if bd is None and target.extra["source"].startswith("/dev/"):  # an anonymous st_dev (btrfs, overlay)
        name, _ = topology.device_of_source(target.extra["source"])
        bd = topology.device_by_name(name) if name else None
    target.blockdev = bd
    if bd is not None:
        # a partition: say the disk it is on as well (nvme0n1p1 on nvme0n1)
        target.device = f"{bd.name} (on {bd.disk})" if bd.partition else bd.name
    else:
        target.device = target.extra["source"]
    if target.kind != "block" and m is not None and m.memory_backed:  # a device node on devtmpfs is a device
        target.memory = f"{target.path} is on {m.fstype}, whose files are kept in RAM"
    elif bd is not None:
        target.memory = memory_device(bd)


def memory_device(dev: topology.BlockDevice, root="/") -> str | None:
    """Why block device ``dev`` keeps its data in RAM (zram, brd's ``ramN``, a loop device whose backing
    file is on a memory filesystem; a dm / md device: a disk under it), or None."""
    import re

    for name in [dev.disk] + dev.physical:
        if name.startswith("zram"):
            return f"{name} is a compressed RAM disk (zram)"
        if re.fullmatch(r"ram\d+", name):
            return f"{name} is a RAM disk (brd)"
        if name.startswith("loop"):
            try:
                backing = topology.read_text(root, f"/sys/block/{name}/loop/backing_file").strip()
            except topology.Unreadable:
                continue
            backing = backing.removesuffix(" (deleted)")
            m = topology.mount_of(backing, root) if backing.startswith("/") else None
            if m is not None and m.memory_backed:
                return f"{name} is a loop device over {backing}, a file on {m.fstype}"
    return None


def _block_size(path: str) -> int:
    fd = open_read(path)
    try:
        return os.lseek(fd, 0, os.SEEK_END)
    finally:
        os.close(fd)


def open_read(path: str, direct: bool = False) -> int:
    """Open read-only without blocking on odd files; verify it is a file or block device."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    if direct:
        flags |= getattr(os, "O_DIRECT", 0)
    noatime = getattr(os, "O_NOATIME", 0)  # reading must not even touch the access time
    try:
        try:
            fd = os.open(path, flags | noatime)
        except PermissionError:
            if not noatime:
                raise
            fd = os.open(path, flags)
    except PermissionError:
        raise ProbeError(f"no permission to read {path}") from None
    except FileNotFoundError:
        raise ProbeError(f"{path} does not exist") from None
    st = os.fstat(fd)
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISBLK(st.st_mode)):
        os.close(fd)
        raise ProbeError(f"{path} is not a regular file or block device")
    os.set_blocking(fd, True)
    return fd


def check_free_space(directory, need_bytes: int) -> dict:
    """Refuse (ProbeError) when writing ``need_bytes`` would leave < 5 % or < 1 GiB free."""
    d = os.fspath(directory)
    try:
        vfs = os.statvfs(d)
    except OSError as exc:
        raise ProbeError(f"cannot read the free space of {d}: {exc.strerror or exc}") from None
    total = vfs.f_blocks * vfs.f_frsize
    free = vfs.f_bavail * vfs.f_frsize
    left = free - int(need_bytes)
    keep = max(MIN_FREE_BYTES, int(MIN_FREE_FRACTION * total))
    if left < keep:
        pct = 100.0 * max(left, 0) / total if total else 0.0
        raise ProbeError(
            f"not enough free space in {d}: writing {format_bytes(need_bytes, binary=True)} would leave "
            f"{format_bytes(max(left, 0), binary=True)} free ({pct:.1f} % of {format_bytes(total, binary=True)}); "
            f"nbbench keeps at least 5 % ({format_bytes(int(MIN_FREE_FRACTION * total), binary=True)}) "
            f"and at least 1 GiB free — use a smaller --size or another directory"
        )
    return {"free_bytes": free, "total_bytes": total}


def direct_io_supported(fd: int, block: int = 4096, write: bool = False) -> tuple[bool, str | None]:
    """Does this open file accept O_DIRECT?  Try one aligned I/O; (ok, reason-if-not)."""
    import fcntl

    if not hasattr(os, "O_DIRECT"):
        return False, "O_DIRECT is not available on this platform"
    old = fcntl.fcntl(fd, fcntl.F_GETFL)
    try:
        fcntl.fcntl(fd, fcntl.F_SETFL, old | os.O_DIRECT)
    except OSError as exc:
        return False, f"the filesystem refuses O_DIRECT ({errno.errorcode.get(exc.errno, exc.errno)})"
    buf = mmap.mmap(-1, block)
    try:
        if write:
            os.pwritev(fd, [buf], 0)
        else:
            os.preadv(fd, [buf], 0)
        return True, None
    except OSError as exc:
        name = errno.errorcode.get(exc.errno, str(exc.errno))
        return False, f"the filesystem refuses O_DIRECT ({name})"
    finally:
        buf.close()
        try:
            fcntl.fcntl(fd, fcntl.F_SETFL, old)
        except OSError:
            pass
