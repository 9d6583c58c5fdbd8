"""Monitor tab: sample GPU, CPU and disk with the live plot, for a while or until Stop.

It runs the monitor subcommand, ``monitor --duration S`` (``--duration 0``: until
Stop), with the monitor's own live plot drawn into the panel, and the result is saved
like ``%%iobench monitor``'s.  With "until Stop", Stop is the normal end (status ok);
with a duration, stopping early marks the result interrupted.
"""

from __future__ import annotations

from ..runner import command_job
from .base import COMMON_FIELDS, FIT, Tab, show


class MonitorTab(Tab):
    title = "Monitor"
    commands = ("monitor",)

    def build(self):
        import ipywidgets as w

        st = {"description_width": "initial"}
        self.interval = w.BoundedFloatText(value=0.2, min=0.01, max=60, step=0.05, description="interval (s)",
                                           style=st, layout=w.Layout(width="170px"))
        self.until_stop = w.Checkbox(value=False, description="until Stop", indent=False,
                                     layout=w.Layout(width=FIT, margin="0 16px 0 4px"))
        self.duration = w.BoundedFloatText(value=30, min=0.5, max=7 * 24 * 3600, description="for (s)", style=st,
                                           layout=w.Layout(width="150px"))
        self.duration.add_class("nbbench-monitor-duration")
        self.gpus = w.Text(value="all", description="GPUs", placeholder="all, none or 0,1", style=st,
                           layout=w.Layout(width="180px"))
        self.until_stop.observe(self._until_stop, names="value")
        about = w.HTML("<span style='color:#555'>Samples GPU kernel-active % and memory (NVML), CPU and the disk "
                       "behind PATH (psutil) with a live plot — e.g. while a training cell runs elsewhere. "
                       "The summary is saved as a monitor run.</span>")
        return w.VBox([about, w.HBox([self.interval, self.duration, self.until_stop, self.gpus])])

    def _until_stop(self, change) -> None:
        # "for (s)" means nothing until Stop: hidden (and disabled, for scripts reading it)
        self.duration.disabled = bool(change["new"])
        show(self.duration, not change["new"])

    def run_label(self) -> str:
        return "Start monitor"

    def fields(self) -> dict[str, str]:
        return {**COMMON_FIELDS, "--interval": self.interval.description, "--duration": self.duration.description,
                "--gpu": self.gpus.description, "--path": "PATH"}

    def job(self, path, label):
        opts = ["--interval", f"{float(self.interval.value):g}",
                "--duration", "0" if self.until_stop.value else f"{float(self.duration.value):g}",
                "--gpu", self.gpus.value.strip() or "all"]
        if path is not None and path.ok and path.kind == "dir":
            opts += ["--path", path.path]
        if not self.panel.plot_rates.value:   # the panel's "live plot" box: the monitor's own plot
            opts.append("--no-plot")
        return command_job("monitor", "monitor", *opts, label=label, fields=self.fields())
