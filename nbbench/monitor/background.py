"""The one background monitor of a process: a dashboard that stays (``%iobench watch``).

:func:`start` opens a :class:`~nbbench.monitor.Monitor` that keeps sampling until
:func:`stop` (or the process ends), with bounded memory (the last ``window_s`` seconds
at full rate, older samples as means: :class:`~nbbench.monitor.records.RecordBuffer`)
and, with ``serve``, a Prometheus endpoint (:class:`~nbbench.monitor.exporter.MetricsServer`)
that stops with it.  There is at most one: a second :func:`start` raises
:class:`AlreadyWatching`, which says where and when the first was started.
:func:`mark` puts a labelled mark on its timeline.  Views (a live plot a front end
draws) are handed in as objects with ``close()``; this module draws nothing.
"""

from __future__ import annotations

import atexit
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from .exporter import MetricsServer
from .sampler import Monitor

__all__ = ["Background", "AlreadyWatching", "NotWatching", "start", "stop", "current", "mark"]

_lock = threading.RLock()
_current: Background | None = None
_atexit = False


@dataclass
class Background:
    """A running background monitor: the monitor, its metrics server, where it was started."""

    monitor: Monitor
    origin: str = ""
    window_s: float = 600.0
    server: Any = None
    started_at: float = field(default_factory=time.time)
    views: list = field(default_factory=list)
    #: the options it was started with, stored with its result
    params: dict = field(default_factory=dict)

    def describe(self) -> str:
        """'started in cell [5] at 10:02:11 (3 min ago); metrics at http://…'."""
        ago = max(0.0, time.time() - self.started_at)
        when = time.strftime("%H:%M:%S", time.localtime(self.started_at))
        ago_text = (
            f"{ago:.0f} s ago"
            if ago < 120
            else (f"{ago / 60:.0f} min ago" if ago < 7200 else f"{ago / 3600:.1f} h ago")
        )
        where = f" in {self.origin}" if self.origin else ""
        out = f"started{where} at {when} ({ago_text}), sampling every {self.monitor.interval:g} s"
        if self.server is not None and self.server.running:
            out += f"; metrics at {self.server.url}"
        return out

    @property
    def running(self) -> bool:
        return self.monitor.running

    def __repr__(self) -> str:
        return f"<nbbench background monitor {'running' if self.running else 'stopped'}: {self.describe()}>"


class AlreadyWatching(RuntimeError):
    """A background monitor is already running (``.background`` says where)."""

    def __init__(self, bg: Background):
        super().__init__(f"a background monitor is already running ({bg.describe()})")
        self.background = bg


class NotWatching(RuntimeError):
    """No background monitor is running."""


def current() -> Background | None:
    """The running background monitor, or None."""
    with _lock:
        return _current if _current is not None and _current.running else None


def start(
    interval: float = 1.0,
    gpus="all",
    path=None,
    net="auto",
    procs: float | None = 1.0,
    window_s: float = 600.0,
    serve=None,
    origin: str = "",
    sources=None,
    nvml=None,
) -> Background:
    """Start the background monitor (AlreadyWatching if one runs; ValueError / OSError for bad
    options or a port that cannot be bound, with nothing left running)."""
    global _current, _atexit
    with _lock:
        if current() is not None:
            raise AlreadyWatching(_current)
        mon = Monitor(
            interval=interval, gpus=gpus, path=path, net=net, procs=procs, recent_s=window_s, sources=sources, nvml=nvml
        )
        mon.open()
        server = None
        if serve is not None:
            try:
                server = MetricsServer.from_text(mon, serve).start()
            except BaseException:
                mon.stop()
                raise
        mon.start()
        _current = Background(monitor=mon, origin=origin, window_s=float(window_s), server=server)
        if not _atexit:
            atexit.register(_at_exit)
            _atexit = True
        return _current


def stop(status: str = "ok", reason: str | None = None, params: dict | None = None):
    """Stop the background monitor (views, then its server, then the sampler) and return
    ``(background, result)``; NotWatching when none runs."""
    global _current
    with _lock:
        bg = current()
        if bg is None:
            raise NotWatching("no background monitor is running")
        _current = None
    for view in bg.views:
        try:
            view.close()
        except Exception:  # noqa: BLE001 - a view that cannot draw its last frame must not keep the sampler
            pass
    if bg.server is not None:
        bg.server.stop()
    bg.monitor.stop()
    p = dict(bg.params, **(params or {}))
    p.setdefault("what", "watch")
    p.setdefault("window_s", bg.window_s)
    if bg.origin:
        p.setdefault("origin", bg.origin)
    res = bg.monitor.result(status, reason, params=p)
    return bg, res


def mark(text: str = "") -> tuple[float, str]:
    """A labelled mark on the running background monitor's timeline (NotWatching when none runs)."""
    bg = current()
    if bg is None:
        raise NotWatching("no background monitor is running")
    return bg.monitor.mark(text)


def _at_exit() -> None:
    bg = current()
    if bg is None:
        return
    if bg.server is not None:
        try:
            bg.server.stop()
        except Exception:  # noqa: BLE001
            pass
    try:
        bg.monitor.stop()
    except Exception:  # noqa: BLE001
        pass
