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
import sys
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


class _PsutilProc:
    """psutil's view of one process, read like :class:`procfs.ProcReader` (the portable path)."""

    def __init__(self, ps, pid: int):
        self.ps = ps
        self.pid = pid
        self.p = ps.Process(pid)
        self.has_io = True

    def read(self):
        from .procfs import ProcCounters

        ps, p = self.ps, self.p
        try:
            with p.oneshot():
                ct = p.cpu_times()
                cpu = ct.user + ct.system + getattr(ct, "children_user", 0.0) + getattr(ct, "children_system", 0.0)
                rss = p.memory_info().rss
                rb = rc = 0
                if self.has_io:
                    try:
                        io = p.io_counters()
                        rb, rc = io.read_bytes, getattr(io, "read_chars", 0)
                    except (ps.AccessDenied, AttributeError, NotImplementedError):
                        self.has_io = False
        except ps.NoSuchProcess:
            raise ProcessLookupError(self.pid) from None
        except ps.Error as exc:
            raise OSError(str(exc)) from None
        return ProcCounters(cpu, rb, rc, rss)

    def close(self) -> None:
        pass


class HostSource:
    """CPU, memory, disk and process-tree figures (see the module doc).

    Discovery and memory use psutil; on Linux the 10 Hz counters are read through
    :mod:`nbbench.monitor.procfs` (kept-open /proc files, one ``pread`` each), which
    keeps the sampler under 1 % of a core; ``fast=False`` uses psutil throughout.
    """

    name = "host"

    def __init__(self, path: str | os.PathLike | None = None, per_core: bool = True,
                 process: bool = True, pid: int | None = None, sys_root: str = "/sys", fast: bool = True):
        self.path = os.fspath(path) if path is not None else os.getcwd()
        self.per_core = per_core
        self.process = process
        self.pid = pid if pid is not None else os.getpid()
        self.sys_root = Path(sys_root)
        self.want_fast = fast
        self.fast = False
        self.notes: list[str] = []
        self.na: dict[str, str] = {}
        self.labels: dict[str, Any] = {}
        self.device: BlockDevice | None = None
        self._psutil = None
        self._f_stat = None
        self._f_disk = None
        self._cpu_prev = None
        self._disk_prev = None
        self._disk_first = None
        self._disk_t = None
        self._procs: dict[int, Any] = {}  # pid -> reader (this process first)
        self._child_scan_t = -1e9
        self._children_fast = True
        self._proc_prev = None
        self._proc_first = None
        self._proc_t = None
        self._physical: list[str] = []
        self._slow_t = -1e9
        self._mem = (None, None)
        self._offsets: dict[int, tuple] = {}
        self._retired = [0.0, 0.0, 0.0]
        self._preexisting: set[int] = set()
        self._io_ok = True
        self._cpu_cap = 100.0 * (os.cpu_count() or 1)

    # ------------------------------------------------------------------- open
    def open(self) -> None:
        import psutil

        self._psutil = psutil
        if self.want_fast and sys.platform.startswith("linux"):
            from . import procfs

            if procfs.available():
                try:
                    self._f_stat = procfs.ProcFile("/proc/stat")
                    self._f_disk = procfs.ProcFile("/proc/diskstats")
                    self.fast = True
                except OSError:
                    self.fast = False
        dev, note = block_device_for(self.path, self.sys_root)
        self.device = dev
        if note:
            self.notes.append(note)
        try:
            names = list(self._disk_counters() or {})
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
                self._procs = {self.pid: self._reader(self.pid)}
                self._preexisting = set(self._child_pids())
            except (OSError, psutil.Error) as exc:
                self.notes.append(f"process {self.pid} cannot be read ({exc}): process figures are N/A")
                self._procs = {}

    def _reader(self, pid: int):
        if self.fast:
            from .procfs import ProcReader

            return ProcReader(pid)
        return _PsutilProc(self._psutil, pid)

    def _disk_counters(self):
        if self.fast:
            from .procfs import read_diskstats

            return read_diskstats(self._f_disk)
        return self._psutil.disk_io_counters(perdisk=True, nowrap=False)

    def _child_pids(self) -> list[int]:
        if self.fast and self._children_fast:
            from .procfs import children_of

            kids = children_of(self.pid)
            if kids is not None:
                return kids
            self._children_fast = False
        try:
            return [c.pid for c in self._psutil.Process(self.pid).children(recursive=True)]
        except self._psutil.Error:
            return []

    # ----------------------------------------------------------------- sample
    def sample(self, now: float) -> dict:
        ps = self._psutil
        if ps is None:
            self.open()
            ps = self._psutil
        out: dict[str, Any] = {}
        self._sample_cpu(ps, out)
        # memory moves slowly: read it at most every _SLOW_S (fewer /proc reads per sample)
        if now - self._slow_t >= _SLOW_S:
            self._slow_t = now
            vm = ps.virtual_memory()
            self._mem = (vm.total - vm.available, vm.available)
        out["mem.used_bytes"], out["mem.available_bytes"] = self._mem
        self._sample_disk(now, out)
        if self._procs:
            self._sample_proc(now, out)
        return out

    def _sample_cpu(self, ps, out: dict) -> None:
        if self.fast:
            from .procfs import read_cpu_times

            cur = read_cpu_times(self._f_stat)
        else:
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

    def _sample_disk(self, now: float, out: dict) -> None:
        if "disk.read_bytes_per_s" in self.na:
            return
        try:
            counters = self._disk_counters() or {}
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

    def _scan_children(self, now: float) -> None:
        if now - self._child_scan_t < _CHILD_SCAN_S:
            return
        self._child_scan_t = now
        kids = self._child_pids()
        procs = self._procs
        fresh = set(kids)
        for pid in kids:
            if pid in procs:
                continue
            try:
                r = self._reader(pid)
                if pid in self._preexisting:
                    # a child older than the monitor: count only what it does from now on
                    c = r.read()
                    self._offsets[pid] = (c.cpu_s, c.read_bytes, c.read_chars)
            except Exception:  # noqa: BLE001 - it exited meanwhile, or cannot be read
                continue
            procs[pid] = r
        for pid in [p for p in procs if p != self.pid and p not in fresh]:
            self._drop(pid)

    def _drop(self, pid: int) -> None:
        r = self._procs.pop(pid, None)
        if r is not None:
            r.close()
        off = self._offsets.pop(pid, None)
        if off is not None:  # its totals move into its reaper's counters: keep subtracting them
            for j in range(3):
                self._retired[j] += off[j]

    def _sample_proc(self, now: float, out: dict) -> None:
        self._scan_children(now)
        cpu = rbytes = rchars = rss = 0.0
        gone = []
        for pid, r in self._procs.items():
            try:
                c = r.read()
            except (OSError, ValueError, IndexError):
                if pid != self.pid:
                    gone.append(pid)
                continue
            cpu += c.cpu_s
            rbytes += c.read_bytes
            rchars += c.read_chars
            rss += c.rss_bytes
            if not r.has_io:
                self._io_ok = False
        for pid in gone:
            self._drop(pid)
        out["proc.rss_bytes"] = int(rss)
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
        if not self._io_ok and "proc.read_bytes_per_s" not in self.na:
            self.na["proc.read_bytes_per_s"] = "I/O counters of this process are not readable"
            self.notes.append("this process's I/O counters are not readable here "
                              "(no permission to /proc/<pid>/io): process read figures are incomplete")
        if prev is None or now <= tprev:
            out["proc.cpu_pct"] = None
            out["proc.read_bytes_per_s"] = None
            out["proc.read_syscall_bytes_per_s"] = None
            return
        dt = now - tprev
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
        for r in self._procs.values():
            r.close()
        self._procs = {}
        for f in (self._f_stat, self._f_disk):
            if f is not None:
                f.close()
        self._f_stat = self._f_disk = None
