"""DataLoader tab: ``feed`` and ``sweep`` on the dataset folder at PATH (root/CLASS/IMAGE).

* feed — how many accelerators of a kind this storage and CPU can feed at AU >= 90 %,
  and which of the two limits it (cold vs warm cache);
* sweep — num_workers × batch size × pin_memory × prefetch, with a recommendation.

The fields are the options of ``nbbench feed DIR …`` / ``nbbench sweep DIR …``, built from
their parsers (:func:`~.base.option_field`).
"""

from __future__ import annotations

from ...accelerators import names
from ...results import ProbeError
from ..runner import command_job
from ..wording import field_names
from .base import (
    COMMON_FIELDS,
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
    unavailable_reason,
)

ACTIONS = {
    "feed": "how many accelerators can this storage and CPU feed at AU >= 90 % — and what limits it",
    "sweep": "sweep num_workers × batch size × pin_memory × prefetch and recommend a configuration",
}


def _accelerators() -> list[str]:
    try:
        return list(names())
    except Exception:  # noqa: BLE001
        return ["h100-resnet50"]


DECODE = {"auto": "auto", "pil": "Pillow decode + crop", "none": "bytes only"}
COLD = {
    "auto": "cold via fadvise when possible (auto)",
    "fadvise": "fadvise per file",
    "drop_caches": "drop_caches (root, whole machine)",
    "none": "none: warm run only",
}


def option_spec(accels: list[str]) -> dict[str, list]:
    """The fields that are feed's and sweep's options: (flag, the field's name, width, words);
    defaults, choices, limits and help are the parsers' (tests/test_panel_options.py)."""
    return {
        "feed": [
            ("--accelerator", "accelerator", None, {"choices": accels}),
            ("--batch-size", "batch size", "170px"),
            ("--workers", "workers", "190px", {"placeholder": "usable CPUs"}),
            ("--duration", "seconds per run", "190px"),
            ("--cold", "cold cache", None, {"labels": COLD}),
            ("--decode", "decode", None, {"labels": DECODE}),
        ],
        "sweep": [
            ("--workers", "num_workers", "280px", {"placeholder": "0,1,2,4… up to the CPUs"}),
            ("--batch-size", "batch sizes", "200px"),
            ("--pin-memory", "pin_memory", "200px"),
            ("--prefetch", "prefetch", "150px"),
            ("--duration", "seconds each", "170px"),
            ("--emulate", "emulate", None, {"choices": [""] + accels, "labels": {"": "none: the loader alone"}}),
            ("--decode", "decode", None, {"labels": DECODE}),
        ],
    }


#: options the panel leaves out on purpose (see NOT_FIELDS in the Storage tab)
NOT_FIELDS = {
    *LEFT_OUT,
    *LEFT_OUT_RUNS,
    *("--count", "--warmup", "--max-files", "--step", "--size", "--dataset", "--seed", "--no-persistent", "--no-plot"),
    *("--endpoint-url", "--region"),  # object storage: the panel's PATH is a folder
}


class LoaderTab(Tab):
    title = "DataLoader"
    commands = tuple(ACTIONS)

    def build(self):
        import ipywidgets as w

        accels = _accelerators()
        self.action = w.ToggleButtons(
            options=list(ACTIONS), value="feed", tooltips=list(ACTIONS.values()), style={"button_width": "90px"}
        )
        self.action.add_class("nbbench-loader-action")
        self.about = w.HTML()
        # the fields are the subcommands' options, from their parsers (option_field)
        self.opts = {name: option_fields(name, spec) for name, spec in option_spec(accels).items()}
        fd, sw = self.opts["feed"], self.opts["sweep"]
        self.fd_accel, self.fd_batch, self.fd_workers = fd["--accelerator"], fd["--batch-size"], fd["--workers"]
        self.fd_duration, self.fd_cold, self.fd_decode = fd["--duration"], fd["--cold"], fd["--decode"]
        self.sw_workers, self.sw_batch, self.sw_pin = sw["--workers"], sw["--batch-size"], sw["--pin-memory"]
        self.sw_prefetch, self.sw_duration = sw["--prefetch"], sw["--duration"]
        self.sw_emulate, self.sw_decode = sw["--emulate"], sw["--decode"]
        feed_box = w.VBox(
            [
                w.HBox([self.fd_accel, self.fd_batch, self.fd_workers]),
                w.HBox([self.fd_duration, self.fd_decode]),
                self.fd_cold,
            ]
        )
        sweep_box = w.VBox(
            [
                w.HBox([self.sw_workers, self.sw_batch, self.sw_pin]),
                w.HBox([self.sw_prefetch, self.sw_duration, self.sw_emulate]),
                self.sw_decode,
            ]
        )

        self.boxes = {"feed": feed_box, "sweep": sweep_box}
        self.params = w.Box([feed_box])
        self.missing = w.HTML()
        self.hint = w.HTML(
            "<span style='color:#555'>PATH is the dataset folder (root/CLASS/IMAGE). No dataset? "
            "<code>nbbench make-dataset DIR --files 2000 --jpeg</code> makes one.</span>"
        )
        self.ranks = ranks_field()  # --ranks N
        self.repeat = repeat_field("feed")  # --repeat N (feed measures; a sweep compares its configurations)
        self.action.observe(self._switch, names="value")
        self._switch()
        return w.VBox(
            [self.action, self.about, self.params, w.HBox([self.repeat, self.ranks]), self.hint, self.missing]
        )

    def _switch(self, change=None) -> None:
        name = self.action.value
        self.params.children = (self.boxes[name],)
        if hasattr(self, "repeat"):
            self.repeat.layout.display = None if name == "feed" else "none"
        self.about.value = f"<span style='color:#555'>{ACTIONS[name]}</span>"
        note = unavailable_reason(name)
        self.missing.value = f"<span style='color:#c62828'>not available: {note}</span>" if note else ""
        self.panel.tab_changed()

    def run_label(self) -> str:
        return f"Run {self.action.value}"

    def fields(self) -> dict[str, str]:
        return {**COMMON_FIELDS, **field_names(list(self.opts[self.action.value].items()))}

    def job(self, path, label):
        name = self.action.value
        target = need_path(path, name)
        if path.kind != "dir":
            raise ProbeError(f"{target} is not a directory: {name} reads an image folder (root/CLASS/IMAGE)")
        opts = options_argv(self.opts[name]) + ranks_opts(self.ranks)
        if name == "feed":
            opts += repeat_opts(self.repeat)
        return command_job(f"{name} {target}", name, target, *opts, label=label, fields=self.fields())
