"""Live timelines that survive headless runs: PNG frames pushed through display handles.

A :class:`LivePlot` shows a :class:`nbbench.plots.timeline.Timeline` (named series
over a shared time axis, one subplot per :class:`Subplot`, drawn with matplotlib's
object API) while the cell is busy.  A drawing thread renders it to PNG and pushes
each frame through an IPython display handle (``display(..., display_id=True)`` then
``update``) or into an ``ipywidgets.Image``; both update while the cell is busy.
The thread throttles itself so drawing costs at most ``cpu_budget`` of one core
(1.2 % by default, leaving room for the sampler within a 2 % total), and never draws
more than ``max_fps`` (4) frames a second.  :meth:`LivePlot.close`
joins the thread and renders a last frame from the calling (main) thread, so the
final picture is in the cell's saved output (GitHub, nbviewer, nbmake, nbclient).

Generic use (the DataLoader sweep draws throughput next to GPU utilisation)::

    from nbbench.ui.liveplot import LivePlot, Subplot
    plot = LivePlot([Subplot("throughput", ["loader.samples_per_s"], unit="samples/s"),
                     Subplot("GPU kernel-active %", ["gpu*.util_pct"], unit="%", ylim=(0, 100))],
                    title="DataLoader sweep")
    plot.attach(monitor)          # every monitor record feeds the plot (fields matching the subplots)
    plot.start()                  # shows it (in a notebook) and starts the drawing thread
    plot.add(time.monotonic(), {"loader.samples_per_s": 5120.0})   # your own series, any thread
    plot.mark(time.monotonic(), "workers=8")                          # a labelled vertical line
    png = plot.close()            # last frame, drawn here; returns the PNG bytes

The ``annotate`` and ``status`` hooks (gauges, a line of text above the plot) are the
Timeline's: see :mod:`nbbench.plots.timeline`.  :meth:`LivePlot.text` is a plain-text
summary for terminals.  What a monitor plot shows is :mod:`nbbench.plots.monitor`'s
(:func:`monitor_plot_kwargs`).
"""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..plots.monitor import monitor_plot_kwargs
from ..plots.subplot import Subplot, fold_quiet
from ..plots.timeline import Timeline
from .kernel import in_kernel  # the one kernel check, re-exported here under its old name

__all__ = ["LivePlot", "Subplot", "for_monitor", "monitor_plot_kwargs", "in_kernel"]


class LivePlot:
    """A :class:`~nbbench.plots.timeline.Timeline` shown live, its frames pushed as PNGs.

    ``LivePlot(subplots, title="", *, max_fps=4.0, cpu_budget=0.012, max_rest_s=5.0, target="auto",
    show=True, **timeline)``

    - ``subplots``, ``title`` and ``timeline`` (``window_s``, ``figsize``, ``dpi``, ``annotate``, ``status``,
      ``max_points``, ``capacity``, ``t0``, ``blit``, ``min_span_s``, ``span_s``, ``min_plot_s``,
      ``subtitle``): what is drawn, as :class:`~nbbench.plots.timeline.Timeline` takes them (:attr:`timeline`).
    - ``cpu_budget``: share of one core the drawing thread may use (0.012 = 1.2 %).
    - ``max_rest_s``: the longest rest after a frame (5 s): a frame so costly that the budget would
      buy a longer one (a full redraw beside a GIL-bound cell on a busy machine) still leaves the
      plot live — a view that stood still for 30 s looked broken; drawing may then exceed the budget.
    - ``target``: ``"display"`` (an IPython display handle, the PNG is kept in the
      saved notebook), ``"widget"`` (an ``ipywidgets.Image`` in :attr:`widget`, for
      panels that embed it), ``"none"`` (no output: :meth:`png`, :meth:`text` only) or
      ``"auto"`` (display in a Jupyter kernel, else none).
    - ``show``: display the output in :meth:`start` (False: the caller places
      :attr:`widget` itself).

    A plot that never got two points (or ran shorter than ``min_plot_s``) has no final frame:
    :meth:`close` returns None, replaces the displayed frame by the sentence in :attr:`note` (a widget is hidden)
    and leaves no empty axes behind.
    """

    def __init__(
        self,
        subplots: Iterable[Any] | None = None,
        title: str = "",
        *,
        max_fps: float = 4.0,
        cpu_budget: float = 0.012,
        max_rest_s: float = 5.0,
        target: str = "auto",
        show: bool = True,
        **timeline: Any,
    ):
        self.timeline = Timeline(subplots, title=title, **timeline)
        self.max_fps = max(0.1, float(max_fps))
        self.cpu_budget = max(1e-4, float(cpu_budget))
        self.max_rest_s = max(1.0 / self.max_fps, float(max_rest_s))
        if target == "auto":
            target = "display" if in_kernel() else "none"
        if target not in ("display", "widget", "none"):
            raise ValueError(f"target must be auto, display, widget or none, not {target!r}")
        self.target = target
        self.show = show
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._unsub: list[Callable[[], None]] = []
        self._handle = None
        self.widget = None
        self.frames = 0
        self.draw_cpu_s = 0.0  # CPU time spent rendering (all threads)
        self.live_cpu_s = 0.0  # CPU time of the drawing thread's frames (render + push)
        self.last_render_s = 0.0
        self.period_s = 1.0 / self.max_fps
        self.final_png: bytes | None = None
        self.note: str | None = None  # why there is no final frame (fewer than two points)
        self._paused = False
        self.started = False
        self.closed = False

    # ------------------------------------------------------------------ data
    @property
    def subplots(self) -> list[Subplot]:
        return self.timeline.subplots

    @property
    def title(self) -> str:
        return self.timeline.title

    @property
    def t0(self) -> float | None:
        """Time origin (monotonic s); default the first point added."""
        return self.timeline.t0

    @t0.setter
    def t0(self, value: float | None) -> None:
        self.timeline.t0 = value

    def add(self, t: float, values: Mapping[str, Any]) -> None:
        """Append one point per series in ``values`` (those the subplots show) at time ``t``.

        Thread-safe and cheap (the sampler thread calls it); None values are gaps.
        """
        self.timeline.add(t, values)

    def add_record(self, rec: Mapping[str, Any]) -> None:
        """A monitor record (``rec["t"]`` is its time); the subscriber used by :meth:`attach`."""
        self.timeline.add(rec["t"], rec)

    def attach(self, monitor) -> LivePlot:
        """Feed every record of a :class:`nbbench.monitor.Monitor` into the plot."""
        if self.t0 is None and getattr(monitor, "t_start", None) is not None:
            self.t0 = monitor.t_start
        for rec in monitor.records():
            self.add_record(rec)
        self._unsub.append(monitor.subscribe(self.add_record))
        return self

    def mark(self, t: float, label: str = "") -> None:
        """A vertical line at time ``t`` (monotonic s) on every subplot, labelled on the top one."""
        self.timeline.mark(t, label)

    def series(self, name: str) -> tuple[list[float], list[float]]:
        """``(times since t0, values)`` of a series as stored (unscaled)."""
        return self.timeline.series(name)

    def names(self) -> list[str]:
        return self.timeline.names()

    # ---------------------------------------------------------------- frames
    def render_png(self, compress_level: int = 1) -> bytes:
        """Draw the current data and return PNG bytes (any thread; serialised)."""
        c0 = time.thread_time()
        png = self.timeline.png(compress_level)
        cost = time.thread_time() - c0
        self.draw_cpu_s += cost
        self.last_render_s = cost
        return png

    png = render_png

    @property
    def figure(self):
        """The matplotlib Figure, brought up to date (a plain figure: ``savefig`` shows everything)."""
        return self.timeline.figure

    # -------------------------------------------------------------- display
    def _bundle(self, png: bytes) -> dict:
        return {"image/png": base64.b64encode(png).decode("ascii"), "text/plain": self.text()}

    def start(self) -> LivePlot:
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

            # shown once there is a line to see (two points), never as empty axes
            self.widget = w.Image(
                value=self.render_png(),
                format="png",
                layout=w.Layout(max_width="100%", display=None if self.timeline.has_plot() else "none"),
            )
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
            if self.widget.layout.display == "none" and self.timeline.has_plot():
                self.widget.layout.display = None

    def _push_note(self, note: str) -> None:
        try:
            if self.target == "display" and self._handle is not None:
                import html

                self._handle.update(
                    {"text/plain": note, "text/html": f"<div style='color:#555'>{html.escape(note)}</div>"}, raw=True
                )
            elif self.target == "widget" and self.widget is not None:
                self.widget.layout.display = "none"
        except Exception:  # noqa: BLE001
            pass

    def _loop(self) -> None:
        min_period = 1.0 / self.max_fps
        timeline = self.timeline
        while not self._stop.wait(self.period_s):
            if not timeline.dirty or self._paused:
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
            # than max_fps frames a second, never a rest longer than max_rest_s
            self.period_s = min(self.max_rest_s, max(min_period, cost / self.cpu_budget))
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
        self.timeline.fit = True  # the final frame fits the data
        if not final:
            return None

        fold_quiet(self.timeline)  # an idle subplot (no network traffic) is a few words, not an empty plot
        self.note = self.timeline.no_plot_text()
        if self.note is not None:  # no empty axes or lone dot left behind: the sentence instead
            self._push_note(self.note)
            return None
        png = self.render_png(compress_level=6)
        self.final_png = png
        if self.target != "none":
            try:
                self._push(png)
            except Exception:  # noqa: BLE001
                pass
        return png

    def __enter__(self) -> LivePlot:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def _repr_png_(self) -> bytes | None:
        if self.closed and self.note is not None:
            return None
        return self.final_png or self.render_png(compress_level=6)

    def text(self) -> str:
        """Per series: last, mean and max, in the subplot's unit (a terminal summary)."""
        return self.timeline.text()

    def __repr__(self) -> str:
        return f"<LivePlot {self.title!r} subplots={len(self.subplots)} frames={self.frames} target={self.target}>"


def for_monitor(monitor, **kwargs) -> LivePlot:
    """A LivePlot with the default monitor subplots, attached to a started ``monitor``."""
    kwargs = dict(monitor_plot_kwargs(monitor), **kwargs)
    return LivePlot(**kwargs).attach(monitor)
