"""Two or more settings of one probe measured interleaved, compared in one result (``nbbench vs``).

Layer: core (inside :mod:`nbbench.results`).  :class:`InterleaveResult` (kind ``"vs"``) keeps,
for each setting (A, B, …, the command lines as given): its runs (one per round, each run's
metrics), the medians and the spread of its headline figures (``samples["settings"]``); and for
each setting after the first, the ratio of each headline figure to A's with its 95 % interval
(``extra["ratios"]``: :func:`nbbench.stats.ratio_interval`'s fields plus ``figure``, ``of`` and
``text``).  ``metrics`` holds each setting's medians as ``a_write_bytes_per_s``,
``b_write_bytes_per_s``….  A ratio whose interval contains 1 is "no significant change".
"""

from __future__ import annotations

from typing import Any

from ..stats import RatioInterval
from ..units import format_change, metric_label, metric_phrase
from .base import Result
from .present.rule import SEP, Section
from .runs import pm_text, spread_clause

__all__ = ["InterleaveResult", "LETTERS", "ratio_text"]

#: the names of the settings, in the order given
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"

NO_CHANGE = "no significant change"


def ratio_text(r: dict) -> str:
    """One ratio in words: '+52 % (95 % CI +40 … +63 %)', 'no significant change (95 % CI −3 … +4 %)',
    or the inconclusive sentence of one round."""
    hib = r.get("higher_is_better")
    if r.get("low") is None or r.get("high") is None:  # vs repeats by rounds
        return (r.get("caveat") or "inconclusive").replace("--repeat", "--rounds")
    if not r.get("significant"):
        ci = format_change(r.get("ratio"), r.get("low"), r.get("high"), hib)
        inside = ci[ci.index("(") + 1 : -1] if "(" in ci else ""
        return f"{NO_CHANGE} ({inside})" if inside else NO_CHANGE
    return format_change(r.get("ratio"), r.get("low"), r.get("high"), hib)


class InterleaveResult(Result):
    """Settings of one probe, interleaved round by round, compared (see the module doc)."""

    KIND = "vs"
    QUALIFIERS = ()
    TAGS = ()
    INLINE_SPREAD = False

    @property
    def settings(self) -> list[dict[str, Any]]:
        return list(self.samples.get("settings") or [])

    @property
    def ratios(self) -> list[dict[str, Any]]:
        return list(self.extra.get("ratios") or [])

    def headline(self) -> str:
        rounds = self.params.get("rounds")
        probe = self.params.get("probe", "")
        return f"{probe} interleaved, {rounds} round{'s' if rounds != 1 else ''}".strip()

    def summary_metrics(self) -> list[str]:
        return []

    def answer_line(self) -> str:
        """'B vs A: write −38 % (95 % CI −45 … −30 %) · read no significant change (95 % CI −3 … +4 %)'."""
        if not self.ratios:
            return "no comparison" if len(self.settings) < 2 else "no figures to compare"
        groups: list[tuple[str, str, list[str]]] = []  # figures of one pair with the same words, said once
        for r in self.ratios:
            text = ratio_text(r)
            if groups and groups[-1][0] == r["of"] and groups[-1][1] == text:
                groups[-1][2].append(metric_label(r["figure"]))
            else:
                groups.append((r["of"], text, [metric_label(r["figure"])]))
        out, last = [], None
        for of, text, names in groups:
            who = f"{of.split('/')[0]} vs {of.split('/')[1]}: " if of != last else ""
            last = of
            out.append(f"{who}{', '.join(names)} {text}")
        line = SEP.join(out)
        # the interval's level is said once: "(95 % CI …)" first, "(…)" after
        head, sep, rest = line.partition("(95 % CI ")
        return head + sep + rest.replace("(95 % CI ", "(") if sep else line

    def story(self) -> list[str]:
        """Each setting's medians with their spread: 'A (dd /x --direct): 1.20 GB/s write ± 3 % …'."""
        lines = []
        clauses = [spread_clause(s.get("spread")) for s in self.settings]
        same = len(set(clauses)) == 1 and len(clauses) > 1  # "(min…max of 3 runs)": said once, on the last
        for i, s in enumerate(self.settings):
            figs = [
                metric_phrase(k, v) + (f" {pm_text(sp['pm'])}" if sp and sp.get("pm") is not None else "")
                for k, v, sp in _figures(s)
            ]
            clause = clauses[i] if not same or i == len(self.settings) - 1 else ""
            if same and clause.endswith(" runs)"):
                clause = clause[:-1] + " each)"
            lines.append(
                f"{s['setting']} ({s['command']}): {', '.join(figs) or 'no figures'}" + (f" {clause}" if clause else "")
            )
        diff = self.extra.get("differ")
        if diff:
            lines.append("the settings differ in " + "; ".join(diff))
        return lines

    def sections(self) -> list[Section]:
        out = []
        if self.ratios:
            rows = [
                [
                    r["of"],
                    metric_label(r["figure"]),
                    ratio_text(r),
                    r.get("method") or "",
                    f"{r.get('n_baseline')} vs {r.get('n_candidate')}",
                ]
                for r in self.ratios
            ]
            # green / red only for a change beyond the noise the better / worse way; noise is grey
            marks = [{"better": "ok", "worse": "fail"}.get(_direction(r), "neutral") for r in self.ratios]
            out.append(
                Section(
                    "ratios (95 % interval)",
                    rows,
                    head=["of", "figure", "change", "method", "runs"],
                    folded=True,
                    align="lllll",
                    marks=marks,
                    css="nbbench-ratios",
                )
            )
        body = []
        for s in self.settings:
            keys = [k for k, _, _ in _figures(s)]
            for i, run in enumerate(s.get("runs") or []):
                body.append([s["setting"], str(i + 1)] + [metric_phrase(k, run.get(k)) for k in keys])
        if body:
            width = max(len(b) for b in body)
            body = [b + [""] * (width - len(b)) for b in body]
            out.append(
                Section(
                    "every run, in rounds", body, head=["setting", "round"] + [""] * (width - 2), css="nbbench-runs"
                )
            )
        return out + [s for s in super().sections() if s.css == "nbbench-labels"]


def _direction(r: dict) -> str | None:
    """'better' / 'worse' for a significant ratio of a figure with a direction, else None
    (:attr:`nbbench.stats.RatioInterval.direction`)."""
    fields = RatioInterval.__dataclass_fields__
    try:
        return RatioInterval(**{k: r[k] for k in fields if k in r}).direction
    except TypeError:  # a record without the interval's fields
        return None


def _figures(setting: dict) -> list[tuple[str, Any, dict | None]]:
    figs = (setting.get("spread") or {}).get("figures") or {}
    keys = setting.get("headline") or list(figs)
    return [(k, (setting.get("metrics") or {}).get(k), figs.get(k)) for k in keys]
