"""What a monitor keeps: a bounded ring buffer of records, running statistics of every
field over the whole run, and windowed access to both.

A *record* is a flat dict: ``"t"`` (:func:`time.monotonic` seconds) and fields keyed
``"<namespace>.<field>_<unit>"`` (``"gpu0.util_pct"``, ``"disk.read_bytes_per_s"``).
:class:`RecordBuffer` keeps the newest ``capacity`` of them; the statistics
(:class:`~nbbench.results.series.FieldStats`) cover every record, so summaries stay
right after the buffer wraps.  :class:`~nbbench.monitor.Monitor` is a RecordBuffer
whose sampling thread appends the records.

A monitor that lives as long as a kernel keeps memory bounded another way
(``recent_s``): the last ``recent_s`` seconds at full rate, older records folded into
means over coarser buckets (:data:`TIERS`: 10 s buckets for 6 hours, then 1 min buckets
for 7 days; older ones are dropped), while the statistics still cover every record.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque

from ..results.series import FieldStats, window

__all__ = ["RecordBuffer", "TIERS", "mean_record"]

#: (bucket seconds, buckets kept) of the downsampled tiers, finest first: 10 s means for 6 h, 1 min means for 7 days
TIERS = ((10.0, 2160), (60.0, 10080))


def mean_record(recs: list[dict]) -> dict:
    """One record standing for ``recs``: the mean of each numeric field (tuples element-wise), ``t`` the last."""
    out: dict = {"t": recs[-1]["t"]}
    sums: dict = {}
    for r in recs:
        for k, v in r.items():
            if k == "t" or v is None:
                continue
            cls = v.__class__
            if cls is float or cls is int:
                acc = sums.get(k)
                if acc is None:
                    sums[k] = [v, 1]
                elif acc.__class__ is list:
                    acc[0] += v
                    acc[1] += 1
            elif cls is tuple:
                acc = sums.get(k)
                if acc is None:
                    sums[k] = ([float(x) for x in v], len(v), 1)
                elif acc.__class__ is tuple and acc[1] == len(v):
                    for i, x in enumerate(v):
                        acc[0][i] += x
                    sums[k] = (acc[0], acc[1], acc[2] + 1)
    for k, acc in sums.items():
        if acc.__class__ is list:
            out[k] = round(acc[0] / acc[1], 3)
        else:
            out[k] = tuple(round(x / acc[2], 2) for x in acc[0])
    return out


class _Tier:
    """Means over fixed buckets of ``bucket_s`` seconds; at most ``keep`` of them."""

    __slots__ = ("bucket_s", "keep", "done", "pending", "key")

    def __init__(self, bucket_s: float, keep: int):
        self.bucket_s, self.keep = bucket_s, keep
        self.done: deque = deque()
        self.pending: list[dict] = []
        self.key = None

    def add(self, rec: dict) -> dict | None:
        """Fold ``rec`` in; returns a record pushed out of this tier (the oldest mean), if any."""
        key = int(rec["t"] // self.bucket_s)
        if self.pending and key != self.key:
            self.done.append(mean_record(self.pending))
            self.pending = []
        self.key = key
        self.pending.append(rec)
        if len(self.done) > self.keep:
            return self.done.popleft()
        return None

    def records(self) -> list[dict]:
        return list(self.done) + ([mean_record(self.pending)] if self.pending else [])


class RecordBuffer:
    """The newest ``capacity`` records (one every ``interval`` s) and statistics of all."""

    def __init__(self, interval: float, capacity: int, recent_s: float | None = None, tiers=TIERS):
        self.interval = interval
        self.capacity = max(2, int(capacity))
        #: full rate for this many seconds, then the downsampled tiers (None: a plain ring of ``capacity``)
        self.recent_s = float(recent_s) if recent_s else None
        self._tiers = [_Tier(float(b), int(n)) for b, n in tiers] if self.recent_s else []
        self._buf: deque = deque(maxlen=None if self.recent_s else self.capacity)
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
            buf = self._buf
            if self.recent_s is None:
                if len(buf) == self.capacity:
                    self.n_dropped += 1
            else:
                # records older than recent_s (or past capacity) move into the downsampled tiers
                cut = now - self.recent_s
                while buf and (buf[0]["t"] < cut or len(buf) >= self.capacity):
                    self._fold(buf.popleft())
            buf.append(rec)
            self.n_samples += 1
            self._cond.notify_all()

    def _fold(self, rec: dict) -> None:
        for tier in self._tiers:
            rec = tier.add(rec)
            if rec is None:
                return
        self.n_dropped += 1

    @property
    def n_kept(self) -> int:
        """How many records are held now (full rate and downsampled)."""
        with self._lock:
            return len(self._buf) + sum(len(t.done) + bool(t.pending) for t in self._tiers)

    def records(self, t0: float | None = None, t1: float | None = None) -> list[dict]:
        """A copy of the buffered records with ``t0 <= t <= t1`` (monotonic seconds)."""
        with self._lock:
            recs = [r for t in reversed(self._tiers) for r in t.records()] + list(self._buf)
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
        return window(((r["t"], r.get(field)) for r in self.records()), t0, t1)

    def stats(self, field: str, t0: float | None = None, t1: float | None = None, wait: bool = False) -> dict:
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

    def mean(self, field: str, t0: float | None = None, t1: float | None = None, wait: bool = False) -> float | None:
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
