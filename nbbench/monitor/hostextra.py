"""Host figures a long-lived watcher adds: pressure stalls, the cgroup's CPU throttling, page cache, each disk.

Fields (rates over the interval since the previous sample; None on the first; a field is
left out, with a reason in :attr:`HostExtraSource.na`, where this machine does not expose it):

- ``psi.cpu_some_pct``, ``psi.io_some_pct``, ``psi.io_full_pct``, ``psi.memory_some_pct``,
  ``psi.memory_full_pct``: pressure stall information (``/proc/pressure/*``, Linux 4.20+),
  the share of the interval in which some (or all) runnable tasks waited for that
  resource — computed from the ``total=`` microsecond counters, not the kernel's
  10 s averages, so each sample covers exactly its interval;
- ``cgroup.throttled_pct``: the share of the interval this container's cgroup was held back
  by its CPU quota (``cpu.stat`` ``throttled_usec``, v2; ``throttled_time`` in ns, v1), and
  ``cgroup.throttled_periods``: quota periods throttled in the interval;
- ``mem.cached_bytes``: the page cache (``Cached:`` in ``/proc/meminfo``, whole machine);
- ``dev.<name>.read_bytes_per_s``, ``dev.<name>.write_bytes_per_s``: each physical disk
  (``/proc/diskstats``; partitions, loop, ram, dm and md devices left out, as
  :mod:`nbbench.monitor.disk` counts them).

Labels: ``cpu_quota`` (cores the cgroup allows, None: no quota), ``cpus_usable`` (affinity
and quota together, :func:`nbbench.env.usable_cpus`).  Files stay open and are re-read with
``pread`` (:class:`~nbbench.monitor.procfs.ProcFile`): about ten small reads a sample.
"""

from __future__ import annotations

import os
from typing import Any

from ..env import usable_cpus
from .procfs import ProcFile

__all__ = ["HostExtraSource", "parse_psi", "parse_cpu_stat", "parse_diskstats", "whole_disks"]

_PSI = ("cpu", "io", "memory")
_VIRTUAL_PREFIXES = ("loop", "ram", "zram", "dm-", "md", "sr", "fd", "nbd", "zd")
_CGROUP_STATS = ("/sys/fs/cgroup/cpu.stat", "/sys/fs/cgroup/cpu,cpuacct/cpu.stat", "/sys/fs/cgroup/cpu/cpu.stat")


def parse_psi(text: str) -> dict[str, float]:
    """``{"some": total_us, "full": total_us}`` from a /proc/pressure file's text."""
    out = {}
    for line in text.splitlines():
        kind, _, rest = line.partition(" ")
        for part in rest.split():
            k, _, v = part.partition("=")
            if k == "total":
                out[kind] = float(v)
    return out


def parse_cpu_stat(text: str) -> tuple[float | None, float | None]:
    """(throttled seconds, throttled periods) from a cgroup ``cpu.stat`` (v2 µs or v1 ns)."""
    vals = {}
    for line in text.splitlines():
        k, _, v = line.partition(" ")
        try:
            vals[k] = float(v)
        except ValueError:
            continue
    if "throttled_usec" in vals:
        seconds = vals["throttled_usec"] / 1e6
    elif "throttled_time" in vals:
        seconds = vals["throttled_time"] / 1e9
    else:
        seconds = None
    return seconds, vals.get("nr_throttled")


def whole_disks(sys_block: str = "/sys/block") -> set[str] | None:
    """The names under /sys/block (whole disks, not partitions); None where it cannot be listed."""
    try:
        return set(os.listdir(sys_block))
    except OSError:
        return None


def parse_diskstats(text: str, disks: set[str] | None = None) -> dict[str, tuple[float, float]]:
    """name -> (bytes read, bytes written) of each physical whole disk (sectors of 512 bytes);
    ``disks``: the whole disks' names (:func:`whole_disks`; None: every name not virtual)."""
    out = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) < 10:
            continue
        name = f[2]
        if name.startswith(_VIRTUAL_PREFIXES):
            continue
        if disks is not None and name not in disks:  # a partition: its disk counts it already
            continue
        out[name] = (float(f[5]) * 512, float(f[9]) * 512)
    return out


def _cached(text: str) -> int | None:
    for line in text.splitlines():
        if line.startswith("Cached:"):
            return int(line.split()[1]) * 1024
    return None


class HostExtraSource:
    """Pressure stalls, CPU throttling, page cache and per-disk rates (see the module doc)."""

    name = "host"

    def __init__(self, root: str = "/"):
        self.root = root
        self.notes: list[str] = []
        self.na: dict[str, str] = {}
        self.labels: dict[str, Any] = {}
        self._files: dict[str, ProcFile] = {}
        self._prev: dict[str, float] = {}
        self._t: float | None = None
        self._disks: set[str] | None = None

    def _open(self, key: str, path: str) -> bool:
        try:
            self._files[key] = ProcFile(path)
            return True
        except OSError:
            return False

    def open(self) -> None:
        cpus = usable_cpus(self.root)
        self.labels.update(cpu_quota=cpus["cgroup_quota"], cpus_usable=cpus["usable"], cpus_logical=cpus["logical"])
        for kind in _PSI:
            if not self._open(f"psi.{kind}", f"/proc/pressure/{kind}"):
                self.na[f"psi.{kind}_some_pct"] = "no /proc/pressure here (Linux before 4.20, or PSI off)"
        if not any(self._open("cgroup", p) for p in _CGROUP_STATS if os.path.exists(p)):
            self.na["cgroup.throttled_pct"] = "no cgroup cpu.stat readable here"
        elif cpus["cgroup_quota"] is None:
            self.notes.append("this cgroup has no CPU quota: throttling stays 0")
        self._open("meminfo", "/proc/meminfo")
        self._disks = whole_disks()
        if not self._open("diskstats", "/proc/diskstats"):
            self.na["dev"] = "no /proc/diskstats here"

    def _read(self, key: str) -> str | None:
        f = self._files.get(key)
        if f is None:
            return None
        try:
            return f.read().decode("ascii", "replace")
        except OSError:
            return None

    def sample(self, now: float) -> dict:
        if self._t is None and not self._files:
            self.open()
        counters: dict[str, float] = {}
        out: dict[str, Any] = {}
        for kind in _PSI:
            text = self._read(f"psi.{kind}")
            if text is not None:
                for which, us in parse_psi(text).items():
                    counters[f"psi.{kind}_{which}_pct"] = us / 1e6
        text = self._read("cgroup")
        if text is not None:
            seconds, periods = parse_cpu_stat(text)
            if seconds is not None:
                counters["cgroup.throttled_pct"] = seconds
            if periods is not None:
                counters["cgroup.throttled_periods"] = periods
        text = self._read("meminfo")
        if text is not None:
            out["mem.cached_bytes"] = _cached(text)
        text = self._read("diskstats")
        if text is not None:
            for name, (r, w) in parse_diskstats(text, self._disks).items():
                counters[f"dev.{name}.read_bytes_per_s"] = r
                counters[f"dev.{name}.write_bytes_per_s"] = w
        prev, tprev = self._prev, self._t
        self._prev, self._t = counters, now
        for key, v in counters.items():
            if tprev is None or key not in prev or now <= tprev:
                out[key] = None
                continue
            delta = max(0.0, v - prev[key])
            if key.endswith("_periods"):
                out[key] = delta
            elif key.endswith("_pct"):  # seconds stalled per second of interval, as %
                out[key] = round(min(100.0, 100.0 * delta / (now - tprev)), 2)
            else:
                out[key] = round(delta / (now - tprev), 1)
        return out

    def close(self) -> None:
        for f in self._files.values():
            try:
                f.close()
            except OSError:
                pass
        self._files = {}
