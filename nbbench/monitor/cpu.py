"""CPU and memory source: whole-machine CPU busy / iowait % and memory.

Fields (rates over the interval since the previous sample; None on the first):

- ``cpu.util_pct``: whole-machine CPU busy % (user+system+…, not idle or iowait),
  ``cpu.iowait_pct``, ``cpu.cores_pct``: a tuple, one busy % per logical CPU.
  Inside a container these count the *host's* CPUs, other tenants included.
- ``mem.used_bytes``, ``mem.available_bytes`` (whole machine; read at most every 0.5 s).

Label: ``cpus_logical``.  On Linux the CPU times and memory come from kept-open ``/proc/stat``
and ``/proc/meminfo``
(:mod:`nbbench.monitor.procfs`, one ``pread`` a sample); ``fast=False`` or another
platform uses psutil.
"""

from __future__ import annotations

import sys
from typing import Any

from . import procfs
from .procfs import HostSource, read_cpu_times, read_meminfo

__all__ = ["CpuSource"]

_SLOW_S = 0.5  # memory figures are read at most this often


class CpuSource(HostSource):
    """Whole-machine CPU and memory figures (see the module doc)."""

    name = "cpu"

    def __init__(self, per_core: bool = True, fast: bool = True):
        super().__init__(fast)
        self.per_core = per_core
        self._f_stat = None
        self._f_mem = None
        self._cpu_prev = None
        self._slow_t = -1e9
        self._mem = (None, None)

    def open(self) -> None:
        import psutil

        self._psutil = psutil
        if self.want_fast and sys.platform.startswith("linux"):
            try:
                f = procfs.ProcFile("/proc/stat")
                if procfs.read_cpu_times(f):
                    self._f_stat, self.fast = f, True
                else:
                    f.close()
            except (OSError, ValueError, IndexError):
                self.fast = False
            try:
                g = procfs.ProcFile("/proc/meminfo")
                procfs.read_meminfo(g)
                self._f_mem = g
            except (OSError, ValueError, IndexError):
                self._f_mem = None
        self.labels = {"cpus_logical": psutil.cpu_count() or 0}

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
            if self._f_mem is not None:
                total, avail = read_meminfo(self._f_mem)
            else:
                vm = ps.virtual_memory()
                total, avail = vm.total, vm.available
            self._mem = (total - avail, avail)
        out["mem.used_bytes"], out["mem.available_bytes"] = self._mem
        return out

    def _sample_cpu(self, ps, out: dict) -> None:
        if self.fast:
            # per CPU: (total, idle + iowait, iowait); as psutil.cpu_percent, guest time is in user time
            cur = [(sum(c) - c.guest - c.guest_nice, c.idle + c.iowait, c.iowait) for c in read_cpu_times(self._f_stat)]
        else:
            cur = []
            for c in ps.cpu_times(percpu=True):
                w = getattr(c, "iowait", 0.0)
                cur.append((sum(c) - getattr(c, "guest", 0.0) - getattr(c, "guest_nice", 0.0), c.idle + w, w))
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
            dt = b[0] - a[0]
            if dt <= 0:
                cores.append(0.0)
                continue
            busy = min(max(dt - (b[1] - a[1]), 0.0), dt)
            cores.append(round(100.0 * busy / dt, 1))
            tot_all += dt
            busy_all += busy
            if b[2] > a[2]:
                iow_all += b[2] - a[2]
        out["cpu.util_pct"] = round(100.0 * busy_all / tot_all, 2) if tot_all > 0 else 0.0
        out["cpu.iowait_pct"] = round(100.0 * iow_all / tot_all, 2) if tot_all > 0 else 0.0
        if self.per_core:
            out["cpu.cores_pct"] = tuple(cores)

    def close(self) -> None:
        for f in (self._f_stat, self._f_mem):
            if f is not None:
                f.close()
        self._f_stat = self._f_mem = None
