"""Mounts and block devices: ``/proc/self/mountinfo`` and ``/sys/block``, read under a ``root``."""

from __future__ import annotations

import os
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path

from .base import Unreadable, read_text, under

__all__ = ["Mount", "parse_mountinfo", "read_mounts", "find_mount", "BlockDevice", "block_device",
           "parse_scheduler", "MOUNTINFO"]

MOUNTINFO = "/proc/self/mountinfo"
_ESC = re.compile(r"\\([0-7]{3})")


def _unescape(s: str) -> str:
    # mountinfo writes space, tab, newline and backslash as octal escapes (\040 ...)
    return _ESC.sub(lambda m: chr(int(m.group(1), 8)), s)


@dataclass
class Mount:
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


# -------------------------------------------------------------- block devices
def parse_scheduler(text: str) -> str | None:
    """'none [mq-deadline] kyber' -> 'mq-deadline'; 'none' -> 'none'."""
    m = re.search(r"\[([^\]]+)\]", text)
    if m:
        return m.group(1)
    t = text.strip()
    return t or None


@dataclass
class BlockDevice:
    """The disk behind a mount: ``name`` as given, ``disk`` whose queue/ applies, the dm slaves."""

    name: str
    disk: str
    partition: bool = False
    slaves: list[str] = field(default_factory=list)
    how: str = ""

    @property
    def queue_dir(self) -> str:
        return f"/sys/block/{self.disk}/queue"


def _sysfs_name(root, mount: Mount) -> tuple[str | None, str]:
    """The kernel name of the mount's device, and how it was found."""
    link = under(root, f"/sys/dev/block/{mount.devno}")
    try:
        if link.exists():
            target = Path(os.path.realpath(link))
            name = target.name
            if (target / "partition").exists():
                return name, f"/sys/dev/block/{mount.devno} -> {name}"
            return name, f"/sys/dev/block/{mount.devno} -> {name}"
    except OSError:
        pass
    src = mount.source
    if src.startswith("/dev/"):
        name = posixpath.basename(src)
        if str(root) == "/":
            try:
                name = os.path.basename(os.path.realpath(src))  # /dev/mapper/vg-lv -> dm-0
            except OSError:
                pass
        elif src.startswith("/dev/mapper/"):
            # a fixture tree: find the dm device whose dm/name matches
            mapped = posixpath.basename(src)
            for d in sorted(under(root, "/sys/block").glob("dm-*")):
                try:
                    if (d / "dm" / "name").read_text().strip() == mapped:
                        return d.name, f"{src} is {d.name} (/sys/block/{d.name}/dm/name)"
                except OSError:
                    continue
        return name, f"mount source {src}"
    return None, ""


def block_device(root: str | os.PathLike, mount: Mount) -> BlockDevice:
    """The block device behind ``mount``; :class:`Unreadable` when it has none here."""
    if mount.major == 0:
        raise Unreadable(
            f"{mount.fstype} at {mount.mount_point} has no block device of its own "
            f"(anonymous device {mount.devno}, source {mount.source})"
        )
    name, how = _sysfs_name(root, mount)
    if not name:
        raise Unreadable(f"no block device found for {mount.source} ({mount.devno}) under /sys")
    sys_block = under(root, "/sys/block")
    if not sys_block.is_dir():
        raise Unreadable("/sys/block does not exist (sysfs not mounted)")
    if (sys_block / name).is_dir():
        slaves_dir = sys_block / name / "slaves"
        slaves = sorted(p.name for p in slaves_dir.iterdir()) if slaves_dir.is_dir() else []
        # a dm device's slaves may themselves be partitions: report their disks
        disks = []
        for s in slaves:
            parent = _parent_disk(sys_block, s)
            disks.append(parent or s)
        return BlockDevice(name=name, disk=name, slaves=sorted(set(disks)), how=how)
    parent = _parent_disk(sys_block, name)
    if parent:
        return BlockDevice(name=name, disk=parent, partition=True,
                           how=how + f"; partition of {parent}")
    raise Unreadable(f"{name} is neither a disk nor a partition under /sys/block")


def _parent_disk(sys_block: Path, name: str) -> str | None:
    if (sys_block / name).is_dir() and not (sys_block / name / "partition").exists():
        return None if not (sys_block / name).is_dir() else name
    try:
        for disk in sorted(sys_block.iterdir()):
            if (disk / name).is_dir():
                return disk.name
    except OSError:
        return None
    return None
