"""The doctor's result (kind ``doctor``) and its findings, :class:`Check`."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .. import advice as _advice
from ..base import Result, register
from ..present.rule import SEP, Section
from ..verdict import worst_verdict

__all__ = ["DoctorResult", "Check", "CHECK_STATUSES"]

#: a check's status: ok, warn and fail are verdicts; ``info`` is a finding worth knowing that
#: needs no action (a virtual disk's rotational flag, a kernel setting only the host can
#: change) and counts as no warning; ``n/a``: the check could not look
CHECK_STATUSES = ("ok", "warn", "fail", "info", "n/a")


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
    def from_dict(cls, d: dict[str, Any]) -> Check:
        return cls(
            name=d["name"],
            status=d["status"],
            evidence=d.get("evidence", ""),
            fix=d.get("fix", ""),
            group=d.get("group", ""),
            data=dict(d.get("data") or {}),
            advice=list(d.get("advice") or []),
        )

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

    SUMMARY = ("fail_count", "warn_count", "ok_count", "info_count", "na_count")

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

        return pd.DataFrame(
            [
                dict({k: c.to_dict()[k] for k in ("status", "name", "evidence", "group")}, fix=c.fix_text(self.wording))
                for c in self.checks
            ],
            columns=["status", "name", "evidence", "fix", "group"],
        )

    def headline(self) -> str:
        return f"doctor {self.params.get('path') or ''}".strip()

    def findings(self) -> dict[str, int]:
        """How many checks found each status: {"fail": 2, "warn": 4, "ok": 10, "n/a": 2}."""
        m = self.metrics
        found = {
            s: int(m.get(k) or 0)
            for s, k in (
                ("fail", "fail_count"),
                ("warn", "warn_count"),
                ("ok", "ok_count"),
                ("info", "info_count"),
                ("n/a", "na_count"),
            )
        }
        return {s: n for s, n in found.items() if n or s != "info"}

    def answer_line(self) -> str:
        """What to fix first: '2 fail (gpu: torch build, gpu: driver) · 4 warn (open-file limit, …)',
        or 'all 16 checks ok (2 n/a)'."""
        checks = self.checks
        if not checks:
            return "no checks ran"
        parts = []
        for status in ("fail", "warn"):
            names = [c.name for c in checks if c.status == status]
            if names:
                shown = ", ".join(names[:3]) + (f", +{len(names) - 3} more" if len(names) > 3 else "")
                parts.append(f"{len(names)} {status} ({shown})")
        if parts:
            return SEP.join(parts)
        ok = sum(c.status == "ok" for c in checks)
        others = [f"{n} {s}" for s in ("info", "n/a") if (n := sum(c.status == s for c in checks))]
        return f"all {ok} checks ok" + (f" ({', '.join(others)})" if others else "")

    def rows(self) -> list[tuple[str, str, str, str]]:
        """(status, check, evidence, fix) worst first, each said once: findings with the same
        status and evidence are one row ("ssh password login, ssh root login"), and a fix the row
        above already gives is not repeated."""
        merged: list[list[str]] = []
        for c in sorted(self.checks, key=lambda c: _ORDER[c.status]):
            fix = c.fix_text(self.wording) if c.status in ("warn", "fail") else ""
            if merged and merged[-1][0] == c.status and merged[-1][2] == c.evidence and merged[-1][3] == fix:
                merged[-1][1] += f", {c.name}"
                continue
            merged.append([c.status, c.name, c.evidence, fix])
        last = ""
        for row in merged:
            row[3], last = ("" if row[3] and row[3] == last else row[3]), (row[3] or last)
        return [tuple(r) for r in merged]

    def sections(self) -> list[Section]:
        """The findings, worst first: status, check, evidence, fix (open)."""
        rows = self.rows()
        return [
            Section(
                f"findings ({_counts(self.findings())})",
                [list(r) for r in rows],
                head=["status", "check", "evidence", "fix"],
                folded=False,
                align="llll",
                marks=[_MARK[r[0]] for r in rows],
                nowrap=2,
                css="nbbench-doctor-table",
                text=self._text_lines,
            )
        ]

    def _text_lines(self, width: int) -> list[str]:
        """status, check, evidence, fix — wrapped to ``width``."""
        import textwrap

        rows = self.rows()
        nw = min(max([len(r[1]) for r in rows] + [5]), 24)
        lead = 6 + 2 + nw + 2
        body = max(30, width - lead)
        lines = []
        for status, name, evidence, fix in rows:
            names = textwrap.wrap(name, nw) or [""]
            ev = textwrap.wrap(evidence, body) or [""]
            lines.append(f"{status.upper():<6}  {names[0]:<{nw}}  {ev[0]}")
            for i in range(1, max(len(names), len(ev))):
                lines.append(
                    (
                        f"{'':<6}  {(names[i] if i < len(names) else ''):<{nw}}  " + (ev[i] if i < len(ev) else "")
                    ).rstrip()
                )
            if fix:
                lines += [" " * lead + f for f in textwrap.wrap("fix: " + fix, body)]
        return lines

    def text_table(self, width: int | None = None, details: bool = False, ansi: bool = False) -> str:
        """The answer, then the findings wrapped to the terminal's width (at least 80 columns)."""
        if width is None:
            import shutil

            width = max(80, shutil.get_terminal_size((120, 24)).columns)
        return super().text_table(width=width, details=details, ansi=ansi)

    def warnings_shown(self) -> list[str]:
        return []  # each is a finding's fix, in the findings table

    def present(self):
        p = super().present()
        p.css += " nbbench-doctor"
        p.advice = p.advice_html = []  # each is in its finding's fix
        return p

    def html_table(self) -> str:
        """The doctor's HTML view (the report's doctor section): its answer, then the findings."""
        return self.html()


_ORDER = {"fail": 0, "warn": 1, "info": 2, "ok": 3, "n/a": 4}
_MARK = {"fail": "fail", "warn": "warn", "info": "neutral", "ok": "ok", "n/a": "neutral"}


def _counts(found: dict[str, int]) -> str:
    return ", ".join(f"{n} {s}" for s, n in found.items())
