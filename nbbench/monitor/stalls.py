"""Stall source: what the container's limits did to the run, measured by the kernel.

Fields (per window since the previous reading; None at first; only those the kernel exposes):

- ``stall.cpu_throttled_pct``: time the cgroup's run queues were throttled by the CPU quota per
  second of wall time (% ; ``cpu.stat`` throttled time), ``stall.cpu_throttled_periods_pct``: share
  of the quota's enforcement periods that ended throttled;
- ``stall.psi_{cpu,io,memory}_{some,full}_pct``: pressure stall information, the share of time
  some (or all non-idle) tasks waited for a CPU, on I/O, on memory — the cgroup's own on cgroup v2,
  else the system's ``/proc/pressure`` (label ``psi_scope``);
- ``stall.memory_limit_events_count``, ``stall.memory_oom_kills_count``: the memory limit hit.

Labels: ``stall_counters`` (what could be read, or "none"), ``psi_scope``, ``cpu_quota``
(CPUs), ``memory_limit_bytes``, ``cgroup``.  The counters are read every 0.5 s at most
(:attr:`StallSource.every_s`); the samples between repeat the last window's figures.
``summary()`` gives the run's figures from the first and the last reading (exact: the counters are
cumulative; :meth:`StallSource.close` reads them once more at the last sample's time) under the keys
of :data:`nbbench.limits.FIGURES`, plus ``cpu_throttled_s``.  The files stay open and are re-read with
one ``pread`` each (:class:`nbbench.limits.StallReader`).
"""

from __future__ import annotations

from typing import Any

from ..limits import FIGURES, StallReader, read_limits, window

__all__ = ["StallSource", "PROMETHEUS"]

#: record field -> (Prometheus name without the prefix, scale, help): the exporter serves these
PROMETHEUS = {
    "stall.cpu_throttled_pct": (
        "cgroup_cpu_throttled_ratio",
        0.01,
        "time the cgroup was throttled by its CPU quota per second (cpu.stat; summed over CPUs)",
    ),
    "stall.cpu_throttled_periods_pct": (
        "cgroup_cpu_throttled_periods_ratio",
        0.01,
        "share of CPU quota periods that ended throttled (cpu.stat)",
    ),
    **{
        f"stall.psi_{res}_{kind}_pct": (
            f"pressure_{res}_{'waiting' if kind == 'some' else 'stalled'}_ratio",
            0.01,
            f"PSI {res} {kind}: share of time {'some task' if kind == 'some' else 'all non-idle tasks'} "
            f"waited on {res} (label scope: the cgroup's or the system's)",
        )
        for res in ("cpu", "io", "memory")
        for kind in ("some", "full")
    },
    "stall.memory_limit_events_count": (
        "cgroup_memory_limit_events",
        1,
        "times the memory limit was hit in the last interval",
    ),
}


class StallSource:
    """Throttling, pressure and memory-limit figures of process ``pid``'s cgroup (see the module doc)."""

    name = "stall"

    def __init__(self, pid: int | str = "self", root: str = "/"):
        self.pid = pid
        self.root = root
        self.notes: list[str] = []
        self.na: dict[str, str] = {}
        self.labels: dict[str, Any] = {}
        self.limits: dict[str, Any] = {}
        self._reader = None
        self._first: dict | None = None
        self._prev: dict | None = None
        self._keys: tuple = ()
        self._now: float | None = None
        #: the newest window's fields (what the exporter serves)
        self.last: dict[str, Any] = {}
        #: the counters are read at most this often (a window of 5 quota periods); samples between
        #: repeat the last window's figures, so a 10 Hz monitor reads them twice a second
        self.every_s = 0.5

    def open(self) -> None:
        self.limits = read_limits(self.root, self.pid)
        self._reader = StallReader(self.root, self.pid)
        have = self._reader.available
        self._keys = tuple((k, "stall." + k) for k in FIGURES if self._has(k))
        self.labels = {
            "stall_counters": ", ".join(have) if have else "none",
            "psi_scope": self._reader.scope or "none",
            "cgroup": self.limits.get("cgroup") or "none",
        }
        if self.limits.get("cpu_quota"):
            self.labels["cpu_quota"] = self.limits["cpu_quota"]
        if self.limits.get("memory_limit_bytes"):
            self.labels["memory_limit_bytes"] = self.limits["memory_limit_bytes"]
        if not have:
            self.notes.append(
                "stall counters not available: no cgroup cpu.stat, /proc/pressure or cgroup pressure files "
                "(verdicts are inferred from utilisation)"
            )
        elif "psi" not in have:
            self.notes.append("pressure stall information not available (no /proc/pressure): PSI figures are N/A")
        if "throttling" in have and not self.limits.get("cpu_quota"):
            self.labels["cpu_quota"] = "none"

    def sample(self, now: float) -> dict:
        if self._reader is None:
            self.open()
        self._now = now
        if self._prev is not None and now - self._prev["t"] < self.every_s:
            return self.last  # the counters are read every ``every_s``: the last window's figures until then
        cur = self._reader.sample(now)
        prev, self._prev = self._prev, cur
        if self._first is None:
            self._first = cur

        fig = window(prev, cur)
        self.last = {f: fig[k] for k, f in self._keys}
        return self.last

    def _has(self, key: str) -> bool:
        """A figure this machine measures (its file was opened)."""
        r = self._reader
        if key.startswith("cpu_"):
            return r._cpu is not None
        if key.startswith("psi_"):
            return key.split("_")[1] in r._psi
        return r._mem is not None

    def summary(self) -> dict[str, Any]:
        """The run's figures, from the first and the last sample."""
        if self._first is None or self._prev is None or self._prev is self._first:
            return {}
        fig = window(self._first, self._prev)
        out: dict[str, Any] = {k: v for k, v in fig.items() if v is not None}
        a, b = self._first.get("cpu"), self._prev.get("cpu")
        if a and b:
            out["cpu_throttled_s"] = round(b[2] - a[2], 4)
        return out

    def close(self) -> None:
        # the run's last sample (the monitor's stop) may have repeated a window: the counters once more,
        # at that sample's time, so the run's figures cover it to its end
        if (
            self._reader is not None
            and self._prev is not None
            and self._now is not None
            and self._prev["t"] < self._now
        ):
            try:
                self._prev = self._reader.sample(self._now)
            except Exception:  # noqa: BLE001
                pass
        if self._reader is not None:
            self._reader.close()
