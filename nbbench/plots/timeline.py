"""Named series over a shared time axis, drawn with matplotlib's object API.

A :class:`Timeline` keeps named series (thread-safe, bounded) and draws them, one
subplot per :class:`~.subplot.Subplot`, into a ``matplotlib.figure.Figure`` on the Agg canvas
(never pyplot's global state); :meth:`Timeline.png` renders it to PNG bytes.  It is
the figure behind every live plot (:class:`nbbench.ui.liveplot.LivePlot` pushes its
frames into a notebook) and behind a stored monitor run's ``.figure()``.

Redrawing is cheap: axis limits move in 1-2-2.5-5 steps (:func:`~.subplot.nice_ceil`) and the
time axis starts at ``min_span_s``, so most frames only redraw the lines and the
status line over a cached background (blitting).

``annotate(fig, axes, data)`` (called on every render with the figure, a dict subplot
title -> Axes and a dict series -> (times, values)) and ``status()`` (a line of text
above the plot) are hooks for gauges and annotations.  An ``annotate`` that returns
the list of artists it changes (e.g. ``[bar, label]``) keeps the fast path: those are
drawn over the cached background; one that returns None gets a full redraw every
frame (always correct, several times the cost).  The series themselves (adding points,
marks, the plain-text summary for terminals :meth:`Timeline.text`) are kept by its base,
:class:`~.timedata.TimelineData`.
"""

from __future__ import annotations

import io
import math
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from .style import FONT, wrap
from .style import figsize as _min_width
from .style import finite as _finite
from .style import legend_right as _legend
from .subplot import draw_targets, nice_ceil
from .timedata import TimelineData

__all__ = ["Timeline"]


class Timeline(TimelineData):
    """Named series over a shared time axis and the Figure that draws them.

    ``Timeline(subplots=None, title="", window_s=None, figsize=None, dpi=80, annotate=None,
    status=None, max_points=400, capacity=50000, t0=None, blit=True, min_span_s=10.0, span_s=None,
    min_plot_s=0.0, subtitle="")``

    - ``subplots``: :class:`Subplot` objects or dicts of their fields (default: one subplot
      showing every series).
    - ``window_s``: show only the last N seconds (None: everything); the shown range moves in
      steps of a tenth of the window, so most frames only redraw the lines.
    - ``span_s``: the run's expected length (a probe's runtime + ramp): the time axis spans
      it from the start.  None (a run of unknown length, a monitored cell): the axis starts
      at ``min_span_s`` and grows with the data in nice steps (each step is a full redraw,
      which the drawing budget pays for with a long rest); the final frame fits the data.
    - ``figsize``, ``dpi``: the figure is at least 800 px wide (a narrower figsize is widened).
    - ``subtitle``: a note under the title (wrapped, never cut), e.g. why the GPU is N/A.
    - ``min_plot_s``: a run shorter than this (two sampling intervals or windows) is not
      worth a plot: :meth:`has_plot` is False and :meth:`no_plot_text` says why.
    - ``t0``: time origin (monotonic s); default the first point added.
    - ``blit``: redraw only the lines over a cached background while axis limits hold
      (limits move in 1-2-2.5-5 steps, the time axis starts at ``min_span_s``).
    - ``max_points``: points drawn per series (longer series are thinned);
      ``capacity``: points kept per series.

    :attr:`fit` (set for a final frame) fits the time axis to the data instead of
    growing it in steps.  :attr:`dirty` says data arrived since the last draw.  A NaN value
    ends a line's segment (e.g. one segment per configuration of a sweep).  :meth:`has_plot`
    says whether any series has two points: a figure with less shows nothing worth a picture.
    """

    def __init__(
        self,
        subplots: Iterable[Any] | None = None,
        title: str = "",
        window_s: float | None = None,
        figsize: tuple[float, float] | None = None,
        dpi: int = 80,
        annotate: Callable[[Any, dict, dict], Any] | None = None,
        status: Callable[[], str] | None = None,
        max_points: int = 400,
        capacity: int = 50_000,
        t0: float | None = None,
        blit: bool = True,
        min_span_s: float = 10.0,
        span_s: float | None = None,
        min_plot_s: float = 0.0,
        subtitle: str = "",
    ):
        super().__init__(subplots, title=title, capacity=capacity, t0=t0, min_plot_s=min_plot_s)
        self.subtitle = subtitle
        self.window_s = window_s
        self.dpi = dpi
        self.figsize = _min_width(*(figsize or (10.0, 0.9 + 1.9 * len(self.subplots))), dpi)
        self.annotate = annotate
        self.status = status
        self.max_points = max(10, int(max_points))
        self.fit = False
        self.min_span_s = max(1e-3, float(min_span_s))
        self.span_s = span_s
        self._target_key: dict[int, tuple] = {}
        self._target_artists: dict[int, list] = {}
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

    # ---------------------------------------------------------------- figure
    def _build(self):
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        fig = Figure(figsize=self.figsize, dpi=self.dpi)
        FigureCanvasAgg(fig)
        n = len(self.subplots)
        w_in, h_in = self.figsize
        # a long title wraps (never cut mid-word); the layout makes room for its lines and the status line
        title = wrap(self.title, w_in * self.dpi * 0.97, FONT["suptitle"], self.dpi)
        line_in = FONT["suptitle"] * 1.3 / 72
        head_in = 0.08 + line_in * (title.count("\n") + 1 if title else 0)
        sub = wrap(self.subtitle, w_in * self.dpi * 0.97, FONT["label"], self.dpi)
        if sub:
            fig.text(0.01, 1.0 - head_in / h_in, sub, fontsize=FONT["label"], va="top", color="#555", linespacing=1.15)
            head_in += FONT["label"] * 1.35 / 72 * (sub.count("\n") + 1)
        status_y = 1.0 - head_in / h_in
        head_in += line_in if self.status is not None else 0.0
        fig.subplots_adjust(left=0.085, right=0.80, top=1.0 - (head_in + 0.3) / h_in, bottom=0.55 / h_in, hspace=0.38)
        axes = fig.subplots(n, 1, sharex=True, squeeze=False)[:, 0]
        for ax, p in zip(axes, self.subplots):
            ax.set_title(p.title, fontsize=FONT["title"], loc="left", pad=4)
            if p.unit:
                ax.set_ylabel(p.unit, fontsize=FONT["label"])
            ax.tick_params(labelsize=FONT["tick"])
            ax.grid(True, linewidth=0.4, alpha=0.5)
            if p.ylim is not None:
                ax.set_ylim(*p.ylim)
        axes[-1].set_xlabel("time (s)", fontsize=FONT["label"])
        for i, (ax, p) in enumerate(zip(axes, self.subplots)):
            fixed = [n for n in p.series if not any(ch in n for ch in "*?[")]
            for name in fixed:
                (line,) = ax.plot(
                    [], [], linewidth=1.4, label=self._legend_text(p, name), animated=self._blit, **p.style_for(name)
                )
                self._lines[(i, name)] = line
            if fixed:
                _legend(ax)
                self._legend_n[i] = len(fixed)
        fig.text(0.01, 1.0 - 0.08 / h_in, title, fontsize=FONT["suptitle"], va="top", weight="bold", linespacing=1.15)
        self._status_text = fig.text(
            0.01, status_y - 0.04 / h_in, "", fontsize=FONT["label"], va="top", family="monospace", animated=self._blit
        )
        self._fig, self._axes = fig, list(axes)

    def _legend_text(self, p, name: str) -> str:
        """A series' legend text, wrapped to the legend's column right of the axes (never cut
        at the figure's edge: "from memory (warm cache)" takes two lines)."""
        room_px = (1.0 - 0.805) * self.figsize[0] * self.dpi - 2.5 * FONT["legend"] * self.dpi / 72
        return wrap(p.labels.get(name, name), room_px, FONT["legend"], self.dpi)

    def _visible(self, data: dict, t0: float) -> tuple[float, float, dict]:
        """The time range shown and each series within it, thinned, as times since t0."""
        tmax = max((s[0][-1] for s in data.values() if s[0]), default=t0) - t0
        if self.window_s is None:
            if self.fit:  # the final frame (or a static figure) fits the data
                tmin, xmax = 0.0, max(tmax, 0.1)
            elif self.span_s and tmax <= self.span_s:  # the run's expected length, known up front
                tmin, xmax = 0.0, float(self.span_s)
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
        for i, (ax, p) in enumerate(zip(self._axes, self.subplots)):
            vmax = 0.0
            names = [k for k in rel if i in self._match.get(k, ())]
            for name in names:
                xs, vs = rel[name]
                ys = [v * p.scale for v in vs]
                line = self._lines.get((i, name))
                if line is None:
                    (line,) = ax.plot(
                        [],
                        [],
                        linewidth=1.4,
                        label=self._legend_text(p, name),
                        animated=self._blit,
                        **p.style_for(name),
                    )
                    self._lines[(i, name)] = line
                line.set_data(xs, ys)
                vmax = max([vmax] + _finite(ys))
            tkey = tuple(sorted(p.targets.items()))
            if tkey != self._target_key.get(i, ()):  # target lines: part of the background
                for a in self._target_artists.pop(i, []):
                    a.remove()
                self._target_artists[i] = draw_targets(ax, p)
                self._target_key[i] = tkey
                self._legend_n[i] = -1  # their labels join the legend
            vmax = max([vmax] + [v * p.scale for v in _finite(p.targets.values())])
            n_lines = sum(1 for (j, _) in self._lines if j == i) + len(self._target_artists.get(i, ()))
            if n_lines != self._legend_n.get(i, 0):
                self._legend_n[i] = n_lines
                _legend(ax)
            if p.ylim is None:
                top = max(self._ytop.get(i, 0.0), nice_ceil(max(vmax * 1.1, p.ymax_min)))
                if top != self._ytop.get(i):
                    ax.set_ylim(0.0, top)
                    self._ytop[i] = top
            if not any(rel.get(k, ((), ()))[0] for k in names) and p.note and not getattr(ax, "_nbbench_note", False):
                ax.text(
                    0.5,
                    0.5,
                    p.note,
                    transform=ax.transAxes,
                    ha="center",
                    va="center",
                    fontsize=FONT["note"],
                    color="#777",
                    wrap=True,
                )
                ax._nbbench_note = True
            key += [bool(getattr(ax, "_nbbench_note", False)), self._ytop.get(i), self._legend_n.get(i, 0), tkey]
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
                self._mark_artists.append(
                    ax0.text(
                        x,
                        1.0,
                        " " + label,
                        transform=ax0.get_xaxis_transform(),
                        fontsize=FONT["note"],
                        va="bottom",
                        color="#555",
                        clip_on=False,
                    )
                )
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
            extra = self.annotate(self._fig, {p.title: ax for p, ax in zip(self.subplots, self._axes)}, rel)
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
