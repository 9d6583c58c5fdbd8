"""The background sampler: one thread, pluggable sources, subscribers.

A :class:`Monitor` calls every source's ``sample(now)`` at a fixed interval on its
own thread, merges the returned fields into one *record* (a flat dict keyed
``"<namespace>.<field>_<unit>"``, e.g. ``"gpu0.util_pct"``, ``"cpu.util_pct"``,
``"disk.read_bytes_per_s"``, plus ``"t"``: :func:`time.monotonic` seconds), keeps
it (:class:`~nbbench.monitor.records.RecordBuffer`: the newest ``capacity`` records in
a ring buffer, running statistics of every field over the *whole* run, windows) and
hands each record to the subscribers.

Per-sample work is kept small (no pandas, no allocation beyond the record): at
10 Hz the thread costs well under 1 % of one core (``bench/monitor_overhead.py``
measures it; :attr:`Monitor.sampler_cpu_s` is the thread's own CPU time).

A *source* is any object with::

    name: str                       # "host", "gpu", ...
    sample(now: float) -> dict      # field -> number or None (None: no value this time)
    close() -> None

and optionally ``open()`` (called once by :meth:`Monitor.start`), ``notes``
(a list of sentences: what is N/A and why), ``na`` (field -> reason),
``labels`` (dict: how it measures) and ``summary()`` (dict of result metrics
computed from counters, e.g. total bytes read).  A source must not raise from
``sample``; if it does, the monitor notes it and stops calling that source.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol, runtime_checkable

from .disk import DiskSource
from .gpu import NvmlGpuSource
from .net import NetSource, parse_interfaces
from .procs import ProcessTreeSource
from .records import RecordBuffer
from .result import build_result
from .stalls import StallSource

__all__ = ["Monitor", "Source", "DEFAULT_CAPACITY"]

#: ring-buffer length: 2 hours at the default 0.2 s interval
DEFAULT_CAPACITY = 36_000


@runtime_checkable
class Source(Protocol):
    name: str

    def sample(self, now: float) -> dict:  # pragma: no cover - protocol
        ...

    def close(self) -> None:  # pragma: no cover - protocol
        ...


def _parse_gpus(gpus) -> list[int] | str | None:
    """'all' | 'none' | None | int | '0,1' | [0, 1] -> 'all' | [] | [ints]."""
    if gpus is None or gpus == "all":
        return "all"
    if gpus in ("none", "", False):
        return []
    if isinstance(gpus, int) and not isinstance(gpus, bool):
        return [gpus]
    if isinstance(gpus, str):
        try:
            return [int(x) for x in gpus.split(",") if x.strip()]
        except ValueError:
            raise ValueError(f"gpus must be 'all', 'none' or indices like 0,1, not {gpus!r}") from None
    return [int(x) for x in gpus]


class Monitor(RecordBuffer):
    """Sample sources in the background.

    ``Monitor(interval=0.2, sources=None, gpus="all", path=None, capacity=36000)``

    - ``interval``: seconds between samples (0.2 s default; 0.1 s = 10 Hz).
    - ``sources``: a list of source objects; default the host source (psutil: CPU,
      memory, the disk behind ``path``, this process tree's I/O) and the NVML GPU
      source for ``gpus`` (``"all"``, ``"none"``, ``[0, 1]`` or ``"0,1"``).
    - ``path``: a directory whose block device is watched (default: the current
      directory); system-wide disk figures are always sampled too.
    - ``capacity``: records kept in the ring buffer (older ones are dropped; running
      statistics still cover the whole run).
    - ``net``: network interfaces (:class:`~nbbench.monitor.net.NetSource`): ``"auto"``
      (default: every interface but loopback, counted once), ``"all"``, ``"none"`` or
      names (``"lo"``, ``"eth0,eth1"``).
    - ``procs``: seconds between updates of the per-process table
      (:class:`~nbbench.monitor.proctable.ProcessTable`; default 1.0; 0: no table).
    - ``recent_s``: for a monitor that lives long (``nbbench.watch``): keep the last
      ``recent_s`` seconds at full rate and older samples as 10 s / 1 min means
      (:class:`~nbbench.monitor.records.RecordBuffer`), so memory stays bounded.

    Use as a context manager (``with Monitor() as m: ...``) or ``start()`` / ``stop()``.
    After (or during) the run (the records' methods are
    :class:`~nbbench.monitor.records.RecordBuffer`'s): :meth:`frame` (pandas DataFrame of the records),
    :meth:`mean` / :meth:`stats` over a monotonic-time window, :meth:`latest`,
    :meth:`records`, :meth:`result` (a :class:`~nbbench.monitor.result.MonitorResult`).
    :meth:`subscribe` registers ``callback(record)``, called on the sampler thread
    for every record — keep it short; it must not modify the record.
    """

    def __init__(
        self,
        interval: float = 0.2,
        sources: Iterable[Any] | None = None,
        gpus="all",
        path=None,
        capacity: int = DEFAULT_CAPACITY,
        nvml=None,
        net="auto",
        procs: float | None = 1.0,
        recent_s: float | None = None,
    ):
        interval = float(interval)
        if not interval > 0 or not math.isfinite(interval):
            raise ValueError(f"interval must be a positive number of seconds, not {interval!r}")
        if interval < 0.01:
            raise ValueError(f"interval {interval} s is too short: use 0.01 s or more")
        if recent_s:
            capacity = max(int(capacity), int(1.5 * float(recent_s) / interval) + 10)
        super().__init__(interval, capacity, recent_s=recent_s)

        self.net = parse_interfaces(net)
        self.procs_interval = float(procs) if procs else None
        #: labelled marks on the timeline: (monotonic t, text)
        self.marks: list[tuple[float, str]] = []
        self._mark_subs: list[Callable[[float, str], Any]] = []
        self.gpus = _parse_gpus(gpus)
        self.path = path
        self._nvml = nvml
        self._given_sources = list(sources) if sources is not None else None
        self.sources: list[Any] = []
        self._subs: list[Callable[[dict], Any]] = []
        # held while the thread runs; stop() releases it: the thread's wait between samples is one
        # lock acquire with a timeout (cheaper than an Event's Condition at 10 Hz)
        self._halt = threading.Lock()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._dead_sources: set[str] = set()
        self.notes: list[str] = []
        self.n_late = 0
        self.t_stop: float | None = None
        self.started_at: float | None = None  # wall clock (time.time())
        self.ended_at: float | None = None
        self.sampler_cpu_s = 0.0
        self._opened = False
        self._paused = False

    # ----------------------------------------------------------------- sources
    def _default_sources(self) -> list[Any]:
        # here, not at the top: each source's module imports this one (Source), and a monitor
        # built with its own sources never loads them
        from .cpu import CpuSource

        out: list[Any] = [
            CpuSource(),
            DiskSource(path=self.path),
            ProcessTreeSource(table=self.procs_interval),
            StallSource(),
        ]
        if self.net != "none":
            out.append(NetSource(self.net))
        if self.gpus != []:
            out.append(NvmlGpuSource(gpus=self.gpus, nvml=self._nvml))
        return out

    def _note(self, sentence: str) -> None:
        if sentence not in self.notes:
            self.notes.append(sentence)

    # ------------------------------------------------------------ start / stop
    def open(self) -> Monitor:
        """Open the sources (NVML init, device lookup) without sampling yet.

        :meth:`start` calls it; call it first to learn what will be sampled
        (``sources``, their ``info``/``labels``) before the clock starts, e.g. to
        build a plot.  Idempotent.
        """
        if self._opened:
            return self
        self._opened = True
        self.sources = self._given_sources if self._given_sources is not None else self._default_sources()
        for src in self.sources:
            opener = getattr(src, "open", None)
            if opener is not None:
                try:
                    opener()
                except Exception as exc:  # noqa: BLE001 - a source that cannot open is N/A
                    self._note(f"source {getattr(src, 'name', src)!r} could not start: {exc}")
                    self._dead_sources.add(getattr(src, "name", repr(src)))
        for src in self.sources:  # sources that use another's (the process table, the GPUs' handles)
            link = getattr(src, "link", None)
            if link is not None and getattr(src, "name", None) not in self._dead_sources:
                try:
                    link(self.sources)
                except Exception as exc:  # noqa: BLE001
                    self._note(f"source {getattr(src, 'name', src)!r} could not use the others: {exc}")
        return self

    def source(self, name: str):
        """The source called ``name`` ("cpu", "disk", "proc", "net", "gpu") or None."""
        return next((s for s in self.sources if getattr(s, "name", None) == name), None)

    def start(self) -> Monitor:
        """Open the sources (unless :meth:`open` did), take a first sample, start the thread."""
        if self._running:
            return self
        if self.t_stop is not None:
            raise RuntimeError("this Monitor has run and stopped (its sources are closed): make a new one")
        self.open()
        self._stopping = False
        if not self._halt.locked():
            self._halt.acquire()
        self.started_at = time.time()
        self.t_start = time.monotonic()
        self.t_stop = None
        self._take(self.t_start)  # baseline: levels now, rates from the next sample on
        self._running = True
        self._thread = threading.Thread(target=self._loop, name="nbbench-monitor", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> Monitor:
        """Stop the thread, take a last sample (so the tail of the run is covered), close sources."""
        if not self._running:
            if self._opened and self.t_start is None:  # opened, never started: just close
                self._close_sources()
                self._opened = False
            return self
        self._stopping = True
        try:
            self._halt.release()
        except RuntimeError:
            pass
        if self._thread is not None:
            self._thread.join()
        self._running = False
        now = time.monotonic()
        self._take(now)
        self.t_stop = now
        self.ended_at = time.time()
        self._close_sources()
        with self._cond:
            self._cond.notify_all()
        return self

    def _close_sources(self) -> None:
        for src in self.sources:
            try:
                src.close()
            except Exception:  # noqa: BLE001
                pass

    @property
    def running(self) -> bool:
        return self._running

    def __enter__(self) -> Monitor:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # ------------------------------------------------------------------ thread
    def _loop(self) -> None:
        base = self.sampler_cpu_s
        cpu0 = time.thread_time()
        interval = self.interval
        nxt = self.t_start + interval
        halt = self._halt
        while True:
            delay = nxt - time.monotonic()
            if delay > 0 and halt.acquire(timeout=delay):
                halt.release()
                break
            if self._stopping:
                break
            now = time.monotonic()
            if not self._paused:
                self._take(now)
            nxt += interval
            if nxt < now:  # fell behind (a busy machine): skip, do not burst
                self.n_late += 1
                nxt = now + interval
            # this thread's own CPU time so far (kept current: readable while running)
            self.sampler_cpu_s = base + time.thread_time() - cpu0
        self.sampler_cpu_s = base + time.thread_time() - cpu0

    def pause(self) -> None:
        """Stop sampling until :meth:`resume` (the thread stays; nothing is recorded meanwhile).

        The first record after resuming describes the whole gap (rates average over it).
        """
        self._paused = True

    def resume(self) -> None:
        self._paused = False

    @property
    def paused(self) -> bool:
        return self._paused

    def _take(self, now: float) -> dict:
        rec: dict[str, Any] = {"t": now}
        for src in self.sources:
            name = getattr(src, "name", None) or repr(src)
            if name in self._dead_sources:
                continue
            try:
                fields = src.sample(now)
            except Exception as exc:  # noqa: BLE001 - a broken source is dropped, never fatal
                self._dead_sources.add(name)
                self._note(f"source {name!r} failed and was stopped: {type(exc).__name__}: {exc}")
                continue
            if fields:
                rec.update(fields)
        self._append(rec, now)
        for cb in tuple(self._subs):
            try:
                cb(rec)
            except Exception as exc:  # noqa: BLE001 - a broken subscriber is removed
                self.unsubscribe(cb)
                self._note(
                    f"subscriber {getattr(cb, '__qualname__', cb)!r} raised {type(exc).__name__}: {exc} and was removed"
                )
        return rec

    # ------------------------------------------------------------- subscribers
    def subscribe(self, callback: Callable[[dict], Any]) -> Callable[[], None]:
        """Call ``callback(record)`` for each new record (on the sampler thread).

        Returns a function that unsubscribes.  A callback that raises is removed.
        """
        self._subs.append(callback)
        return lambda: self.unsubscribe(callback)

    def unsubscribe(self, callback) -> None:
        try:
            self._subs.remove(callback)
        except ValueError:
            pass

    # ------------------------------------------------------------------- marks
    def mark(self, text: str = "", t: float | None = None) -> tuple[float, str]:
        """A labelled mark on the timeline at ``t`` (monotonic s; default now): stored in the
        result (``samples["marks"]``) and drawn as a vertical line."""
        m = (time.monotonic() if t is None else float(t), str(text))
        self.marks.append(m)
        if len(self.marks) > 10_000:  # a mark per step of a week-long loop: keep the newest
            del self.marks[:1000]
        for cb in tuple(self._mark_subs):
            try:
                cb(*m)
            except Exception:  # noqa: BLE001
                self._mark_subs.remove(cb)
        return m

    def on_mark(self, callback: Callable[[float, str], Any]) -> Callable[[], None]:
        """Call ``callback(t, text)`` for each new mark; returns a function that unsubscribes."""
        self._mark_subs.append(callback)
        return lambda: self._mark_subs.remove(callback) if callback in self._mark_subs else None

    # ------------------------------------------------------------------ labels
    def na(self) -> dict[str, str]:
        """field -> why it is N/A, over all sources."""
        out: dict[str, str] = {}
        for src in self.sources:
            out.update(getattr(src, "na", None) or {})
        return out

    def all_notes(self) -> list[str]:
        out = []
        for src in self.sources:
            for n in getattr(src, "notes", None) or []:
                if n not in out:
                    out.append(n)
        for n in self.notes:
            if n not in out:
                out.append(n)
        return out

    @property
    def wall_s(self) -> float | None:
        if self.t_start is None:
            return None
        end = self.t_stop if self.t_stop is not None else time.monotonic()
        return end - self.t_start

    @property
    def sampler_cpu_pct(self) -> float | None:
        """CPU time of the sampler thread(s) as % of one core over the run so far."""
        wall = self.wall_s
        if not wall:
            return None
        cpu = self.sampler_cpu_s
        for src in self.sources:
            cpu += getattr(src, "thread_cpu_s", 0.0) or 0.0
        return 100.0 * cpu / wall

    def result(self, status: str = "ok", reason: str | None = None, params: dict | None = None):
        """A :class:`~nbbench.monitor.result.MonitorResult` of the run (stops the monitor first)."""

        if self._running:
            self.stop()
        return build_result(self, status=status, reason=reason, params=params)

    def __repr__(self) -> str:
        state = "running" if self._running else "stopped"
        return f"<Monitor {state} interval={self.interval}s samples={self.n_samples}>"
