"""How the panel's runs draw: the :class:`~.runner.RunnerHost` side of :class:`~.app.ControlPanel`.

The background runner tells its host when a run starts, is stopping and has ended, and asks
it for a progress bar and a live plot; the panel draws each into the run area of the tab the
run was started from (:class:`~.area.RunArea`), and once the plot's last frame is drawn says
why there is none (when so) and refreshes the static snapshot.  A mixin: the attributes it
uses (``runner``, ``tab_list``, ``snapshot``, the buttons, ``plot_rates``, ``_run_area``,
``_next_area``, ``_after``, ``area``, ``tab_changed``) are the panel's.
"""

from __future__ import annotations

import html
import threading
from typing import Any

from ..ui.rateplot import PanelProgress
from .area import RunArea
from .runner import RunnerHost, RunRecord
from .views import to_html

__all__ = ["RunDrawing"]


class RunDrawing(RunnerHost):
    """The panel's answers to its runner: progress, live plot, status and result, in the run's area."""

    def make_progress(self, desc: str):

        record = self.runner.record
        area = self._run_area

        def make_plot(**kwargs):
            # made in a helper thread: never for a run that has ended (or been replaced) meanwhile
            if self.runner.record is not record or record is None or record.ended is not None:
                return None
            return self._rate_plot(area, **kwargs)

        p = PanelProgress(desc, make_plot=make_plot if self.plot_rates.value and area.live is None else None)
        # the panel says what runs in its status line; the bar keeps the probe's name
        p.desc_label.value = html.escape((desc.split() or [""])[0])
        p.bar.layout.width = "40%"
        p.bar.layout.min_width = "220px"
        p.label.layout.flex = "1 1 auto"
        p.widget.layout.width = "100%"
        p.label.add_class("nbbench-progress-label")
        p.bar.add_class("nbbench-progress-bar")
        area.progress = p
        area.progress_box.children = (p.widget,)
        return p

    def _rate_plot(self, area: RunArea, **kwargs):
        """The live plot of a probe's reported rates (unless a command drew its own)."""
        if area.live is not None:
            return None
        return self._live_plot(area, window_s=None, **kwargs)

    def run_started(self, record: RunRecord) -> None:
        area = self._next_area or self.area
        self._next_area = None
        area.clear()
        area.record = record
        self._run_area = area
        self.run_button.disabled = True
        self.stop_button.disabled = False
        area.set_status("running", f"running {record.title}…")
        self.tab_changed(running=True)

    def run_stopping(self, record: RunRecord) -> None:
        self.stop_button.disabled = True
        if self._run_area is not None:
            self._run_area.set_status("stopping", f"stopping {record.title}…")

    def show(self, obj: Any) -> None:
        (self._run_area or self.area).show(to_html(obj))

    def echo(self, text: str) -> None:
        self.show(text)

    def live_plot(self, **kwargs):
        """A :class:`~nbbench.ui.liveplot.LivePlot` drawing into the run's area (started; the caller closes it)."""
        return self._live_plot(self._run_area or self.area, **kwargs)

    def _live_plot(self, area: RunArea, **kwargs):
        try:
            # loads matplotlib: only when a live plot is drawn
            from ..ui.liveplot import LivePlot
        except ImportError:
            return None
        kwargs.update(target="widget", show=False)
        lp = LivePlot(**kwargs).start()
        if lp.widget is not None:
            lp.widget.add_class("nbbench-plot-png")
            area.plot.children = (lp.widget,)
        area.live = lp
        return lp

    def run_finished(self, record: RunRecord) -> None:
        area = self._run_area or self.area
        area.finish(record)
        self.stop_button.disabled = True
        self.tab_changed(running=False)
        for t in self.tab_list:
            try:
                t.on_run_finished(record)
            except Exception:  # noqa: BLE001
                pass
        self._after = threading.Thread(target=self._after_run, args=(area,), name="nbbench-panel-snapshot", daemon=True)
        self._after.start()

    def _after_run(self, area: RunArea) -> None:
        """Once the live plot's last frame is drawn: say why there is no plot, refresh the snapshot."""
        p = area.progress
        if p is not None and hasattr(p, "wait_plot"):
            p.wait_plot(60)
        note = getattr(area.live, "note", None)
        if note:
            area.plot_note.value = f"<div style='color:#555'>{html.escape(note)}</div>"
        self.snapshot.refresh()
