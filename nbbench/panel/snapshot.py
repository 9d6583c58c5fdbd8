"""The panel as static HTML: what a saved notebook shows where widgets cannot.

A notebook saved with the panel holds, for the live widget, only a reference to widget
state — which GitHub and nbviewer do not have (and which nbbench's notebooks are
committed without).  So a displayed panel also leaves a second output under the widget:
a snapshot that nbbench builds from the panel's own state — the PATH and what it is,
then per tab that ran its status line (coloured like the panel's), its errors, its
result (the answer first, details folded) and its live plot's last frame, and the
History tab's comparison — plain HTML with inline styles, no script, no widget.

The snapshot is refreshed after each run (and after a refused Run) through its display
id.  Where the live widget renders (JupyterLab, Notebook 7) a style rule shows only the
snapshot's first line, so the panel is not drawn twice; where it does not (GitHub,
nbviewer, a notebook reopened without its kernel) the whole snapshot shows.

Layer: front end (part of :mod:`nbbench.panel`): strings, plus IPython's display.
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
import threading
import uuid

from .pathfield import render_info

__all__ = ["Snapshot", "snapshot_html"]

_esc = html.escape

# where the live panel rendered (an element .nbbench-panel in an earlier output of the same
# cell), only the snapshot's head line shows; elsewhere the whole snapshot
_STYLE = (
    "<style>.jp-OutputArea-child:has(.nbbench-panel) ~ .jp-OutputArea-child .nbbench-snapshot-body"
    "{display:none}</style>"
)


def _img(png: bytes, alt: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return (
        f"<img class='nbbench-snapshot-plot' alt='{_esc(alt)}' src='data:image/png;base64,{data}' "
        f"style='max-width:100%;display:block;margin:4px 0'/>"
    )


def _tab_html(tab) -> str:
    """One tab's last run: title (and the probe it ran), status, errors, result, plot."""
    area = tab.area
    if area.record is None and not area.refused:
        return ""
    parts = [
        f"<div class='nbbench-snapshot-tab' style='margin:8px 0 4px 0'>"
        f"<div style='font-weight:bold;border-bottom:1px solid #ddd;margin-bottom:2px'>"
        f"{_esc(tab.title)}</div>",
        area.status.value,
    ]
    if area.error.value:
        parts.append(area.error.value)
    if area.results.value:
        parts.append(area.results.value)
    png = area.plot_png()
    if png is not None:
        parts.append(_img(png, f"{tab.title}: live plot"))
    elif area.plot_note.value:
        parts.append(area.plot_note.value)
    parts.append("</div>")
    return "".join(parts)


def _history_html(tab) -> str:
    """The History tab's comparison or shown runs, with its charts (when there are any)."""
    out = getattr(tab, "out", None)
    if out is None or not out.value:
        return ""
    charts = "".join(
        _img(bytes(c.value), "comparison chart")
        for c in tab.charts.children
        if isinstance(getattr(c, "value", None), (bytes, bytearray))
    )
    return (
        f"<div class='nbbench-snapshot-tab' style='margin:8px 0 4px 0'><div style='font-weight:bold;"
        f"border-bottom:1px solid #ddd;margin-bottom:2px'>{_esc(tab.title)}</div>{out.value}{charts}</div>"
    )


def snapshot_html(panel, when: _dt.datetime | None = None) -> str:
    """The panel's state as one HTML block (see the module doc)."""

    when = when or _dt.datetime.now()
    ran = [
        t
        for t in panel.tab_list
        if getattr(t, "area", None) is not None and (t.area.record is not None or t.area.refused)
    ]
    last = panel.runner.record
    head = (
        f"nbbench control panel — static snapshot of {when:%Y-%m-%d %H:%M:%S}"
        + (f", after {last.title}" if last is not None else "")
        + " (for viewers without widgets, e.g. GitHub and nbviewer; the live panel is the widget above)"
    )
    body = []
    info = panel.path_field.info
    path = panel.path_field.value
    body.append(
        f"<div style='margin:2px 0'><b>PATH</b> <code>{_esc(path) if path else '(none)'}</code>"
        + (f" — {render_info(info)}" if info is not None and path else "")
        + "</div>"
    )
    for t in panel.tab_list:
        body.append(_history_html(t) if t.run_label() is None else _tab_html(t))
    idle = [t.title for t in panel.tab_list if t.run_label() is not None and t not in ran]
    if idle:
        body.append(
            f"<div style='color:#555;font-size:90%;margin-top:6px'>not run in this session: "
            f"{_esc(', '.join(idle))}</div>"
        )
    return (
        f"<div class='nbbench-snapshot' style='border:1px dashed #bbb;padding:4px 8px;margin:4px 0'>{_STYLE}"
        f"<div class='nbbench-snapshot-head' style='color:#666;font-size:85%'>{_esc(head)}</div>"
        f"<div class='nbbench-snapshot-body'>{''.join(body)}</div></div>"
    )


def snapshot_text(panel) -> str:
    """The snapshot's plain-text form: one line per tab that ran (its status)."""
    import re

    lines = [f"nbbench control panel (static snapshot): PATH {panel.path_field.value or '(none)'}"]
    for t in panel.tab_list:
        area = getattr(t, "area", None)
        if area is not None and (area.record is not None or area.refused):
            lines.append(f"  {t.title}: " + html.unescape(re.sub(r"<[^>]+>", "", area.status.value)))
    return "\n".join(lines)


class Snapshot:
    """The panel's snapshot output: displayed once under the widget, then updated in place."""

    def __init__(self, panel):
        self.panel = panel
        self.display_id = f"nbbench-panel-snapshot-{uuid.uuid4().hex[:12]}"
        self.parent = None  # the request (cell) whose output holds the snapshot
        self.shown = False
        self.updates = 0
        self._lock = threading.Lock()

    def html(self) -> str:
        return snapshot_html(self.panel)

    def bundle(self) -> dict:
        return {"text/html": self.html(), "text/plain": snapshot_text(self.panel)}

    def display(self) -> None:
        """Display the snapshot (in the cell that displays the panel) and remember that cell."""
        from IPython.display import display

        ip = _ipython()
        kernel = getattr(ip, "kernel", None)
        if kernel is not None and hasattr(kernel, "get_parent"):
            try:
                self.parent = kernel.get_parent()
            except Exception:  # noqa: BLE001 - no parent: updates go with the kernel's latest
                self.parent = None
        display(self.bundle(), raw=True, display_id=self.display_id)
        self.shown = True

    def refresh(self) -> None:
        """Redraw the displayed snapshot from the panel's state now (any thread).

        The update is sent as a reply to the cell that displayed the panel (JupyterLab updates
        an output only through that cell's request) and, when another request came since (a
        later cell running ``p.run(); p.wait()`` under nbclient, which updates by display id
        across the notebook but listens only to the cell it is running), to that one as well.
        """
        if not self.shown:
            return
        try:
            from IPython.display import update_display
        except ImportError:  # pragma: no cover
            return
        with self._lock:
            bundle = self.bundle()
            ip = _ipython()
            pub = getattr(ip, "display_pub", None)
            kernel = getattr(ip, "kernel", None)
            parents = [self.parent] if self.parent else []
            try:
                latest = kernel.get_parent() if kernel is not None else None
            except Exception:  # noqa: BLE001
                latest = None
            if latest and _msg_id(latest) not in {_msg_id(p) for p in parents}:
                parents.append(latest)
            if not parents or not hasattr(pub, "set_thread_parent"):
                update_display(bundle, raw=True, display_id=self.display_id)
            else:
                for parent in parents:
                    token = pub.set_thread_parent(parent)
                    try:
                        update_display(bundle, raw=True, display_id=self.display_id)
                    finally:
                        pub.reset_thread_parent(token)
            self.updates += 1


def _msg_id(msg) -> str | None:
    header = msg.get("header", msg) if isinstance(msg, dict) else {}
    return header.get("msg_id") if isinstance(header, dict) else None


def _ipython():
    try:
        from IPython import get_ipython

        return get_ipython()
    except ImportError:  # pragma: no cover
        return None
