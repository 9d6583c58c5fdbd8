"""Live timelines that survive headless runs: matplotlib's object API, PNGs, display handles.

A :class:`LivePlot` draws named series over a shared time axis, one subplot per
:class:`Panel`, with a ``matplotlib.figure.Figure`` on the Agg canvas (never
pyplot's global state).  A drawing thread renders it to PNG and pushes each frame
through an IPython display handle (``display(..., display_id=True)`` then
``update``) or into an ``ipywidgets.Image``; both update while the cell is busy.
The thread throttles itself so drawing costs at most ``cpu_budget`` of one core
(1.2 % by default, leaving room for the sampler within a 2 % total), and never draws
more than ``max_fps`` (4) frames a second.  :meth:`LivePlot.close`
joins the thread and renders a last frame from the calling (main) thread, so the
final picture is in the cell's saved output (GitHub, nbviewer, nbmake, nbclient).

Generic use (the DataLoader sweep draws throughput next to GPU utilisation)::

    from nbbench.ui.liveplot import LivePlot, Panel
    plot = LivePlot([Panel("throughput", ["loader.samples_per_s"], unit="samples/s"),
                     Panel("GPU kernel-active %", ["gpu*.util_pct"], unit="%", ylim=(0, 100))],
                    title="DataLoader sweep")
    plot.attach(monitor)          # every monitor record feeds the plot (fields matching the panels)
    plot.start()                  # shows it (in a notebook) and starts the drawing thread
    plot.add(time.monotonic(), {"loader.samples_per_s": 5120.0})   # your own series, any thread
    plot.mark(time.monotonic(), "workers=8")                          # a labelled vertical line
    png = plot.close()            # last frame, drawn here; returns the PNG bytes

``annotate(fig, axes, data)`` (called on every render with the figure, a dict
panel title -> Axes and a dict series -> (times, values)) and ``status()`` (a line of
text above the plot) are hooks for gauges and annotations.  An ``annotate`` that
returns the list of artists it changes (e.g. ``[bar, label]``) keeps the fast path:
those are drawn over the cached background; one that returns None gets a full
redraw every frame (always correct, several times the cost).  :meth:`LivePlot.text`
is a plain-text summary for terminals.
"""

from __future__ import annotations

import base64
import fnmatch
import io
import math
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from .kernel import in_kernel  # the one kernel check, re-exported here under its old name

__all__ = ["LivePlot", "Panel", "monitor_panels", "figure_for_result", "in_kernel"]


@dataclass
class Panel:
    """One subplot: series names or fnmatch patterns (``"gpu*.util_pct"``) in one unit.

    ``scale`` multiplies stored values for display (bytes/s -> MB/s: ``1e-6``);
    ``ylim`` fixes the y range (default: 0 .. 1.1 x the largest value shown);
    ``labels`` maps a series name to its legend text (default: the name);
    ``styles`` maps a series name or pattern to Line2D keyword arguments.
    Names without wildcards get their line and legend entry up front, so the
    legend (and the cached background) does not change when data starts arriving.
    """

    title: str
    series: list[str]
    unit: str = ""
    scale: float = 1.0
    ylim: tuple[float, float] | None = None
    labels: dict[str, str] = field(default_factory=dict)
    styles: dict[str, dict] = field(default_factory=dict)
    note: str = ""  # shown inside the axes when the panel has no data (e.g. "N/A: no GPU")
    ymax_min: float = 1.0  # autoscaled top never below this (in display units)

    def matches(self, name: str) -> bool:
        return any(name == p or fnmatch.fnmatchcase(name, p) for p in self.series)

    def style_for(self, name: str) -> dict:
        for pat, st in self.styles.items():
            if name == pat or fnmatch.fnmatchcase(name, pat):
                return st
        return {}


def _as_panel(p) -> Panel:
    if isinstance(p, Panel):
        return p
    if isinstance(p, Mapping):
        return Panel(**p)
    raise TypeError(f"a panel is a Panel or a dict of its fields, not {type(p).__name__}")


class LivePlot:
    """Named series over a shared time axis, drawn live and rendered to PNG.

    ``LivePlot(panels, title="", window_s=None, max_fps=4.0, cpu_budget=0.012,
    figsize=None, dpi=72, target="auto", show=True, annotate=None, status=None,
    max_points=400, capacity=50000, t0=None, blit=True, min_span_s=10.0)``

    - ``panels``: :class:`Panel` objects or dicts of their fields (default: one panel
      showing every series).
    - ``window_s``: show only the last N seconds (None: everything).
    - ``cpu_budget``: share of one core the drawing thread may use (0.012 = 1.2 %).
    - ``target``: ``"display"`` (an IPython display handle, the PNG is kept in the
      saved notebook), ``"widget"`` (an ``ipywidgets.Image`` in :attr:`widget`, for
      panels that embed it), ``"none"`` (no output: :meth:`png`, :meth:`text` only) or
      ``"auto"`` (display in a Jupyter kernel, else none).
    - ``show``: display the output in :meth:`start` (False: the caller places
      :attr:`widget` itself).
    - ``t0``: time origin (monotonic s); default the first point added.
    - ``blit``: redraw only the lines over a cached background while axis limits hold
      (limits move in 1-2-2.5-5 steps, the time axis starts at ``min_span_s``).
    """

    def __init__(self, panels: Iterable[Any] | None = None, title: str = "", window_s: float | None = None,
                 max_fps: float = 4.0, cpu_budget: float = 0.012, figsize: tuple[float, float] | None = None,
                 dpi: int = 72, target: str = "auto", show: bool = True,
                 annotate: Callable[[Any, dict, dict], None] | None = None,
                 status: Callable[[], str] | None = None, max_points: int = 400, capacity: int = 50_000,
                 t0: float | None = None, blit: bool = True, min_span_s: float = 10.0):
        self.panels = [_as_panel(p) for p in (panels or [Panel("", ["*"])])]
        if not self.panels:
            raise ValueError("a LivePlot needs at least one panel")
        self.title = title
        self.window_s = window_s
        self.max_fps = max(0.1, float(max_fps))
        self.cpu_budget = max(1e-4, float(cpu_budget))
        self.dpi = dpi
        self.figsize = figsize or (8.0, 0.8 + 1.75 * len(self.panels))
        if target == "auto":
            target = "display" if in_kernel() else "none"
        if target not in ("display", "widget", "none"):
            raise ValueError(f"target must be auto, display, widget or none, not {target!r}")
        self.target = target
        self.show = show
        self.annotate = annotate
        self.status = status
        self.max_points = max(10, int(max_points))
        self.capacity = max(100, int(capacity))
        self.t0 = t0
        self._series: dict[str, tuple[deque, deque]] = {}
        self._match: dict[str, tuple[int, ...]] = {}
        self._marks: list[tuple[float, str]] = []
        self._lock = threading.Lock()
        self._render_lock = threading.Lock()
        self._dirty = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._unsub: list[Callable[[], None]] = []
        self._fig = None
        self._axes: list[Any] = []
        self._lines: dict[tuple[int, str], Any] = {}
        self._legend_n: dict[int, int] = {}
        self._mark_artists: list[Any] = []
        self._extra: list[Any] = []
        self._status_text = None
        self._handle = None
        self.widget = None
        self.frames = 0
        self.draw_cpu_s = 0.0  # CPU time spent rendering (all threads)
        self.live_cpu_s = 0.0  # CPU time of the drawing thread's frames (render + push)
        self.last_render_s = 0.0
        self.period_s = 1.0 / self.max_fps
        self.final_png: bytes | None = None
        self._blit = bool(blit)
        self._fit = False
        self._paused = False
        self.min_span_s = max(1e-3, float(min_span_s))
        self._bg = None
        self._bg_key = None
        self._ytop: dict[int, float] = {}
        self._xlim = None
        self._n_marks = -1
        self.started = False
        self.closed = False

    # ------------------------------------------------------------------ data
    def add(self, t: float, values: Mapping[str, Any]) -> None:
        """Append one point per series in ``values`` (those the panels show) at time ``t``.

        Thread-safe and cheap (the sampler thread calls it); None values are gaps.
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
            self._dirty = True

    def add_record(self, rec: Mapping[str, Any]) -> None:
        """A monitor record (``rec["t"]`` is its time); the subscriber used by :meth:`attach`."""
        self.add(rec["t"], rec)

    def attach(self, monitor) -> "LivePlot":
        """Feed every record of a :class:`nbbench.monitor.Monitor` into the plot."""
        if self.t0 is None and getattr(monitor, "t_start", None) is not None:
            self.t0 = monitor.t_start
        for rec in monitor.records():
            self.add_record(rec)
        self._unsub.append(monitor.subscribe(self.add_record))
        return self

    def mark(self, t: float, label: str = "") -> None:
        """A vertical line at time ``t`` (monotonic s) on every panel, labelled on the top one."""
        with self._lock:
            self._marks.append((t, label))
            self._dirty = True

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
                ax.legend(loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=7, frameon=False,
                          borderaxespad=0.0, handlelength=1.5)
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
            self._dirty = False
        return data, marks, t0

    def _draw(self) -> tuple:
        """Bring the artists up to date (caller holds the render lock).

        Returns the *layout key*: what the static background depends on (axis
        limits, legends, marks).  Limits move in "nice" steps, so most frames only
        redraw the lines and the status line over a cached background (blitting).
        """
        if self._fig is None:
            self._build()
        data, marks, t0 = self._snapshot()
        tmax = max((s[0][-1] for s in data.values() if s[0]), default=t0) - t0
        if self.window_s is None:
            if self.closed or self._fit:  # the final frame (or a static figure) fits the data
                tmin, xmax = 0.0, max(tmax, 0.1)
            else:  # start at min_span_s, then grow in nice steps: few full redraws over a long run
                tmin, xmax = 0.0, _nice_ceil(max(tmax * 1.08, self.min_span_s))
        else:
            tmin = max(0.0, tmax - self.window_s)
            xmax = max(tmax, tmin + 1.0)
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
                ax.legend(loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=7, frameon=False,
                          borderaxespad=0.0, handlelength=1.5)
            if p.ylim is None:
                top = max(self._ytop.get(i, 0.0), _nice_ceil(max(vmax * 1.1, p.ymax_min)))
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
        if len(marks) != self._n_marks or self.window_s is not None:
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
        head = ""
        if self.status is not None:
            try:
                head = self.status() or ""
            except Exception:  # noqa: BLE001 - a broken hook must not stop drawing
                head = ""
        self._status_text.set_text(head)
        self._extra = []
        if self.annotate is not None:
            try:
                extra = self.annotate(self._fig, {p.title: ax for p, ax in zip(self.panels, self._axes)}, rel)
            except Exception:  # noqa: BLE001
                extra = None
            if isinstance(extra, (list, tuple)):
                # the hook names the artists it changes: they are drawn over the cached background
                self._extra = [a for a in extra if a is not None]
                for a in self._extra:
                    a.set_animated(self._blit)
                key.append(len(self._fig.axes))
            else:
                key.append(time.monotonic())  # the hook may change anything: no cached background
        return tuple(key)

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

    def render_png(self, compress_level: int = 1) -> bytes:
        """Draw the current data and return PNG bytes (any thread; serialised)."""
        from PIL import Image

        c0 = time.thread_time()
        with self._render_lock:
            self._paint()
            canvas = self._fig.canvas
            w, h = canvas.get_width_height()
            img = Image.frombuffer("RGBA", (w, h), canvas.buffer_rgba(), "raw", "RGBA", 0, 1).convert("RGB")
            buf = io.BytesIO()
            img.save(buf, format="PNG", compress_level=compress_level)
        cost = time.thread_time() - c0
        self.draw_cpu_s += cost
        self.last_render_s = cost
        return buf.getvalue()

    png = render_png

    @property
    def figure(self):
        """The matplotlib Figure, brought up to date (a plain figure: ``savefig`` shows everything)."""
        with self._render_lock:
            self._blit = False
            self._fit = True
            self._bg = None
            self._draw()
            for line in self._lines.values():
                line.set_animated(False)
            self._status_text.set_animated(False)
            for a in self._extra:
                a.set_animated(False)
        return self._fig

    # -------------------------------------------------------------- display
    def _bundle(self, png: bytes) -> dict:
        return {"image/png": base64.b64encode(png).decode("ascii"), "text/plain": self.text()}

    def start(self) -> "LivePlot":
        """Show the output (unless ``show=False``) and start the drawing thread."""
        if self.started:
            return self
        self.started = True
        if self.target == "display" and self.show:
            from IPython.display import display

            # the first frame is drawn here: matplotlib's import and the first full draw
            # are the expensive part, better not run concurrently with the user's code
            self._handle = display(self._bundle(self.render_png()), raw=True, display_id=True)
        elif self.target == "widget":
            import ipywidgets as w

            self.widget = w.Image(value=self.render_png(), format="png", layout=w.Layout(max_width="100%"))
            if self.show:
                from IPython.display import display

                display(self.widget)
        if self.target != "none":
            self._thread = threading.Thread(target=self._loop, name="nbbench-liveplot", daemon=True)
            self._thread.start()
        return self

    def pause(self) -> None:
        """Draw no live frames until :meth:`resume` (data still accumulates; e.g. a hidden tab)."""
        self._paused = True

    def resume(self) -> None:
        self._paused = False

    def _push(self, png: bytes) -> None:
        if self.target == "display" and self._handle is not None:
            self._handle.update(self._bundle(png), raw=True)
        elif self.target == "widget" and self.widget is not None:
            self.widget.value = png

    def _loop(self) -> None:
        min_period = 1.0 / self.max_fps
        while not self._stop.wait(self.period_s):
            if not self._dirty or self._paused:
                continue
            c0 = time.thread_time()
            try:
                png = self.render_png(compress_level=1)
                self._push(png)
            except Exception:  # noqa: BLE001 - drawing problems never break the measurement
                self.period_s = 5.0
                continue
            self.frames += 1
            cost = time.thread_time() - c0
            # adaptive throttle: after a frame that cost c, rest c/budget, so drawing stays
            # under cpu_budget of one core (a full redraw buys a longer rest); never more
            # than max_fps frames a second
            self.period_s = min(30.0, max(min_period, cost / self.cpu_budget))
            self.live_cpu_s += cost

    def close(self, final: bool = True) -> bytes | None:
        """Stop the thread (joined first), then draw the last frame here; returns its PNG.

        Call it from the main thread before the cell ends: messages sent after a cell
        ends are lost in headless runs, so the final picture must be sent now.
        """
        for unsub in self._unsub:
            unsub()
        self._unsub = []
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self.closed:
            return self.final_png
        self.closed = True
        if not final:
            return None
        png = self.render_png(compress_level=6)
        self.final_png = png
        if self.target != "none":
            try:
                self._push(png)
            except Exception:  # noqa: BLE001
                pass
        return png

    def __enter__(self) -> "LivePlot":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def _repr_png_(self) -> bytes:
        return self.final_png or self.render_png(compress_level=6)

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

    def __repr__(self) -> str:
        return f"<LivePlot {self.title!r} panels={len(self.panels)} frames={self.frames} target={self.target}>"


def _nice_ceil(x: float) -> float:
    """The smallest of 1, 2, 2.5, 5 x 10^k that is >= x (axis limits that move in steps)."""
    if x <= 0 or not math.isfinite(x):
        return 1.0
    exp = math.floor(math.log10(x))
    for m in (1.0, 2.0, 2.5, 5.0, 10.0):
        v = m * 10.0 ** exp
        if v >= x * (1 - 1e-12):
            return v
    return 10.0 ** (exp + 1)


def _fmt(v: float) -> str:
    a = abs(v)
    if a >= 100:
        return f"{v:7.0f}"
    if a >= 10:
        return f"{v:7.1f}"
    return f"{v:7.2f}"


# ------------------------------------------------------------------ monitor views
def _gpu_info(monitor) -> tuple[list[dict], str]:
    for src in getattr(monitor, "sources", []) or []:
        if getattr(src, "name", "") == "gpu":
            note = ""
            if not getattr(src, "devices", None):
                notes = getattr(src, "notes", None) or []
                note = "N/A: " + (notes[0].split(": ", 1)[-1] if notes else "no GPU")
            return list(getattr(src, "info", [])), note
    return [], "not monitored"


def _short(text: str, n: int = 90) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def monitor_panels(gpu_info: list[dict] | None = None, gpu_note: str = "", disk_label: str = "disk",
                   gpus: bool = True) -> list[Panel]:
    """The default panels of ``%%iobench monitor``: GPU kernel-active %, GPU memory, CPU, disk MB/s."""
    gpu_info = gpu_info or []
    panels = []
    if gpus and gpu_info:
        labels, mlabels, util, mem = {}, {}, [], []
        for d in gpu_info:
            i = d.get("index", 0)
            util.append(f"gpu{i}.util_pct")
            labels[f"gpu{i}.util_pct"] = f"GPU{i} kernel-active"
            if d.get("gpm"):
                util.append(f"gpu{i}.sm_active_pct")
                labels[f"gpu{i}.sm_active_pct"] = f"GPU{i} SM active (GPM)"
            mem.append(f"gpu{i}.mem_used_bytes")
            mlabels[f"gpu{i}.mem_used_bytes"] = f"GPU{i} used"
        total = max((d.get("mem_total_bytes") or 0 for d in gpu_info), default=0)
        panels.append(Panel("GPU kernel-active % (share of time a kernel ran)", util, unit="%", ylim=(0, 105),
                            labels=labels, styles={"gpu*.sm_active_pct": {"linestyle": ":"}},
                            note=_short(gpu_note)))
        panels.append(Panel("GPU memory used", mem, unit="GiB", scale=2.0 ** -30,
                            ylim=(0, total * 2.0 ** -30 * 1.05) if total else None, labels=mlabels,
                            note=_short(gpu_note)))
    panels.append(Panel("CPU, whole machine", ["cpu.util_pct", "cpu.iowait_pct"], unit="%", ylim=(0, 105),
                        labels={"cpu.util_pct": "busy", "cpu.iowait_pct": "iowait"}))
    panels.append(Panel(f"Disk ({disk_label})", ["disk.read_bytes_per_s", "disk.write_bytes_per_s"], unit="MB/s",
                        scale=1e-6, labels={"disk.read_bytes_per_s": "read", "disk.write_bytes_per_s": "write"},
                        ymax_min=10.0))
    return panels


def for_monitor(monitor, **kwargs) -> LivePlot:
    """A LivePlot with the default monitor panels, attached to a started ``monitor``."""
    kwargs = dict(monitor_plot_kwargs(monitor), **kwargs)
    return LivePlot(**kwargs).attach(monitor)


def monitor_plot_kwargs(monitor, title: str = "nbbench monitor") -> dict:
    """Keyword arguments for :class:`LivePlot` showing a started monitor (panels, status line, t0)."""
    from nbbench.monitor.text import format_status

    info, note = _gpu_info(monitor)
    disk = "disk"
    for src in getattr(monitor, "sources", []) or []:
        if getattr(src, "name", "") == "host":
            disk = (getattr(src, "labels", {}) or {}).get("disk_device", "disk")
    if not info and note and note != "not monitored":
        title = f"{title} (GPU {_short(note, 70)})"
    return {
        "panels": monitor_panels(info, note, disk_label=disk, gpus=getattr(monitor, "gpus", "all") != []),
        "title": title,
        "status": lambda: format_status(monitor.latest(), monitor.t_start),
        "t0": monitor.t_start,
    }


def figure_for_result(res, **kwargs):
    """A Figure of a stored :class:`~nbbench.monitor.MonitorResult`'s timeline."""
    tl = res.samples.get("timeline") or {}
    gpu_info = [{"index": i, "mem_total_bytes": res.metrics.get(f"gpu{i}_mem_total_bytes"),
                 "gpm": f"gpu{i}.sm_active_pct" in tl} for i in res.gpu_indices]
    note = "" if gpu_info else "N/A: " + next((n.split(": ", 1)[-1] for n in res.notes if "GPU" in n), "no GPU")
    title = res.headline() if gpu_info else f"{res.headline()} (GPU {_short(note, 70)})"
    kw = {"panels": monitor_panels(gpu_info, _short(note), disk_label=res.labels.get("disk_device", "disk")),
          "title": title, "target": "none", "t0": 0.0, "blit": False, "min_span_s": 1.0}
    kw.update(kwargs)
    plot = LivePlot(**kw)
    ts = tl.get("t_s", [])
    keys = [k for k in tl if k != "t_s"]
    for j, t in enumerate(ts):
        plot.add(t, {k: tl[k][j] for k in keys})
    return plot.figure
