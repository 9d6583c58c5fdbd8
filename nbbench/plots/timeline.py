"""Named series over a shared time axis, drawn with matplotlib's object API.

A :class:`Timeline` keeps named series (thread-safe, bounded) and draws them, one
subplot per :class:`~.panel.Panel`, into a ``matplotlib.figure.Figure`` on the Agg canvas
(never pyplot's global state); :meth:`Timeline.png` renders it to PNG bytes.  It is
the figure behind every live plot (:class:`nbbench.ui.liveplot.LivePlot` pushes its
frames into a notebook) and behind a stored monitor run's ``.figure()``.

Redrawing is cheap: axis limits move in 1-2-2.5-5 steps (:func:`~.panel.nice_ceil`) and the
time axis starts at ``min_span_s``, so most frames only redraw the lines and the
status line over a cached background (blitting).

``annotate(fig, axes, data)`` (called on every render with the figure, a dict panel
title -> Axes and a dict series -> (times, values)) and ``status()`` (a line of text
above the plot) are hooks for gauges and annotations.  An ``annotate`` that returns
the list of artists it changes (e.g. ``[bar, label]``) keeps the fast path: those are
drawn over the cached background; one that returns None gets a full redraw every
frame (always correct, several times the cost).  :meth:`Timeline.text` is a
plain-text summary for terminals.
"""

from __future__ import annotations

import io
import math
import threading
import time
from collections import deque
from typing import Any, Callable, Iterable, Mapping

from .panel import Panel, as_panel, nice_ceil

__all__ = ["Timeline"]


def _fmt(v: float) -> str:
    a = abs(v)
    if a >= 100:
        return f"{v:7.0f}"
    if a >= 10:
        return f"{v:7.1f}"
    return f"{v:7.2f}"


def _legend(ax) -> None:
    ax.legend(loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=7, frameon=False,
              borderaxespad=0.0, handlelength=1.5)


class Timeline:
    """Named series over a shared time axis and the Figure that draws them.

    ``Timeline(panels=None, title="", window_s=None, figsize=None, dpi=72, annotate=None,
    status=None, max_points=400, capacity=50000, t0=None, blit=True, min_span_s=10.0)``

    - ``panels``: :class:`Panel` objects or dicts of their fields (default: one panel
      showing every series).
    - ``window_s``: show only the last N seconds (None: everything); the shown range moves in
      steps of a tenth of the window, so most frames only redraw the lines.
    - ``t0``: time origin (monotonic s); default the first point added.
    - ``blit``: redraw only the lines over a cached background while axis limits hold
      (limits move in 1-2-2.5-5 steps, the time axis starts at ``min_span_s``).
    - ``max_points``: points drawn per series (longer series are thinned);
      ``capacity``: points kept per series.

    :attr:`fit` (set for a final frame) fits the time axis to the data instead of
    growing it in steps.  :attr:`dirty` says data arrived since the last draw.
    """

    def __init__(self, panels: Iterable[Any] | None = None, title: str = "", window_s: float | None = None,
                 figsize: tuple[float, float] | None = None, dpi: int = 72,
                 annotate: Callable[[Any, dict, dict], Any] | None = None,
                 status: Callable[[], str] | None = None, max_points: int = 400, capacity: int = 50_000,
                 t0: float | None = None, blit: bool = True, min_span_s: float = 10.0):
        self.panels = [as_panel(p) for p in (panels or [Panel("", ["*"])])]
        if not self.panels:
            raise ValueError("a plot needs at least one panel")
        self.title = title
        self.window_s = window_s
        self.dpi = dpi
        self.figsize = figsize or (8.0, 0.8 + 1.75 * len(self.panels))
        self.annotate = annotate
        self.status = status
        self.max_points = max(10, int(max_points))
        self.capacity = max(100, int(capacity))
        self.t0 = t0
        self.fit = False
        self.dirty = False
        self.min_span_s = max(1e-3, float(min_span_s))
        self._series: dict[str, tuple[deque, deque]] = {}
        self._match: dict[str, tuple[int, ...]] = {}
        self._marks: list[tuple[float, str]] = []
        self._lock = threading.Lock()
        self._render_lock = threading.Lock()
        self._blit = bool(blit)
        self._fig = None
        self._axes: list[Any] = []
        self._lines: dict[tuple[int, str], Any] = {}
        self._legend_n: dict[int, int] = {}
        self._mark_artists: list[Any] = []
        self._extra: list[Any] = []
        self._status_text = None
        self._bg = None
        self._bg_key = None
        self._ytop: dict[int, float] = {}
        self._xlim = None
        self._n_marks = -1
        self._marks_tmin = None

    # ------------------------------------------------------------------ data
    def add(self, t: float, values: Mapping[str, Any]) -> None:
        """Append one point per series in ``values`` (those the panels show) at time ``t``.

        Thread-safe and cheap (a sampler thread calls it); None values are gaps.
        """
        match = self._match
        with self._lock:
            if self.t0 is None:
                self.t0 = t
            for k, v in values.items():
                m = match.get(k)
                if m is None:
                    m = match[k] = tuple(i for i, p in enumerate(self.panels) if p.matches(k))
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
        """A vertical line at time ``t`` (monotonic s) on every panel, labelled on the top one."""
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

    # ---------------------------------------------------------------- figure
    def _build(self):
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        fig = Figure(figsize=self.figsize, dpi=self.dpi)
        FigureCanvasAgg(fig)
        n = len(self.panels)
        top = 1.0 - 0.62 / self.figsize[1]
        fig.subplots_adjust(left=0.09, right=0.80, top=top, bottom=0.38 / self.figsize[1] + 0.02, hspace=0.35)
        axes = fig.subplots(n, 1, sharex=True, squeeze=False)[:, 0]
        for ax, p in zip(axes, self.panels):
            ax.set_title(p.title, fontsize=9, loc="left", pad=3)
            if p.unit:
                ax.set_ylabel(p.unit, fontsize=8)
            ax.tick_params(labelsize=7)
            ax.grid(True, linewidth=0.4, alpha=0.5)
            if p.ylim is not None:
                ax.set_ylim(*p.ylim)
        axes[-1].set_xlabel("time (s)", fontsize=8)
        for i, (ax, p) in enumerate(zip(axes, self.panels)):
            fixed = [n for n in p.series if not any(ch in n for ch in "*?[")]
            for name in fixed:
                line, = ax.plot([], [], linewidth=1.2, label=p.labels.get(name, name), animated=self._blit,
                                **p.style_for(name))
                self._lines[(i, name)] = line
            if fixed:
                _legend(ax)
                self._legend_n[i] = len(fixed)
        fig.text(0.01, 1.0 - 0.06 / self.figsize[1], self.title, fontsize=9, va="top", weight="bold")
        self._status_text = fig.text(0.01, 1.0 - 0.24 / self.figsize[1], "", fontsize=8, va="top",
                                     family="monospace", animated=self._blit)
        self._fig, self._axes = fig, list(axes)

    def _snapshot(self) -> tuple[dict, list, float]:
        with self._lock:
            t0 = self.t0 if self.t0 is not None else 0.0
            data = {k: (list(s[0]), list(s[1])) for k, s in self._series.items()}
            marks = list(self._marks)
            self.dirty = False
        return data, marks, t0

    def _visible(self, data: dict, t0: float) -> tuple[float, float, dict]:
        """The time range shown and each series within it, thinned, as times since t0."""
        tmax = max((s[0][-1] for s in data.values() if s[0]), default=t0) - t0
        if self.window_s is None:
            if self.fit:  # the final frame (or a static figure) fits the data
                tmin, xmax = 0.0, max(tmax, 0.1)
            else:  # start at min_span_s, then grow in nice steps: few full redraws over a long run
                tmin, xmax = 0.0, nice_ceil(max(tmax * 1.08, self.min_span_s))
        elif self.fit:
            tmin = max(0.0, tmax - self.window_s)
            xmax = max(tmax, tmin + 1.0)
        else:  # the window moves in steps of a tenth of itself: most frames redraw only the lines
            step = nice_ceil(self.window_s / 10.0)
            if tmax * 1.08 <= self.window_s:
                tmin, xmax = 0.0, min(self.window_s, nice_ceil(max(tmax * 1.08, self.min_span_s)))
            else:
                xmax = math.ceil(tmax / step + 1e-9) * step
                tmin = max(0.0, xmax - self.window_s)
        rel = {}
        for name, (ts, vs) in data.items():
            if self.window_s is not None:
                lo = t0 + tmin
                i = 0
                while i < len(ts) and ts[i] < lo:
                    i += 1
                ts, vs = ts[i:], vs[i:]
            n = len(ts)
            if n > self.max_points:
                step = math.ceil(n / self.max_points)
                ts, vs = ts[::step] + [ts[-1]], vs[::step] + [vs[-1]]
            rel[name] = ([t - t0 for t in ts], vs)
        return tmin, xmax, rel

    def _draw(self) -> tuple:
        """Bring the artists up to date (caller holds the render lock).

        Returns the *layout key*: what the static background depends on (axis
        limits, legends, marks).  Limits move in "nice" steps, so most frames only
        redraw the lines and the status line over a cached background (blitting).
        """
        if self._fig is None:
            self._build()
        data, marks, t0 = self._snapshot()
        tmin, xmax, rel = self._visible(data, t0)
        key: list = [round(tmin, 3), xmax, len(marks)]
        for i, (ax, p) in enumerate(zip(self._axes, self.panels)):
            vmax = 0.0
            names = [k for k in rel if i in self._match.get(k, ())]
            for name in names:
                xs, vs = rel[name]
                ys = [v * p.scale for v in vs]
                line = self._lines.get((i, name))
                if line is None:
                    line, = ax.plot([], [], linewidth=1.2, label=p.labels.get(name, name),
                                    animated=self._blit, **p.style_for(name))
                    self._lines[(i, name)] = line
                line.set_data(xs, ys)
                if ys:
                    vmax = max(vmax, max(ys))
            n_lines = sum(1 for (j, _) in self._lines if j == i)
            if n_lines != self._legend_n.get(i, 0):
                self._legend_n[i] = n_lines
                _legend(ax)
            if p.ylim is None:
                top = max(self._ytop.get(i, 0.0), nice_ceil(max(vmax * 1.1, p.ymax_min)))
                if top != self._ytop.get(i):
                    ax.set_ylim(0.0, top)
                    self._ytop[i] = top
            if not any(rel.get(k, ((), ()))[0] for k in names) and p.note \
                    and not getattr(ax, "_nbbench_note", False):
                ax.text(0.5, 0.5, p.note, transform=ax.transAxes, ha="center", va="center", fontsize=8,
                        color="#777", wrap=True)
                ax._nbbench_note = True
            key += [bool(getattr(ax, "_nbbench_note", False)), self._ytop.get(i), self._legend_n.get(i, 0)]
        if self._xlim != (tmin, xmax):
            self._axes[0].set_xlim(tmin, xmax)
            self._xlim = (tmin, xmax)
        self._draw_marks(marks, t0, tmin)
        return tuple(key + self._draw_hooks(rel))

    def _draw_marks(self, marks: list, t0: float, tmin: float) -> None:
        if len(marks) == self._n_marks and (self.window_s is None or tmin == self._marks_tmin):
            return
        self._marks_tmin = tmin
        for a in self._mark_artists:
            a.remove()
        self._mark_artists = []
        for t, label in marks:
            x = t - t0
            if x < tmin:
                continue
            for ax in self._axes:
                self._mark_artists.append(ax.axvline(x, color="#888", linewidth=0.8, linestyle="--"))
            if label:
                ax0 = self._axes[0]
                self._mark_artists.append(ax0.text(x, 1.0, " " + label, transform=ax0.get_xaxis_transform(),
                                                   fontsize=7, va="bottom", color="#555", clip_on=False))
        self._n_marks = len(marks)

    def _draw_hooks(self, rel: dict) -> list:
        """The status line and the annotate hook; returns what they add to the layout key."""
        head = ""
        if self.status is not None:
            try:
                head = self.status() or ""
            except Exception:  # noqa: BLE001 - a broken hook must not stop drawing
                head = ""
        self._status_text.set_text(head)
        self._extra = []
        if self.annotate is None:
            return []
        try:
            extra = self.annotate(self._fig, {p.title: ax for p, ax in zip(self.panels, self._axes)}, rel)
        except Exception:  # noqa: BLE001
            extra = None
        if isinstance(extra, (list, tuple)):
            # the hook names the artists it changes: they are drawn over the cached background
            self._extra = [a for a in extra if a is not None]
            for a in self._extra:
                a.set_animated(self._blit)
            return [len(self._fig.axes)]
        return [time.monotonic()]  # the hook may change anything: no cached background

    def _paint(self) -> None:
        """Draw the figure into the Agg buffer (background cached while the layout holds)."""
        key = self._draw()
        canvas = self._fig.canvas
        if not self._blit:
            canvas.draw()
            return
        if key != self._bg_key or self._bg is None:
            canvas.draw()  # animated artists (lines, status) are left out of the background
            self._bg = canvas.copy_from_bbox(self._fig.bbox)
            self._bg_key = key
        else:
            canvas.restore_region(self._bg)
        for line in self._lines.values():
            self._fig.draw_artist(line)
        for a in self._extra:
            self._fig.draw_artist(a)
        self._fig.draw_artist(self._status_text)

    def png(self, compress_level: int = 1) -> bytes:
        """Draw the current data and return PNG bytes (any thread; serialised)."""
        from PIL import Image

        with self._render_lock:
            self._paint()
            canvas = self._fig.canvas
            w, h = canvas.get_width_height()
            img = Image.frombuffer("RGBA", (w, h), canvas.buffer_rgba(), "raw", "RGBA", 0, 1).convert("RGB")
            buf = io.BytesIO()
            img.save(buf, format="PNG", compress_level=compress_level)
        return buf.getvalue()

    @property
    def figure(self):
        """The matplotlib Figure, brought up to date (a plain figure: ``savefig`` shows everything)."""
        with self._render_lock:
            self._blit = False
            self.fit = True
            self._bg = None
            self._draw()
            for line in self._lines.values():
                line.set_animated(False)
            self._status_text.set_animated(False)
            for a in self._extra:
                a.set_animated(False)
        return self._fig

    # ----------------------------------------------------------------- text
    def text(self) -> str:
        """Per series: last, mean and max, in the panel's unit (a terminal summary)."""
        lines = [self.title] if self.title else []
        with self._lock:
            data = {k: list(s[1]) for k, s in self._series.items()}
            span = max((s[0][-1] - (self.t0 or s[0][0]) for s in self._series.values() if s[0]), default=0.0)
        if span:
            lines.append(f"{span:.1f} s")
        for i, p in enumerate(self.panels):
            names = [k for k in data if i in self._match.get(k, ())]
            if not names:
                if p.note:
                    lines.append(f"{p.title}: {p.note}")
                continue
            lines.append(f"{p.title}" + (f" ({p.unit})" if p.unit else ""))
            for name in names:
                vs = [v * p.scale for v in data[name]]
                if vs:
                    lines.append(f"  {p.labels.get(name, name):<28} last {_fmt(vs[-1])}  "
                                 f"mean {_fmt(sum(vs) / len(vs))}  max {_fmt(max(vs))}")
        return "\n".join(lines)
