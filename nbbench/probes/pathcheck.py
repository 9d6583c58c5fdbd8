"""What a PATH given to a storage probe is, and whether the probe may use it.

* a **directory**: write probes create a new ``.nbbench-*`` temporary file there;
  read probes first write such a file (not timed) and read it back;
* an existing **regular file** or a **block device**: read-only probes only; it is
  never opened for writing, and a write probe aimed at it is refused;
* **anything else** (missing, FIFO, socket, character device, no permission): a
  :class:`~nbbench.results.ProbeError` naming the problem, within a second — the
  path is only ``stat``-ed (in a helper thread with a 1 s limit, so a hung network
  mount cannot hang the caller) and never opened.

Also here: the free-space rule (a write never leaves less than 5 % and 1 GiB
free), the O_DIRECT support test, and the filesystem / device a path lives on.
"""

from __future__ import annotations

import errno
import mmap
import os
import stat
import threading
from dataclasses import dataclass, field
from pathlib import Path

from ..results import ProbeError
from ..units import format_bytes

__all__ = ["Target", "inspect", "check_free_space", "open_read", "direct_io_supported",
           "mount_info", "MIN_FREE_BYTES", "MIN_FREE_FRACTION", "STAT_TIMEOUT_S"]

MIN_FREE_BYTES = 1 << 30
MIN_FREE_FRACTION = 0.05
STAT_TIMEOUT_S = 1.0


@dataclass
class Target:
    """A checked PATH."""

    path: str
    kind: str  # "dir" | "file" | "block"
    size: int = 0  # bytes (file, block device); 0 for a directory
    filesystem: str = ""
    device: str = ""
    mount: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def writable_dir(self) -> bool:
        return self.kind == "dir"

    def labels(self) -> dict:
        return {"path": self.path, "target": self.kind, "filesystem": self.filesystem or "unknown",
                "device": self.device or "unknown"}


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


def inspect(path, write: bool = False, read: bool = True) -> Target:
    """Check ``path`` for a probe that will ``write`` (a new temp file) and/or ``read``.

    Raises :class:`ProbeError` with a sentence for every case the probe cannot use.
    """
    if path is None or str(path) == "":
        raise ProbeError("give a PATH: a directory, a regular file or a block device")
    p = os.path.abspath(os.path.expanduser(os.fspath(path)))
    st = _stat_with_timeout(p)
    mode = st.st_mode
    for test, what in _OTHER_KINDS:
        if test(mode):
            raise ProbeError(
                f"{p} is {what}; storage probes take a directory, a regular file or a block device")
    if stat.S_ISDIR(mode):
        if write or read:
            # reads in a directory first write their own file, so both need write permission
            if not os.access(p, os.W_OK | os.X_OK):
                raise ProbeError(f"no permission to create a file in {p}")
        kind, size = "dir", 0
    elif stat.S_ISREG(mode) or stat.S_ISBLK(mode):
        kind = "file" if stat.S_ISREG(mode) else "block"
        what = "an existing file" if kind == "file" else "a block device"
        if write:
            raise ProbeError(
                f"{p} is {what}: nbbench never writes to it. Write probes need a directory, where they "
                "create (and remove) their own temporary file; read probes (randread, dd --mode read) "
                "can read it.")
        if not os.access(p, os.R_OK):
            raise ProbeError(f"no permission to read {p}")
        size = st.st_size
        if kind == "block":
            size = _block_size(p)
        if size == 0:
            raise ProbeError(f"{p} is empty; nothing to read")
    else:  # pragma: no cover - door files and such
        raise ProbeError(f"{p} is not a directory, regular file or block device")
    mi = mount_info(p, st)
    return Target(path=p, kind=kind, size=size, filesystem=mi.get("fstype", ""),
                  device=mi.get("device", ""), mount=mi.get("mount", ""),
                  extra={"source": mi.get("source", "")})


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
            f"and at least 1 GiB free — use a smaller --size or another directory")
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


def _unescape(s: str) -> str:
    return s.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")


def mount_info(path: str, st: os.stat_result | None = None) -> dict:
    """Mount point, filesystem type, source and block device name for ``path`` (best effort)."""
    out: dict = {}
    real = os.path.realpath(path)
    best = ""
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                parts = line.split()
                try:
                    sep = parts.index("-")
                except ValueError:
                    continue
                mnt = _unescape(parts[4])
                if (real == mnt or real.startswith(mnt.rstrip("/") + "/") or mnt == "/") and len(mnt) >= len(best):
                    best = mnt
                    out = {"mount": mnt, "fstype": parts[sep + 1], "source": _unescape(parts[sep + 2])}
    except OSError:
        pass
    st = st or os.stat(real)
    dev = st.st_rdev if stat.S_ISBLK(st.st_mode) else st.st_dev
    out["device"] = _device_name(os.major(dev), os.minor(dev)) or out.get("source", "")
    return out


def _device_name(major: int, minor: int) -> str:
    link = Path(f"/sys/dev/block/{major}:{minor}")
    try:
        target = os.readlink(link)
    except OSError:
        return ""
    parts = target.split("/")
    name = parts[-1]
    # a partition: report the disk it is on as well (nvme0n1p1 on nvme0n1)
    if (link / "partition").exists() and len(parts) >= 2:
        return f"{name} (on {parts[-2]})"
    return name
