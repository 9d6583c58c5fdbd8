"""Monitor tab: sample GPU, CPU and disk with the live plot, for a while or until Stop.

It runs the monitor subcommand, ``monitor --duration S`` (``--duration 0``: until
Stop), with the monitor's own live plot drawn into the panel, and the result is saved
like ``%%iobench monitor``'s.  With "until Stop", Stop is the normal end (status ok);
with a duration, stopping early marks the result interrupted.  Every field is an option
of the ``monitor`` subcommand, built from its parser (:func:`~.base.option_fields`), so
the panel, the CLI and ``%iobench`` cannot disagree; the disk watched is the one behind
the panel's PATH (``--path``) when it is a folder.
"""

from __future__ import annotations

from ...results import ProbeError
from ..runner import command_job
from ..wording import field_names
from .base import COMMON_FIELDS, FIT, LEFT_OUT, Tab, option_fields, options_argv, show

#: the subcommand's options shown as fields: (flag, the field's name in the panel, width)
OPTION_FIELDS = {
    "monitor": [
        ("--interval", "interval", "150px"),
        ("--duration", "for", "130px"),
        ("--gpu", "GPUs", "180px", {"placeholder": "all, none or 0,1"}),
        ("--net", "network", "200px", {"placeholder": "auto, all, none or eth0"}),
        ("--procs", "process table every", "200px"),
    ]
}
#: left out on purpose, and why (tests/test_panel_options.py fails on an option neither shown nor here)
NOT_FIELDS = {
    **LEFT_OUT,
    "--path": "the panel's PATH field (a folder: the disk behind it is watched)",
    "--no-plot": "the panel's 'live plot' box",
    "--serve": "a /metrics server outlives a panel run badly: nbbench watch --serve or %iobench monitor",
}
#: the panel has no cell to watch: a run lasts this long unless "until Stop" (the parser's default is the cell)
DURATION = "30s"


class MonitorTab(Tab):
    title = "Monitor"
    commands = ("monitor",)

    def build(self):
        import ipywidgets as w

        self.opts = option_fields("monitor", OPTION_FIELDS["monitor"])
        o = self.opts
        self.interval, self.duration, self.gpus = o["--interval"], o["--duration"], o["--gpu"]
        self.duration.value = DURATION
        self.duration.add_class("nbbench-monitor-duration")
        self.until_stop = w.Checkbox(
            value=False, description="until Stop", indent=False, layout=w.Layout(width=FIT, margin="0 16px 0 4px")
        )
        self.until_stop.observe(self._until_stop, names="value")
        about = w.HTML(
            "<span style='color:#555'>Samples GPU kernel-active % and memory (NVML), CPU, the disk "
            "behind PATH and this kernel's process tree (its reads and writes) with a live plot — e.g. "
            "while a training cell runs elsewhere. The summary is saved as a monitor run.</span>"
        )
        return w.VBox(
            [
                about,
                w.HBox([self.interval, self.duration, self.until_stop, self.gpus]),
                w.HBox([o["--net"], o["--procs"]]),
            ]
        )

    def _until_stop(self, change) -> None:
        # "for" means nothing until Stop: hidden (and disabled, for scripts reading it)
        self.duration.disabled = bool(change["new"])
        show(self.duration, not change["new"])

    def run_label(self) -> str:
        return "Start monitor"

    def fields(self) -> dict[str, str]:

        return {**COMMON_FIELDS, **field_names(list(self.opts.items())), "--path": "PATH"}

    def job(self, path, label):
        opts = options_argv(self.opts)  # (a hidden "for" is left out: --duration 0 below)
        if not self.until_stop.value and not self.duration.value.strip():
            raise ProbeError("the panel has no cell to watch: type how long in 'for' (30s), or tick 'until Stop'")
        if self.until_stop.value:
            opts += ["--duration", "0"]
        if path is not None and path.ok and path.kind == "dir":
            opts += ["--path", path.path]
        if not self.panel.plot_rates.value:  # the panel's "live plot" box: the monitor's own plot
            opts.append("--no-plot")
        return command_job("monitor", "monitor", *opts, label=label, fields=self.fields())
