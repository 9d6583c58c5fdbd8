"""Monitor tab: sample GPU, CPU and disk with the live plot, for a while or until Stop.

It runs :class:`nbbench.monitor.Monitor` with the monitor's own live plot
(:func:`nbbench.ui.liveplot.monitor_plot_kwargs`, drawn into the panel) and saves the
:class:`~nbbench.monitor.MonitorResult` like ``%%iobench monitor`` does.  With
"until Stop", Stop is the normal end (status ok); with a duration, stopping early
marks the result interrupted.
"""

from __future__ import annotations

import time

from ....results import ProbeError
from ..runner import Job
from .base import Tab

# record fields shown next to the progress bar, as metric keys (their unit is in the key)
_LIVE = (("cpu.util_pct", "cpu_util_pct"), ("gpu0.util_pct", "gpu0_util_pct"),
         ("disk.read_bytes_per_s", "disk_read_bytes_per_s"), ("disk.write_bytes_per_s", "disk_write_bytes_per_s"))


def live_metrics(rec: dict | None) -> dict:
    if not rec:
        return {}
    return {key: rec[field] for field, key in _LIVE if rec.get(field) is not None}


class MonitorTab(Tab):
    title = "Monitor"

    def build(self):
        import ipywidgets as w

        st = {"description_width": "initial"}
        self.interval = w.BoundedFloatText(value=0.2, min=0.01, max=60, step=0.05, description="interval (s)",
                                           style=st, layout=w.Layout(width="170px"))
        self.until_stop = w.Checkbox(value=False, description="until Stop", indent=False,
                                     layout=w.Layout(width="110px"))
        self.duration = w.BoundedFloatText(value=30, min=0.5, max=7 * 24 * 3600, description="for (s)", style=st,
                                           layout=w.Layout(width="150px"))
        self.gpus = w.Text(value="all", description="GPUs", placeholder="all, none or 0,1", style=st,
                           layout=w.Layout(width="180px"))
        self.until_stop.observe(lambda c: setattr(self.duration, "disabled", c["new"]), names="value")
        about = w.HTML("<span style='color:#555'>Samples GPU kernel-active % and memory (NVML), CPU and the disk "
                       "behind PATH (psutil) with a live plot — e.g. while a training cell runs elsewhere. "
                       "The summary is saved as a monitor run.</span>")
        return w.VBox([about, w.HBox([self.interval, self.duration, self.until_stop, self.gpus])])

    def run_label(self) -> str:
        return "Start monitor"

    def job(self, path, label):
        interval = float(self.interval.value)
        duration = None if self.until_stop.value else float(self.duration.value)
        gpus = self.gpus.value.strip() or "all"
        where = path.path if path is not None and path.ok and path.kind == "dir" else None
        return Job(title="monitor", fn=lambda ctx: self._monitor(ctx, interval, duration, gpus, where),
                   save=True, label=label)

    def _monitor(self, ctx, interval: float, duration: float | None, gpus: str, path: str | None):
        from ....monitor import Monitor

        try:
            m = Monitor(interval=interval, gpus=gpus, path=path)
        except ValueError as exc:
            raise ProbeError(str(exc)) from None
        m.start()
        plot = None
        try:
            try:
                from ...liveplot import monitor_plot_kwargs

                plot = ctx.live_plot(**monitor_plot_kwargs(m, title="nbbench monitor (panel)"))
                if plot is not None:
                    plot.attach(m)
            except ImportError:
                plot = None
            p = ctx.progress("monitor")
            t0 = time.monotonic()
            stopped = False
            while True:
                if ctx.cancel.wait(0.1):
                    stopped = True
                    break
                el = time.monotonic() - t0
                if duration is not None and el >= duration:
                    break
                p(None if duration is None else el / duration, live_metrics(m.latest()))
            m.stop()
        finally:
            if m.running:
                m.stop()
            if plot is not None:
                plot.close()
        interrupted = stopped and duration is not None
        res = m.result(status="interrupted" if interrupted else "ok",
                       reason="stopped before the set duration" if interrupted else None,
                       params={"interval_s": interval, "duration_s": duration, "gpus": gpus,
                               "path": path, "frontend": "panel"})
        p.close(res.status)
        return res
