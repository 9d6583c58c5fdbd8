"""Host figures a long-lived watcher adds: pressure stalls, the cgroup's CPU throttling, page cache, each disk.

Fields (rates over the interval since the previous sample; None on the first; a field is
left out, with a reason in :attr:`HostExtraSource.na`, where this machine does not expose it):

- ``psi.<resource>_<some|full>_pct``: pressure stall information, the share of the interval in
  which some (or all) runnable tasks waited for the CPU, I/O or memory — from the ``total=``
  microsecond counters, so each sample covers exactly its interval; the cgroup's own files on
  cgroup v2, else ``/proc/pressure`` (label ``psi_scope``);
- ``cgroup.throttled_pct``: throttled time per second of the interval, % (summed over CPUs: it may
  pass 100 % when several wait), and ``cgroup.throttled_periods``: quota periods throttled in the
  interval — of the cgroup that carries this process's CPU quota.

The stall counters are read and turned into figures by :mod:`nbbench.limits` (one reader for the
monitor, the loader runs, the doctor and this watcher), found from ``/proc/self/cgroup``.
- ``mem.cached_bytes``: the page cache (``Cached:`` in ``/proc/meminfo``, whole machine);
- ``dev.<name>.read_bytes_per_s``, ``dev.<name>.write_bytes_per_s``: each physical disk
  (``/proc/diskstats``; partitions, loop, ram, dm and md devices left out, as
  :mod:`nbbench.monitor.disk` counts them).

Labels: ``cpu_quota`` (cores the cgroup allows, None: no quota), ``cpus_usable`` (affinity
and quota together, :func:`nbbench.env.usable_cpus`), ``psi_scope``.  Files stay open and are
re-read with ``pread``: about ten small reads a sample.
"""

from __future__ import annotations

import os
from typing import Any

from ..env import usable_cpus
from ..limits.counters import StallReader, window
from .procfs import ProcFile

__all__ = ["HostExtraSource", "parse_diskstats", "whole_disks"]

_VIRTUAL_PREFIXES = ("loop", "ram", "zram", "dm-", "md", "sr", "fd", "nbd", "zd")


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
        self._stalls: StallReader | None = None
        self._stall_prev: dict | None = None

    def _open(self, key: str, path: str) -> bool:
        try:
            self._files[key] = ProcFile(path)
            return True
        except OSError:
            return False

    def open(self) -> None:
        cpus = usable_cpus(self.root)
        self.labels.update(cpu_quota=cpus["cgroup_quota"], cpus_usable=cpus["usable"], cpus_logical=cpus["logical"])
        self._stalls = StallReader(self.root)
        self.labels["psi_scope"] = self._stalls.scope
        if "psi" not in self._stalls.available:
            self.na["psi.cpu_some_pct"] = "no pressure stall information here (Linux before 4.20, or PSI off)"
        if "throttling" not in self._stalls.available:
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
        if self._stalls is None and self._t is None:  # not opened yet (a source the Monitor did not open)
            self.open()
        counters: dict[str, float] = {}
        out: dict[str, Any] = self._stall_figures(now)
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
            out[key] = round(max(0.0, v - prev[key]) / (now - tprev), 1)
        return out

    def _stall_figures(self, now: float) -> dict[str, Any]:
        """The interval's PSI shares and throttling, from :func:`nbbench.limits.counters.window`."""
        if self._stalls is None:
            return {}
        cur = self._stalls.sample(now)
        prev, self._stall_prev = self._stall_prev, cur
        fig = window(prev, cur)
        out: dict[str, Any] = {}
        for res, pair in cur["psi"].items():
            for kind, total in zip(("some", "full"), pair):
                if total is not None:
                    out[f"psi.{res}_{kind}_pct"] = fig.get(f"psi_{res}_{kind}_pct")
        if cur["cpu"] is not None:
            out["cgroup.throttled_pct"] = fig["cpu_throttled_pct"]
            had = prev.get("cpu") if prev else None
            out["cgroup.throttled_periods"] = max(0, cur["cpu"][1] - had[1]) if had else None
        return out

    def close(self) -> None:
        for f in self._files.values():
            try:
                f.close()
            except OSError:
                pass
        self._files = {}
        if self._stalls is not None:
            self._stalls.close()
            self._stalls = None
