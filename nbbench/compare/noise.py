"""Whether a delta is beyond the noise: run figures, windows, the interval and its words.

A reference of a comparison is one or more stored results pooled as repeats (see
:mod:`.select`); each result is one run, or several (``--repeat N``: ``Result.runs``, one
metrics dict per run).  :func:`figures` lists the figures of every run of a metric;
with one run a side, that run's per-window samples of the same metric are its own
:meth:`~nbbench.results.base.Result.windows` (what the card's ± reads too), and
:func:`nbbench.stats.ratio_interval` turns them into the 95 % interval of
candidate/baseline.  A delta whose interval contains 1 is "no significant change" and
drawn grey (:data:`GREY`), never green or red; a significant one is written by
:func:`nbbench.units.format_change` with its interval.  The change's point estimate is
the centre of its interval: with several runs, the ratio of the runs' geometric means
(Welch's interval is on the logarithms); the table's figures are the runs' medians.

Layer: core (inside :mod:`nbbench.compare`; imports only results, stats and units).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..stats import INCONCLUSIVE_ONE_RUN, RatioInterval, ratio_interval
from ..units import format_change
from .direction import better, delta_colour

__all__ = [
    "figures",
    "interval",
    "cell_text",
    "change_text",
    "colour",
    "GREY",
    "NO_CHANGE",
    "INCONCLUSIVE",
    "hib",
]

#: the colour of a delta that is not beyond the noise (inconclusive, or not significant)
GREY = "#8a8a8a"
NO_CHANGE = "no significant change"
INCONCLUSIVE = "inconclusive"


def _num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def run_metrics(result) -> list[dict]:
    """One metrics dict per run of a result: its ``runs`` (``--repeat N``) when it kept two or
    more, else its ``metrics`` as the one run."""
    runs = getattr(result, "runs", None) or []
    if not runs and isinstance(getattr(result, "extra", None), dict):
        runs = result.extra.get("runs") or []
    runs = [r for r in runs if isinstance(r, dict)]
    return runs if len(runs) >= 2 else [result.metrics]


def figures(pool: Sequence, metric: str) -> list[float]:
    """The figures of ``metric`` over every run of every result in ``pool``."""
    return [float(m[metric]) for r in pool for m in run_metrics(r) if _num(m.get(metric))]


def hib(metric: str, kind: str | None) -> bool | None:
    """Higher is better (True), lower (False), no direction (None)."""
    way = better(metric, kind)
    return None if way is None else way == "higher"


def interval(base_pool: Sequence, cand_pool: Sequence, metric: str, kind: str | None = None) -> RatioInterval:
    """The 95 % interval of candidate/baseline for ``metric``: over the runs, or with one run a
    side over their windows (:func:`nbbench.stats.ratio_interval`)."""
    b, c = figures(base_pool, metric), figures(cand_pool, metric)
    wb = base_pool[0].windows(metric) if len(b) == 1 and len(base_pool) == 1 else None
    wc = cand_pool[0].windows(metric) if len(c) == 1 and len(cand_pool) == 1 else None
    return ratio_interval(b, c, higher_is_better=hib(metric, kind), baseline_windows=wb, candidate_windows=wc)


def change_text(ri: RatioInterval | None) -> str:
    """The delta in words, in full: 'no significant change: +1.20 % (95 % CI -2.00 … +4.50 %)',
    '+52.3 % (95 % CI +40.1 … +63.2 %)', 'inconclusive: one run each — use --repeat 5 (+12.0 %)'."""
    if ri is None or ri.ratio is None:
        return "—"
    if ri.method == "exact" and ri.ratio == 1:
        return "no change (every run gave the same figure)"
    point = format_change(ri.ratio, higher_is_better=ri.higher_is_better)
    if ri.inconclusive:
        return f"{ri.caveat or INCONCLUSIVE}: point estimate {point}"
    full = format_change(ri.ratio, ri.low, ri.high, ri.higher_is_better, ri.level)
    text = full if ri.significant else f"{NO_CHANGE}: {full}"
    return text + (f" — {ri.caveat}" if ri.caveat and ri.method != "exact" else "")


def cell_text(ri: RatioInterval | None, unlike: bool = False) -> str:
    """The delta in a table cell: the change with its interval when significant (marked * when
    from the windows of one run a side), else 'no significant change' / 'inconclusive (+12.0 %)';
    ⚠ when measured unlike the baseline."""
    if ri is None or ri.ratio is None:
        return "—"
    mark = " ⚠" if unlike else ""
    if ri.method == "exact" and ri.ratio == 1:
        return "no change" + mark
    if ri.inconclusive:
        return f"{INCONCLUSIVE} ({format_change(ri.ratio, higher_is_better=ri.higher_is_better)})" + mark
    if not ri.significant:
        return NO_CHANGE + mark
    low, high = (None, None) if ri.method == "exact" else (ri.low, ri.high)
    star = " *" if ri.method == "windows" else ""
    return format_change(ri.ratio, low, high, ri.higher_is_better, ri.level) + star + mark


def colour(metric: str, ri: RatioInterval | None, neutral: str, kind: str | None = None, unlike: bool = False) -> str:
    """Green/red only for a significant change of a metric with a direction, measured like for
    like; grey for one within the noise or undecided; ``neutral`` otherwise."""
    if ri is None or ri.ratio is None or unlike:
        return neutral
    if not ri.significant:
        return GREY
    return delta_colour(metric, (ri.ratio - 1) * 100, neutral, kind)


def group_notes(intervals: Sequence[RatioInterval]) -> list[str]:
    """The notes a table adds once under its deltas: how the one-run deltas were judged."""
    out = []
    if any(ri.method == "windows" for ri in intervals):
        out.append("* interval from the windows within one run each: they understate run-to-run noise — use --repeat 5")
    if any(ri.inconclusive and ri.caveat == INCONCLUSIVE_ONE_RUN for ri in intervals):
        out.append(INCONCLUSIVE_ONE_RUN)
    if any(ri.method == "t-log-one-side" for ri in intervals):
        out.append("one run on one side: its run-to-run spread is taken to be the other side's")
    return out
