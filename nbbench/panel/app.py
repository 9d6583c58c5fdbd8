"""The control panel: one ipywidgets app over every probe.

::

    nbbench control panel
    PATH [/dataset                         ]
         ✓ directory · ext4 on nvme0n1 · 812 GiB free of 1.8 TiB · O_DIRECT ok
    [ GPU | Storage | DataLoader | Monitor | History ]
      …the tab's parameters…
    label [     ] [x] save [x] live plot  [▶ Run dd] [■ Stop]   running dd /dataset…
    [██████████······] 61.0%  write 943 MB/s
    (live plot)
    (errors, red)
    (the result table)

The panel's cell returns at once (a kernel only handles button clicks while no
cell is busy); runs happen in the background :class:`~.runner.PanelRunner`, one
at a time, and Stop sets the run's cancel event.
"""

from __future__ import annotations

import html
import threading
from typing import Any

from ..results import ProbeError
from .pathfield import PathField, PathInfo
from .runner import Job, PanelRunner, RunnerHost, RunRecord
from .views import error_html, notes_html, status_html, to_html

__all__ = ["ControlPanel"]


class ControlPanel(RunnerHost):
    """The panel.  ``widget`` is its ipywidgets tree; displaying the panel shows it."""

    def __init__(self, path: str | None = None, tab: str | None = None, store=None, user_ns: dict | None = None,
                 checker=None):
        import ipywidgets as w

        from .. import tempfiles
        from .tabs import TAB_CLASSES

        # the write probes' temp files are removed on SIGTERM/SIGHUP (a kernel stop) only if the
        # handlers were installed from the main thread: the panel's runs happen in another one
        tempfiles.install_handlers()
        self.store = store
        self.runner = PanelRunner(self, store=store, user_ns=user_ns)
        self._shown: list[str] = []
        self._shown_lock = threading.Lock()
        self.progress = None
        self.live = None

        self.title = w.HTML("<b style='font-size:115%'>nbbench</b> <span style='color:#555'>control panel — "
                            "the probes of <code>%iobench</code>, behind buttons</span>")
        kw = {"checker": checker} if checker is not None else {}
        self.path_field = PathField(path, on_change=self._path_changed, **kw)

        self.tabs_by_title: dict[str, Any] = {}
        self.tab_list = []
        self.tabs = None
        for cls in TAB_CLASSES():
            t = cls(self)
            self.tab_list.append(t)
            self.tabs_by_title[t.title] = t
        self.tabs = w.Tab(children=[t.widget for t in self.tab_list],
                          titles=[t.title for t in self.tab_list])
        self.tabs.add_class("nbbench-tabs")

        style = {"description_width": "initial"}
        self.label = w.Text(value="", description="label", placeholder="e.g. baseline", style=style,
                            layout=w.Layout(width="220px"))
        self.label.add_class("nbbench-label")
        self.save = w.Checkbox(value=True, description="save to the store", indent=False,
                               layout=w.Layout(width="150px"))
        self.plot_rates = w.Checkbox(value=True, description="live plot", indent=False,
                                     layout=w.Layout(width="90px"),
                                     tooltip="plot the rates a probe reports while it runs")
        self.run_button = w.Button(description="Run", button_style="success", icon="play",
                                   layout=w.Layout(width="auto", min_width="110px"))
        self.run_button.add_class("nbbench-run")
        self.stop_button = w.Button(description="Stop", button_style="danger", icon="stop", disabled=True,
                                    tooltip="stop the run (its partial result is kept, marked interrupted)")
        self.stop_button.add_class("nbbench-stop")
        self.status = w.HTML(status_html("idle", "idle"))
        self.status.add_class("nbbench-status-line")
        controls = w.HBox([self.label, self.save, self.plot_rates, self.run_button, self.stop_button, self.status],
                          layout=w.Layout(align_items="center", flex_flow="row wrap"))

        self.progress_box = w.Box([], layout=w.Layout(width="100%"))
        self.progress_box.add_class("nbbench-progress")
        self.plot = w.Box([], layout=w.Layout(max_width="100%"))
        self.plot.add_class("nbbench-plot")
        self.error = w.HTML("")
        self.error.add_class("nbbench-errors")
        self.results = w.HTML("", layout=w.Layout(max_height="640px", overflow="auto"))
        self.results.add_class("nbbench-results")

        self.widget = w.VBox([self.title, self.path_field.widget, self.tabs, controls, self.progress_box,
                              self.plot, self.error, self.results],
                             layout=w.Layout(border="1px solid #ccc", padding="6px", width="100%"))
        self.widget.add_class("nbbench-panel")

        _warm_up(plotting=self.plot_rates.value)
        self.run_button.on_click(lambda _b: self.run())
        self.stop_button.on_click(lambda _b: self.stop())
        self.tabs.observe(self._tab_selected, names="selected_index")
        if tab is not None:
            self.select(tab)
        self.tab_changed()

    # ------------------------------------------------------------- display
    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)

    def __repr__(self) -> str:
        state = "running" if self.runner.running else "idle"
        return f"<nbbench ControlPanel path={self.path_field.value!r} tab={self.current_tab.title} {state}>"

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
        are shown in red in the panel; nothing is raised to the caller.
        """
        try:
            if job is None:
                info = self.path_field.current()
                job = self.current_tab.job(info, self.label.value.strip() or None)
            if not self.save.value:
                if job.argv is not None:
                    job.argv = _without_label(job.argv) + ["--no-save"]
                job.save = False
            return self.runner.start(job)
        except ProbeError as exc:
            self.show_error(str(exc))
        except Exception as exc:  # noqa: BLE001 - shown, never swallowed
            import traceback

            self.show_error(f"{type(exc).__name__}: {exc}", traceback.format_exc())
        return None

    def stop(self) -> bool:
        """Ask the running probe to stop (what the Stop button does)."""
        return self.runner.stop()

    def wait(self, timeout: float | None = None) -> RunRecord | None:
        """Wait for the running probe to end (for scripts and tests)."""
        return self.runner.wait(timeout)

    # ------------------------------------------------------------ drawing
    def show_error(self, message: str, details: str | None = None) -> None:
        self.error.value = error_html(message, details)

    def clear_error(self) -> None:
        self.error.value = ""

    def set_status(self, state: str, text: str) -> None:
        self.status.value = status_html(state, text)

    def tab_changed(self, running: bool | None = None) -> None:
        """A tab's selection changed (or a run ended): update the Run button."""
        if self.tabs is None or not hasattr(self, "run_button"):
            return
        label = self.current_tab.run_label()
        if running is None:
            running = self.runner.running
        self.run_button.description = label or "Run"
        self.run_button.disabled = running or label is None
        self.run_button.tooltip = "" if label else f"nothing to run on the {self.current_tab.title} tab"

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

    # ------------------------------------------------- RunnerHost interface
    def make_progress(self, desc: str):
        from ..ui.panel.rateplot import PanelProgress

        record = self.runner.record

        def make_plot(**kwargs):
            # made in a helper thread: never for a run that has ended (or been replaced) meanwhile
            if self.runner.record is not record or record is None or record.ended is not None:
                return None
            return self._rate_plot(**kwargs)

        p = PanelProgress(desc, make_plot=make_plot if self.plot_rates.value and self.live is None else None)
        # the panel says what runs in its status line; the bar keeps the probe's name
        p.desc_label.value = html.escape((desc.split() or [""])[0])
        p.bar.layout.width = "40%"
        p.bar.layout.min_width = "220px"
        p.label.layout.flex = "1 1 auto"
        p.widget.layout.width = "100%"
        p.label.add_class("nbbench-progress-label")
        p.bar.add_class("nbbench-progress-bar")
        self.progress = p
        self.progress_box.children = (p.widget,)
        return p

    def _rate_plot(self, **kwargs):
        """The live plot of a probe's reported rates (unless a command drew its own)."""
        if self.live is not None:
            return None
        return self.live_plot(window_s=None, **kwargs)

    def run_started(self, record: RunRecord) -> None:
        with self._shown_lock:
            self._shown = []
        self.clear_error()
        self.results.value = ""
        self.progress_box.children = ()
        self.plot.children = ()
        self.live = None
        self.run_button.disabled = True
        self.stop_button.disabled = False
        self.set_status("running", f"running {record.title}…")

    def run_stopping(self, record: RunRecord) -> None:
        self.stop_button.disabled = True
        self.set_status("stopping", f"stopping {record.title}…")

    def show(self, obj: Any) -> None:
        with self._shown_lock:
            self._shown.append(to_html(obj))
            self.results.value = "".join(self._shown)

    def echo(self, text: str) -> None:
        self.show(text)

    def live_plot(self, **kwargs):
        """A :class:`~nbbench.ui.liveplot.LivePlot` drawing into the panel (started; the caller closes it)."""
        try:
            from ..ui.liveplot import LivePlot
        except ImportError:
            return None
        kwargs.update(target="widget", show=False)
        lp = LivePlot(**kwargs).start()
        if lp.widget is not None:
            lp.widget.add_class("nbbench-plot-png")
            self.plot.children = (lp.widget,)
        self.live = lp
        return lp

    def run_finished(self, record: RunRecord) -> None:
        if record.error:
            self.show_error(record.error, record.details)
        if record.value is not None and not self._shown:
            self.show(record.value)
        took = f"{record.elapsed_s:.1f} s" if record.elapsed_s is not None else ""
        if record.notes:   # after the result: "not saved: …"
            with self._shown_lock:
                self._shown.append(notes_html(record.notes))
                self.results.value = "".join(self._shown)
        if record.status == "ok" and record.verdict == "fail":   # it ran; its checks found a failure: red
            self.set_status("fail", f"{record.title}: ran in {took} — a check failed")
        elif record.status == "ok" and record.verdict == "warn":
            self.set_status("warn", f"{record.title}: ran in {took} — with warnings")
        elif record.status == "ok":
            self.set_status("ok", f"{record.title}: done in {took}")
        elif record.status == "interrupted":
            extra = ""
            if record.stop_latency_s is not None:
                extra = f" — ended {record.stop_latency_s:.2f} s after Stop"
            self.set_status("interrupted", f"{record.title}: interrupted{extra}")
        elif record.status == "failed":
            reason = _reason(record.value)
            self.set_status("failed", f"{record.title}: failed" + (f" — {reason}" if reason else ""))
            self.show_error(f"{record.title} failed" + (f": {reason}" if reason else ""))
        else:
            self.set_status("error", f"{record.title}: error (see below)")
        self.stop_button.disabled = True
        self.tab_changed(running=False)
        for t in self.tab_list:
            try:
                t.on_run_finished(record)
            except Exception:  # noqa: BLE001
                pass


_warmed = threading.Event()


def _warm_up(plotting: bool = True) -> None:
    """Once per kernel, in a background thread at low priority: compute the environment
    fingerprint (the first save of a process needs it: package list, torch versions — seconds)
    and import matplotlib's Agg canvas (the first live plot), so neither delays the end of
    the panel's first run."""
    if _warmed.is_set():
        return
    _warmed.set()

    def load():
        try:
            import os

            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)   # Linux: this thread only
        except (AttributeError, OSError):
            pass
        try:
            from ..env import fingerprint

            fingerprint()
        except Exception:  # noqa: BLE001 - the save will say what is wrong
            pass
        if plotting:
            from ..ui.warmup import preload_plotting

            preload_plotting()

    threading.Thread(target=load, name="nbbench-panel-warmup", daemon=True).start()


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


def _reason(value) -> str:
    from ..results import Result

    results = value if isinstance(value, (list, tuple)) else [value]
    for r in results:
        if isinstance(r, Result) and r.status == "failed" and r.reason:
            return r.reason
    return ""

