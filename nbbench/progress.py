"""Progress reporting shared by every front end.

A probe takes ``progress``: any callable ``progress(fraction, metrics)`` where
``fraction`` is 0..1 (``None`` when unknown) and ``metrics`` a dict of current
figures keyed like result metrics (``{"read_bytes_per_s": 9.4e8}``).  Front ends
pass a :class:`Progress` (terminal line here, an ipywidgets bar in
``nbbench.ui.progress``); plain Python callers may pass a function or nothing.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Callable, Optional

from .units import format_metric, metric_label

__all__ = ["Progress", "TerminalProgress", "NullProgress", "ProgressFn", "call_progress"]

ProgressFn = Callable[[Optional[float], Optional[dict]], None]


def call_progress(progress, fraction, metrics=None) -> None:
    """Call a progress callback if there is one; a broken callback never stops a probe."""
    if progress is None:
        return
    try:
        progress(fraction, metrics)
    except Exception:  # noqa: BLE001 - display problems must not break measurement
        pass


class Progress:
    """Base: keeps the last state, thread-safe, throttled redraws; subclasses draw."""

    min_interval = 0.2

    def __init__(self, desc: str = "", total: float = 1.0):
        self.desc = desc
        self.fraction: float | None = 0.0
        self.metrics: dict = {}
        self.status = "running"
        self._lock = threading.Lock()
        self._last_draw = 0.0

    def __call__(self, fraction=None, metrics=None) -> None:
        with self._lock:
            if fraction is not None:
                self.fraction = max(0.0, min(1.0, float(fraction)))
            if metrics:
                self.metrics = dict(metrics)
            now = time.monotonic()
            if now - self._last_draw < self.min_interval:
                return
            self._last_draw = now
        self.draw()

    def text(self) -> str:
        figs = ", ".join(f"{metric_label(k)} {format_metric(k, v)}" for k, v in self.metrics.items())
        pct = "" if self.fraction is None else f"{self.fraction * 100:5.1f}%"
        parts = [p for p in (self.desc, pct, figs) if p]
        if self.status != "running":
            parts.append(self.status)
        return "  ".join(parts)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.text()}>"

    def draw(self) -> None:  # pragma: no cover - overridden
        pass

    def close(self, status: str = "ok") -> None:
        """End the bar: ``ok``, ``interrupted`` or ``failed``."""
        self.status = status
        if status == "ok":
            self.fraction = 1.0 if self.fraction is not None else None
        self.draw()


class NullProgress(Progress):
    def draw(self) -> None:
        pass


class TerminalProgress(Progress):
    """One status line on stderr, redrawn in place when stderr is a terminal."""

    def __init__(self, desc: str = "", stream=None, width: int = 24):
        super().__init__(desc)
        self.stream = stream or sys.stderr
        self.width = width
        self.tty = getattr(self.stream, "isatty", lambda: False)()
        if not self.tty:
            self.min_interval = 2.0

    def line(self) -> str:
        if self.fraction is None:
            bar = ""
        else:
            done = int(round(self.fraction * self.width))
            bar = "[" + "#" * done + "." * (self.width - done) + "] "
        return bar + self.text()

    def draw(self) -> None:
        try:
            if self.tty:
                self.stream.write("\r\x1b[2K" + self.line())
                if self.status != "running":
                    self.stream.write("\n")
            elif self.status != "running":
                self.stream.write(self.line() + "\n")
            self.stream.flush()
        except (OSError, ValueError):
            pass
