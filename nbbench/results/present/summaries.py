"""One-line summaries of results, fitted to a width without ever cutting a figure.

Layer: the bottom (inside :mod:`nbbench.results`), pure strings like :mod:`.rule`, whose
separators (:data:`~.present.SEP`, :data:`~.present.ANSWER_SEP`) they split on.
:func:`fit_summary` cuts ``answer — subject [tags] (n warnings)`` to a width,
:func:`history_lines` lays out the history list, :func:`count_line` counts results and
what their checks found, :func:`outcome_word` says how a stored run went.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ...units import shorten_middle
from .rule import ANSWER_SEP, SEP

__all__ = ["fit_summary", "history_lines", "outcome_word", "count_line"]

_PATHISH = re.compile(r"\S*/\S*")


def _split_summary(text: str) -> tuple[list[str], str, str, str]:
    """(answer's parts, subject, ' [tags]', ' (n warnings)') of a one-line summary."""
    lead, _, rest = text.partition(ANSWER_SEP)
    m = re.match(r"^(.*?)((?: \[[^\]]*\])?)((?: \(\d+ warnings?\))?)$", rest)
    subject, tags, warns = (m.group(1), m.group(2), m.group(3)) if m else (rest, "", "")
    return lead.split(SEP), subject, tags, warns


def _shorten_subject(subject: str, room: int, floor: int) -> str:
    """The subject in ``room`` characters: its longest path shortened in the middle (to no less
    than ``floor``), then its end cut."""
    if len(subject) <= room:
        return subject
    paths = _PATHISH.findall(subject)
    if paths:
        longest = max(paths, key=len)
        keep = max(floor, len(longest) - (len(subject) - room))
        subject = subject.replace(longest, shorten_middle(longest, keep), 1)
    if len(subject) > room:
        subject = subject[: max(1, room - 1)].rstrip() + "…"
    return subject


def fit_summary(text: str, width: int | None, drop_prefix: str = "") -> str:
    """A one-line summary (``answer — subject [tags] (n warnings)``) cut to ``width`` the way
    people want it cut — never inside a figure: the subject's path shortened in the middle,
    the tags and the warning count left out, whole figures dropped from the answer's end
    (" …"), the subject cut last.  ``drop_prefix``: a word the subject starts with that a
    column already says (the kind, in a history table)."""
    text = " ".join(str(text).split())
    parts, subject, tags, warns = _split_summary(text)
    if drop_prefix and (subject == drop_prefix or subject.startswith(drop_prefix + " ")):
        subject = subject[len(drop_prefix) + 1 :]
        text = SEP.join(parts) + (ANSWER_SEP + subject + tags + warns if subject or tags or warns else "")
    if width is None or len(text) <= width:
        return text

    def join(ps, subj, t="", w="", cut=False):
        lead = SEP.join(ps) + (" …" if cut else "")
        return lead + (ANSWER_SEP + subj + t + w if subj else "")

    n = len(parts)
    for floor in (16,):
        short = _shorten_subject(subject, max(floor, width - len(join(parts, "x", tags, warns)) + 1), floor)
        for t, w in ((tags, warns), ("", warns), ("", "")):
            if len(join(parts, short, t, w)) <= width:
                return join(parts, short, t, w)
    keep = list(parts)
    while len(keep) > 1:  # whole figures off the answer's end, the subject kept (shortened)
        keep.pop()
        lead = join(keep, "", cut=True)
        room = width - len(lead) - len(ANSWER_SEP)
        if subject and room >= min(len(subject), 12):
            return lead + ANSWER_SEP + _shorten_subject(subject, room, 12)
        if len(keep) == 1 and len(lead) <= width:
            return lead
    lead = join(keep, "", cut=len(keep) < n)
    if len(lead) <= width:
        return lead
    return lead[: max(1, width - 1)].rsplit(" ", 1)[0] + "…"  # one sentence longer than the line: at a word


def _counted(found: dict[str, int]) -> str:
    return ", ".join(f"{n} {s}" for s, n in found.items() if n) or "none"


def count_line(results) -> str:
    """Results and what their checks found, counted apart: '1 result: ok; its checks: 2 fail,
    4 warn, 10 ok, 2 n/a' — never '2 results; 2 fail', which reads as if both runs failed.
    ``results``: Results (each may say its ``findings()`` and ``FINDINGS`` name)."""
    results = list(results)
    n = len(results)
    states: dict[str, int] = {}
    for r in results:
        states[r.status] = states.get(r.status, 0) + 1
    text = f"{n} result{'s' if n != 1 else ''}: " + (_counted(states) if n != 1 else results[0].status if n else "")
    for r in results:
        found = r.findings()
        if found:
            whose = "its" if n == 1 else f"{r.kind}'s"
            text += f"; {whose} {r.FINDINGS}: {_counted(found)}"
    return text.rstrip(": ")


def outcome_word(status: str | None, verdict: str | None) -> str:
    """How a stored run went, in one short word: its status unless ok, else its checks'
    verdict ("checks: fail"), else "ok"."""
    if status and status != "ok":
        return status
    if verdict in ("warn", "fail"):
        return f"checks: {verdict}"
    return "ok"


def history_lines(records: list[dict], width: int | None = 100, when: Callable | None = None) -> list[str]:
    """The history as aligned lines under a header, each at most ``width`` columns: run,
    started, kind, label, outcome, summary (the answer first, cut by :func:`fit_summary`).

    ``records``: dicts with ``run_id``, ``started`` (text, or what ``when`` turns into text),
    ``kind``, ``label``, ``status``, ``verdict``, ``summary``."""
    cols = ["run", "started", "kind", "label", "outcome"]
    rows = []
    for rec in records:
        label = rec.get("label")
        label = "" if label is None or label != label else shorten_middle(str(label), 16)
        started = when(rec.get("started")) if when else str(rec.get("started") or "")
        rows.append(
            [
                str(rec.get("run_id", "")),
                started,
                str(rec.get("kind") or ""),
                label,
                outcome_word(rec.get("status"), rec.get("verdict")),
                str(rec.get("summary") or ""),
            ]
        )
    widths = [max([len(c)] + [len(r[i]) for r in rows]) for i, c in enumerate(cols)]
    lead = sum(widths) + 2 * len(cols)

    def line(cells, summary):
        first = cells[0].rjust(widths[0])
        return "  ".join([first] + [c.ljust(w) for c, w in zip(cells[1:], widths[1:])]) + "  " + summary

    room = None if width is None else max(24, width - lead)
    out = [line(cols, "summary").rstrip()]
    out += [line(r[:-1], fit_summary(r[-1], room, drop_prefix=r[2])).rstrip() for r in rows]
    return out
