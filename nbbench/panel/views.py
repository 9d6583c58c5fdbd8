"""HTML for the panel's result area and error box.

Results are drawn by their own ``_repr_html_`` (the one a notebook cell shows), so
the panel has no second copy of any formatting; DataFrames by theirs.
"""

from __future__ import annotations

import html
from typing import Any

from ..results.present.rule import TONE_COLOURS

__all__ = ["to_html", "error_html", "notes_html", "status_html", "COLOURS"]

# a run's state: ok / interrupted / failed / error; or, for a run that ended ok, its verdict
# when its checks found something: warn (amber), fail (red) — never green over a failed check.
# The verdict colours are the presentation rule's (results.present.TONE_COLOURS), so the status
# line and the result under it agree: ok green, warn amber, fail red, interrupted orange.
COLOURS = {
    "ok": TONE_COLOURS["ok"],
    "warn": TONE_COLOURS["warn"],
    "fail": TONE_COLOURS["fail"],
    "interrupted": TONE_COLOURS["interrupted"],
    "failed": TONE_COLOURS["fail"],
    "error": TONE_COLOURS["fail"],
    "running": "#1565c0",
    "stopping": TONE_COLOURS["interrupted"],
    "idle": "#555",
}


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
    out = (
        f"<div class='nbbench-error' style='color:#c62828;border:1px solid #c62828;"
        f"background:#ffebee;padding:4px 8px;border-radius:3px'>"
        f"<b>Error:</b> {html.escape(message)}"
    )
    if details:
        out += (
            f"<details><summary>traceback</summary><pre style='font-size:85%;white-space:pre-wrap'>"
            f"{html.escape(details)}</pre></details>"
        )
    return out + "</div>"


def notes_html(notes) -> str:
    """Lines about a run that are not its result ("not saved: …"), in amber."""
    return "".join(f"<div class='nbbench-note' style='color:#b35c00'>{html.escape(n)}</div>" for n in notes)


def status_html(state: str, text: str) -> str:
    colour = COLOURS.get(state, "#555")
    return (
        f"<span class='nbbench-status nbbench-status-{html.escape(state)}' "
        f"style='color:{colour};font-weight:bold'>{html.escape(text)}</span>"
    )
