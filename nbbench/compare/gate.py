"""The CI gate: fail when a headline figure is significantly worse than the baseline by more than PCT.

``nbbench compare BASELINE CANDIDATE --fail-if-worse 5%`` and
:meth:`nbbench.compare.Comparison.gate` judge the same way (:func:`judge`): a headline
figure (the result's summary metrics, :func:`~nbbench.compare.chart_metrics`) of a later
reference fails when its 95 % interval lies wholly on the worse side of 1 *and* its point
estimate is worse by more than ``PCT`` percent.  A delta within the noise or inconclusive
never fails.  A pair measured unlike the baseline (another cache mode or parameters) is
judged all the same, its caveat in the sentence.  The verdict is "fail" (exit code 3) or
"ok".

Layer: core (inside :mod:`nbbench.compare`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from ..units import format_change, format_metric, metric_label
from .likeness import caveats as caveat_words
from .noise import change_text

__all__ = ["parse_pct", "Gate", "judge"]

_PCT = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*%?\s*$")


def parse_pct(text: Any) -> float:
    """'5%', '5 %', '5', 2.5 -> the percentage; ValueError with a sentence for anything else."""
    if isinstance(text, bool):
        raise ValueError(f"not a percentage: {text!r}")
    if isinstance(text, (int, float)):
        v = float(text)
    else:
        m = _PCT.match(str(text))
        if not m:
            raise ValueError(f"not a percentage: {text!r} (give how much worse is allowed, e.g. 5% or 5)")
        v = float(m.group(1))
    if not math.isfinite(v) or v < 0:
        raise ValueError(f"not a percentage: {text!r} (a number of 0 or more, e.g. 5%)")
    return v


@dataclass
class Gate:
    """What the gate found: the verdict, the failing figures and one sentence per judged figure."""

    threshold_pct: float
    verdict: str  # "ok" or "fail"
    failures: list[dict] = field(default_factory=list)
    judged: list[dict] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return 3 if self.verdict == "fail" else 0

    def sentence(self) -> str:
        pct = f"{self.threshold_pct:g} %"
        if self.failures:
            return (
                f"fail: {len(self.failures)} headline figure{'s' if len(self.failures) > 1 else ''} "
                f"significantly worse than the baseline by more than {pct} — "
                + "; ".join(f["sentence"] for f in self.failures)
            )
        if not self.judged:
            return f"ok: no headline figure to judge against the baseline (--fail-if-worse {pct})"
        undecided = [j for j in self.judged if j["inconclusive"]]
        text = f"ok: no headline figure is significantly worse than the baseline by more than {pct}"
        if undecided:
            text += f" ({len(undecided)} of {len(self.judged)} could not be judged: one run each — use --repeat 5)"
        return text

    def lines(self) -> list[str]:
        return [self.sentence()] + [f"  {j['sentence']}" for j in self.judged if not j["failed"]]

    def to_dict(self) -> dict:
        return {
            "threshold_pct": self.threshold_pct,
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "sentence": self.sentence(),
            "failures": self.failures,
            "judged": self.judged,
        }


def judge(cmp, pct: Any) -> Gate:
    """Judge every headline figure of every later reference of ``cmp`` (a Comparison)."""
    # here, not at the top: .model imports this module (Gate)
    from .model import chart_metrics

    threshold = parse_pct(pct)
    gate = Gate(threshold_pct=threshold, verdict="ok")
    for g in cmp.groups:
        caveat = "; ".join(caveat_words(g))
        for m in chart_metrics(g):
            for i in range(1, len(g.runs)):
                ri = g.interval(m, i)
                if ri is None or ri.ratio is None or ri.higher_is_better is None:
                    continue
                worse = ri.worse_by()
                # within-run windows understate run-to-run noise: they never fail a gate alone
                # (with --repeat they do not arise)
                weak = ri.method in ("windows", "t-log-one-side")
                failed = bool(ri.worse and worse is not None and worse * 100 > threshold and not weak)
                what = f"{metric_label(m)} ({g.kind}) of {g.names[i]}"
                several = g.n_runs(i) > 1 or g.n_runs(0) > 1  # the figures are medians, the change is not
                figs = (
                    "medians " if several else ""
                ) + f"{format_metric(m, g.value(m, i))} against {format_metric(m, g.value(m, 0))}"
                if failed:
                    text = (
                        f"{what} is {worse * 100:.3g} % worse than {g.names[0]}: "
                        f"{format_change(ri.ratio, ri.low, ri.high, ri.higher_is_better, ri.level)}"
                        f"{' (ratio of the geometric means)' if several else ''}; {figs}"
                    )
                else:
                    text = f"{what}: {change_text(ri)}; {figs}"
                    if weak and ri.worse and worse is not None and worse * 100 > threshold:
                        text += (
                            f" — not judged: {ri.caveat or 'the interval comes from within-run windows'}; "
                            "use --repeat 3 or more on both sides"
                        )
                unlike = g.unlike(i)
                if unlike and caveat:
                    text += f" — measured unlike the baseline ({caveat})"
                rec = {
                    "kind": g.kind,
                    "metric": m,
                    "ref": g.names[i],
                    "baseline": g.names[0],
                    "ratio": ri.ratio,
                    "ci_low": ri.low,
                    "ci_high": ri.high,
                    "significant": ri.significant,
                    "method": ri.method,
                    "worse_pct": None if worse is None else worse * 100,
                    "inconclusive": ri.inconclusive,
                    "unlike": unlike,
                    "failed": failed,
                    "sentence": text,
                }
                gate.judged.append(rec)
                if failed:
                    gate.failures.append(rec)
    gate.verdict = "fail" if gate.failures else "ok"
    return gate
