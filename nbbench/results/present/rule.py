"""One presentation rule for every result: the answer first, then what qualifies it, then the details.

Layer: the bottom (inside :mod:`nbbench.results`).  Pure strings: no IPython, no widgets,
no matplotlib.  The notebook (a result's ``_repr_html_``), the control panel (which shows
that HTML), the terminal (``text_table``, the CLI) and the reports all draw a result
through :class:`Presentation` and one of its two renderers, :func:`render_text` and
:func:`render_html`, in this order:

1. ``answer`` — what came out, the figure(s) or a sentence with units ("392 MB/s read ·
   69.7 MB/s write", "CUDA not usable: CPU-only build of torch"), in its ``tone``'s colour
   (:data:`TONES`: ok green, warn amber, fail red, interrupted orange, neutral);
2. ``subject`` and ``qualifiers`` — what was measured and how ("dd /data/x" · engine
   builtin · cache direct), a ``status`` line when it did not run to the end, the verdict;
3. ``story`` (sentences that explain the answer: feed's, the sweep's recommendation),
   ``warnings`` and ``advice``;
4. ``sections`` — tables, open (a kind's own content: the disk preset table, the doctor's
   findings) or folded (all figures, latency percentiles, how it was measured): an HTML
   ``<details>``, and in the terminal one "details:" line until asked for
   (``--details`` / ``result.details()``).

A result kind fills the model by overriding :meth:`nbbench.results.Result.answer_line` and,
where it has more to show, :meth:`~nbbench.results.Result.sections` (see that class).
The one-line summaries (history lists, count lines) are in :mod:`nbbench.results.present.summaries`.
"""

from __future__ import annotations

import html
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = [
    "Section",
    "Presentation",
    "Rendered",
    "TONES",
    "TONE_COLOURS",
    "tone_of",
    "render_text",
    "render_html",
    "SEP",
    "ANSWER_SEP",
]

#: how a result went, as a colour: its checks (ok / warn / fail), or that it stopped early
#: or failed to run; neutral: a plain measurement without checks
TONES = ("ok", "warn", "fail", "interrupted", "neutral")
TONE_COLOURS = {"ok": "#2e7d32", "warn": "#a86800", "fail": "#c62828", "interrupted": "#e65100", "neutral": ""}
_ANSI = {"ok": "\x1b[32m", "warn": "\x1b[33m", "fail": "\x1b[31m", "interrupted": "\x1b[33m"}
#: between the figures of an answer ("392 MB/s read · 69.7 MB/s write")
SEP = " · "
#: between the answer and what it is about in a one-line summary
ANSWER_SEP = " — "


def tone_of(status: str, verdict: str | None) -> str:
    """The tone of a result: failed → fail, interrupted, else its verdict, else neutral."""
    if status == "failed":
        return "fail"
    if status == "interrupted":
        return "interrupted"
    return verdict if verdict in ("ok", "warn", "fail") else "neutral"


@dataclass
class Section:
    """A table (or lines) under the answer.

    ``rows``: formatted cells; ``head``: column names (None: no header row); ``align``: one
    letter per column, ``l`` or ``r`` (default: the first left, the others right);
    ``marks``: a tone per row, the first cell drawn as a badge in it; ``sep``: what the
    terminal puts between cells; ``folded``: a detail (HTML ``<details>``; the terminal
    shows it on request); ``css``: a class on the HTML table; ``html_extra``: HTML drawn under
    the table (an image), or a function making it (called only when HTML is drawn); ``text``: the terminal's
    own lines for
    a width, instead of the table (the doctor's wrapped findings); ``note``: a line under it;
    ``nowrap``: how many leading columns HTML keeps on one line (the row's name).
    """

    title: str
    rows: list[list[str]] = field(default_factory=list)
    head: list[str] | None = None
    folded: bool = True
    align: str = ""
    marks: list[str | None] | None = None
    sep: str = "  "
    css: str = ""
    html_extra: str | Callable[[], str] = ""
    text: Callable[[int], list[str]] | None = None
    note: str = ""
    nowrap: int = 1


@dataclass
class Presentation:
    """What a result says, in the order people read it (see the module doc)."""

    answer: str
    tone: str = "neutral"
    subject: str = ""
    qualifiers: list[tuple[str, str]] = field(default_factory=list)
    status: str = ""
    verdict: str | None = None
    story: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    advice: list[str] = field(default_factory=list)
    advice_html: list[str] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)
    meta: str = ""
    css: str = "nbbench-result"


class Rendered:
    """A result drawn both ways: ``str()`` / a terminal shows the text, a notebook the HTML
    (what :meth:`nbbench.results.Result.details` returns)."""

    def __init__(self, text: str, html_text: str):
        self.text = text
        self.html = html_text

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return self.text

    def _repr_pretty_(self, p, cycle):
        p.text(self.text)

    def _repr_html_(self) -> str:
        return self.html


# ---------------------------------------------------------------------------- text
def _table_text(sec: Section, width: int, indent: str = "    ") -> list[str]:
    if sec.text is not None:
        return [indent + line if line else "" for line in sec.text(width - len(indent))]
    rows = ([sec.head] if sec.head else []) + [list(r) for r in sec.rows]
    if not rows:
        return []
    n = max(len(r) for r in rows)
    rows = [r + [""] * (n - len(r)) for r in rows]
    align = sec.align or ("l" + "r" * (n - 1))
    widths = [max(len(str(r[c])) for r in rows) for c in range(n)]
    fixed = sum(widths[:-1]) + len(sec.sep) * (n - 1) + len(indent)
    last = max(20, width - fixed)
    out = []
    for r in rows:
        if sec.sep.strip():  # a short last row: no separator before nothing
            while len(r) > 1 and r[-1] == "":
                r = r[:-1]
        cells = [
            str(x).ljust(w) if align[min(c, len(align) - 1)] == "l" else str(x).rjust(w)
            for c, (x, w) in enumerate(zip(r[:-1], widths[:-1]))
        ]
        tail = str(r[-1])
        if len(tail) > last:
            wrapped = textwrap.wrap(tail, last, break_on_hyphens=False) or [""]
            head = indent + sec.sep.join(cells + [wrapped[0]])
            out.append(head)
            out += [" " * fixed + w for w in wrapped[1:]]
        else:
            w, a = widths[len(r) - 1], align[min(len(r) - 1, len(align) - 1)]
            out.append((indent + sec.sep.join(cells + [tail.ljust(w) if a == "l" else tail.rjust(w)])).rstrip())
    return out


def render_text(p: Presentation, width: int = 100, details: bool = False, ansi: bool = False) -> str:
    """The terminal's view: the answer line, then the rest indented (sentences stay one line
    each: a terminal wraps them, and they copy whole); tables fit ``width``; folded sections
    only with ``details`` (else one line names them).  ``ansi``: the answer in its tone's colour."""
    width = max(40, int(width))
    answer = p.answer
    if ansi:
        answer = f"\x1b[1m{_ANSI.get(p.tone, '')}{answer}\x1b[0m"
    lines = [answer]
    quals = [p.subject] * bool(p.subject) + [f"{k} {v}" if k else str(v) for k, v in p.qualifiers]
    if p.verdict:
        quals.append(f"checks: {p.verdict}")
    if quals:
        lines.append("  " + SEP.join(quals))
    if p.status:
        lines.append(f"  {p.status}")
    lines += [f"  {s}" for s in p.story]
    lines += [f"  warning: {w}" for w in p.warnings]
    lines += [f"  advice: {a}" for a in p.advice]
    folded = []
    for sec in p.sections:
        if sec.folded and not details:
            folded.append(sec.title)
            continue
        body = _table_text(sec, width)
        if not body:
            continue
        lines.append(f"  {sec.title}:")
        lines += body
        if sec.note:
            lines.append(f"    {sec.note}")
    if folded:
        lines.append("  details: " + SEP.join(folded) + " (--details, or .details())")
    if details and p.meta:
        lines.append(f"  {p.meta}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------- html
_esc = html.escape


def _cell(text: str) -> str:
    return _esc(str(text)).replace("\n", "<br>")


def _table_html(sec: Section) -> str:
    if not sec.rows and not sec.head:
        return ""
    n = max([len(r) for r in sec.rows] + [len(sec.head or [])])
    align = sec.align or ("l" + "r" * (n - 1))

    def style(c):
        return (
            "text-align:"
            + ("left" if align[min(c, len(align) - 1)] == "l" else "right")
            + (";white-space:nowrap" if c < sec.nowrap else "")
        )

    css = f" class='{_esc(sec.css)}'" if sec.css else ""
    out = [f"<table{css} style='border-collapse:collapse;margin:4px 0;font-size:inherit'>"]
    if sec.head:
        # padded like the cells under them: "samples/s" and "bandwidth" never run together
        out.append(
            "<thead><tr>"
            + "".join(f"<th style='{style(c)};padding:1px 8px 1px 0'>{_cell(h)}</th>" for c, h in enumerate(sec.head))
            + "</tr></thead>"
        )
    out.append("<tbody>")
    for i, r in enumerate(sec.rows):
        mark = sec.marks[i] if sec.marks and i < len(sec.marks) else None
        cells = []
        for c, x in enumerate(r):
            text = _cell(x)
            if c == 0 and mark:
                colour = TONE_COLOURS.get(mark) or "#757575"
                text = (
                    f"<span style='background:{colour};color:#fff;padding:1px 6px;border-radius:3px;"
                    f"font-weight:bold'>{text}</span>"
                )
            cells.append(f"<td style='{style(c)};padding:1px 8px 1px 0;vertical-align:top'>{text}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _section_html(sec: Section, open_details: bool) -> str:
    extra = sec.html_extra() if callable(sec.html_extra) else sec.html_extra
    body = _table_html(sec) + (extra or "")
    if sec.note:
        body += f"<div style='font-size:85%;color:#555'>{_esc(sec.note)}</div>"
    if not body:
        return ""
    if sec.folded:
        return (
            f"<details class='nbbench-details'{' open' if open_details else ''}><summary style='cursor:pointer;"
            f"color:#555'>{_esc(sec.title)}</summary>{body}</details>"
        )
    return (
        f"<div class='nbbench-section'><div style='font-weight:bold;margin-top:6px'>{_esc(sec.title)}</div>{body}</div>"
    )


def render_html(p: Presentation, open_details: bool = False) -> str:
    """The notebook's, the panel's and the report's view: the answer in its tone's colour, the
    qualifiers under it, then the story, warnings, advice, open sections, folded ones."""
    colour = TONE_COLOURS.get(p.tone, "")
    border = colour or "#9e9e9e"
    out = [
        f"<div class='{_esc(p.css)} nbbench-tone-{_esc(p.tone)}' style='border-left:4px solid {border};"
        f"padding:2px 0 2px 10px;margin:4px 0'>"
    ]
    style = "font-size:1.15em;font-weight:bold" + (f";color:{colour}" if colour else "")
    out.append(f"<div class='nbbench-answer' style='{style}'>{_esc(p.answer)}</div>")
    quals = [f"<b>{_esc(p.subject)}</b>"] * bool(p.subject)
    quals += [f"{_esc(k)} <code>{_esc(str(v))}</code>" if k else _esc(str(v)) for k, v in p.qualifiers]
    if p.verdict:
        quals.append(
            f"<span class='nbbench-verdict nbbench-verdict-{_esc(p.verdict)}' style='color:"
            f"{TONE_COLOURS.get(p.verdict) or '#555'};font-weight:bold'>checks: {_esc(p.verdict)}</span>"
        )
    if quals:
        out.append(f"<div class='nbbench-qualifiers' style='font-size:90%;color:#555'>{' · '.join(quals)}</div>")
    if p.status:
        out.append(f"<div class='nbbench-status' style='color:{colour or '#555'}'>{_esc(p.status)}</div>")
    out += [f"<p class='nbbench-story' style='margin:4px 0'>{_esc(s)}</p>" for s in p.story]
    if p.warnings:
        out.append(
            "<ul class='nbbench-warnings' style='color:#a86800;margin:4px 0'>"
            + "".join(f"<li>{_esc(w)}</li>" for w in p.warnings)
            + "</ul>"
        )
    advice = p.advice_html or [_esc(a) for a in p.advice]
    if advice:
        out.append(
            "<ul class='nbbench-advice' style='color:#1565c0;margin:4px 0'>"
            + "".join(f"<li>{a}</li>" for a in advice)
            + "</ul>"
        )
    out += [_section_html(s, open_details) for s in p.sections if not s.folded]
    out += [_section_html(s, open_details) for s in p.sections if s.folded]
    if p.meta:
        out.append(f"<div class='nbbench-meta' style='font-size:80%;color:#666'>{_esc(p.meta)}</div>")
    out.append("</div>")
    return "".join(out)
