"""Storage tab: dd, randread, files and the disk presets on the PATH at the top.

Each probe's fields are the options of its subcommand (``nbbench dd PATH --bs 1M --size
1G …``), built from the subcommand's parser (:func:`~.base.option_field`: names, defaults,
choices, limits, help), so the panel, the CLI and ``%iobench`` cannot disagree.
"""

from __future__ import annotations

from ..runner import command_job
from ..wording import field_names
from .base import (
    COMMON_FIELDS,
    FIT,
    LEFT_OUT,
    LEFT_OUT_RUNS,
    Tab,
    need_path,
    option_fields,
    options_argv,
    ranks_field,
    ranks_opts,
    repeat_field,
    repeat_opts,
    show,
    unavailable_reason,
)

PROBES = {
    "dd": "sequential write then read (dd-style)",
    "randread": "random reads at a block size and queue depth: IOPS, latency percentiles",
    "files": "read many small files of the tree, as an image dataset is read",
    "disk": "a preset set of tests (CrystalDiskMark, MLPerf sample sizes)",
}
#: the fields that are the subcommands' own options: (flag, the field's name in the panel, width);
#: everything else about them — default, choices, limits, help — is the parser's
OPTION_FIELDS = {
    "dd": [
        ("--bs", "block size", "150px"),
        ("--size", "size", "150px"),
        ("--engine", "engine"),
        ("--jobs", "jobs", "120px"),
    ],
    "randread": [
        ("--bs", "block size", "150px"),
        ("--qd", "queue depth", "160px"),
        ("--jobs", "jobs", "120px"),
        ("--runtime", "runtime", "150px"),
        ("--ramp", "ramp", "150px"),
        ("--size", "region", "150px"),
        ("--engine", "engine"),
        ("--warm", "warm: read the region once first (measures the page cache)"),
    ],
    "files": [
        ("--sample", "sample files", "190px"),
        ("--threads", "threads", "150px"),
        ("--cold", "cold: drop the page cache first (else labelled warm)"),
    ],
    "disk": [
        ("--preset", "preset"),
        ("--size", "size", "150px"),
        ("--runtime", "per test", "150px"),
        ("--ramp", "ramp", "150px"),
        ("--engine", "engine"),
        ("--jobs", "jobs", "120px"),
        ("--no-write", "reads only (no write tests)"),
    ],
}
#: the options the panel leaves out on purpose (the panel's own fields, or not for a panel);
#: tests/test_panel_options.py fails on an option that is neither a field nor here
NOT_FIELDS = {
    *LEFT_OUT,
    *LEFT_OUT_RUNS,
    *("--direct", "--buffered"),  # the cache menu
    *("--mode", "--count", "--buffers", "--file-per-rank", "--seed"),
    "--threads",  # randread's and disk's deprecated alias of --jobs (files' own --threads is a field)
}
CACHE = (
    ("auto: direct where the filesystem accepts it", "auto"),
    ("direct (O_DIRECT)", "direct"),
    ("buffered (page cache)", "buffered"),
)
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
        self.probe = w.ToggleButtons(
            options=[(k, k) for k in PROBES], value="dd", tooltips=list(PROBES.values()), style={"button_width": "90px"}
        )
        self.probe.add_class("nbbench-storage-probe")
        self.about = w.HTML()
        # every field that is one of the subcommand's options comes from its parser (names,
        # defaults, choices, limits, help: option_field); the panel only names and places it
        self.opts = {name: option_fields(name, spec) for name, spec in OPTION_FIELDS.items()}
        dd, rr, fl, dk = (self.opts[k] for k in ("dd", "randread", "files", "disk"))
        self.dd_bs, self.dd_size, self.dd_engine, self.dd_jobs = dd["--bs"], dd["--size"], dd["--engine"], dd["--jobs"]
        self.rr_bs, self.rr_qd, self.rr_jobs = rr["--bs"], rr["--qd"], rr["--jobs"]
        self.rr_runtime, self.rr_ramp, self.rr_size = rr["--runtime"], rr["--ramp"], rr["--size"]
        self.rr_engine, self.rr_warm = rr["--engine"], rr["--warm"]
        self.fl_sample, self.fl_threads, self.fl_cold = fl["--sample"], fl["--threads"], fl["--cold"]
        self.dk_preset, self.dk_size, self.dk_runtime = dk["--preset"], dk["--size"], dk["--runtime"]
        self.dk_ramp, self.dk_engine, self.dk_nowrite = dk["--ramp"], dk["--engine"], dk["--no-write"]
        self.dk_jobs = dk["--jobs"]
        # the panel's own choices over several flags: the cache (--direct / --buffered / neither)
        # and dd's mode in a directory
        self.dd_cache, self.rr_cache, self.dk_cache = (
            w.Dropdown(options=CACHE, value="auto", description="cache", style=st, layout=w.Layout(width=FIT))
            for _ in range(3)
        )
        self.dd_mode = w.Dropdown(options=DD_MODES, value="", description="mode", style=st, layout=w.Layout(width=FIT))
        dd_box = w.VBox(
            [w.HBox([self.dd_bs, self.dd_size, self.dd_engine, self.dd_jobs]), w.HBox([self.dd_cache, self.dd_mode])]
        )
        rr_box = w.VBox(
            [
                w.HBox([self.rr_bs, self.rr_qd, self.rr_jobs, self.rr_runtime, self.rr_ramp]),
                w.HBox([self.rr_size, self.rr_engine, self.rr_cache]),
                self.rr_warm,
            ]
        )
        files_box = w.VBox([w.HBox([self.fl_sample, self.fl_threads]), self.fl_cold])
        disk_box = w.VBox(
            [
                w.HBox([self.dk_preset, self.dk_size, self.dk_runtime, self.dk_ramp]),
                w.HBox([self.dk_cache, self.dk_engine, self.dk_jobs]),
                self.dk_nowrite,
                w.HTML(
                    "<span style='color:#555'>cdm: SEQ1M Q8T1, SEQ1M Q1T1, RND4K Q32T1, RND4K Q1T1, "
                    "read and (in a directory) write, as one table.</span>"
                ),
            ]
        )

        self.boxes = {"dd": dd_box, "randread": rr_box, "files": files_box, "disk": disk_box}
        self.params = w.Box([dd_box])
        self.missing = w.HTML()
        self.ranks = ranks_field()  # --ranks N (not for the disk presets)
        self.repeat = repeat_field("dd")  # --repeat N: every probe here (the same option of each parser)
        self.probe.observe(self._switch, names="value")
        self.rr_cache.observe(lambda c: self._relevant(), names="value")
        self._info = None
        self._switch()
        return w.VBox([self.probe, self.about, self.params, w.HBox([self.repeat, self.ranks]), self.missing])

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
        own = list(self.opts[name].items()) + [("--direct", "cache"), ("--buffered", "cache")] * (name != "files")
        own += [("--mode", self.dd_mode)] * (name == "dd")
        return {**COMMON_FIELDS, **field_names(own)}

    def job(self, path, label):
        name = self.probe.value
        target = need_path(path, name)
        opts = options_argv(self.opts[name])
        if name == "dd":
            opts += _cache_opts(self.dd_cache.value)
            if self.dd_mode.value and path.kind == "dir":
                opts += ["--mode", self.dd_mode.value]
        elif name == "randread":
            opts += _cache_opts(self.rr_cache.value)
        elif name == "disk":
            opts += _cache_opts(self.dk_cache.value)
            if "--no-write" in opts and path.kind != "dir":
                opts.remove("--no-write")
        opts += repeat_opts(self.repeat)
        if name != "disk":
            opts += ranks_opts(self.ranks)
        return command_job(f"{name} {target}", name, target, *opts, label=label, fields=self.fields())
