"""One tab's run area: its status line, progress bar, live plot, errors and result.

Each tab of the panel that runs something has its own :class:`RunArea`, so switching
tabs never shows another tab's run, and a new run on a tab clears that tab's old one.
Nothing here knows about the runner: the panel (:mod:`nbbench.panel.drawing`) decides which
area a run draws into.
"""

from __future__ import annotations

import threading

from ..results import Result
from .views import error_html, notes_html, status_html, to_html
from .wording import panel_words

__all__ = ["RunArea", "IDLE_TEXT", "value_widgets"]

#: the status of a tab that has not run anything yet
IDLE_TEXT = "not run yet"


class RunArea:
    """``status`` (the line beside Run), ``widget`` (progress, plot, errors, result) of one tab."""

    def __init__(self, title: str):
        import ipywidgets as w

        self.title = title
        self.status = w.HTML(status_html("idle", IDLE_TEXT))
        self.status.add_class("nbbench-status-line")
        self.progress_box = w.Box([], layout=w.Layout(width="100%"))
        self.progress_box.add_class("nbbench-progress")
        self.plot = w.Box([], layout=w.Layout(max_width="100%"))
        self.plot.add_class("nbbench-plot")
        self.plot_note = w.HTML("")
        self.plot_note.add_class("nbbench-plot-note")
        self.error = w.HTML("")
        self.error.add_class("nbbench-errors")
        self.results = w.HTML("", layout=w.Layout(max_height="640px", overflow="auto"))
        self.results.add_class("nbbench-results")
        # the answer before the plot: during a run the result is empty and the plot sits under the bar
        self.widget = w.VBox(
            [self.progress_box, self.error, self.results, self.plot, self.plot_note], layout=w.Layout(width="100%")
        )
        self.widget.add_class("nbbench-area")
        self.widget.add_class("nbbench-area-" + title.lower())
        self.state = "idle"  # the status line's state (idle, running, ok, warn, fail, …)
        self.progress = None  # the run's progress bar (PanelProgress)
        self.live = None  # the run's live plot (LivePlot)
        self.record = None  # the RunRecord drawn here
        #: an error shown before anything ran (a bad value, no PATH): cleared when a field changes
        self.refused = False
        self._shown: list[str] = []
        self._lock = threading.Lock()

    # ------------------------------------------------------------- state
    def set_status(self, state: str, text: str) -> None:
        self.state = state
        self.status.value = status_html(state, text)

    def clear(self) -> None:
        """Forget the last run: status idle, no bar, plot, error or result."""
        with self._lock:
            self._shown = []
        self.results.value = ""
        self.error.value = ""
        self.plot_note.value = ""
        self.progress_box.children = ()
        self.plot.children = ()
        self.progress = None
        self.live = None
        self.record = None
        self.refused = False
        self.set_status("idle", IDLE_TEXT)

    def show(self, html_text: str) -> None:
        """Append ``html_text`` to the result (in the order the command showed things)."""
        with self._lock:
            self._shown.append(html_text)
            self.results.value = "".join(self._shown)

    def shown_anything(self) -> bool:
        return bool(self._shown)

    def show_notes(self, notes) -> None:
        if notes:
            self.show(notes_html(notes))

    def show_error(self, message: str, details: str | None = None) -> None:
        self.error.value = error_html(message, details)

    def refuse(self, message: str, details: str | None = None) -> None:
        """A Run that did not start (a bad value, no usable PATH): the tab's old run is
        cleared (it no longer answers what the fields say) and the status says so in red."""
        self.clear()
        self.refused = True
        self.set_status("error", "not started — see the error below")
        self.show_error(message, details)

    def unrefuse(self) -> None:
        """A field changed after a refused Run: the refusal no longer applies."""
        if self.refused:
            self.refused = False
            self.error.value = ""
            self.set_status("idle", IDLE_TEXT)

    def finish(self, record) -> None:
        """Draw how ``record``'s run ended: errors, the result (if the command showed none),
        notes, and the status line — whether the probe ran (done / interrupted / failed) and,
        for a run that ended ok, what its checks found: amber with warnings, red when a check
        failed (never green over a failed check; the bar turns too)."""
        if record.error:
            self.show_error(record.error, record.details)
        if record.value is not None and not self.shown_anything():
            self.show(to_html(record.value))
        took = f"{record.elapsed_s:.1f} s" if record.elapsed_s is not None else ""
        self.show_notes(record.notes)  # after the result: "not saved: …"
        if record.status == "ok" and record.verdict == "fail":  # it ran; its checks found a failure: red
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
            reason = panel_words(_reason(record.value), getattr(record, "fields", None))
            self.set_status("failed", f"{record.title}: failed" + (f" — {reason}" if reason else ""))
            self.show_error(f"{record.title} failed" + (f": {reason}" if reason else ""))
        else:
            self.set_status("error", f"{record.title}: error (see below)")
        if self.progress is not None and record.status == "ok" and record.verdict in ("warn", "fail"):
            # the bar says the probe ran to the end; its colour must not say its checks passed
            self.progress.bar.bar_style = "warning" if record.verdict == "warn" else "danger"

    def plot_png(self) -> bytes | None:
        """The live plot's last frame shown (PNG), None when there is none."""
        for child in self.plot.children:
            value = getattr(child, "value", None)
            if (
                isinstance(value, (bytes, bytearray))
                and value[:4] == b"\x89PNG"
                and getattr(child.layout, "display", None) != "none"
            ):
                return bytes(value)
        return None


def value_widgets(roots) -> list:
    """Every widget with a ``value`` under ``roots`` (the fields of a tab, in all its boxes)."""
    out, seen, todo = [], set(), list(roots)
    while todo:
        wdg = todo.pop()
        if id(wdg) in seen:
            continue
        seen.add(id(wdg))
        if wdg.has_trait("value") and not wdg.has_trait("children"):
            out.append(wdg)
        todo.extend(getattr(wdg, "children", ()) or ())
    return out


def _reason(value) -> str:

    results = value if isinstance(value, (list, tuple)) else [value]
    for r in results:
        if isinstance(r, Result) and r.status == "failed" and r.reason:
            return r.reason
    return ""
