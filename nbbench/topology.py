"""Storage topology: the mount table, the block devices behind it, their queues.

One model of "where does this path live" for the probes, the doctor and the monitor:

* the **mount table** (:func:`read_mounts`, :func:`parse_mountinfo`): proc(5)'s
  ``/proc/self/mountinfo`` with its octal escapes undone, the options, read-only
  flag and device number of each mount; :func:`find_mount` gives the mount a path
  lives on (the longest mount point above it; of stacked mounts the last one wins,
  as the kernel shows the top one);
* the **block device** behind a device number, a mount or a path
  (:func:`device_by_devno`, :func:`block_device`, :func:`device_of_path`): its
  kernel name (as in ``/proc/diskstats``), the disk whose ``queue/`` applies (a
  partition's parent), a dm / md device's slaves and the physical disks under them,
  and its queue attributes (:meth:`BlockDevice.queue`: read-ahead, scheduler,
  rotational, nr_requests and the request limits);
* the **kind of filesystem** (:func:`fs_kind`, :func:`is_memory_backed`, :func:`is_pseudo`).

Everything is read under a ``root`` (``"/"`` for the live system, a fixture tree in
tests): ``root/proc/self/mountinfo``, ``root/sys/dev/block/MAJ:MIN``,
``root/sys/block/…``.  A path is looked at (``stat``) on the live system.
"""

from __future__ import annotations

import os
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Unreadable", "under", "read_text", "MOUNTINFO", "Mount", "parse_mountinfo", "read_mounts",
           "find_mount", "mount_of", "fs_kind", "is_memory_backed", "is_pseudo", "MEMORY_FILESYSTEMS",
           "PSEUDO_FILESYSTEMS", "NETWORK_FILESYSTEMS", "OBJECT_FUSE_CLIENTS", "object_storage_mount",
           "HOSTSHARE_FILESYSTEMS", "parse_scheduler", "Queue", "QUEUE_ATTRIBUTES", "BlockDevice",
           "device_by_devno", "device_by_name", "device_of_source", "block_device", "device_of_path"]

MOUNTINFO = "/proc/self/mountinfo"
_ESC = re.compile(r"\\([0-7]{3})")


class Unreadable(Exception):
    """A file needed under ``root`` is missing or unreadable; the message is the reason."""


def under(root: str | os.PathLike, path: str) -> Path:
    """``path`` (absolute, as on a live system) inside ``root``."""
    return Path(root) / path.lstrip("/")


def read_text(root: str | os.PathLike, path: str) -> str:
    """The text of ``path`` under ``root``; :class:`Unreadable` with the reason otherwise."""
    p = under(root, path)
    try:
        return p.read_text()
    except FileNotFoundError:
        raise Unreadable(f"{path} does not exist") from None
    except PermissionError:
        raise Unreadable(f"{path} is not readable (permission denied)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise Unreadable(f"{path} could not be read: {exc}") from None


# ------------------------------------------------------------------ filesystems
NETWORK_FILESYSTEMS = frozenset({"nfs", "nfs4", "cifs", "smb3", "smbfs", "ceph", "glusterfs", "lustre", "beegfs",
                                 "gpfs", "afs"})
#: filesystems whose files live in RAM: reads and writes there measure memory, not storage
MEMORY_FILESYSTEMS = frozenset({"tmpfs", "ramfs", "hugetlbfs", "devtmpfs"})
#: a VM's host-shared folders
HOSTSHARE_FILESYSTEMS = frozenset({"9p", "virtiofs", "vboxsf", "vmhgfs", "fuse.vmhgfs-fuse"})
#: the kernel's own files (no storage behind them: sizes are made up, reads are generated)
PSEUDO_FILESYSTEMS = frozenset({"proc", "sysfs", "cgroup", "cgroup2", "debugfs", "tracefs", "securityfs",
                                "configfs", "bpf", "pstore", "efivarfs", "fusectl", "mqueue", "devpts",
                                "binfmt_misc", "autofs", "nsfs"})


def is_memory_backed(fstype: str) -> bool:
    """Is ``fstype`` a RAM-backed filesystem (tmpfs, ramfs, hugetlbfs, devtmpfs)?"""
    return fstype in MEMORY_FILESYSTEMS


def is_pseudo(fstype: str) -> bool:
    """Is ``fstype`` a pseudo filesystem of the kernel (proc, sysfs, cgroup, debugfs, …), not storage?"""
    return fstype in PSEUDO_FILESYSTEMS


#: FUSE clients of object storage, by the name their mounts carry (fstype ``fuse.NAME`` or source ``NAME``)
OBJECT_FUSE_CLIENTS = {"mountpoint-s3": "S3", "s3fs": "S3", "goofys": "S3", "s3backer": "S3", "rclone": "object storage",
                       "gcsfuse": "Google Cloud Storage", "blobfuse": "Azure Blob Storage",
                       "blobfuse2": "Azure Blob Storage"}


def object_storage_mount(fstype: str, source: str) -> tuple[str, str | None] | None:
    """``(client, s3 URL or None)`` when a mount is a FUSE client of object storage (mountpoint-s3, s3fs,
    goofys, gcsfuse, rclone, blobfuse), else None.  The URL is a guess from the mount's source where it
    names a bucket (goofys ``bucket[:prefix]``, rclone ``remote:bucket/prefix``, gcsfuse ``bucket``)."""
    if not (fstype == "fuse" or fstype.startswith("fuse.")):
        return None
    sub = fstype.split(".", 1)[1] if "." in fstype else ""
    src = source or ""
    client = next((c for c in OBJECT_FUSE_CLIENTS if c in (sub, src, src.split(":", 1)[0])), None)
    if client is None:
        return None
    bucket = None
    if client == "rclone" and ":" in src:
        bucket = src.split(":", 1)[1].strip("/") or None
    elif client in ("goofys", "gcsfuse") and src not in ("", client):
        bucket = src.replace(":", "/", 1)
    if bucket and client not in ("gcsfuse",):
        return client, f"s3://{bucket.rstrip('/')}/"
    return client, None


def fs_kind(fstype: str) -> str:
    """``overlay`` | ``network`` | ``hostshare`` | ``fuse`` | ``memory`` | ``other`` (local disks and the rest)."""
    if fstype == "overlay":
        return "overlay"
    if fstype in NETWORK_FILESYSTEMS or fstype.startswith("nfs"):
        return "network"
    if fstype in HOSTSHARE_FILESYSTEMS:
        return "hostshare"
    if fstype == "fuse" or fstype.startswith("fuse."):
        return "fuse"
    if is_memory_backed(fstype):
        return "memory"
    return "other"


# ----------------------------------------------------------------- mount table
def _unescape(s: str) -> str:
    # mountinfo writes space, tab, newline and backslash as octal escapes (\040 ...)
    return _ESC.sub(lambda m: chr(int(m.group(1), 8)), s)


@dataclass
class Mount:
    """One line of mountinfo."""

    mount_id: int
    parent_id: int
    major: int
    minor: int
    fs_root: str
    mount_point: str
    options: list[str]
    fstype: str
    source: str
    super_options: list[str]
    optional: list[str] = field(default_factory=list)
    line: int = 0

    @property
    def all_options(self) -> list[str]:
        return self.options + [o for o in self.super_options if o not in self.options]

    def option(self, name: str) -> str | None:
        """The value of ``name=value`` among the options ('' for a bare flag, None if absent)."""
        for o in self.all_options:
            k, sep, v = o.partition("=")
            if k == name:
                return v if sep else ""
        return None

    @property
    def readonly(self) -> bool:
        return "ro" in self.options

    @property
    def devno(self) -> str:
        return f"{self.major}:{self.minor}"

    @property
    def kind(self) -> str:
        return fs_kind(self.fstype)

    @property
    def memory_backed(self) -> bool:
        return is_memory_backed(self.fstype)


def parse_mountinfo(text: str) -> list[Mount]:
    """Parse mountinfo (proc(5)); malformed lines are skipped."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        parts = line.split()
        if "-" not in parts:
            continue
        sep = parts.index("-")
        if sep < 6 or len(parts) < sep + 3:
            continue
        try:
            major, minor = (int(x) for x in parts[2].split(":"))
            mid, pid = int(parts[0]), int(parts[1])
        except ValueError:
            continue
        out.append(Mount(
            mount_id=mid, parent_id=pid, major=major, minor=minor,
            fs_root=_unescape(parts[3]), mount_point=_unescape(parts[4]),
            options=parts[5].split(","), optional=parts[6:sep],
            fstype=parts[sep + 1], source=_unescape(parts[sep + 2]),
            super_options=parts[sep + 3].split(",") if len(parts) > sep + 3 else [],
            line=n,
        ))
    return out


def read_mounts(root: str | os.PathLike = "/") -> list[Mount]:
    """The mounts of ``root``'s mountinfo; :class:`Unreadable` when it is missing or lists none."""
    mounts = parse_mountinfo(read_text(root, MOUNTINFO))
    if not mounts:
        raise Unreadable(f"{MOUNTINFO} lists no mounts")
    return mounts


def find_mount(path: str, mounts: list[Mount]) -> Mount | None:
    """The mount ``path`` lives on: the longest mount point above it; the last mounted wins a tie."""
    p = posixpath.normpath("/" + path.lstrip("/")) if not path.startswith("/") else posixpath.normpath(path)
    best: Mount | None = None
    for m in mounts:
        mp = m.mount_point
        if p == mp or mp == "/" or p.startswith(mp.rstrip("/") + "/"):
            if best is None or len(mp) >= len(best.mount_point):
                best = m
    return best


def mount_of(path: str, root: str | os.PathLike = "/") -> Mount | None:
    """The mount ``path`` (already resolved) lives on, or None when the mount table cannot be read."""
    try:
        return find_mount(path, read_mounts(root))
    except Unreadable:
        return None


# --------------------------------------------------------------- block devices
def parse_scheduler(text: str) -> str | None:
    """'none [mq-deadline] kyber' -> 'mq-deadline'; 'none' -> 'none'."""
    m = re.search(r"\[([^\]]+)\]", text)
    if m:
        return m.group(1)
    t = text.strip()
    return t or None


#: the queue/ files :meth:`BlockDevice.queue` reads (all integers but ``scheduler``)
QUEUE_ATTRIBUTES = ("read_ahead_kb", "scheduler", "rotational", "nr_requests", "max_segments", "max_sectors_kb",
                    "max_hw_sectors_kb", "max_segment_size", "logical_block_size")


@dataclass
class Queue:
    """A disk's ``/sys/block/DISK/queue`` attributes; None where unreadable (``errors`` says why)."""

    dir: str
    read_ahead_kb: int | None = None
    scheduler: str | None = None  # the active one, parsed from "none [mq-deadline] kyber"
    schedulers: str | None = None  # the file as read: the ones available
    rotational: int | None = None
    nr_requests: int | None = None
    max_segments: int | None = None
    max_sectors_kb: int | None = None
    max_hw_sectors_kb: int | None = None
    max_segment_size: int | None = None
    logical_block_size: int | None = None
    errors: dict[str, str] = field(default_factory=dict)


@dataclass
class BlockDevice:
    """A block device: ``name`` as in /proc/diskstats, ``disk`` whose queue/ applies, and what is below it.

    ``partition``: a partition of ``disk``; ``slaves``: a dm / md device's slaves as
    sysfs lists them (often partitions), ``physical``: the disks under those slaves;
    ``dm_name``: a device-mapper device's name (``vg0-data``); ``how``: how it was found.
    """

    name: str
    disk: str
    partition: bool = False
    slaves: list[str] = field(default_factory=list)
    physical: list[str] = field(default_factory=list)
    dm_name: str = ""
    how: str = ""
    root: str = "/"

    @property
    def parent(self) -> str | None:
        """The disk of a partition (None for a whole disk)."""
        return self.disk if self.partition else None

    @property
    def queue_dir(self) -> str:
        return f"/sys/block/{self.disk}/queue"

    def queue_attr(self, name: str) -> str:
        """One queue/ file's text, stripped; :class:`Unreadable` with the reason."""
        return read_text(self.root, f"{self.queue_dir}/{name}").strip()

    def queue(self) -> Queue:
        """All of :data:`QUEUE_ATTRIBUTES`, read now."""
        q = Queue(dir=self.queue_dir)
        for attr in QUEUE_ATTRIBUTES:
            try:
                text = self.queue_attr(attr)
                if attr == "scheduler":
                    q.schedulers, q.scheduler = text, parse_scheduler(text)
                else:
                    setattr(q, attr, int(text))
            except (Unreadable, ValueError) as exc:
                q.errors[attr] = str(exc)
        return q


def _disk_of(sys_block: Path, name: str) -> str | None:
    """The disk ``name`` is: itself when /sys/block lists it whole, else the disk holding it."""
    if (sys_block / name).is_dir() and not (sys_block / name / "partition").exists():
        return name
    try:
        for disk in sorted(sys_block.iterdir()):
            if (disk / name).is_dir():
                return disk.name
    except OSError:
        return None
    return None


def _read(p: Path) -> str:
    try:
        return p.read_text().strip()
    except OSError:
        return ""


def device_by_name(name: str, root: str | os.PathLike = "/", how: str = "",
                   sysdir: Path | None = None) -> BlockDevice | None:
    """The device kernel-named ``name`` (``sysdir``: its sysfs directory where known); None if unknown."""
    sys_block = under(root, "/sys/block")
    d = sysdir if sysdir is not None else (sys_block / name if (sys_block / name).is_dir() else None)
    if d is None:  # not a disk: the partition of the disk that holds it, if one does
        parent = _disk_of(sys_block, name)
        if parent is None:
            return None
    else:
        parent = Path(os.path.realpath(d)).parent.name if (d / "partition").exists() else None
    if parent is not None:
        return BlockDevice(name=name, disk=parent, partition=True, how=how + f"; partition of {parent}",
                           root=str(root))
    try:
        slaves = sorted(p.name for p in (d / "slaves").iterdir()) if (d / "slaves").is_dir() else []
    except OSError:
        slaves = []
    # a dm / md device's slaves are often partitions: the physical disks are their disks
    physical = sorted({_disk_of(sys_block, s) or s for s in slaves})
    return BlockDevice(name=name, disk=name, slaves=slaves, physical=physical, dm_name=_read(d / "dm" / "name"),
                       how=how, root=str(root))


def device_by_devno(major: int, minor: int, root: str | os.PathLike = "/") -> BlockDevice | None:
    """The device numbered ``major:minor``, through ``/sys/dev/block/MAJ:MIN``; None if there is none."""
    link = under(root, f"/sys/dev/block/{major}:{minor}")
    try:
        real = Path(os.path.realpath(link))
        if not real.exists():
            return None
    except OSError:
        return None
    return device_by_name(real.name, root, f"/sys/dev/block/{major}:{minor} -> {real.name}", sysdir=real)


def device_of_source(source: str, root: str | os.PathLike = "/") -> tuple[str | None, str]:
    """The kernel name of a mount source ``/dev/…`` and how it was found; ``(None, "")`` if none.

    Live, the node is resolved (``/dev/mapper/vg-lv`` -> ``dm-0``); in a fixture tree a
    ``/dev/mapper/NAME`` is the ``dm-*`` whose ``dm/name`` is NAME.
    """
    if not source.startswith("/dev/"):
        return None, ""
    name = posixpath.basename(source)
    if str(root) == "/":
        try:
            name = os.path.basename(os.path.realpath(source))  # /dev/mapper/vg-lv -> dm-0
        except OSError:
            pass
    elif source.startswith("/dev/mapper/"):
        for d in sorted(under(root, "/sys/block").glob("dm-*")):
            if _read(d / "dm" / "name") == name:
                return d.name, f"{source} is {d.name} (/sys/block/{d.name}/dm/name)"
    return name, f"mount source {source}"


def block_device(root: str | os.PathLike, mount: Mount) -> BlockDevice:
    """The block device behind ``mount``; :class:`Unreadable` with the reason when it has none here.

    A mount with an anonymous device number (major 0: overlay, NFS, tmpfs, FUSE) has none.
    """
    if mount.major == 0:
        raise Unreadable(
            f"{mount.fstype} at {mount.mount_point} has no block device of its own "
            f"(anonymous device {mount.devno}, source {mount.source})"
        )
    dev = device_by_devno(mount.major, mount.minor, root)
    name, how = (dev.name, dev.how) if dev is not None else device_of_source(mount.source, root)
    if not name:
        raise Unreadable(f"no block device found for {mount.source} ({mount.devno}) under /sys")
    if not under(root, "/sys/block").is_dir():
        raise Unreadable("/sys/block does not exist (sysfs not mounted)")
    dev = dev or device_by_name(name, root, how)
    if dev is None:
        raise Unreadable(f"{name} is neither a disk nor a partition under /sys/block")
    return dev


def device_of_path(path: str | os.PathLike, root: str | os.PathLike = "/") -> tuple[BlockDevice | None, Mount | None]:
    """The block device holding ``path`` (None if it has none) and the mount it lives on.

    ``st_dev`` is mapped through ``/sys/dev/block``; a filesystem with an anonymous
    device number (btrfs subvolumes, overlay, NFS, tmpfs) is looked up in the mount
    table, and a mount source ``/dev/…`` names the device.  ``OSError`` when ``path``
    cannot be stat-ed.
    """
    real = os.path.realpath(os.fspath(path))
    st = os.stat(real)
    dev = None
    if os.major(st.st_dev) != 0:
        dev = device_by_devno(os.major(st.st_dev), os.minor(st.st_dev), root)
    mount = mount_of(real, root)
    if dev is None and mount is not None and mount.source.startswith("/dev/"):
        if str(root) == "/":
            try:
                rdev = os.stat(mount.source).st_rdev
                dev = device_by_devno(os.major(rdev), os.minor(rdev), root)
            except OSError:
                dev = None
        else:
            name, how = device_of_source(mount.source, root)
            dev = device_by_name(name, root, how) if name else None
    return dev, mount
