"""The doctor's result (kind ``doctor``) and its findings, :class:`Check`."""

from __future__ import annotations

import html
from dataclasses import asdict, dataclass, field
from typing import Any

from . import advice as _advice
from .base import Result, register
from .verdict import verdict_badge, worst_verdict

__all__ = ["DoctorResult", "Check", "CHECK_STATUSES"]

CHECK_STATUSES = ("ok", "warn", "fail", "n/a")

_BADGE = {"ok": "#2e7d32", "warn": "#ef6c00", "fail": "#c62828", "n/a": "#757575"}

@dataclass
class Check:
    """One finding.

    ``evidence``: the value and where it was read; ``fix``: the command or setting
    that fixes it (also given for ``ok`` findings where a better setting exists);
    ``advice``: nbbench subcommands that tell more, as data (:mod:`nbbench.results.advice`,
    worded by the front end that shows the result).
    ``data`` keeps the raw values read (JSON-compatible).
    """

    name: str
    status: str
    evidence: str
    fix: str = ""
    group: str = ""
    data: dict[str, Any] = field(default_factory=dict)
    advice: list[dict] = field(default_factory=list)

    def __post_init__(self):
        if self.status not in CHECK_STATUSES:
            raise ValueError(f"check status must be one of {CHECK_STATUSES}, not {self.status!r}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Check":
        return cls(name=d["name"], status=d["status"], evidence=d.get("evidence", ""),
                   fix=d.get("fix", ""), group=d.get("group", ""), data=dict(d.get("data") or {}),
                   advice=list(d.get("advice") or []))

    def fix_text(self, command_text=None) -> str:
        """The fix and the advice, commands worded by ``command_text`` (neutral: None)."""
        return "; ".join([self.fix] * bool(self.fix) + [_advice.word(a, command_text) for a in self.advice])

    def __str__(self) -> str:
        s = f"[{self.status}] {self.name}: {self.evidence}"
        fix = self.fix_text()
        if fix and self.status in ("warn", "fail"):
            s += f" -> {fix}"
        return s



@register("doctor")
class DoctorResult(Result):
    """The doctor's findings: ``checks`` (a list of :class:`Check`), counts as metrics."""

    SUMMARY = ("fail_count", "warn_count", "ok_count", "na_count")

    @property
    def checks(self) -> list[Check]:
        return [Check.from_dict(d) for d in self.samples.get("checks", [])]

    def judge(self) -> str | None:
        """The worst of the checks (fail > warn > ok; n/a does not count); None without any."""
        return worst_verdict(c.get("status") for c in self.samples.get("checks", []))

    def by_status(self, status: str) -> list[Check]:
        return [c for c in self.checks if c.status == status]

    def get(self, name: str) -> Check:
        for c in self.checks:
            if c.name == name:
                return c
        raise KeyError(name)

    def checks_frame(self):
        import pandas as pd

        return pd.DataFrame([dict({k: c.to_dict()[k] for k in ("status", "name", "evidence", "group")},
                                  fix=c.fix_text(self.wording)) for c in self.checks],
                            columns=["status", "name", "evidence", "fix", "group"])

    def headline(self) -> str:
        return f"doctor {self.params.get('path') or ''}".strip()

    def __str__(self) -> str:
        m = self.metrics
        return (f"{self.headline()}: {m.get('fail_count', 0)} fail, {m.get('warn_count', 0)} warn, "
                f"{m.get('ok_count', 0)} ok, {m.get('na_count', 0)} n/a")

    def text_table(self, width: int | None = None) -> str:
        """status, check, evidence, fix — wrapped to the terminal width."""
        import shutil
        import textwrap

        width = width or max(80, shutil.get_terminal_size((120, 24)).columns)
        checks = self.checks
        nw = max([len(c.name) for c in checks] + [5])
        lead = 6 + 2 + nw + 2
        body = max(30, width - lead)
        lines = [str(self), ""]
        order = {"fail": 0, "warn": 1, "ok": 2, "n/a": 3}
        for c in sorted(checks, key=lambda c: order[c.status]):
            ev = textwrap.wrap(c.evidence, body) or [""]
            lines.append(f"{c.status.upper():<6}  {c.name:<{nw}}  {ev[0]}")
            lines += [" " * lead + e for e in ev[1:]]
            fix = c.fix_text(self.wording)
            if fix and c.status in ("warn", "fail"):
                fx = textwrap.wrap("fix: " + fix, body)
                lines += [" " * lead + f for f in fx]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return self.html_table()

    def html_table(self) -> str:
        esc = html.escape
        order = {"fail": 0, "warn": 1, "ok": 2, "n/a": 3}
        rows = []
        for c in sorted(self.checks, key=lambda c: order[c.status]):
            fix = esc(c.fix_text(self.wording)) if c.status in ("warn", "fail") else ""
            rows.append(
                f"<tr><td><span style='background:{_BADGE[c.status]};color:#fff;padding:1px 6px;"
                f"border-radius:3px;font-weight:bold'>{esc(c.status)}</span></td>"
                f"<td style='text-align:left;white-space:nowrap'><b>{esc(c.name)}</b></td>"
                f"<td style='text-align:left'>{esc(c.evidence)}</td>"
                f"<td style='text-align:left'><code>{fix}</code></td></tr>")
        return (f"<div class='nbbench-doctor'><b>{esc(str(self))}</b> {verdict_badge(self.verdict)}"
                "<table class='nbbench-doctor-table'><thead><tr><th>status</th><th style='text-align:left'>check</th>"
                "<th style='text-align:left'>evidence</th><th style='text-align:left'>fix</th></tr></thead>"
                f"<tbody>{''.join(rows)}</tbody></table></div>")
