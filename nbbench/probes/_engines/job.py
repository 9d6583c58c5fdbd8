"""A job (what to do) and its outcome, plus the meter every builtin engine shares.

The meter does the bookkeeping that must not sit in the per-I/O path: the ramp,
the 500 ms bandwidth windows, folding latencies into the histogram, progress,
the cancel event and the deadline.  Engines count completions and append
latencies (ns) to ``meter.lats``; whenever ``now >= meter.next_event`` they call
``meter.event(now, done)`` — at most every 20 ms — which says whether to go on.
"""

from __future__ import annotations

import threading
import time
from array import array
from dataclasses import dataclass, field
from typing import Any, Callable

from ...progress import call_progress
from ...results.hist import LatencyHistogram

__all__ = ["JobSpec", "JobOutput", "Meter", "offsets"]

CHECK_NS = 20_000_000  # cancel / progress checks at least every 20 ms


@dataclass
class JobSpec:
    """One stream of I/O against an open file descriptor."""

    fd: int
    op: str = "read"            # "read" | "write"
    pattern: str = "rand"       # "rand" | "seq"
    bs: int = 4096
    qd: int = 1
    region: int = 0             # bytes addressed from offset 0 (a multiple of bs)
    runtime: float | None = None  # seconds, time based (None: size based)
    ramp: float = 0.0           # seconds not counted (time based only)
    total: int | None = None    # bytes, size based (one sequential pass)
    window_s: float = 0.5
    seed: int = 0
    fsync_end: bool = False     # fdatasync inside the timed window (buffered writes)
    cancel: threading.Event | None = None
    progress: Callable | None = None
    progress_key: str = "read_bytes_per_s"
    threads: int = 1
    force: str | None = None    # builtin engine: "sync" | "uring" | "threads" (None: choose)


@dataclass
class JobOutput:
    ios: int = 0
    bytes: int = 0
    elapsed_s: float = 0.0
    hist: LatencyHistogram = field(default_factory=LatencyHistogram)
    windows: list = field(default_factory=list)  # [t_s, bytes_per_s, iops]
    qd_max: int = 0
    qd_mean: float = 0.0
    io_path: str = ""
    interrupted: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def bytes_per_s(self) -> float:
        return self.bytes / self.elapsed_s if self.elapsed_s > 0 else float("nan")

    @property
    def iops(self) -> float:
        return self.ios / self.elapsed_s if self.elapsed_s > 0 else float("nan")


def offsets(spec: JobSpec):
    """Offsets to use: random (uniform, bs-aligned, seeded) forever, or one sequential pass
    (size based) / sequential laps over the region (time based)."""
    bs = spec.bs
    nblocks = max(1, spec.region // bs)
    if spec.pattern == "rand":
        import numpy as np

        rng = np.random.default_rng(spec.seed)

        def gen():
            while True:
                yield from (rng.integers(0, nblocks, 65536, dtype=np.int64) * bs).tolist()

        return gen()
    if spec.total is not None:
        n = spec.total // bs
        return (((i % nblocks) * bs) for i in range(n))

    def laps():
        while True:
            yield from range(0, nblocks * bs, bs)

    return laps()


class Meter:
    def __init__(self, spec: JobSpec, out: JobOutput):
        self.spec = spec
        self.out = out
        self.lats = array("q")
        now = time.perf_counter_ns()
        self.t0 = now
        time_based = spec.runtime is not None
        self.ramp_end = now + int(spec.ramp * 1e9) if time_based and spec.ramp > 0 else None
        self.m0 = now if self.ramp_end is None else None
        self.done0 = 0
        self.win_ns = int(spec.window_s * 1e9)
        self.next_win = (now if self.ramp_end is None else self.ramp_end) + self.win_ns
        self.deadline = (now + int((spec.ramp + spec.runtime) * 1e9)) if time_based else None
        self.win_done = 0
        self.next_check = now + CHECK_NS
        self.next_event = self._next_event()
        self.stop = False
        self.last_progress = 0
        self.qd_sum = 0
        self.qd_n = 0

    def _next_event(self) -> int:
        ev = min(self.next_check, self.next_win)
        if self.ramp_end is not None and self.m0 is None:
            ev = min(ev, self.ramp_end)
        if self.deadline is not None:
            ev = min(ev, self.deadline)
        return ev

    def event(self, now: int, done: int, inflight: int = 0) -> bool:
        """Bookkeeping at ``now`` with ``done`` completions so far; False: stop submitting."""
        spec = self.spec
        self.qd_sum += inflight
        self.qd_n += 1
        if self.m0 is None and now >= self.ramp_end:
            self.m0 = now
            self.done0 = done
            self.win_done = done
            self.next_win = now + self.win_ns
            del self.lats[:]
        if self.m0 is not None:
            while now >= self.next_win:
                self._close_window(self.next_win, done)
                self.next_win += self.win_ns
        if now >= self.next_check:
            self.next_check = now + CHECK_NS
            if spec.cancel is not None and spec.cancel.is_set():
                self.out.interrupted = True
                self.stop = True
            if now - self.last_progress > 200_000_000:
                self.last_progress = now
                self._progress(now, done)
        if self.deadline is not None and now >= self.deadline:
            self.stop = True
        self.next_event = self._next_event()
        return not self.stop

    def _close_window(self, t_end: int, done: int) -> None:
        n = done - self.win_done
        self.win_done = done
        if self.lats:
            self.out.hist.add_many(self.lats)
            del self.lats[:]
        t0 = t_end - self.win_ns
        dur = self.win_ns / 1e9
        self.out.windows.append([round((t0 - self.m0) / 1e9 + dur, 3), n * self.spec.bs / dur, n / dur])

    def _progress(self, now: int, done: int) -> None:
        spec = self.spec
        if spec.progress is None:
            return
        if self.deadline is not None:
            frac = (now - self.t0) / max(1, self.deadline - self.t0)
        elif spec.total:
            frac = done * spec.bs / spec.total
        else:
            frac = None
        rate = None
        if self.out.windows:
            rate = self.out.windows[-1][1]
        elif self.m0 is not None and now > self.m0:
            rate = (done - self.done0) * spec.bs / ((now - self.m0) / 1e9)
        metrics = {spec.progress_key: rate} if rate is not None else None
        if metrics is not None and spec.pattern == "rand":
            metrics["iops"] = rate / spec.bs
        call_progress(spec.progress, frac, metrics)

    def finish(self, now: int, done: int) -> JobOutput:
        """Close the measurement at ``now`` (the last completion counted)."""
        out = self.out
        if self.m0 is None:  # stopped during the ramp: nothing measured
            self.m0 = now
            self.done0 = done
            del self.lats[:]
        # the partial last window, scaled to its own length
        n = done - self.win_done
        tail_ns = now - (self.next_win - self.win_ns)
        if n > 0 and tail_ns > 0 and (tail_ns > 0.05 * self.win_ns or not out.windows):
            dur = tail_ns / 1e9
            out.windows.append([round((now - self.m0) / 1e9, 3), n * self.spec.bs / dur, n / dur])
        if self.lats:
            out.hist.add_many(self.lats)
            del self.lats[:]
        out.ios = done - self.done0
        out.bytes = out.ios * self.spec.bs
        out.elapsed_s = (now - self.m0) / 1e9
        # the wall-clock time of the measurement's t = 0, so series of several processes line up
        out.extra["t0_unix"] = time.time() - (time.perf_counter_ns() - self.m0) / 1e9
        if self.qd_n:
            out.qd_mean = self.qd_sum / self.qd_n
        if self.spec.progress is not None:
            key = self.spec.progress_key
            call_progress(self.spec.progress, None if out.interrupted else 1.0,
                          {key: out.bytes_per_s} if out.elapsed_s > 0 else None)
        return out
