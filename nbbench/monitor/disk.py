"""Disk source: the block device behind a path, and all physical disks together.

Fields (rates over the interval since the previous sample; None on the first):

- ``disk.read_bytes_per_s``, ``disk.write_bytes_per_s``, ``disk.read_iops``,
  ``disk.write_iops``, ``disk.busy_pct`` for the block device behind ``path``
  (a partition, dm/LVM, md, NVMe, virtio ``vda``…, found by :mod:`nbbench.topology`);
  when the path has no block device of its own (overlay, NFS, tmpfs) these are the
  system-wide figures and a note says so.
- ``sys.read_bytes_per_s``, ``sys.write_bytes_per_s``, ``sys.read_iops``,
  ``sys.write_iops``: all physical disks (loop, ram, zram, dm and md are left out
  so stacked devices are not counted twice).

Labels: ``path``, ``disk_device`` (the device and what it is, or ``system-wide``),
``system_disks``.  Summary: ``disk_read_bytes``, ``disk_write_bytes``,
``disk_read_count``, ``sys_read_bytes``, ``sys_write_bytes`` from the counters.
On Linux ``/proc/diskstats`` stays open (one ``pread`` a sample); else psutil.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from .. import topology
from . import procfs
from .procfs import HostSource, read_diskstats

__all__ = ["DiskSource", "watched_device", "describe"]

_VIRTUAL_PREFIXES = ("loop", "ram", "zram", "dm-", "md", "sr", "fd", "nbd", "zd")
_NO_DEVICE = {
    "overlay": "an overlay filesystem (a container's root)",
    "nfs": "a network filesystem (NFS)",
    "nfs4": "a network filesystem (NFS)",
    "cifs": "a network filesystem (SMB)",
    "fuse": "a FUSE filesystem",
    "tmpfs": "memory (tmpfs)",
    "ramfs": "memory (ramfs)",
}


def describe(dev: topology.BlockDevice) -> str:
    """``sda2 (partition of sda)``, ``dm-0 (vg0-data, on nvme0n1p3)``, ``md0 (software RAID)``, ``vda``."""
    if dev.partition:
        return f"{dev.name} (partition of {dev.disk})"
    if dev.name.startswith("dm-"):
        bits = [b for b in (dev.dm_name, "on " + ",".join(dev.slaves) if dev.slaves else "") if b]
        return f"{dev.name} ({', '.join(bits)})" if bits else dev.name
    if dev.name.startswith("md"):
        return f"{dev.name} (software RAID)"
    return dev.name


def watched_device(
    path: str | os.PathLike, root: str | os.PathLike = "/"
) -> tuple[topology.BlockDevice | None, str | None]:
    """The block device holding ``path`` and a note (None when found plainly).

    Returns ``(None, note)`` when there is no block device (network or memory
    filesystems, overlay roots): the source then shows system-wide figures.
    """
    p = os.path.realpath(os.fspath(path))
    try:
        dev, mount = topology.device_of_path(p, root)
    except OSError as exc:
        return None, f"cannot stat {p}: {exc.strerror}; disk figures are system-wide"
    if dev is not None:
        return dev, None
    if mount is None:
        return None, f"no mount found for {p}; disk figures are system-wide"
    kind = mount.fstype or "unknown"
    why = _NO_DEVICE.get(kind, f"{kind} on {mount.source}")
    return None, (
        f"{p} is on {why}, which has no block device here: disk figures are system-wide; "
        "proc.read_syscall_bytes_per_s shows what this process reads"
    )


def physical_disks(names, root: str | os.PathLike = "/") -> list[str]:
    """Whole physical disks among diskstats names (no partitions, no stacked devices)."""
    try:
        whole = set(os.listdir(topology.under(root, "/sys/block")))
    except OSError:
        whole = set(names)
    out = [n for n in names if n in whole and not n.startswith(_VIRTUAL_PREFIXES)]
    if not out:
        out = [n for n in names if n in whole and not n.startswith(("loop", "ram", "zram"))]
    return out


class DiskSource(HostSource):
    """Disk figures for ``path`` and the whole machine (see the module doc)."""

    name = "disk"

    def __init__(self, path: str | os.PathLike | None = None, root: str | os.PathLike = "/", fast: bool = True):
        super().__init__(fast)
        self.path = os.fspath(path) if path is not None else os.getcwd()
        self.root = root
        self.device: topology.BlockDevice | None = None
        self._f_disk = None
        self._physical: list[str] = []
        self._wanted: frozenset | None = None
        self._prev = None
        self._first = None
        self._t = None

    def open(self) -> None:
        import psutil

        self._psutil = psutil
        if self.want_fast and sys.platform.startswith("linux"):
            try:
                f = procfs.ProcFile("/proc/diskstats")
                procfs.read_diskstats(f)
                self._f_disk, self.fast = f, True
            except (OSError, ValueError, IndexError):
                self.fast = False
        dev, note = watched_device(self.path, self.root)
        self.device = dev
        if note:
            self.notes.append(note)
        try:
            names = list(self._counters() or {})
        except Exception as exc:  # noqa: BLE001 - e.g. no /proc/diskstats in a sandbox
            names = []
            self.notes.append(f"disk counters are not readable here ({exc}): disk figures are N/A")
            for f in ("disk.read_bytes_per_s", "sys.read_bytes_per_s"):
                self.na[f] = str(exc)
        if dev is not None and names and dev.name not in names:
            self.notes.append(f"{dev.name} is not in /proc/diskstats: disk figures are system-wide")
            self.device = dev = None
        self._physical = physical_disks(names, self.root)
        # from now on only the devices used are parsed
        self._wanted = frozenset(n.encode() for n in self._physical + ([dev.name] if dev is not None else []))
        self.labels = {
            "path": self.path,
            "disk_device": describe(dev) if dev else "system-wide",
            "system_disks": ",".join(self._physical),
        }

    def _counters(self):
        if self.fast:
            return read_diskstats(self._f_disk, self._wanted)
        return self._psutil.disk_io_counters(perdisk=True, nowrap=False)

    def sample(self, now: float) -> dict:
        if self._psutil is None:
            self.open()
        out: dict[str, Any] = {}
        if "disk.read_bytes_per_s" in self.na:
            return out
        try:
            counters = self._counters() or {}
        except Exception:  # noqa: BLE001
            return out
        sys_tot = [0, 0, 0, 0]
        for n in self._physical:
            c = counters.get(n)
            if c is not None:
                sys_tot[0] += c.read_bytes
                sys_tot[1] += c.write_bytes
                sys_tot[2] += c.read_count
                sys_tot[3] += c.write_count
        dev = counters.get(self.device.name) if self.device is not None else None
        cur = (sys_tot, dev)
        prev, tprev = self._prev, self._t
        self._prev, self._t = cur, now
        if self._first is None:
            self._first = cur
        keys_sys = ("sys.read_bytes_per_s", "sys.write_bytes_per_s", "sys.read_iops", "sys.write_iops")
        keys_dev = ("disk.read_bytes_per_s", "disk.write_bytes_per_s", "disk.read_iops", "disk.write_iops")
        if prev is None or now <= tprev:
            for k in keys_sys + keys_dev + ("disk.busy_pct",):
                out[k] = None
            return out
        dt = now - tprev
        sys_rates = [max(0, b - a) / dt for a, b in zip(prev[0], sys_tot)]
        for k, v in zip(keys_sys, sys_rates):
            out[k] = round(v, 1)
        if dev is not None and prev[1] is not None:
            a, b = prev[1], dev
            vals = (
                b.read_bytes - a.read_bytes,
                b.write_bytes - a.write_bytes,
                b.read_count - a.read_count,
                b.write_count - a.write_count,
            )
            for k, v in zip(keys_dev, vals):
                out[k] = round(max(0, v) / dt, 1)
            busy = getattr(b, "busy_time", None)
            if busy is not None:
                out["disk.busy_pct"] = round(min(100.0, max(0, busy - a.busy_time) / 10.0 / dt), 1)
        else:
            for k, v in zip(keys_dev, sys_rates):
                out[k] = round(v, 1)
        return out

    def summary(self) -> dict:
        """Totals over the run from the counters (not integrated rates)."""
        out: dict[str, Any] = {}
        if self._first is not None and self._prev is not None:
            (s0, d0), (s1, d1) = self._first, self._prev
            out["sys_read_bytes"] = max(0, s1[0] - s0[0])
            out["sys_write_bytes"] = max(0, s1[1] - s0[1])
            if d0 is not None and d1 is not None:
                out["disk_read_bytes"] = max(0, d1.read_bytes - d0.read_bytes)
                out["disk_write_bytes"] = max(0, d1.write_bytes - d0.write_bytes)
                out["disk_read_count"] = max(0, d1.read_count - d0.read_count)
            else:
                out["disk_read_bytes"] = out["sys_read_bytes"]
                out["disk_write_bytes"] = out["sys_write_bytes"]
        return out

    def close(self) -> None:
        if self._f_disk is not None:
            self._f_disk.close()
        self._f_disk = None
