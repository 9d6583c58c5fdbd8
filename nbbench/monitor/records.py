"""What a monitor keeps: a bounded ring buffer of records, running statistics of every
field over the whole run, and windowed access to both.

A *record* is a flat dict: ``"t"`` (:func:`time.monotonic` seconds) and fields keyed
``"<namespace>.<field>_<unit>"`` (``"gpu0.util_pct"``, ``"disk.read_bytes_per_s"``).
:class:`RecordBuffer` keeps the newest ``capacity`` of them; the statistics
(:class:`~nbbench.results.series.FieldStats`) cover every record, so summaries stay
right after the buffer wraps.  :class:`~nbbench.monitor.Monitor` is a RecordBuffer
whose sampling thread appends the records.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque

from ..results.series import FieldStats, window

__all__ = ["RecordBuffer"]


class RecordBuffer:
    """The newest ``capacity`` records (one every ``interval`` s) and statistics of all."""

    def __init__(self, interval: float, capacity: int):
        self.interval = interval
        self.capacity = max(2, int(capacity))
        self._buf: deque = deque(maxlen=self.capacity)
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._stats: dict[str, FieldStats] = {}
        self.n_samples = 0
        self.n_dropped = 0
        self.t_start: float | None = None  # monotonic: when the records start
        self._running = False  # records still arrive (wait_for waits only then)

    def _append(self, rec: dict, now: float) -> None:
        """Add a record taken at ``now``: its numbers to the statistics, it to the buffer."""
        stats = self._stats
        for k, v in rec.items():
            if k == "t" or v is None or v.__class__ not in (float, int):
                continue
            st = stats.get(k)
            if st is None:
                st = stats[k] = FieldStats()
            st.add(now, v)
        with self._cond:
            if len(self._buf) == self.capacity:
                self.n_dropped += 1
            self._buf.append(rec)
            self.n_samples += 1
            self._cond.notify_all()

    def records(self, t0: float | None = None, t1: float | None = None) -> list[dict]:
        """A copy of the buffered records with ``t0 <= t <= t1`` (monotonic seconds)."""
        with self._lock:
            recs = list(self._buf)
        if t0 is None and t1 is None:
            return recs
        lo = -math.inf if t0 is None else t0
        hi = math.inf if t1 is None else t1
        return [r for r in recs if lo <= r["t"] <= hi]

    def latest(self) -> dict | None:
        """The newest record (or None before the first)."""
        with self._lock:
            return self._buf[-1] if self._buf else None

    def fields(self) -> list[str]:
        """Names of the numeric fields seen so far."""
        return list(self._stats)

    def wait_for(self, t: float, timeout: float | None = None) -> bool:
        """Block until a record with ``record["t"] >= t`` exists (or the records stop coming)."""
        if timeout is None:
            timeout = 3 * self.interval + 1.0
        deadline = time.monotonic() + timeout
        with self._cond:
            while not (self._buf and self._buf[-1]["t"] >= t):
                left = deadline - time.monotonic()
                if left <= 0 or not self._running:
                    return bool(self._buf and self._buf[-1]["t"] >= t)
                self._cond.wait(left)
        return True

    def values(self, field: str, t0: float | None = None, t1: float | None = None) -> tuple[list, list]:
        """``(times, values)`` of one field within the window, None values left out.

        A record at time ``t`` describes the interval that ends at ``t`` (rates,
        NVML utilisation), so the window takes records with ``t0 < t <= t1``
        (:func:`~nbbench.results.series.window`); the record closing the window may
        come up to one interval after ``t1`` (use ``wait=True`` in :meth:`stats` /
        :meth:`mean` to wait for it).
        """
        with self._lock:
            recs = list(self._buf)
        return window(((r["t"], r.get(field)) for r in recs), t0, t1)

    def stats(self, field: str, t0: float | None = None, t1: float | None = None,
              wait: bool = False) -> dict:
        """``{"n", "mean", "min", "max"}`` of ``field`` over ``(t0, t1]`` (monotonic s).

        Without a window the whole run is described (running statistics, not limited
        by the ring buffer).  ``wait=True`` first waits for the record covering ``t1``
        (plus one interval), so a window that just ended is complete.
        """
        if t0 is None and t1 is None:
            st = self._stats.get(field)
            return st.to_dict() if st else {"n": 0}
        if wait and t1 is not None and self._running:
            self.wait_for(t1 + self.interval * 0.999)
        # the record just after t1 covers the end of the window
        ts, vs = self.values(field, t0, None if t1 is None else t1 + self.interval * 0.999)
        return FieldStats.of(ts, vs).describe()

    def mean(self, field: str, t0: float | None = None, t1: float | None = None,
             wait: bool = False) -> float | None:
        """Mean of ``field`` (e.g. ``"gpu0.util_pct"``) over ``(t0, t1]``; None without data."""
        return self.stats(field, t0, t1, wait=wait).get("mean")

    def frame(self, per_core: bool = False):
        """The buffered records as a pandas DataFrame.

        Columns: ``t`` (monotonic s), ``t_s`` (seconds since start), then every field.
        Per-core CPU (``cpu.cores_pct``, a tuple per record) is left out unless
        ``per_core=True``, which expands it into ``cpu.core0_pct``, ``cpu.core1_pct``…
        """
        import pandas as pd

        recs = self.records()
        rows = []
        t0 = self.t_start if self.t_start is not None else (recs[0]["t"] if recs else 0.0)
        for r in recs:
            row = {k: v for k, v in r.items() if k != "cpu.cores_pct"}
            row["t_s"] = r["t"] - t0
            if per_core and r.get("cpu.cores_pct") is not None:
                for i, v in enumerate(r["cpu.cores_pct"]):
                    row[f"cpu.core{i}_pct"] = v
            rows.append(row)
        df = pd.DataFrame.from_records(rows)
        if not df.empty:
            cols = ["t", "t_s"] + [c for c in df.columns if c not in ("t", "t_s")]
            df = df[cols]
        return df
