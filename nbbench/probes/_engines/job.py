"""A job (what to do) and its outcome, plus the meter every builtin engine shares.

The meter does the bookkeeping that must not sit in the per-I/O path: the ramp,
the 500 ms bandwidth windows, folding latencies into the histogram, progress,
the cancel event, the deadline and topping up the random offsets.  Engines count
completions and append latencies (ns) to ``meter.lats`` — or, one I/O after the
other (QD1), only completion times to ``meter.stamps``: each latency is the time
since the previous completion, or since the meter last returned (its own work is
never inside a latency).  Whenever ``now >= meter.next_event`` they call
``meter.event(now, done)`` — at most every 20 ms — which says whether to go on.
"""

from __future__ import annotations

import threading
import time
from array import array
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

from ...progress import call_progress
from ...results.hist import LatencyHistogram

__all__ = ["JobSpec", "JobOutput", "Meter", "offsets"]

CHECK_NS = 20_000_000  # cancel / progress checks at least every 20 ms


@dataclass
class JobSpec:
    """One stream of I/O against an open file descriptor."""

    fd: int
    op: str = "read"  # "read" | "write"
    pattern: str = "rand"  # "rand" | "seq"
    bs: int = 4096
    qd: int = 1
    region: int = 0  # bytes addressed from offset 0 (a multiple of bs)
    runtime: float | None = None  # seconds, time based (None: size based)
    ramp: float = 0.0  # seconds not counted (time based only)
    total: int | None = None  # bytes, size based (one sequential pass)
    window_s: float = 0.5
    seed: int = 0
    fsync_end: bool = False  # fdatasync inside the timed window (buffered writes)
    cancel: threading.Event | None = None
    progress: Callable | None = None
    progress_key: str = "read_bytes_per_s"
    threads: int = 1
    force: str | None = None  # builtin engine: "sync" | "uring" | "threads" (None: choose)
    buffers: str = "pages"  # builtin engine: "pages" (ordinary, page-aligned) | "huge" (2 MiB THP)
    base: int = 0  # byte offset the region starts at (a job of several: its own part of the file)


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

    def add_timeline(self, outs: list[JobOutput]) -> None:
        """The timeline of parallel loops' ``outs`` as one: the earliest start, and their windows summed
        (bytes/s, IOPS) on the first one's clock, as long as the shortest."""
        anchors = [o.extra["t0_unix"] for o in outs if "t0_unix" in o.extra]
        if anchors:
            self.extra["t0_unix"] = min(anchors)
        n = min(len(o.windows) for o in outs)
        self.windows = [
            [outs[0].windows[i][0], *(sum(o.windows[i][k] for o in outs) for k in (1, 2))] for i in range(n)
        ]


RAND_CHUNK = 16384  # random offsets drawn at a time (numpy, ~0.7 ms), between I/Os, not inside one


class Offsets:
    """The offsets to use, as a C-level iterator (``iter``: ``itertools.chain`` over chunks, so
    taking the next offset runs no Python code): random (uniform, bs-aligned, seeded) forever,
    or one sequential pass (size based) / sequential laps over the region (time based), all
    from ``spec.base`` on.

    Random chunks are drawn ahead by :meth:`refill` (the meter calls it at its events), so
    the numpy draw does not land inside an I/O's latency; only when the I/Os outrun the
    events is a chunk drawn inline.  ``arrays=True`` (the compiled loop): no ``iter``;
    :meth:`next_array` gives the next chunk as an int64 numpy array (None: no more)."""

    def __init__(self, spec: JobSpec, arrays: bool = False):
        self.spec = spec
        self.ready: deque = deque()
        self.as_arrays = arrays
        bs = spec.bs
        nblocks = max(1, spec.region // bs)
        self.rand = spec.pattern == "rand"
        if self.rand:
            import numpy as np

            self._rng = np.random.default_rng(spec.seed)
            self._nblocks = nblocks
            self.refill(2)
            chunks = self._rand_chunks()
        elif spec.total is not None:
            n = spec.total // bs
            chunks = self._seq_chunks(nblocks, n)
        else:
            chunks = self._seq_chunks(nblocks, None)
        if arrays:
            self._chunks = chunks
        else:
            self.iter = chain.from_iterable(chunks)

    def _draw(self):
        spec = self.spec
        a = self._rng.integers(0, self._nblocks, RAND_CHUNK, dtype="int64") * spec.bs
        if spec.base:
            a += spec.base
        return a if self.as_arrays else a.tolist()

    def refill(self, keep: int = 2) -> None:
        """Have ``keep`` random chunks drawn ahead (no-op for sequential offsets)."""
        if self.rand:
            while len(self.ready) < keep:
                self.ready.append(self._draw())

    def next_array(self):
        """The next chunk of offsets as a contiguous int64 numpy array; None when done."""
        import numpy as np

        c = next(self._chunks, None)
        if c is None or isinstance(c, np.ndarray):
            return c
        return np.arange(c.start, c.stop, c.step, dtype=np.int64)

    def _rand_chunks(self):
        ready = self.ready
        while True:
            yield ready.popleft() if ready else self._draw()

    def _seq_chunks(self, nblocks: int, n: int | None):
        bs = self.spec.bs
        b = self.spec.base
        lap = range(b, b + nblocks * bs, bs)
        if n is None:
            while True:
                yield lap
        while n > 0:
            yield lap if n >= nblocks else range(b, b + n * bs, bs)
            n -= nblocks


def offsets(spec: JobSpec):
    """An iterator over the offsets to use (see :class:`Offsets`), for engines without a meter refill."""
    return Offsets(spec).iter


class Meter:
    def __init__(self, spec: JobSpec, out: JobOutput, offs: Offsets | None = None):
        self.spec = spec
        self.out = out
        self.offs = offs
        self.lats = array("q")
        self.stamps = array("q")  # completion times, one I/O after the other (see the module doc)
        self.flushed = 0  # stamps taken out of ``stamps`` so far (done = flushed + len(stamps))
        now = time.perf_counter_ns()
        self.stamp0 = now  # what the first stamp's latency is measured from
        self.t0 = now
        time_based = spec.runtime is not None
        self.ramp_end = now + int(spec.ramp * 1e9) if time_based and spec.ramp > 0 else None
        self.m0 = now if self.ramp_end is None else None
        self.cpu0 = time.thread_time_ns()  # this (the I/O) thread's CPU time at the measurement's start
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

    def _take_stamps(self) -> None:
        """Turn the completion times into latencies (each from the one before)."""
        st = self.stamps
        if not st:
            return
        import numpy as np

        v = np.frombuffer(st, dtype=np.int64)
        d = np.empty_like(v)
        d[0] = v[0] - self.stamp0
        np.subtract(v[1:], v[:-1], out=d[1:])
        self.lats.frombytes(d.tobytes())
        self.stamp0 = st[-1]
        self.flushed += len(st)
        del v
        del st[:]

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
        self._take_stamps()
        if self.m0 is None and now >= self.ramp_end:
            self.m0 = now
            self.cpu0 = time.thread_time_ns()
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
        if self.offs is not None and not self.stop:
            self.offs.refill()
        self.next_event = self._next_event()
        self.stamp0 = time.perf_counter_ns()  # the meter's own time is in no latency
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
        metrics = {spec.progress_key: rate} if rate is not None else {}
        if rate is not None and spec.pattern == "rand":
            metrics["iops"] = rate / spec.bs
        if self.deadline is None and spec.total:  # a size-bound job: how far, in bytes
            metrics.update(done=min(done * spec.bs, spec.total), total=spec.total, unit="bytes")
        call_progress(spec.progress, frac, metrics or None)

    def finish(self, now: int, done: int, short: int | None = None) -> JobOutput:
        """Close the measurement at ``now`` (the last completion counted); ``short``: the real bytes of
        that last completion when it was a short I/O (it adds those, not a block)."""
        out = self.out
        self._take_stamps()
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
        if short is not None and out.ios > 0:
            out.bytes -= self.spec.bs - max(0, short)
        out.elapsed_s = (now - self.m0) / 1e9
        if now > self.m0 and out.ios > 0:  # how busy the thread that submits and reaps was
            cpu_ns = max(0, time.thread_time_ns() - self.cpu0)
            out.extra["engine_cpu_pct"] = 100.0 * cpu_ns / (now - self.m0)
            out.extra["engine_cpu_ns_per_io"] = cpu_ns / out.ios
        # the wall-clock time of the measurement's t = 0, so series of several processes line up
        out.extra["t0_unix"] = time.time() - (time.perf_counter_ns() - self.m0) / 1e9
        if self.qd_n:
            out.qd_mean = self.qd_sum / self.qd_n
        if self.spec.progress is not None:
            spec = self.spec
            last = {spec.progress_key: out.bytes_per_s} if out.elapsed_s > 0 else {}
            if self.deadline is None and spec.total:  # how far it got, in bytes
                last.update(done=min(out.bytes, spec.total), total=spec.total, unit="bytes")
            call_progress(spec.progress, None if out.interrupted else 1.0, last or None)
        return out
