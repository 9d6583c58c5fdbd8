"""The data half of a :class:`~.timeline.Timeline`: named series over a shared time axis.

:class:`TimelineData` keeps the points (thread-safe: a sampler thread adds them, a drawing
thread takes snapshots; bounded: ``capacity`` points per series) and the vertical marks,
routes each series to the subplots that show it, says whether there is a plot worth drawing
(:meth:`~TimelineData.has_plot`) and sums the series up as text for terminals
(:meth:`~TimelineData.text`).  Drawing is :class:`~.timeline.Timeline`'s; nothing here
imports matplotlib.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

from .style import finite as _finite
from .style import too_short
from .style import value_text as _fmt
from .subplot import Subplot, as_subplot

__all__ = ["TimelineData"]


class TimelineData:
    """Named series over a shared time axis, routed to ``subplots`` (see :class:`~.timeline.Timeline`
    for the arguments); the base of :class:`~.timeline.Timeline`."""

    def __init__(
        self,
        subplots: Iterable[Any] | None = None,
        title: str = "",
        capacity: int = 50_000,
        t0: float | None = None,
        min_plot_s: float = 0.0,
    ):
        self.subplots = [as_subplot(p) for p in (subplots or [Subplot("", ["*"])])]
        if not self.subplots:
            raise ValueError("a plot needs at least one subplot")
        self.title = title
        self.capacity = max(100, int(capacity))
        self.t0 = t0
        self.dirty = False
        self.min_plot_s = float(min_plot_s or 0.0)
        self._series: dict[str, tuple[deque, deque]] = {}
        self._match: dict[str, tuple[int, ...]] = {}
        self._marks: list[tuple[float, str]] = []
        self._lock = threading.Lock()

    def add(self, t: float, values: Mapping[str, Any]) -> None:
        """Append one point per series in ``values`` (those the subplots show) at time ``t``.

        Thread-safe and cheap (a sampler thread calls it); None values are gaps.
        """
        match = self._match
        with self._lock:
            if self.t0 is None:
                self.t0 = t
            for k, v in values.items():
                m = match.get(k)
                if m is None:
                    m = match[k] = tuple(i for i, p in enumerate(self.subplots) if p.matches(k))
                if not m or v is None or v.__class__ not in (float, int):
                    continue
                s = self._series.get(k)
                if s is None:
                    s = self._series[k] = (deque(maxlen=self.capacity), deque(maxlen=self.capacity))
                s[0].append(t)
                s[1].append(v)
            self.dirty = True

    def add_record(self, rec: Mapping[str, Any]) -> None:
        """A monitor record (``rec["t"]`` is its time)."""
        self.add(rec["t"], rec)

    def mark(self, t: float, label: str = "") -> None:
        """A vertical line at time ``t`` (monotonic s) on every subplot, labelled on the top one."""
        with self._lock:
            self._marks.append((t, label))
            self.dirty = True

    def series(self, name: str) -> tuple[list[float], list[float]]:
        """``(times since t0, values)`` of a series as stored (unscaled)."""
        with self._lock:
            s = self._series.get(name)
            if s is None:
                return [], []
            t0 = self.t0 or 0.0
            return [t - t0 for t in s[0]], list(s[1])

    def names(self) -> list[str]:
        with self._lock:
            return list(self._series)

    def _snapshot(self) -> tuple[dict, list, float]:
        with self._lock:
            t0 = self.t0 if self.t0 is not None else 0.0
            data = {k: (list(s[0]), list(s[1])) for k, s in self._series.items()}
            marks = list(self._marks)
            self.dirty = False
        return data, marks, t0

    def _span(self) -> float:
        """How long the run has lasted: from t0 to the last point."""
        with self._lock:
            last = max((s[0][-1] for s in self._series.values() if s[0]), default=None)
            return 0.0 if last is None or self.t0 is None else last - self.t0

    def has_plot(self) -> bool:
        """Whether any series has two values or more over ``min_plot_s`` at least: less draws
        empty axes, a lone dot or two dots a few ms apart."""
        with self._lock:
            two = any(len(_finite(s[1])) >= 2 for s in self._series.values())
        return two and self._span() >= self.min_plot_s

    def no_plot_text(self) -> str | None:
        """The sentence shown instead of a figure without :meth:`has_plot` (None when it has one)."""
        if self.has_plot():
            return None

        span = self._span()
        why = too_short(span, self.min_plot_s / 2) if self.min_plot_s and span else None
        return why or "no plot: the run ended before two points were measured"

    # ----------------------------------------------------------------- text
    def text(self) -> str:
        """Per series: last, mean and max, in the subplot's unit (a terminal summary)."""
        lines = [self.title] if self.title else []
        with self._lock:
            data = {k: list(s[1]) for k, s in self._series.items()}
            span = max((s[0][-1] - (self.t0 or s[0][0]) for s in self._series.values() if s[0]), default=0.0)
        if span:
            lines.append(f"{span:.1f} s")
        for i, p in enumerate(self.subplots):
            names = [k for k in data if i in self._match.get(k, ())]
            if not names:
                if p.note:
                    lines.append(f"{p.title}: {p.note}")
                continue
            lines.append(f"{p.title}" + (f" ({p.unit})" if p.unit else ""))
            for name in names:
                vs = [v * p.scale for v in _finite(data[name])]
                if vs:
                    lines.append(
                        f"  {p.labels.get(name, name):<28} last {_fmt(vs[-1])}  "
                        f"mean {_fmt(sum(vs) / len(vs))}  max {_fmt(max(vs))}"
                    )
        return "\n".join(lines)
