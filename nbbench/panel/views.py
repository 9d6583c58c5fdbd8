"""HTML for the panel's result area and error box.

Results are drawn by their own ``_repr_html_`` (the one a notebook cell shows), so
the panel has no second copy of any formatting; DataFrames by theirs.
"""

from __future__ import annotations

import html
from typing import Any

__all__ = ["to_html", "error_html", "notes_html", "status_html", "COLOURS"]

# a run's state: ok / interrupted / failed / error; or, for a run that ended ok, its verdict
# when its checks found something: warn (amber), fail (red) — never green over a failed check
COLOURS = {"ok": "#2e7d32", "interrupted": "#ef6c00", "failed": "#c62828", "error": "#c62828",
           "running": "#1565c0", "stopping": "#ef6c00", "idle": "#555", "warn": "#ef6c00", "fail": "#c62828"}


def to_html(obj: Any) -> str:
    """``obj`` as HTML: its ``_repr_html_``, a list of them, or escaped text."""
    if obj is None:
        return ""
    if isinstance(obj, (list, tuple)):
        return "".join(f"<div style='margin-bottom:6px'>{to_html(o)}</div>" for o in obj)
    rep = getattr(obj, "_repr_html_", None)
    if callable(rep):
        try:
            out = rep()
        except Exception:  # noqa: BLE001 - fall back to text, the error is not the user's
            out = None
        if out:
            return out
    return f"<pre style='margin:0'>{html.escape(str(obj))}</pre>"


def error_html(message: str, details: str | None = None) -> str:
    """A red box with the message (and a folded traceback when there is one)."""
    out = (f"<div class='nbbench-error' style='color:#c62828;border:1px solid #c62828;"
           f"background:#ffebee;padding:4px 8px;border-radius:3px'>"
           f"<b>Error:</b> {html.escape(message)}")
    if details:
        out += (f"<details><summary>traceback</summary><pre style='font-size:85%;white-space:pre-wrap'>"
                f"{html.escape(details)}</pre></details>")
    return out + "</div>"


def notes_html(notes) -> str:
    """Lines about a run that are not its result ("not saved: …"), in amber."""
    return "".join(f"<div class='nbbench-note' style='color:#b35c00'>{html.escape(n)}</div>" for n in notes)


def status_html(state: str, text: str) -> str:
    colour = COLOURS.get(state, "#555")
    return (f"<span class='nbbench-status nbbench-status-{html.escape(state)}' "
            f"style='color:{colour};font-weight:bold'>{html.escape(text)}</span>")
