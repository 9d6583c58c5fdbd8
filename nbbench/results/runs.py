"""Repeated runs of one probe as one result, and the spread of its headline figures.

Layer: core (inside :mod:`nbbench.results`).  ``--repeat N`` (:mod:`nbbench.commands.repeat`)
runs a probe N times and hands the N results to :func:`merge`: one result of the same kind
whose ``metrics`` are the medians over the runs that ended ok, whose ``runs`` are each run's
own metrics (one dict per run, in order) and whose ``extra["spread"]`` says how far the
headline figures (those on its answer line) spread:

* over runs (N ≥ 2): ``± half the range over the median (min…max of N runs)``;
* within one run (N = 1): the coefficient of variation of the run's per-window samples (the
  windows the live plot draws), with their number — labelled *within one run*, because
  windows inside a run are autocorrelated and understate run-to-run spread.

:func:`spread_of` computes that record for one result (what :func:`merge` stores; the
command layer calls it for a single run too); a figure's per-window samples are the result's own
:meth:`~nbbench.results.base.Result.windows` (the one source compare reads too).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Sequence
from typing import Any

from ..stats import median, spread, spread_text
from .verdict import worst_verdict

__all__ = ["merge", "spread_of", "figure_spread", "headline_keys", "pm_text", "spread_clause"]


def _numeric(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def figure_spread(values: Iterable[float]) -> dict:
    """The spread of one figure's values: the statistics module's ``spread`` (n, median, min,
    max, rel_range, cv) plus ``pm``, the ± shown beside the figure (a fraction): half the
    range over the median for runs; set by :func:`spread_of` to the CV for windows."""
    sp = dict(spread([v for v in values if _numeric(v)]))
    sp["pm"] = sp["rel_range"] / 2 if sp.get("rel_range") is not None else None
    return sp


def headline_keys(result) -> list[str]:
    """The figures a result's answer line names (its :meth:`summary_metrics`), rates and times only."""
    keys = [k for k in result.summary_metrics() if _numeric(result.metrics.get(k))]
    return [k for k in keys if not k.endswith("_count")]


def spread_of(result, runs: Sequence[dict] | None = None) -> dict:
    """``{"over": "runs"|"windows", "n": N, "figures": {key: spread}}`` for ``result``'s headline
    figures: over ``runs`` (each run's metrics) when there are two or more, else over the
    windows of its one run (``pm`` is then the windows' CV, ``n`` their number)."""
    keys = headline_keys(result)
    if runs is not None and len(runs) >= 2:
        figs = {k: figure_spread(r.get(k) for r in runs) for k in keys}
        return {"over": "runs", "n": len(runs), "figures": {k: v for k, v in figs.items() if v["n"] >= 2}}
    figs, most = {}, 0
    for k in keys:
        vals = result.windows(k)
        most = max(most, len(vals))
        if len(vals) >= 2:
            sp = figure_spread(vals)
            sp["pm"] = sp.get("cv")
            figs[k] = sp
    # "headline": it has figures whose spread is unknown (one run, fewer than two windows)
    return {"over": "windows", "n": 1, "figures": figs, "windows": most, "headline": bool(keys)}


def pm_text(frac: float | None) -> str:
    """'± 4 %', '± 0.4 %': a fraction as the statistics module words a spread (:func:`nbbench.stats.spread_text`)."""
    if frac is None:
        return ""
    return spread_text({"n": 2, "rel_range": 2 * abs(frac)}).split(" (")[0]


def spread_clause(spread: dict | None) -> str:
    """What the ± beside the headline figures is: '(min…max of 5 runs)' or
    '(CV of 12 windows, within one run)'; for one run too short to have two windows, that no
    spread is known: '(one run, 1 window: no spread — use --repeat 5)'; '' when there is nothing to say."""
    if not spread:
        return ""
    if not spread.get("figures"):
        if spread.get("over") == "windows" and spread.get("headline"):
            w = spread.get("windows") or 0
            windows = f", {w} window{'s' if w != 1 else ''}" if w else ""
            return f"(one run{windows}: no spread — use --repeat 5)"
        return ""
    if spread.get("over") == "runs":
        return f"(min…max of {spread['n']} runs)"
    ns = sorted({v["n"] for v in spread["figures"].values()})
    count = " and ".join(str(n) for n in ns)
    return f"(CV of {count} windows, within one run)"


# ------------------------------------------------------------------ merging
def _median_metrics(dicts: list[dict]) -> dict:
    med = median
    out: dict[str, Any] = {}
    for d in dicts:
        for k in d:
            out.setdefault(k, None)
    for k in out:
        vals = [d[k] for d in dicts if k in d]
        nums = [v for v in vals if _numeric(v)]
        if nums and len(nums) == len([v for v in vals if v is not None]):
            m = med(nums)
            out[k] = int(m) if all(isinstance(v, int) for v in nums) and float(m).is_integer() else m
        else:
            out[k] = vals[-1] if vals else None
    return out


def _merge_rows(results) -> list | None:
    """Preset tables (``samples["rows"]``, one sub-result per test): each row's metrics the
    medians over the runs, where every run has the same rows."""
    rows = [r.samples.get("rows") for r in results]
    if not rows[0] or any(not isinstance(x, list) or len(x) != len(rows[0]) for x in rows):
        return None
    out = copy.deepcopy(rows[-1])
    for i, row in enumerate(out):
        if isinstance(row, dict) and isinstance(row.get("metrics"), dict):
            row["metrics"] = _median_metrics([x[i].get("metrics") or {} for x in rows])
    return out


def merge(results: list, planned: int | None = None):
    """One result from the runs of one probe (in order): the last run's labels, samples and
    params; ``metrics`` the medians over the runs that ended ok (a preset's rows too);
    ``runs`` each ok run's metrics; the worst status (a failed or interrupted run is named in
    ``reason``); warnings of every run, once; ``extra["spread"]`` (:func:`spread_of`) and
    ``extra["run_info"]`` (each run's start, duration and status).  ``planned``: how many runs
    were asked for (a series a failure ended is shorter)."""
    if not results:
        raise ValueError("merge needs at least one result")
    last = results[-1]
    merged = type(last).from_dict(last.to_dict())
    ok = [r for r in results if r.status == "ok"] or [last]
    merged.metrics = _median_metrics([r.metrics for r in ok])
    merged.runs = [copy.deepcopy(r.metrics) for r in ok]
    if len(ok) > 1:
        rows = _merge_rows(ok)
        if rows is not None:
            merged.samples["rows"] = rows
    merged.warnings = []
    for r in results:
        for w in r.warnings:
            merged.warn(w)
    merged.started_at = results[0].started_at
    merged.ended_at = last.ended_at
    bad = next((i for i, r in enumerate(results) if r.status != "ok"), None)
    merged.status = "ok" if bad is None else results[bad].status
    if bad is not None:
        merged.reason = f"run {bad + 1} of {planned or len(results)} {results[bad].status}" + (
            f": {results[bad].reason}" if results[bad].reason else ""
        )
    verdicts = [r.verdict for r in results if r.verdict]
    if verdicts:
        merged.verdict = worst_verdict(verdicts)
    merged.extra["run_info"] = [
        {"run": i + 1, "started_at": r.started_at, "duration_s": r.duration_s, "status": r.status}
        for i, r in enumerate(results)
    ]
    merged.extra["samples_of_run"] = len(results)
    merged.extra["spread"] = spread_of(merged, merged.runs)
    return merged
