"""GPU tab: ``nbbench gpu`` — is CUDA usable, which devices, verdicts, a short benchmark."""

from __future__ import annotations

from ..runner import command_job
from .base import COMMON_FIELDS, FIT, Tab, command_defaults, repeat_field, repeat_opts, show, unavailable_reason


class GpuTab(Tab):
    title = "GPU"
    commands = ("gpu",)
    live_plot = False   # the check reports no rates while it runs: nothing to plot

    def build(self):
        import ipywidgets as w

        d = command_defaults("gpu")
        style = {"description_width": "initial"}
        self.bench = w.Checkbox(value=bool(d.get("bench", True)), description="sanity benchmark when CUDA works "
                                "(matmul FLOP/s, host↔device copies)", indent=False, layout=w.Layout(width=FIT))
        self.size = w.BoundedIntText(value=int(d.get("size", 4096) or 4096), min=64, max=65536, step=64,
                                     description="matmul N", style=style, layout=w.Layout(width="160px"))
        self.iters = w.BoundedIntText(value=int(d.get("iters", 10) or 10), min=1, max=1000,
                                      description="iterations", style=style, layout=w.Layout(width="150px"))
        self.repeat = repeat_field()   # --repeat N: whole runs
        # the benchmark's settings, shown only when there is a benchmark to set
        self.bench_box = w.HBox([self.size, self.iters, self.repeat])
        self.bench.observe(lambda c: show(self.bench_box, c["new"]), names="value")
        show(self.bench_box, self.bench.value)
        note = unavailable_reason("gpu")
        help_ = w.HTML("<span style='color:#555'>Checks torch's CUDA build against the driver, lists the devices "
                       "(PCIe link, MIG, memory) and gives a verdict per check. Without a GPU it says why.</span>")
        kids = [help_, self.bench, self.bench_box]
        if note:
            kids.append(w.HTML(f"<span style='color:#c62828'>not available: {note}</span>"))
        return w.VBox(kids)

    def run_label(self) -> str:
        return "Run GPU check"

    def fields(self) -> dict[str, str]:
        return {**COMMON_FIELDS, "--size": self.size.description, "--iters": self.iters.description,
                "--no-bench": "sanity benchmark"}

    def job(self, path, label):
        opts = ["--size", self.size.value, "--iters", self.iters.value] + repeat_opts(self.repeat)
        if not self.bench.value:
            opts.append("--no-bench")
        return command_job("gpu check", "gpu", *opts, label=label, fields=self.fields())
