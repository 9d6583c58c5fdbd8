"""The loader benchmark's live plot: throughput and GPU utilisation on one time axis,
with an AU gauge and its 90 % line.

What is drawn is :mod:`nbbench.plots.loader`'s (the subplots, :class:`~nbbench.plots.loader.AUGauge`);
this shows it live through :class:`nbbench.ui.liveplot.LivePlot` (PNG frames pushed
through a display handle, a last frame drawn on the main thread so the final picture
stays in the notebook), fed by a :class:`nbbench.monitor.Monitor` sampling NVML GPU
utilisation (N/A with the reason where there is no GPU)::

    plot = LoaderPlot.start(need=1790.0, accelerator="h100-resnet50")   # the need line, when known
    res = bench_loader(loader, step="emulate:h100-resnet50", monitor=plot.monitor,
                       on_window=plot.on_window)
    plot.stop(); plot.finish(res)
"""

from __future__ import annotations

import time

from ..monitor import Monitor
from ..plots.loader import AUGauge, loader_subplots, need_targets
from ..probes.pipeline.loadermon import nvml_reason as _nvml_reason
from ..units import format_metric
from .liveplot import LivePlot

__all__ = ["LoaderPlot", "warmup_note"]


def warmup_note(metrics: dict) -> str:
    """Why the throughput plot starts late: 'no throughput for the first 1.75 s: worker start-up
    and warm-up steps are not measured' ('' under half a second)."""
    skip = (metrics.get("startup_s") or 0) + (metrics.get("warmup_s") or 0)
    if skip < 0.5:
        return ""
    return f"no throughput for the first {format_metric('x_s', skip)}: worker start-up and warm-up are not measured"


class LoaderPlot:
    """A live view of one loader benchmark."""

    def __init__(
        self,
        target: str = "auto",
        show: bool = True,
        au_target_pct: float = 90.0,
        interval: float = 0.25,
        monitor=None,
        title: str = "DataLoader benchmark",
        need: float | None = None,
        accelerator: str | None = None,
        span_s: float | None = None,
    ):
        self.au_target_pct = au_target_pct
        self.own_monitor = monitor is None
        if monitor is False:  # no GPU sampling: throughput and AU only
            monitor = None
        elif monitor is None:
            try:
                monitor = Monitor(interval=interval, gpus="all")
                monitor.start()
            except Exception:  # noqa: BLE001 - the plot still shows throughput
                monitor = None
        self.monitor = monitor
        reason = _nvml_reason()
        note = "" if reason is None else reason.split(" (")[0].replace("NVML unavailable: ", "")
        self.au_last: float | None = None
        self.au_final: float | None = None
        self.samples_last: float | None = None
        self.gauge = AUGauge(au_target_pct)
        t0 = getattr(monitor, "t_start", None) or time.monotonic()
        self.subplots = loader_subplots(note, need, accelerator, au_target_pct)
        self.plot = LivePlot(
            self.subplots,
            title=title,
            subtitle=f"GPU N/A: {note}" if note else "",
            figsize=(10.0, 6.6),
            target=target,
            show=show,
            annotate=self._gauge,
            status=self._status,
            t0=t0,
            span_s=span_s,
        )
        if monitor is not None:
            self.plot.attach(monitor)

    @classmethod
    def start(cls, **kwargs) -> LoaderPlot:
        p = cls(**kwargs)
        p.plot.start()
        return p

    # ----------------------------------------------------------------- data
    def set_need(self, need: float | None, accelerator: str | None = None) -> None:
        """The samples/s ``accelerator`` needs at the AU target: a target line on the throughput subplot."""
        self.subplots[0].targets = need_targets(need, accelerator, self.au_target_pct)
        self.plot.timeline.dirty = True

    def set_span(self, seconds: float | None) -> None:
        """The run's expected length: the time axis spans it from the start."""
        self.plot.timeline.span_s = seconds

    def on_window(self, window: dict) -> None:
        """bench_loader's ``on_window`` callback: one point per 1 s window."""
        self.samples_last = window.get("samples_per_s")
        self.au_last = window.get("au_pct")
        self.plot.add(time.monotonic(), {"loader.samples_per_s": self.samples_last, "loader.au_pct": self.au_last})

    def _status(self) -> str:
        parts = []
        if self.samples_last is not None:
            parts.append(f"{format_metric('samples_per_s', self.samples_last)}")
        au = self.au_final if self.au_final is not None else self.au_last
        if au is not None:
            parts.append(f"AU {au:.1f} % (line {self.au_target_pct:g} %)")
        return "  ·  ".join(parts)

    def _gauge(self, fig, axes, data) -> None:
        # returns None: the plot redraws the whole figure every frame
        self.gauge.draw(fig, self.au_final if self.au_final is not None else self.au_last)

    # ------------------------------------------------------------------ end
    def stop(self) -> None:
        """Stop the monitor this plot started (the benchmark has ended)."""
        if self.monitor is not None and self.own_monitor:
            try:
                self.monitor.stop()
            except Exception:  # noqa: BLE001
                pass

    def finish(self, result=None) -> bytes | None:
        """The last frame, drawn on the calling (main) thread with the result's AU; returns the PNG."""
        if result is not None:
            self.au_final = result.metrics.get("au_pct")
            if result.metrics.get("samples_per_s") is not None:
                self.samples_last = result.metrics["samples_per_s"]
            if result.metrics.get("needed_samples_per_s"):
                self.set_need(result.metrics["needed_samples_per_s"], result.labels.get("accelerator"))
            note = warmup_note(result.metrics)
            if note:  # the plot's empty start, said where it shows
                tl = self.plot.timeline
                tl.subtitle = "; ".join(x for x in (tl.subtitle, note) if x)
                tl.dirty = True
        self.stop()
        return self.plot.close()
