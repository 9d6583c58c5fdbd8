"""The block device behind a device number, a mount or a path, and its queue.

:func:`device_by_devno`, :func:`block_device`, :func:`device_of_path` find it (its kernel name
as in ``/proc/diskstats``, the disk whose ``queue/`` applies, a dm / md device's slaves and the
physical disks under them); :meth:`BlockDevice.queue` reads its queue attributes.  Everything
is read under a ``root``: ``root/sys/dev/block/MAJ:MIN``, ``root/sys/block/…``.
"""

from __future__ import annotations

import os
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path

from .mounts import Mount, Unreadable, mount_of, read_text, under

__all__ = [
    "parse_scheduler",
    "Queue",
    "QUEUE_ATTRIBUTES",
    "BlockDevice",
    "device_by_devno",
    "device_by_name",
    "device_of_source",
    "block_device",
    "device_of_path",
]


def parse_scheduler(text: str) -> str | None:
    """'none [mq-deadline] kyber' -> 'mq-deadline'; 'none' -> 'none'."""
    m = re.search(r"\[([^\]]+)\]", text)
    if m:
        return m.group(1)
    t = text.strip()
    return t or None


#: the queue/ files :meth:`BlockDevice.queue` reads (all integers but ``scheduler``)
QUEUE_ATTRIBUTES = (
    "read_ahead_kb",
    "scheduler",
    "rotational",
    "nr_requests",
    "max_segments",
    "max_sectors_kb",
    "max_hw_sectors_kb",
    "max_segment_size",
    "logical_block_size",
)


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


def device_by_name(
    name: str, root: str | os.PathLike = "/", how: str = "", sysdir: Path | None = None
) -> BlockDevice | None:
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
        return BlockDevice(name=name, disk=parent, partition=True, how=how + f"; partition of {parent}", root=str(root))
    try:
        slaves = sorted(p.name for p in (d / "slaves").iterdir()) if (d / "slaves").is_dir() else []
    except OSError:
        slaves = []
    # a dm / md device's slaves are often partitions: the physical disks are their disks
    physical = sorted({_disk_of(sys_block, s) or s for s in slaves})
    return BlockDevice(
        name=name,
        disk=name,
        slaves=slaves,
        physical=physical,
        dm_name=_read(d / "dm" / "name"),
        how=how,
        root=str(root),
    )


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
