"""Host source (psutil): CPU, memory, disks, and this process tree's CPU and I/O.

Fields (all rates over the interval since the previous sample; None on the first):

- ``cpu.util_pct``: whole-machine CPU busy % (user+system+…, not idle or iowait),
  ``cpu.iowait_pct``, ``cpu.cores_pct``: a tuple, one busy % per logical CPU.
  Inside a container these count the *host's* CPUs, other tenants included.
- ``mem.used_bytes``, ``mem.available_bytes`` (whole machine).
- ``disk.read_bytes_per_s``, ``disk.write_bytes_per_s``, ``disk.read_iops``,
  ``disk.write_iops``, ``disk.busy_pct`` for the block device behind ``path``
  (a partition, dm/LVM, md, NVMe, virtio ``vda``…); when the path has no block
  device of its own (overlay, NFS, tmpfs) these are the system-wide figures and a
  note says so.
- ``sys.read_bytes_per_s``, ``sys.write_bytes_per_s``, ``sys.read_iops``,
  ``sys.write_iops``: all physical disks (loop, ram, zram, dm and md are left out
  so stacked devices are not counted twice).
- ``proc.cpu_pct`` (% of ONE core; 350 = three and a half cores),
  ``proc.read_bytes_per_s`` (read from storage, page-cache hits not counted),
  ``proc.read_syscall_bytes_per_s`` (bytes returned by read() calls, cache hits
  included), ``proc.rss_bytes``: this process plus its children (DataLoader
  workers); children that exit keep counting, because Linux adds a reaped child's
  CPU time and I/O to its parent.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

__all__ = ["HostSource", "block_device_for", "BlockDevice"]

_VIRTUAL_PREFIXES = ("loop", "ram", "zram", "dm-", "md", "sr", "fd", "nbd", "zd")
_CHILD_SCAN_S = 1.0  # rescan the process tree at most this often (a /proc walk)
_SLOW_S = 0.5  # memory figures are read at most this often


class BlockDevice:
    """A block device as named in /proc/diskstats, and how it was found."""

    def __init__(self, name: str, description: str, parent: str | None = None):
        self.name = name
        self.description = description
        self.parent = parent

    def __repr__(self) -> str:
        return f"BlockDevice({self.name!r}, {self.description!r})"


def _sysfs_name(major: int, minor: int, sys_root: Path) -> tuple[str, str | None] | None:
    """('sda1', 'sda') for a partition, ('vda', None) for a whole disk, None if unknown."""
    link = sys_root / "dev" / "block" / f"{major}:{minor}"
    try:
        real = Path(os.path.realpath(link))
    except OSError:
        return None
    if not real.exists():
        return None
    name = real.name
    parent = None
    if (real / "partition").exists():
        parent = real.parent.name
    return name, parent


def _describe(name: str, parent: str | None, sys_root: Path) -> str:
    if parent:
        return f"{name} (partition of {parent})"
    if name.startswith("dm-"):
        try:
            dm_name = (sys_root / "block" / name / "dm" / "name").read_text().strip()
        except OSError:
            dm_name = ""
        try:
            slaves = sorted(os.listdir(sys_root / "block" / name / "slaves"))
        except OSError:
            slaves = []
        bits = [b for b in (dm_name, "on " + ",".join(slaves) if slaves else "") if b]
        return f"{name} ({', '.join(bits)})" if bits else name
    if name.startswith("md"):
        return f"{name} (software RAID)"
    return name


def _mount_for(path: str, partitions) -> Any | None:
    """The mount (psutil sdiskpart) whose mountpoint is the longest prefix of ``path``."""
    best = None
    for part in partitions:
        mp = part.mountpoint.rstrip("/") or "/"
        if path == mp or path.startswith(mp if mp.endswith("/") else mp + "/") or mp == "/":
            if best is None or len(mp) > len(best.mountpoint.rstrip("/") or "/"):
                best = part
    return best


def block_device_for(path: str | os.PathLike, sys_root: str | os.PathLike = "/sys",
                     partitions=None) -> tuple[BlockDevice | None, str | None]:
    """The block device holding ``path`` and a note (None when found plainly).

    Maps ``st_dev`` through ``/sys/dev/block/MAJ:MIN``; for filesystems with an
    anonymous device (btrfs subvolumes, overlay, NFS, tmpfs: major 0) it looks up the
    mount and, where that names a ``/dev/…`` node, uses that node's device number.
    Returns ``(None, note)`` when there is no block device (network or memory
    filesystems, overlay roots): the caller falls back to system-wide figures.
    """
    sys_root = Path(sys_root)
    p = os.path.realpath(os.fspath(path))
    try:
        st = os.stat(p)
    except OSError as exc:
        return None, f"cannot stat {p}: {exc.strerror}; disk figures are system-wide"
    major, minor = os.major(st.st_dev), os.minor(st.st_dev)
    if major != 0:
        found = _sysfs_name(major, minor, sys_root)
        if found:
            name, parent = found
            return BlockDevice(name, _describe(name, parent, sys_root), parent), None
    # anonymous device: ask the mount table
    if partitions is None:
        try:
            import psutil

            partitions = psutil.disk_partitions(all=True)
        except Exception:  # noqa: BLE001
            partitions = []
    mount = _mount_for(p, partitions)
    if mount is None:
        return None, f"no mount found for {p}; disk figures are system-wide"
    dev = mount.device
    if dev.startswith("/dev/"):
        try:
            rdev = os.stat(dev).st_rdev
            found = _sysfs_name(os.major(rdev), os.minor(rdev), sys_root)
        except OSError:
            found = None
        if found:
            name, parent = found
            return BlockDevice(name, _describe(name, parent, sys_root), parent), None
    kind = mount.fstype or "unknown"
    why = {
        "overlay": "an overlay filesystem (a container's root)",
        "nfs": "a network filesystem (NFS)", "nfs4": "a network filesystem (NFS)",
        "cifs": "a network filesystem (SMB)", "fuse": "a FUSE filesystem",
        "tmpfs": "memory (tmpfs)", "ramfs": "memory (ramfs)",
    }.get(kind, f"{kind} on {dev}")
    return None, (f"{p} is on {why}, which has no block device here: disk figures are system-wide; "
                  "proc.read_syscall_bytes_per_s shows what this process reads")


def _physical(names, sys_root: Path) -> list[str]:
    """Whole physical disks among diskstats names (no partitions, no stacked devices)."""
    block = sys_root / "block"
    try:
        whole = set(os.listdir(block))
    except OSError:
        whole = set(names)
    out = [n for n in names if n in whole and not n.startswith(_VIRTUAL_PREFIXES)]
    if not out:
        out = [n for n in names if n in whole and not n.startswith(("loop", "ram", "zram"))]
    return out


class _Rate:
    """Delta of counters between samples."""

    __slots__ = ("prev", "t")

    def __init__(self):
        self.prev = None
        self.t = None


class HostSource:
    """CPU, memory, disk and process-tree figures from psutil (see the module doc)."""

    name = "host"

    def __init__(self, path: str | os.PathLike | None = None, per_core: bool = True,
                 process: bool = True, pid: int | None = None, sys_root: str = "/sys"):
        self.path = os.fspath(path) if path is not None else os.getcwd()
        self.per_core = per_core
        self.process = process
        self.pid = pid if pid is not None else os.getpid()
        self.sys_root = Path(sys_root)
        self.notes: list[str] = []
        self.na: dict[str, str] = {}
        self.labels: dict[str, Any] = {}
        self.device: BlockDevice | None = None
        self._psutil = None
        self._cpu_prev = None
        self._disk_prev = None
        self._disk_first = None
        self._disk_t = None
        self._proc = None
        self._children: dict[int, Any] = {}
        self._child_scan_t = -1e9
        self._proc_prev = None
        self._proc_first = None
        self._proc_t = None
        self._physical: list[str] = []
        self._slow_t = -1e9
        self._mem = (None, None)
        self._rss = None
        self._rss_t = None
        self._offsets: dict[int, tuple] = {}
        self._retired = [0.0, 0.0, 0.0]
        self._preexisting: set[int] = set()
        self._cpu_cap = 100.0 * (os.cpu_count() or 1)

    # ------------------------------------------------------------------- open
    def open(self) -> None:
        import psutil

        self._psutil = psutil
        dev, note = block_device_for(self.path, self.sys_root)
        self.device = dev
        if note:
            self.notes.append(note)
        try:
            names = list(psutil.disk_io_counters(perdisk=True, nowrap=False) or {})
        except Exception as exc:  # noqa: BLE001 - e.g. no /proc/diskstats in a sandbox
            names = []
            self.notes.append(f"disk counters are not readable here ({exc}): disk figures are N/A")
            for f in ("disk.read_bytes_per_s", "sys.read_bytes_per_s"):
                self.na[f] = str(exc)
        if dev is not None and names and dev.name not in names:
            self.notes.append(f"{dev.name} is not in /proc/diskstats: disk figures are system-wide")
            self.device = dev = None
        self._physical = _physical(names, self.sys_root)
        self.labels = {
            "path": self.path,
            "disk_device": dev.description if dev else "system-wide",
            "system_disks": ",".join(self._physical),
            "cpus_logical": psutil.cpu_count() or 0,
        }
        if self.process:
            try:
                self._proc = psutil.Process(self.pid)
                self._preexisting = {c.pid for c in self._proc.children(recursive=True)}
            except psutil.Error as exc:
                self.notes.append(f"process {self.pid} cannot be read ({exc}): process figures are N/A")
                self._proc = None

    # ----------------------------------------------------------------- sample
    def sample(self, now: float) -> dict:
        ps = self._psutil
        if ps is None:
            self.open()
            ps = self._psutil
        out: dict[str, Any] = {}
        self._sample_cpu(ps, out)
        # memory moves slowly: read it at most every _SLOW_S (fewer /proc reads per sample)
        slow = now - self._slow_t >= _SLOW_S
        if slow:
            self._slow_t = now
            vm = ps.virtual_memory()
            self._mem = (vm.total - vm.available, vm.available)
        out["mem.used_bytes"], out["mem.available_bytes"] = self._mem
        self._sample_disk(ps, now, out)
        if self._proc is not None:
            self._sample_proc(ps, now, out)
        return out

    def _sample_cpu(self, ps, out: dict) -> None:
        cur = ps.cpu_times(percpu=True)
        prev = self._cpu_prev
        self._cpu_prev = cur
        if prev is None or len(prev) != len(cur):
            out["cpu.util_pct"] = None
            out["cpu.iowait_pct"] = None
            if self.per_core:
                out["cpu.cores_pct"] = None
            return
        cores = []
        tot_all = busy_all = iow_all = 0.0
        for a, b in zip(prev, cur):
            # as psutil.cpu_percent: guest time is already in user time
            ta = sum(a) - getattr(a, "guest", 0.0) - getattr(a, "guest_nice", 0.0)
            tb = sum(b) - getattr(b, "guest", 0.0) - getattr(b, "guest_nice", 0.0)
            ia = a.idle + getattr(a, "iowait", 0.0)
            ib = b.idle + getattr(b, "iowait", 0.0)
            dt = tb - ta
            busy = dt - (ib - ia)
            if dt <= 0:
                cores.append(0.0)
                continue
            busy = min(max(busy, 0.0), dt)
            cores.append(round(100.0 * busy / dt, 1))
            tot_all += dt
            busy_all += busy
            iow_all += max(0.0, getattr(b, "iowait", 0.0) - getattr(a, "iowait", 0.0))
        out["cpu.util_pct"] = round(100.0 * busy_all / tot_all, 2) if tot_all > 0 else 0.0
        out["cpu.iowait_pct"] = round(100.0 * iow_all / tot_all, 2) if tot_all > 0 else 0.0
        if self.per_core:
            out["cpu.cores_pct"] = tuple(cores)

    def _sample_disk(self, ps, now: float, out: dict) -> None:
        if "disk.read_bytes_per_s" in self.na:
            return
        try:
            counters = ps.disk_io_counters(perdisk=True, nowrap=False) or {}
        except Exception:  # noqa: BLE001
            return
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
        prev, tprev = self._disk_prev, self._disk_t
        self._disk_prev, self._disk_t = cur, now
        if self._disk_first is None:
            self._disk_first = cur
        keys_sys = ("sys.read_bytes_per_s", "sys.write_bytes_per_s", "sys.read_iops", "sys.write_iops")
        keys_dev = ("disk.read_bytes_per_s", "disk.write_bytes_per_s", "disk.read_iops", "disk.write_iops")
        if prev is None or now <= tprev:
            for k in keys_sys + keys_dev + ("disk.busy_pct",):
                out[k] = None
            return
        dt = now - tprev
        sys_rates = [max(0, b - a) / dt for a, b in zip(prev[0], sys_tot)]
        for k, v in zip(keys_sys, sys_rates):
            out[k] = round(v, 1)
        if dev is not None and prev[1] is not None:
            a, b = prev[1], dev
            vals = (b.read_bytes - a.read_bytes, b.write_bytes - a.write_bytes,
                    b.read_count - a.read_count, b.write_count - a.write_count)
            for k, v in zip(keys_dev, vals):
                out[k] = round(max(0, v) / dt, 1)
            busy = getattr(b, "busy_time", None)
            if busy is not None:
                out["disk.busy_pct"] = round(min(100.0, max(0, busy - a.busy_time) / 10.0 / dt), 1)
        else:
            for k, v in zip(keys_dev, sys_rates):
                out[k] = round(v, 1)

    def _scan_children(self, ps, now: float) -> None:
        if now - self._child_scan_t < _CHILD_SCAN_S:
            return
        self._child_scan_t = now
        try:
            kids = self._proc.children(recursive=True)
        except ps.Error:
            return
        known = self._children
        fresh = {}
        for k in kids:
            if k.pid in known:
                fresh[k.pid] = known[k.pid]
                continue
            fresh[k.pid] = k
            # a child older than the monitor: count only what it does from now on
            try:
                with k.oneshot():
                    if k.pid in self._preexisting:
                        ct = k.cpu_times()
                        try:
                            io = k.io_counters()
                            rb, rc = io.read_bytes, getattr(io, "read_chars", 0)
                        except (ps.AccessDenied, AttributeError, NotImplementedError):
                            rb = rc = 0
                        self._offsets[k.pid] = (ct.user + ct.system + ct.children_user + ct.children_system,
                                                rb, rc)
            except ps.Error:
                pass
        for pid in set(known) - set(fresh):
            self._retire(pid)
        self._children = fresh

    def _retire(self, pid: int) -> None:
        off = self._offsets.pop(pid, None)
        if off is not None:  # its totals move into its reaper's counters: keep subtracting them
            for j in range(3):
                self._retired[j] += off[j]

    def _sample_proc(self, ps, now: float, out: dict) -> None:
        self._scan_children(ps, now)
        cpu = rbytes = rchars = rss = 0.0
        io_ok = True
        procs = [self._proc] + list(self._children.values())
        gone = []
        slow = now - self._rss_t >= _SLOW_S if self._rss_t is not None else True
        for p in procs:
            try:
                with p.oneshot():
                    ct = p.cpu_times()
                    cpu += ct.user + ct.system + ct.children_user + ct.children_system
                    if slow:
                        rss += p.memory_info().rss
                    try:
                        io = p.io_counters()
                        rbytes += io.read_bytes
                        rchars += getattr(io, "read_chars", 0)
                    except (ps.AccessDenied, AttributeError, NotImplementedError):
                        io_ok = False
            except ps.NoSuchProcess:
                if p is not self._proc:
                    gone.append(p.pid)
            except ps.Error:
                pass
        for pid in gone:
            self._children.pop(pid, None)
            self._retire(pid)
        if slow:
            self._rss_t = now
            self._rss = int(rss)
        out["proc.rss_bytes"] = self._rss
        for off in self._offsets.values():
            cpu -= off[0]
            rbytes -= off[1]
            rchars -= off[2]
        cpu -= self._retired[0]
        rbytes -= self._retired[1]
        rchars -= self._retired[2]
        cur = (cpu, rbytes, rchars)
        prev, tprev = self._proc_prev, self._proc_t
        self._proc_prev, self._proc_t = cur, now
        if self._proc_first is None:
            self._proc_first = cur
        if not io_ok and "proc.read_bytes_per_s" not in self.na:
            self.na["proc.read_bytes_per_s"] = "I/O counters of this process are not readable"
            self.notes.append("this process's I/O counters are not readable here "
                              "(no permission to /proc/<pid>/io): process read figures are incomplete")
        if prev is None or now <= tprev:
            out["proc.cpu_pct"] = None
            out["proc.read_bytes_per_s"] = None
            out["proc.read_syscall_bytes_per_s"] = None
            return
        dt = now - tprev
        # an exiting, not yet reaped child drops out for a moment: never a negative rate
        # (a child found by the periodic scan brings the CPU time it used since it started,
        # so a rate is capped at what the machine's CPUs can do; totals come from counters)
        out["proc.cpu_pct"] = round(min(self._cpu_cap, max(0.0, cpu - prev[0]) / dt * 100.0), 1)
        out["proc.read_bytes_per_s"] = round(max(0.0, rbytes - prev[1]) / dt, 1)
        out["proc.read_syscall_bytes_per_s"] = round(max(0.0, rchars - prev[2]) / dt, 1)

    # ---------------------------------------------------------------- summary
    def summary(self) -> dict:
        """Totals over the run from the counters (not integrated rates)."""
        out: dict[str, Any] = {}
        if self._disk_first is not None and self._disk_prev is not None:
            (s0, d0), (s1, d1) = self._disk_first, self._disk_prev
            out["sys_read_bytes"] = max(0, s1[0] - s0[0])
            out["sys_write_bytes"] = max(0, s1[1] - s0[1])
            if d0 is not None and d1 is not None:
                out["disk_read_bytes"] = max(0, d1.read_bytes - d0.read_bytes)
                out["disk_write_bytes"] = max(0, d1.write_bytes - d0.write_bytes)
                out["disk_read_count"] = max(0, d1.read_count - d0.read_count)
            else:
                out["disk_read_bytes"] = out["sys_read_bytes"]
                out["disk_write_bytes"] = out["sys_write_bytes"]
        if self._proc_first is not None and self._proc_prev is not None:
            a, b = self._proc_first, self._proc_prev
            out["proc_cpu_s"] = round(max(0.0, b[0] - a[0]), 3)
            out["proc_read_bytes"] = int(max(0.0, b[1] - a[1]))
            out["proc_read_syscall_bytes"] = int(max(0.0, b[2] - a[2]))
        return out

    def close(self) -> None:
        self._children = {}
