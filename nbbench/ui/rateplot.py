"""The panel's progress bar, and a live plot of the rates a probe reports with it.

:class:`PanelProgress` is :class:`nbbench.ui.progress.NotebookProgress` (the bar with
the live rate the magics show) that also hands each report's metrics to a
:class:`~nbbench.ui.liveplot.LivePlot` — so every probe that reports progress (dd's
write then read bandwidth, randread's IOPS, files/s, samples/s…) gets a timeline
in the panel, with no code of its own.  The plot's subplots are chosen from the
units in the first report's keys (``read_bytes_per_s`` → MB/s, ``iops`` → kIOPS) by
:func:`nbbench.plots.rates.rate_subplots`.

The time axis starts when the probe did and spans the run's expected length, estimated
from the progress fraction (a randread of 3 s shows 0–3 s, not a 10 s window).  A probe
that reports a ``config`` tag with its figures (the sweep: one report per finished
configuration) gets one marker per configuration, never a line joining two of them.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

from nbbench.plots.loader import need_targets
from nbbench.plots.rates import rate_subplots, tag_styles
from nbbench.units import metric_label

from ..progress import figures
from .progress import NotebookProgress

__all__ = ["PanelProgress", "rate_subplots"]


class PanelProgress(NotebookProgress):
    """A NotebookProgress (not displayed by itself) that also feeds a live rate plot.

    ``make_plot(subplots=…, title=…)`` returns a started LivePlot (or None: no plot).  It
    is called once, in a thread of its own, at the first report that carries a rate:
    the probe calling ``progress`` never waits for matplotlib (points reported in the
    meantime are kept and drawn once the plot exists).
    """

    plot_interval = 0.1  # seconds between points added to the plot
    span_step = 0.1  # the expected length is updated when it moves by more than 10 %
    min_plot_s = 1.0  # two of the probes' 500 ms windows: a shorter run gets no plot

    def __init__(self, desc: str = "", make_plot: Callable | None = None):
        super().__init__(desc, display_now=False)
        self._make_plot = make_plot
        self.plot = None
        self._plot_lock = threading.Lock()
        self._maker: threading.Thread | None = None
        self._pending: list = []
        self._last_point = 0.0
        self._keys: set[str] = set()
        self._subplots: list = []
        self._closing: threading.Thread | None = None
        self._t0 = time.monotonic()  # the probe starts now: the plot's time origin
        self._span: float | None = None
        self._f0: tuple[float, float] | None = None  # (time, fraction) of the first report with progress
        self._tag = None
        self._final: dict | None = None

    def __call__(self, fraction=None, metrics=None) -> None:
        super().__call__(fraction, metrics)
        metrics = figures(metrics)  # the rates, without done / total / unit
        if metrics and self._make_plot is not None:
            try:
                self._feed(metrics)
            except Exception:  # noqa: BLE001 - drawing must never break a measurement
                self._make_plot = None

    def _expected_span(self, now: float) -> float | None:
        """The run's length since the probe started, from how fast its fraction moves (the
        time before its first report, opening files, counts once, not scaled): updated only
        when it moves by more than ``span_step``, so the axis is rarely redrawn."""
        f = self.fraction
        if f is None or self.status != "running":
            return self._span
        if self._f0 is None:
            if f > 0:
                self._f0 = (now, f)
            return self._span
        t1, f1 = self._f0
        if f >= 1.0 or f - f1 < 0.05 or now - t1 < 0.2:
            return self._span
        span = now + (1.0 - f) * (now - t1) / (f - f1) - self._t0
        if self._span is None or abs(span - self._span) > self.span_step * self._span:
            self._span = span
        return self._span

    def _feed(self, metrics: dict) -> None:
        now = time.monotonic()
        tag = metrics.get("config")
        if self.fraction is not None and self.fraction >= 1.0 and self._keys:
            # the last report sums the run up (feed's warm figure, …): a figure first seen there has
            # no course over time — one point would be a legend entry with no line
            metrics = {k: v for k, v in metrics.items() if k in self._keys}
        with self._plot_lock:
            new = set(metrics) - self._keys
            self._keys |= new
            if self._maker is None and new:
                self._subplots = rate_subplots(sorted(self._keys))
                if not self._subplots:
                    return
                if tag is not None:  # styled before the figure is built (in the thread below)
                    for subplot in self._subplots:
                        tag_styles(subplot, metrics)
                self._maker = threading.Thread(target=self._create, name="nbbench-panel-rateplot", daemon=True)
                self._maker.start()
            if self._maker is None:
                return
            for k in new:  # legend text: 'read', not 'read_bytes_per_s'
                for subplot in self._subplots:
                    subplot.labels.setdefault(k, metric_label(k))
            # a new series (dd's read after its write) or configuration is drawn from its first report on
            changed = tag is not None and tag != self._tag
            if not new and not changed and now - self._last_point < self.plot_interval:
                return
            self._last_point = now
            point = {k: float(v) for k, v in metrics.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
            points = [(now, point)]
            if changed:  # another configuration: its own marker, the line broken before it
                if self._tag is not None:
                    points.insert(0, (now - 1e-6, dict.fromkeys(point, math.nan)))
                self._tag = tag
                for subplot in self._subplots:
                    tag_styles(subplot, point)
            span = self._expected_span(now)
            plot = self.plot
            if plot is None:
                self._pending.extend(points)
                return
        _set_span(plot, span)
        for t, pt in points:
            plot.add(t, pt)

    def _create(self) -> None:
        make = self._make_plot
        plot = None
        if make is not None:
            try:
                plot = make(subplots=self._subplots, title=f"{self.desc}: live rate")
            except Exception:  # noqa: BLE001 - no plot rather than no measurement
                plot = None
        with self._plot_lock:
            if plot is None:
                self._make_plot = None
                self._pending = []
                return
            if hasattr(plot, "t0"):
                plot.t0 = self._t0
            if getattr(plot, "timeline", None) is not None:
                plot.timeline.min_plot_s = self.min_plot_s
            _set_span(plot, self._span)
            for t, point in self._pending:
                plot.add(t, point)
            self._pending = []
            self.plot = plot

    def close(self, status: str = "ok", final: dict | None = None) -> None:
        """End the bar now (on the result's figures, ``final``); the plot's last frame is drawn in
        the background (it may still be waiting for matplotlib), so a stopped run ends without
        waiting for a drawing."""
        super().close(status, final=final)
        self._final = final
        with self._plot_lock:
            self._closing = threading.Thread(target=self._finish, name="nbbench-panel-rateplot-close", daemon=True)
        self._closing.start()

    def _finish(self) -> None:
        maker = self._maker
        if maker is not None:
            maker.join(60)
        with self._plot_lock:
            plot, self._make_plot = self.plot, None
        if plot is not None:
            self._need_line()
            try:
                plot.close()
            except Exception:  # noqa: BLE001
                pass

    def _need_line(self) -> None:
        """A result that says what the accelerators need (feed, loader with an emulated
        accelerator: ``needed_samples_per_s``) gets that target line on the samples/s subplot of
        the final frame — the one comparison that matters for a DataLoader."""
        final = self._final or {}
        need = final.get("needed_samples_per_s")
        if not isinstance(need, (int, float)) or isinstance(need, bool) or not need > 0:
            return
        for subplot in self._subplots:
            if subplot.matches("samples_per_s"):
                subplot.targets = need_targets(float(need), None, final.get("au_target_pct") or 90.0)

    def wait_plot(self, timeout: float | None = 30) -> None:
        """Wait until the plot's last frame is drawn (for tests and scripts)."""
        t = self._closing
        if t is not None:
            t.join(timeout)


def _set_span(plot, span: float | None) -> None:
    timeline = getattr(plot, "timeline", None)
    if timeline is not None and span is not None and timeline.span_s != span:
        timeline.span_s = span
