"""DataLoader tab: ``feed`` and ``sweep`` on the dataset folder at PATH (root/CLASS/IMAGE).

* feed — how many accelerators of a kind this storage and CPU can feed at AU >= 90 %,
  and which of the two limits it (cold vs warm cache);
* sweep — num_workers × batch size × pin_memory × prefetch, with a recommendation.

The widgets become the options of ``nbbench feed DIR …`` / ``nbbench sweep DIR …``.
"""

from __future__ import annotations

from ..runner import command_job
from ..wording import field_names
from .base import COMMON_FIELDS, FIT, Tab, command_defaults, need_path, unavailable_reason, ranks_field, ranks_opts, repeat_field, repeat_opts

ACTIONS = {
    "feed": "how many accelerators can this storage and CPU feed at AU >= 90 % — and what limits it",
    "sweep": "sweep num_workers × batch size × pin_memory × prefetch and recommend a configuration",
}


def _accelerators() -> list[str]:
    try:
        from ...accelerators import names

        return list(names())
    except Exception:  # noqa: BLE001
        return ["h100-resnet50"]


def _csv(v, fallback: str) -> str:
    if v is None:
        return fallback
    if isinstance(v, (list, tuple)):
        return ",".join(str(x).lower() if isinstance(x, bool) else str(x) for x in v)
    return str(v)


def _secs(v, fallback: str) -> str:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return f"{v:g}s"
    return fallback if v is None else str(v)


class LoaderTab(Tab):
    title = "DataLoader"
    commands = tuple(ACTIONS)

    def build(self):
        import ipywidgets as w

        st = {"description_width": "initial"}
        fd = command_defaults("feed")
        sw = command_defaults("sweep")
        accels = _accelerators()
        self.action = w.ToggleButtons(options=list(ACTIONS), value="feed", tooltips=list(ACTIONS.values()),
                                      style={"button_width": "90px"})
        self.action.add_class("nbbench-loader-action")
        self.about = w.HTML()

        # feed
        self.fd_accel = w.Dropdown(options=accels, value=fd.get("accelerator") if fd.get("accelerator") in accels
                                   else accels[0], description="accelerator", style=st,
                                   layout=w.Layout(width=FIT))
        self.fd_batch = w.BoundedIntText(value=int(fd.get("batch_size") or 64), min=1, max=65536,
                                         description="batch size", style=st, layout=w.Layout(width="170px"))
        self.fd_workers = w.Text(value="" if fd.get("workers") is None else str(fd["workers"]),
                                 placeholder="usable CPUs", description="workers", style=st,
                                 layout=w.Layout(width="190px"))
        self.fd_duration = w.Text(value=_secs(fd.get("duration"), "5s"), description="seconds per run",
                                  style=st, layout=w.Layout(width="190px"))
        self.fd_cold = w.Dropdown(options=[("cold via fadvise when possible (auto)", "auto"),
                                           ("fadvise per file", "fadvise"),
                                           ("drop_caches (root, whole machine)", "drop_caches"),
                                           ("none: warm run only", "none")],
                                  value=fd.get("cold") or "auto", description="cold cache", style=st,
                                  layout=w.Layout(width=FIT))
        self.fd_decode = w.Dropdown(options=[("auto", "auto"), ("Pillow decode + crop", "pil"),
                                             ("bytes only", "none")], value=fd.get("decode") or "auto",
                                    description="decode", style=st, layout=w.Layout(width=FIT))
        feed_box = w.VBox([w.HBox([self.fd_accel, self.fd_batch, self.fd_workers]),
                           w.HBox([self.fd_duration, self.fd_decode]), self.fd_cold])

        # sweep
        self.sw_workers = w.Text(value=_csv(sw.get("workers"), ""), placeholder="0,1,2,4… up to the CPUs",
                                 description="num_workers", style=st, layout=w.Layout(width="280px"))
        self.sw_batch = w.Text(value=_csv(sw.get("batch_size"), "64"), description="batch sizes", style=st,
                               layout=w.Layout(width="200px"))
        self.sw_pin = w.Text(value=_csv(sw.get("pin_memory"), "false"), description="pin_memory", style=st,
                             layout=w.Layout(width="200px"))
        self.sw_prefetch = w.Text(value=_csv(sw.get("prefetch"), "2"), description="prefetch", style=st,
                                  layout=w.Layout(width="150px"))
        self.sw_duration = w.Text(value=_secs(sw.get("duration"), "2s"), description="seconds each", style=st,
                                  layout=w.Layout(width="170px"))
        self.sw_emulate = w.Dropdown(options=[("none: the loader alone", "")] + [(a, a) for a in accels],
                                     value="", description="emulate", style=st, layout=w.Layout(width=FIT))
        self.sw_decode = w.Dropdown(options=[("auto", "auto"), ("Pillow decode + crop", "pil"),
                                             ("bytes only", "none")], value=sw.get("decode") or "auto",
                                    description="decode", style=st, layout=w.Layout(width=FIT))
        sweep_box = w.VBox([w.HBox([self.sw_workers, self.sw_batch, self.sw_pin]),
                            w.HBox([self.sw_prefetch, self.sw_duration, self.sw_emulate]), self.sw_decode])

        self.boxes = {"feed": feed_box, "sweep": sweep_box}
        self.params = w.Box([feed_box])
        self.missing = w.HTML()
        self.hint = w.HTML("<span style='color:#555'>PATH is the dataset folder (root/CLASS/IMAGE). No dataset? "
                           "<code>nbbench make-dataset DIR --files 2000 --jpeg</code> makes one.</span>")
        self.ranks = ranks_field()   # --ranks N
        self.repeat = repeat_field()   # --repeat N (feed measures; a sweep compares its configurations)
        self.action.observe(self._switch, names="value")
        self._switch()
        return w.VBox([self.action, self.about, self.params, w.HBox([self.repeat, self.ranks]), self.hint,
                       self.missing])

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
        if self.action.value == "feed":
            own = [("--accelerator", self.fd_accel), ("--batch-size", self.fd_batch), ("--workers", self.fd_workers),
                   ("--duration", self.fd_duration), ("--cold", self.fd_cold), ("--decode", self.fd_decode)]
        else:
            own = [("--workers", self.sw_workers), ("--batch-size", self.sw_batch), ("--pin-memory", self.sw_pin),
                   ("--prefetch", self.sw_prefetch), ("--duration", self.sw_duration),
                   ("--emulate", self.sw_emulate), ("--decode", self.sw_decode)]
        return {**COMMON_FIELDS, **field_names(own)}

    def job(self, path, label):
        name = self.action.value
        target = need_path(path, name)
        if path.kind != "dir":
            from ...results import ProbeError

            raise ProbeError(f"{target} is not a directory: {name} reads an image folder (root/CLASS/IMAGE)")
        if name == "feed":
            opts = ["--accelerator", self.fd_accel.value, "--batch-size", self.fd_batch.value,
                    "--duration", self.fd_duration.value.strip(), "--cold", self.fd_cold.value,
                    "--decode", self.fd_decode.value]
            if self.fd_workers.value.strip():
                opts += ["--workers", self.fd_workers.value.strip()]
            opts += repeat_opts(self.repeat)
        else:
            opts = ["--batch-size", self.sw_batch.value.strip(), "--pin-memory", self.sw_pin.value.strip(),
                    "--prefetch", self.sw_prefetch.value.strip(), "--duration", self.sw_duration.value.strip(),
                    "--decode", self.sw_decode.value]
            if self.sw_workers.value.strip():
                opts += ["--workers", self.sw_workers.value.strip()]
            if self.sw_emulate.value:
                opts += ["--emulate", self.sw_emulate.value]
        opts += ranks_opts(self.ranks)
        return command_job(f"{name} {target}", name, target, *opts, label=label, fields=self.fields())
