"""The container's stall counters over a loader benchmark: what the CPU quota and the memory limit did.

:class:`StallWindow` samples the cgroup's throttling, PSI and memory-limit counters when a loader
run starts and when it ends (two reads of a few small files: no thread), and :meth:`StallWindow.apply`
keeps the figures in the result (metrics under :data:`nbbench.limits.FIGURES`' keys, labels
``stall_counters``, ``psi_scope``, ``cpu_quota``) and says what bound it, worded by
:func:`nbbench.limits.stall_findings`: "throttled by the container's 4-CPU quota 38 % of the time:
the DataLoader's 16 workers share 4 CPUs".  Only the container's own stalls are worded here
(throttling, the cgroup's PSI, memory-limit events): the system-wide PSI of a benchmark that reads
storage on purpose is its figure, not a finding.  :func:`quota_note` names the quota where it bounds
the workers a feed or sweep runs ("4 CPUs of quota: num_workers above 3 only adds throttling").
"""

from __future__ import annotations

from typing import Any

from ...limits import FIGURES, StallReader, read_limits, stall_findings, window, worker_bound

__all__ = ["StallWindow", "quota_note"]


class StallWindow:
    """Counters at the start (now) and at :meth:`stop`; never raises (no counters: nothing kept)."""

    def __init__(self, root: str = "/"):
        self.fig: dict[str, Any] | None = None
        self.available: list[str] = []
        self.scope: str | None = None
        try:
            self.limits = read_limits(root)
            self._reader = StallReader(root)
            self._a = self._reader.sample()
        except Exception:  # noqa: BLE001 - counters are a bonus: the benchmark goes on without them
            self.limits, self._reader, self._a = {}, None, None

    def stop(self) -> dict[str, Any]:
        """The window's figures (once; later calls return the same)."""
        if self.fig is None:
            self.fig = {}
            if self._reader is not None:
                self.available, self.scope = self._reader.available, self._reader.scope
                try:
                    self.fig = window(self._a, self._reader.sample())
                    self.fig["psi_scope"] = self._reader.scope
                except Exception:  # noqa: BLE001
                    self.fig = {}
                self._reader.close()
        return self.fig

    def apply(self, res, workers: int | None = None) -> list[str]:
        """Keep the figures in ``res`` and warn with what the container's limits did; returns the words."""
        fig = self.stop()
        if self._reader is None:
            return []
        for k in FIGURES:
            if fig.get(k) is not None:
                res.metrics[k] = fig[k]
        have = self.available
        res.labels["stall_counters"] = ", ".join(have) if have else "none"
        if have:
            res.labels["psi_scope"] = self.scope or "none"
            q = self.limits.get("cpu_quota")
            res.labels["cpu_quota"] = q if q else "none"
        own = dict(fig)
        if own.get("psi_scope") != "cgroup":  # the machine's pressure: not the container's limits
            for k in [k for k in own if k.startswith("psi_")]:
                own[k] = None
        words = stall_findings(own, self.limits, workers or None)
        for w in words:
            res.warn(f"measured: {w}")
        try:
            bound = worker_bound(self.limits, int(workers)) if workers is not None else ""
        except (TypeError, ValueError):
            bound = ""
        if bound:  # more workers than the quota can run: said whether or not this run was throttled
            res.warn(bound)
            words.append(bound)
        return words


def quota_note(res, workers: int | None) -> str:
    """Warn where the CPU quota bounds ``workers`` (the most a feed or sweep runs); returns the words."""
    try:
        text = worker_bound(read_limits(), workers)
    except Exception:  # noqa: BLE001
        return ""
    if text:
        res.warn(text)
    return text
