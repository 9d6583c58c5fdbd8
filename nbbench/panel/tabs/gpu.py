"""GPU tab: ``nbbench gpu`` — is CUDA usable, which devices, verdicts, a short benchmark.

Every field is an option of the ``gpu`` subcommand, built from its parser
(:func:`~.base.option_fields`: its default, limits and help), so the panel, the CLI and
``%iobench`` cannot disagree.
"""

from __future__ import annotations

from ..runner import command_job
from ..wording import field_names
from .base import (
    COMMON_FIELDS,
    LEFT_OUT,
    LEFT_OUT_RUNS,
    Tab,
    option_fields,
    options_argv,
    repeat_field,
    repeat_opts,
    show,
    unavailable_reason,
)

#: the subcommand's options shown as fields: (flag, the field's name in the panel, width)
OPTION_FIELDS = {
    "gpu": [
        ("--no-bench", "sanity benchmark when CUDA works (matmul FLOP/s, host↔device copies)"),
        ("--size", "matmul N", "160px"),
        ("--iters", "iterations", "150px"),
        ("--health", "health under load (NVML: clocks, PCIe link, ECC, row remaps, Xid, NVLink…)"),
    ]
}
#: left out on purpose, and why (tests/test_panel_options.py fails on an option neither shown nor here)
NOT_FIELDS = {
    **LEFT_OUT,
    "--repeat": LEFT_OUT_RUNS["--repeat"],
    "--repeats": "the old name of --iters, hidden in the parser too",
    "--load-seconds": "the health read's load length: its default (5 s) trains the links up; %iobench sets it",
}


class GpuTab(Tab):
    title = "GPU"
    commands = ("gpu",)
    live_plot = False  # the check reports no rates while it runs: nothing to plot

    def build(self):
        import ipywidgets as w

        self.opts = option_fields("gpu", OPTION_FIELDS["gpu"])
        self.bench, self.size, self.iters = self.opts["--no-bench"], self.opts["--size"], self.opts["--iters"]
        self.repeat = repeat_field("gpu")  # --repeat N: whole runs
        # the benchmark's settings, shown only when there is a benchmark to set
        self.bench_box = w.HBox([self.size, self.iters, self.repeat])
        self.bench.observe(lambda c: show(self.bench_box, c["new"]), names="value")
        show(self.bench_box, self.bench.value)
        note = unavailable_reason("gpu")
        help_ = w.HTML(
            "<span style='color:#555'>Checks torch's CUDA build against the driver, lists the devices "
            "(PCIe link, MIG, memory) and gives a verdict per check. Without a GPU it says why.</span>"
        )
        kids = [help_, self.bench, self.bench_box, self.opts["--health"]]
        if note:
            kids.append(w.HTML(f"<span style='color:#c62828'>not available: {note}</span>"))
        return w.VBox(kids)

    def run_label(self) -> str:
        return "Run GPU check"

    def fields(self) -> dict[str, str]:

        return {**COMMON_FIELDS, **field_names(list(self.opts.items())), "--no-bench": "sanity benchmark"}

    def job(self, path, label):
        opts = options_argv(self.opts) + repeat_opts(self.repeat)
        return command_job("gpu check", "gpu", *opts, label=label, fields=self.fields())
