"""The mount table and the kinds of filesystem, read under a ``root``.

* :func:`read_mounts`, :func:`parse_mountinfo`: proc(5)'s ``/proc/self/mountinfo`` with its
  octal escapes undone; :func:`find_mount` / :func:`mount_of`: the mount a path lives on;
* :func:`fs_kind`, :func:`is_memory_backed`, :func:`is_pseudo`, :func:`object_storage_mount`;
* :func:`under`, :func:`read_text` and :class:`Unreadable`: a file of the live system (``root``
  ``"/"``) or of a fixture tree, and the reason when it cannot be read.
"""

from __future__ import annotations

import os
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "Unreadable",
    "under",
    "read_text",
    "MOUNTINFO",
    "Mount",
    "parse_mountinfo",
    "read_mounts",
    "find_mount",
    "mount_of",
    "fs_kind",
    "is_memory_backed",
    "is_pseudo",
    "MEMORY_FILESYSTEMS",
    "PSEUDO_FILESYSTEMS",
    "NETWORK_FILESYSTEMS",
    "OBJECT_FUSE_CLIENTS",
    "object_storage_mount",
    "HOSTSHARE_FILESYSTEMS",
]

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
NETWORK_FILESYSTEMS = frozenset(
    {"nfs", "nfs4", "cifs", "smb3", "smbfs", "ceph", "glusterfs", "lustre", "beegfs", "gpfs", "afs"}
)
#: filesystems whose files live in RAM: reads and writes there measure memory, not storage
MEMORY_FILESYSTEMS = frozenset({"tmpfs", "ramfs", "hugetlbfs", "devtmpfs"})
#: a VM's host-shared folders
HOSTSHARE_FILESYSTEMS = frozenset({"9p", "virtiofs", "vboxsf", "vmhgfs", "fuse.vmhgfs-fuse"})
#: the kernel's own files (no storage behind them: sizes are made up, reads are generated)
PSEUDO_FILESYSTEMS = frozenset(
    {"proc", "sysfs", "cgroup", "cgroup2", "debugfs", "tracefs", "securityfs", "configfs", "bpf", "pstore"}
    | {"efivarfs", "fusectl", "mqueue", "devpts", "binfmt_misc", "autofs", "nsfs"}
)


def is_memory_backed(fstype: str) -> bool:
    """Is ``fstype`` a RAM-backed filesystem (tmpfs, ramfs, hugetlbfs, devtmpfs)?"""
    return fstype in MEMORY_FILESYSTEMS


def is_pseudo(fstype: str) -> bool:
    """Is ``fstype`` a pseudo filesystem of the kernel (proc, sysfs, cgroup, debugfs, …), not storage?"""
    return fstype in PSEUDO_FILESYSTEMS


#: FUSE clients of object storage, by the name their mounts carry (fstype ``fuse.NAME`` or source ``NAME``)
OBJECT_FUSE_CLIENTS = {
    "mountpoint-s3": "S3",
    "s3fs": "S3",
    "goofys": "S3",
    "s3backer": "S3",
    "rclone": "object storage",
    "gcsfuse": "Google Cloud Storage",
    "blobfuse": "Azure Blob Storage",
    "blobfuse2": "Azure Blob Storage",
}


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
        out.append(
            Mount(
                mount_id=mid,
                parent_id=pid,
                major=major,
                minor=minor,
                fs_root=_unescape(parts[3]),
                mount_point=_unescape(parts[4]),
                options=parts[5].split(","),
                optional=parts[6:sep],
                fstype=parts[sep + 1],
                source=_unescape(parts[sep + 2]),
                super_options=parts[sep + 3].split(",") if len(parts) > sep + 3 else [],
                line=n,
            )
        )
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
