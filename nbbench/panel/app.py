"""The control panel: one ipywidgets app over every probe.

::

    nbbench control panel
    PATH [/dataset                         ]
         ✓ directory · ext4 on nvme0n1 · 812 GiB free of 1.8 TiB · O_DIRECT ok
    [ GPU | Storage | DataLoader | Monitor | History ]
      …the tab's parameters…
    label [     ] [x] save [x] live plot  [▶ Run dd] [■ Stop]   running dd /dataset…
    [██████████······] 61.0%  write 943 MB/s
    (errors, red)
    (the result: the answer first)
    (live plot)

Each tab has its own run area (:class:`~.area.RunArea`: status line, bar, plot, errors,
result), so a tab shows only its own last run and a new run clears it; the controls row
shows only what does something on the tab shown (no Run on History, no live-plot box
where nothing is plotted, no label when nothing is saved).

The panel's cell returns at once (a kernel only handles button clicks while no
cell is busy); runs happen in the background :class:`~.runner.PanelRunner`, one
at a time, and Stop sets the run's cancel event.  Displayed, the panel also leaves a
static snapshot (:mod:`.snapshot`) under the widget, refreshed after each run, which
is what a saved notebook shows where widgets cannot (GitHub, nbviewer).
"""

from __future__ import annotations

import threading
from typing import Any

from .. import tempfiles
from ..results import ProbeError
from ..ui.warmup import warm_up
from .area import RunArea, value_widgets
from .drawing import RunDrawing
from .pathfield import PathField, PathInfo
from .runner import Job, PanelRunner, RunRecord
from .snapshot import Snapshot
from .tabs import TAB_CLASSES

__all__ = ["ControlPanel"]


class ControlPanel(RunDrawing):
    """The panel.  ``widget`` is its ipywidgets tree; displaying the panel shows it (and its snapshot)."""

    def __init__(
        self, path: str | None = None, tab: str | None = None, store=None, user_ns: dict | None = None, checker=None
    ):
        import ipywidgets as w

        # the write probes' temp files are removed on SIGTERM/SIGHUP (a kernel stop) only if the
        # handlers were installed from the main thread: the panel's runs happen in another one
        tempfiles.install_handlers()
        self.store = store
        self.runner = PanelRunner(self, store=store, user_ns=user_ns)
        self._run_area: RunArea | None = None  # where the current (or last) run draws
        self._next_area: RunArea | None = None  # where the run being started will draw
        self._after: threading.Thread | None = None  # draws the end of the last run (plot note, snapshot)
        self.snapshot = Snapshot(self)

        self.title = w.HTML(
            "<b style='font-size:115%'>nbbench</b> <span style='color:#555'>control panel — "
            "the probes of <code>%iobench</code>, behind buttons</span>" + _CSS
        )
        kw = {"checker": checker} if checker is not None else {}
        self.path_field = PathField(path, on_change=self._path_changed, **kw)

        self.tabs_by_title: dict[str, Any] = {}
        self.tab_list = []
        self.tabs = None
        for cls in TAB_CLASSES():
            t = cls(self)
            t.area = RunArea(t.title)
            self.tab_list.append(t)
            self.tabs_by_title[t.title] = t
        self.tabs = w.Tab(children=[t.widget for t in self.tab_list], titles=[t.title for t in self.tab_list])
        self.tabs.add_class("nbbench-tabs")
        if self.path_field.info is not None:  # the first check ran before the tabs existed
            self._path_changed(self.path_field.info)

        style = {"description_width": "initial"}
        self.label = w.Text(
            value="", description="label", placeholder="e.g. baseline", style=style, layout=w.Layout(width="220px")
        )
        self.label.add_class("nbbench-label")
        self.save = w.Checkbox(
            value=True, description="save to the store", indent=False, layout=w.Layout(width="max-content")
        )
        self.save.add_class("nbbench-save")
        self.plot_rates = w.Checkbox(
            value=True,
            description="live plot",
            indent=False,
            layout=w.Layout(width="max-content"),
            tooltip="plot the rates a probe reports while it runs",
        )
        self.plot_rates.add_class("nbbench-live-plot")
        self.run_button = w.Button(
            description="Run", button_style="success", icon="play", layout=w.Layout(width="auto", min_width="110px")
        )
        self.run_button.add_class("nbbench-run")
        self.stop_button = w.Button(
            description="Stop",
            button_style="danger",
            icon="stop",
            disabled=True,
            tooltip="stop the run (its partial result is kept, marked interrupted)",
        )
        self.stop_button.add_class("nbbench-stop")
        self.status_slot = w.Box([])
        self.controls = w.HBox(
            [self.label, self.save, self.plot_rates, self.run_button, self.stop_button, self.status_slot],
            layout=w.Layout(align_items="center", flex_flow="row wrap", grid_gap="4px 8px"),
        )
        self.controls.add_class("nbbench-controls")
        self.area_box = w.Box([], layout=w.Layout(width="100%"))

        self.widget = w.VBox(
            [self.title, self.path_field.widget, self.tabs, self.controls, self.area_box],
            layout=w.Layout(border="1px solid #ccc", padding="6px", width="100%"),
        )
        self.widget.add_class("nbbench-panel")

        warm_up(plotting=self.plot_rates.value)
        self.run_button.on_click(lambda _b: self.run())
        self.stop_button.on_click(lambda _b: self.stop())
        self.save.observe(lambda _c: self._update_controls(), names="value")
        self.tabs.observe(self._tab_selected, names="selected_index")
        for t in self.tab_list:  # a field changed: a refused Run's error no longer applies
            for v in value_widgets([t.widget, *getattr(t, "boxes", {}).values()]):
                v.observe(lambda _c, a=t.area: self._field_changed(a), names="value")
        if tab is not None:
            self.select(tab)
        self.tab_changed()

    # ------------------------------------------------------------- display
    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)

    def _ipython_display_(self):
        """The live widget, then the static snapshot (what a saved notebook shows without widgets)."""
        from IPython.display import display

        bundle = dict(self.widget._repr_mimebundle_() or {})
        bundle["text/plain"] = repr(self)  # not the VBox's repr of every child
        display(bundle, raw=True)
        self.snapshot.display()

    def __repr__(self) -> str:
        # the tab's name and the panel's state apart ("tab=GPU idle" read as a GPU that is idle)
        state = "a run in progress" if self.runner.running else "no run in progress"
        path = repr(self.path_field.value) if self.path_field.value else "not set"
        return f"<nbbench control panel: tab {self.current_tab.title!r}, path {path}, {state}>"

    # ------------------------------------------------------------------ API
    @property
    def path(self) -> str:
        return self.path_field.value

    @path.setter
    def path(self, value: str) -> None:
        self.path_field.value = value

    @property
    def current_tab(self):
        return self.tab_list[self.tabs.selected_index or 0]

    @property
    def area(self) -> RunArea:
        """The run area of the tab shown (its status, bar, plot, errors and result)."""
        return self.current_tab.area

    # the tab shown's run area, by part (what tests and scripts read)
    status = property(lambda self: self.area.status)
    progress_box = property(lambda self: self.area.progress_box)
    plot = property(lambda self: self.area.plot)
    error = property(lambda self: self.area.error)
    results = property(lambda self: self.area.results)
    progress = property(lambda self: self.area.progress)
    live = property(lambda self: self.area.live)

    def tab(self, title: str):
        for t in self.tab_list:
            if t.title.lower() == title.lower():
                return t
        raise KeyError(f"no tab {title!r}: choose from {', '.join(t.title for t in self.tab_list)}")

    def select(self, title: str):
        """Show the tab called ``title`` (GPU, Storage, DataLoader, Monitor, History)."""
        t = self.tab(title)
        self.tabs.selected_index = self.tab_list.index(t)
        return t

    @property
    def last(self) -> RunRecord | None:
        """The record of the last run (status, value, error, stop latency)."""
        return self.runner.record

    @property
    def result(self):
        """What the last run returned (a Result, a list of them, …)."""
        return self.runner.record.value if self.runner.record else None

    def run(self, job: Job | None = None) -> RunRecord | None:
        """Run the current tab's probe (what the Run button does); returns its record.

        Problems (a bad value, a path the probe cannot use, a run already going)
        are shown in red in the tab's area, in the panel's words; nothing is raised.
        """
        area = self.area
        try:
            if job is None:
                info = self.path_field.current()
                job = self.current_tab.job(info, self.label.value.strip() or None)
            if not self.save.value:
                if job.argv is not None:
                    job.argv = _without_label(job.argv) + ["--no-save"]
                job.save = False
            self._next_area = area
            return self.runner.start(job)
        except ProbeError as exc:
            self._refuse(area, str(exc))
        except Exception as exc:  # noqa: BLE001 - shown, never swallowed
            import traceback

            self._refuse(area, f"{type(exc).__name__}: {exc}", traceback.format_exc())
        return None

    def stop(self) -> bool:
        """Ask the running probe to stop (what the Stop button does)."""
        return self.runner.stop()

    def wait(self, timeout: float | None = None) -> RunRecord | None:
        """Wait for the running probe to end and the panel to show it — its plot's last frame and
        the refreshed snapshot (for scripts, tests and a notebook cell that runs the panel)."""
        import time

        t0 = time.monotonic()
        record = self.runner.wait(timeout)
        after = self._after
        if after is not None:
            after.join(None if timeout is None else max(0.0, timeout - (time.monotonic() - t0)))
        return record

    def snapshot_html(self) -> str:
        """The panel as static HTML: each tab's last run (status, answer, plot), no widgets needed."""
        return self.snapshot.html()

    # ------------------------------------------------------------ drawing
    def show_error(self, message: str, details: str | None = None) -> None:
        self.area.show_error(message, details)

    def set_status(self, state: str, text: str) -> None:
        self.area.set_status(state, text)

    def _refuse(self, area: RunArea, message: str, details: str | None = None) -> None:
        if self.runner.running:  # "still running": said, and the run going on is left alone
            area.show_error(message, details)
            return
        area.refuse(message, details)
        self.snapshot.refresh()

    def _field_changed(self, area: RunArea) -> None:
        if area.refused:
            area.unrefuse()
            self.snapshot.refresh()

    def tab_changed(self, running: bool | None = None) -> None:
        """A tab's selection changed (or a run ended): update the Run button and the controls shown."""
        if self.tabs is None or not hasattr(self, "run_button"):
            return
        tab = self.current_tab
        label = tab.run_label()
        if running is None:
            running = self.runner.running
        self.run_button.description = label or "Run"
        self.run_button.disabled = running or label is None
        if running and self._run_area is not None and self._run_area is not tab.area:
            self.run_button.tooltip = f"one run at a time: {self._run_area.title} is running"
        else:
            self.run_button.tooltip = "" if label else f"nothing to run on the {tab.title} tab"
        self._update_controls()

    def _update_controls(self) -> None:
        """Show only the controls that do something on the tab shown."""
        if not hasattr(self, "controls"):
            return
        tab = self.current_tab
        runs = tab.run_label() is not None
        self.controls.layout.display = None if runs else "none"
        self.area_box.children = (tab.area.widget,) if runs else ()
        self.status_slot.children = (tab.area.status,)
        self.plot_rates.layout.display = None if getattr(tab, "live_plot", True) else "none"
        self.label.layout.display = None if self.save.value else "none"  # a label is only stored

    def _tab_selected(self, change) -> None:
        self.tab_changed()
        try:
            self.current_tab.on_shown()
        except Exception as exc:  # noqa: BLE001
            self.show_error(f"{self.current_tab.title}: {type(exc).__name__}: {exc}")

    def _path_changed(self, info: PathInfo) -> None:
        for t in self.tab_list:
            try:
                t.on_path(info)
            except Exception:  # noqa: BLE001 - a tab's hint must not break the field
                pass
            if getattr(t, "area", None) is not None:
                self._field_changed(t.area)


#: the panel's own style rules: the progress bar's figures wrap instead of being cut at the edge
_CSS = (
    "<style>.nbbench-panel .nbbench-progress-label{white-space:normal;height:auto;min-height:"
    "var(--jp-widgets-inline-height,28px);line-height:1.4;overflow:visible}</style>"
)


def _without_label(argv: list[str]) -> list[str]:
    """``argv`` less its ``--label TEXT`` (the option and its value)."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a == "--label":
            skip = True
        else:
            out.append(a)
    return out
