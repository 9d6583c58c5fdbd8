"""Storage tab: dd, randread, files and the disk presets on the PATH at the top.

Each probe's widgets become the options of its subcommand (``nbbench dd PATH --bs
1M --size 1G …``); the defaults shown are the subcommand parser's own.
"""

from __future__ import annotations

from ..runner import command_job
from ..wording import field_names
from .base import (COMMON_FIELDS, FIT, Tab, command_defaults, need_path, ranks_field, ranks_opts, show, size_text,
                   unavailable_reason)

PROBES = {
    "dd": "sequential write then read (dd-style)",
    "randread": "random reads at a block size and queue depth: IOPS, latency percentiles",
    "files": "read many small files of the tree, as an image dataset is read",
    "disk": "a preset set of tests (CrystalDiskMark, MLPerf sample sizes)",
}
PRESETS = ("cdm", "mlperf-resnet50", "mlperf-unet3d")
ENGINES = {"dd": ("builtin", "dd", "fio"), "randread": ("builtin", "fio"), "disk": ("builtin", "fio")}
CACHE = (("auto: direct where the filesystem accepts it", "auto"), ("direct (O_DIRECT)", "direct"),
         ("buffered (page cache)", "buffered"))
#: dd's mode in a directory (a file or a device is only read: no choice to make there)
DD_MODES = (("write, then read back", ""), ("write only", "write"))


def _cache_opts(mode: str) -> list[str]:
    return {"direct": ["--direct"], "buffered": ["--buffered"]}.get(mode, [])


class StorageTab(Tab):
    title = "Storage"
    commands = tuple(PROBES)

    def build(self):
        import ipywidgets as w

        st = {"description_width": "initial"}
        small = w.Layout(width="150px")
        dd = command_defaults("dd")
        rr = command_defaults("randread")
        fl = command_defaults("files")
        dk = command_defaults("disk")

        self.probe = w.ToggleButtons(options=[(k, k) for k in PROBES], value="dd",
                                     tooltips=list(PROBES.values()), style={"button_width": "90px"})
        self.probe.add_class("nbbench-storage-probe")
        self.about = w.HTML()

        # dd
        self.dd_bs = w.Text(value=size_text(dd.get("bs"), "1M"), description="block size", style=st, layout=small)
        self.dd_size = w.Text(value=size_text(dd.get("size"), "1G"), description="size", style=st, layout=small)
        self.dd_cache = w.Dropdown(options=CACHE, value="auto", description="cache", style=st,
                                   layout=w.Layout(width=FIT))
        self.dd_engine = w.Dropdown(options=ENGINES["dd"], value=dd.get("engine") or "builtin", description="engine",
                                    style=st, layout=w.Layout(width=FIT))
        self.dd_mode = w.Dropdown(options=DD_MODES, value="", description="mode", style=st,
                                  layout=w.Layout(width=FIT))
        for x, c in ((self.dd_bs, "bs"), (self.dd_size, "size")):
            x.add_class(f"nbbench-dd-{c}")
        dd_box = w.VBox([w.HBox([self.dd_bs, self.dd_size, self.dd_engine]), w.HBox([self.dd_cache, self.dd_mode])])

        # randread
        self.rr_bs = w.Text(value=size_text(rr.get("bs"), "4k"), description="block size", style=st, layout=small)
        self.rr_qd = w.BoundedIntText(value=int(rr.get("qd") or 1), min=1, max=4096, description="queue depth",
                                      style=st, layout=w.Layout(width="160px"))
        self.rr_runtime = w.Text(value=_dur(rr.get("runtime"), "10s"), description="runtime", style=st,
                                 layout=small)
        self.rr_ramp = w.Text(value=_dur(rr.get("ramp"), "1s"), description="ramp", style=st, layout=small)
        self.rr_size = w.Text(value=size_text(rr.get("size"), ""), description="region", style=st, layout=small,
                              placeholder="auto")
        self.rr_cache = w.Dropdown(options=CACHE, value="auto", description="cache", style=st,
                                   layout=w.Layout(width=FIT))
        self.rr_engine = w.Dropdown(options=ENGINES["randread"], value=rr.get("engine") or "builtin",
                                    description="engine", style=st, layout=w.Layout(width=FIT))
        self.rr_jobs = w.BoundedIntText(value=int(rr.get("jobs") or rr.get("threads") or 1), min=1, max=256,
                                           description="jobs", style=st, layout=w.Layout(width="140px"))
        # only a buffered read has a page cache to warm (O_DIRECT bypasses it)
        self.rr_warm = w.Checkbox(value=False, indent=False, layout=w.Layout(width=FIT),
                                  description="warm: read the region once first (measures the page cache)")
        for x, c in ((self.rr_bs, "bs"), (self.rr_runtime, "runtime"), (self.rr_size, "size")):
            x.add_class(f"nbbench-randread-{c}")
        rr_box = w.VBox([w.HBox([self.rr_bs, self.rr_qd, self.rr_jobs, self.rr_runtime, self.rr_ramp]),
                         w.HBox([self.rr_size, self.rr_engine, self.rr_cache]), self.rr_warm])

        # files
        self.fl_sample = w.BoundedIntText(value=int(fl.get("sample") or 1000), min=1, max=10**8,
                                          description="sample files", style=st, layout=w.Layout(width="190px"))
        self.fl_threads = w.BoundedIntText(value=int(fl.get("threads") or 8), min=1, max=1024,
                                           description="threads", style=st, layout=w.Layout(width="150px"))
        self.fl_cold = w.Checkbox(value=bool(fl.get("cold", False)), indent=False, layout=w.Layout(width=FIT),
                                  description="cold: drop the page cache first (else labelled warm)")
        files_box = w.VBox([w.HBox([self.fl_sample, self.fl_threads]), self.fl_cold])

        # disk presets
        self.dk_preset = w.Dropdown(options=PRESETS, value=dk.get("preset") if dk.get("preset") in PRESETS
                                    else "cdm", description="preset", style=st, layout=w.Layout(width=FIT))
        self.dk_size = w.Text(value=size_text(dk.get("size"), "1G"), description="size", style=st, layout=small)
        self.dk_runtime = w.Text(value=_dur(dk.get("runtime"), "5s"), description="per test", style=st,
                                 layout=small)
        self.dk_ramp = w.Text(value=_dur(dk.get("ramp"), "1s"), description="ramp", style=st, layout=small)
        self.dk_cache = w.Dropdown(options=CACHE, value="auto", description="cache", style=st,
                                   layout=w.Layout(width=FIT))
        self.dk_engine = w.Dropdown(options=ENGINES["disk"], value=dk.get("engine") or "builtin",
                                    description="engine", style=st, layout=w.Layout(width=FIT))
        # a file or a device is only read anyway: shown for a directory
        self.dk_nowrite = w.Checkbox(value=False, indent=False, description="reads only (no write tests)",
                                     layout=w.Layout(width=FIT))
        disk_box = w.VBox([w.HBox([self.dk_preset, self.dk_size, self.dk_runtime, self.dk_ramp]),
                           w.HBox([self.dk_cache, self.dk_engine]), self.dk_nowrite,
                           w.HTML("<span style='color:#555'>cdm: SEQ1M Q8T1, SEQ1M Q1T1, RND4K Q32T1, RND4K Q1T1, "
                                  "read and (in a directory) write, as one table.</span>")])

        self.boxes = {"dd": dd_box, "randread": rr_box, "files": files_box, "disk": disk_box}
        self.params = w.Box([dd_box])
        self.missing = w.HTML()
        self.ranks = ranks_field()   # --ranks N (not for the disk presets)
        self.probe.observe(self._switch, names="value")
        self.rr_cache.observe(lambda c: self._relevant(), names="value")
        self._info = None
        self._switch()
        return w.VBox([self.probe, self.about, self.params, self.ranks, self.missing])

    def _relevant(self) -> None:
        """Show only the fields that do something for this PATH and these choices."""
        info = self._info
        kind = info.kind if info is not None and info.ok else None
        # dd's mode and the presets' "reads only" choose writes: a file or a device is only read
        show(self.dd_mode, kind in (None, "dir"))
        show(self.dk_nowrite, kind in (None, "dir"))
        # warming fills the page cache: only a buffered read uses it ("auto" is buffered where
        # the filesystem refuses O_DIRECT)
        no_direct = info is not None and info.ok and info.direct is False
        show(self.rr_warm, self.rr_cache.value == "buffered" or (self.rr_cache.value == "auto" and no_direct))

    def on_path(self, info) -> None:
        self._info = info
        self._relevant()

    def _switch(self, change=None) -> None:
        name = self.probe.value
        self.params.children = (self.boxes[name],)
        self.ranks.layout.display = "none" if name == "disk" else None
        self.about.value = f"<span style='color:#555'>{PROBES[name]}</span>"
        note = unavailable_reason(name)
        self.missing.value = f"<span style='color:#c62828'>not available: {note}</span>" if note else ""
        self._relevant()
        self.panel.tab_changed()

    def run_label(self) -> str:
        return f"Run {self.probe.value}"

    def fields(self) -> dict[str, str]:
        name = self.probe.value
        own = {"dd": [("--bs", self.dd_bs), ("--size", self.dd_size), ("--engine", self.dd_engine),
                      ("--mode", self.dd_mode), ("--direct", "cache"), ("--buffered", "cache")],
               "randread": [("--bs", self.rr_bs), ("--qd", self.rr_qd), ("--jobs", self.rr_jobs),
                            ("--runtime", self.rr_runtime), ("--ramp", self.rr_ramp), ("--size", self.rr_size),
                            ("--engine", self.rr_engine), ("--warm", "warm"), ("--direct", "cache"),
                            ("--buffered", "cache")],
               "files": [("--sample", self.fl_sample), ("--threads", self.fl_threads), ("--cold", "cold")],
               "disk": [("--preset", self.dk_preset), ("--size", self.dk_size), ("--runtime", self.dk_runtime),
                        ("--ramp", self.dk_ramp), ("--engine", self.dk_engine), ("--no-write", "reads only"),
                        ("--direct", "cache"), ("--buffered", "cache")]}[name]
        return {**COMMON_FIELDS, **field_names(own)}

    def job(self, path, label):
        name = self.probe.value
        target = need_path(path, name)
        if name == "dd":
            opts = ["--bs", self.dd_bs.value.strip(), "--size", self.dd_size.value.strip(),
                    "--engine", self.dd_engine.value, *_cache_opts(self.dd_cache.value)]
            if self.dd_mode.value and path.kind == "dir":
                opts += ["--mode", self.dd_mode.value]
        elif name == "randread":
            opts = ["--bs", self.rr_bs.value.strip(), "--qd", self.rr_qd.value, "--jobs", self.rr_jobs.value,
                    "--runtime", self.rr_runtime.value.strip(), "--ramp", self.rr_ramp.value.strip(),
                    "--engine", self.rr_engine.value, *_cache_opts(self.rr_cache.value)]
            if self.rr_warm.value and self.rr_warm.layout.display != "none":
                opts.append("--warm")
            if self.rr_size.value.strip():
                opts += ["--size", self.rr_size.value.strip()]
        elif name == "files":
            opts = ["--sample", self.fl_sample.value, "--threads", self.fl_threads.value]
            if self.fl_cold.value:
                opts.append("--cold")
        else:
            opts = ["--preset", self.dk_preset.value, "--runtime", self.dk_runtime.value.strip(),
                    "--ramp", self.dk_ramp.value.strip(), "--engine", self.dk_engine.value,
                    *_cache_opts(self.dk_cache.value)]
            if self.dk_size.value.strip():
                opts += ["--size", self.dk_size.value.strip()]
            if self.dk_nowrite.value and path.kind == "dir":
                opts.append("--no-write")
        if name != "disk":
            opts += ranks_opts(self.ranks)
        return command_job(f"{name} {target}", name, target, *opts, label=label, fields=self.fields())


def _dur(value, fallback: str) -> str:
    if value is None:
        return fallback
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{value:g}s"
    return fallback
