"""Run quality in words: too short to trust, unstable runs, a warm-up transient.

Layer: core (inside :mod:`nbbench.results`).  :func:`assess` looks at a merged result
(:func:`nbbench.results.runs.merge`) and the runs it came from, adds one warning per finding
(each a sentence, the same words for every probe) and returns the findings as data
(``{"kind", "text", ...}``, kept in ``extra["quality"]``).  The rules:

* **too short** (:func:`too_short`, the one wording): a measured phase — a metric ending in
  ``elapsed_s`` (``write_elapsed_s`` → "write") or ``measured_s`` — that lasted less than
  :data:`MIN_PHASE_S` (1 s), or that has per-window samples and fewer than :data:`MIN_WINDOWS`
  (5) of them.  It names the option and value that would do: the current value scaled by what
  is missing, with a 25 % margin, rounded up (sizes to a power of two).
* **unstable** (:func:`unstable`): with two or more runs, a headline figure whose runs differ by
  more than :data:`UNSTABLE_PCT` (5 %, MLPerf Storage's rule: (max − min) / median); the outlier
  named is the run farthest from the median.
* **warm-up** (:func:`warmup`): in a run with at least :data:`WARMUP_MIN_WINDOWS` (5) windows of a
  headline figure, the first window deviates from the median of the others by more than
  :data:`WARMUP_PCT` (25 %): a cache filling, a device waking up, threads starting.
"""

from __future__ import annotations

import math
from typing import Any

from ..units import format_metric
from .runs import _numeric, headline_keys

__all__ = [
    "assess",
    "too_short",
    "unstable",
    "warmup",
    "suggest",
    "MIN_PHASE_S",
    "MIN_WINDOWS",
    "UNSTABLE_PCT",
    "WARMUP_PCT",
    "WARMUP_MIN_WINDOWS",
]

MIN_PHASE_S = 1.0
MIN_WINDOWS = 5
UNSTABLE_PCT = 5.0
WARMUP_PCT = 25.0
WARMUP_MIN_WINDOWS = 5


def too_short(phase: str, lasted_s: float, windows: int | None, suggestion: str) -> str:
    """The one wording: 'write lasted 9.88 ms: too short to trust — use --size 2G or more'
    (with the windows when they are the reason: '… lasted 1.40 s (3 windows): …')."""
    n = f" ({windows} window{'s' if windows != 1 else ''})" if windows is not None and windows < MIN_WINDOWS else ""
    return f"{phase} lasted {format_metric('x_s', lasted_s)}{n}: too short to trust — {suggestion}"


def too_short_many(phases: list[tuple[str, float, int | None]], suggestion: str) -> str:
    """:func:`too_short` for several phases in one sentence: 'write lasted 14.0 ms, read 21.9 ms (1 window
    each): too short to trust — use --size 2G or more'; one phase is :func:`too_short`'s own wording."""
    if len(phases) == 1:
        return too_short(*phases[0], suggestion)
    parts = [f"{p} {'lasted ' if i == 0 else ''}{format_metric('x_s', s)}" for i, (p, s, _) in enumerate(phases)]
    wins = {w for _, _, w in phases}
    n = ""
    if len(wins) == 1 and None not in wins and next(iter(wins)) < MIN_WINDOWS:
        w = next(iter(wins))
        n = f" ({w} window{'s' if w != 1 else ''} each)"
    return f"{', '.join(parts)}{n}: too short to trust — {suggestion}"


def unstable(figures: list[tuple[str, float, str, str]], outlier: int, n: int) -> str:
    """One sentence for a result's unstable figures, each (name, differ %, the outlier's value,
    the median), the first figure's values named: 'unstable: runs differ by 12 % in write, 7 % in
    read — run 3 of 5 is the outlier (290 MB/s against a median of 330 MB/s)'.  With two runs
    neither is the outlier: both are named ('— run 1 and run 2 gave 290 MB/s, 330 MB/s')."""
    parts = ", ".join(f"{differ:.0f} % in {name}" for name, differ, _, _ in figures)
    _, _, value, med = figures[0]
    who = (
        f"run {outlier} of {n} is the outlier ({value} against a median of {med})"
        if n > 2
        else f"run 1 and run 2 gave {value}"
    )
    return f"unstable: runs differ by {parts} — {who}"


def warmup(name: str, dev_pct: float, run: int | None, n_windows: int) -> str:
    """'warm-up transient in write: its first window is 38 % below the median of the other 11 (run 2)'."""
    where = f" (run {run})" if run is not None else ""
    side = "below" if dev_pct < 0 else "above"
    return (
        f"warm-up transient in {name}: its first window is {abs(dev_pct):.0f} % {side} the median of the "
        f"other {n_windows - 1}{where} — a longer ramp or run leaves it out"
    )


def _round_size(n: float) -> str:
    p = 2 ** math.ceil(math.log2(max(n, 1)))
    for scale, suffix in ((2**40, "T"), (2**30, "G"), (2**20, "M"), (2**10, "K")):
        if p >= scale:
            return f"{p // scale}{suffix}"
    return str(int(p))


def _round_count(n: float) -> int:
    mag = 10 ** math.floor(math.log10(max(n, 1)))
    for step in (1, 2, 5, 10):
        if step * mag >= n:
            return int(step * mag)
    return int(10 * mag)  # pragma: no cover


def suggest(scale: tuple[str, Any, str] | None, factor: float) -> str:
    """What would do: ``scale`` = (option, its current value, "size" | "duration" | "count")
    scaled by ``factor`` (with a 25 % margin): 'use --size 2G or more'."""
    if scale is None:
        return "run it longer"
    option, value, how = scale
    if not _numeric(value) or value <= 0:
        return f"use a larger {option}" if how != "duration" else f"use a longer {option}"
    want = value * factor * 1.25
    if how == "size":
        return f"use {option} {_round_size(want)} or more"
    if how == "duration":
        return f"use {option} {math.ceil(want):d}s or more"
    return f"use {option} {_round_count(want)} or more"


def _phases(result) -> list[tuple[str, str, float]]:
    """(phase name, samples prefix, seconds) of each measured phase."""
    out = []
    for k, v in result.metrics.items():
        if not _numeric(v) or v < 0:
            continue
        if k.endswith("elapsed_s") and not k.startswith("walk_"):
            pre = k[: -len("elapsed_s")]
            out.append((pre.rstrip("_").replace("_", " ") or result.kind, pre, float(v)))
        elif k == "measured_s":
            out.append(("the measured window", "", float(v)))
        elif k == "runtime_s":  # a time-based run (randread): its measured runtime
            out.append((result.kind, "", float(v)))
    return out


def _windows(result, prefix: str) -> int | None:
    """How many windows the phase's samples hold (None: the probe keeps none for it)."""
    best = None
    for name, series in (result.samples or {}).items():
        if not (isinstance(series, dict) and isinstance(series.get("t_s"), list)):
            continue
        if prefix and not name.startswith(prefix):
            continue
        if not prefix and name.startswith("warm"):
            continue
        best = len(series["t_s"]) if best is None else max(best, len(series["t_s"]))
    return best


def _unstable(merged, keys: list[str], runs: list[dict]) -> list[dict]:
    """One finding for the figures whose runs differ by more than UNSTABLE_PCT; the outlier is the
    run farthest from the medians over those figures (the sum of its relative deviations)."""
    bad = []
    for k in keys:
        vals = [r.get(k) for r in runs]
        nums = [v for v in vals if _numeric(v)]
        med = merged.metrics.get(k)
        if len(nums) < 2 or not _numeric(med) or not med:
            continue
        differ = (max(nums) - min(nums)) / abs(med) * 100
        if differ > UNSTABLE_PCT:
            bad.append((k, differ, vals, med))
    if not bad:
        return []

    def off(j):
        return sum(abs(v[j] - med) / abs(med) for _, _, v, med in bad if _numeric(v[j]))

    i = max(range(len(runs)), key=off)
    n = len(runs)
    figs = [
        (
            merged.metric_name(k),
            d,
            format_metric(k, v[i]) if n > 2 else f"{format_metric(k, v[0])}, {format_metric(k, v[1])}",
            format_metric(k, med),
        )
        for k, d, v, med in bad
    ]
    return [
        {
            "kind": "unstable",
            "figures": {k: d for k, d, _, _ in bad},
            "differ_pct": max(d for _, d, _, _ in bad),
            "outlier_run": i + 1 if n > 2 else None,
            "text": unstable(figs, i + 1, n),
        }
    ]


def assess(merged, results: list, scale: tuple[str, Any, str] | None = None) -> list[dict]:
    """Add the quality findings of ``merged`` (from ``results``, the runs in order) as warnings;
    return them as data.  ``scale``: the option that lengthens the measured phase (:func:`suggest`)."""
    found: list[dict] = []
    ok = [r for r in results if r.status == "ok"]
    shorts: list[dict] = []
    for phase, prefix, lasted in _phases(merged):
        windows = max((w for w in (_windows(r, prefix) for r in ok) if w is not None), default=None)
        short_time = lasted < MIN_PHASE_S
        short_win = windows is not None and windows < MIN_WINDOWS
        if short_time or short_win:
            factor = max(
                MIN_PHASE_S / lasted if lasted > 0 else 10.0, MIN_WINDOWS / max(windows, 1) if short_win else 1.0
            )
            shorts.append(
                {"kind": "too_short", "phase": phase, "lasted_s": lasted, "windows": windows, "factor": factor}
            )
    if shorts:  # one sentence for every short phase, the advice that makes the shortest long enough
        advice = suggest(scale, max(f["factor"] for f in shorts))
        text = too_short_many([(f["phase"], f["lasted_s"], f["windows"]) for f in shorts], advice)
        for f in shorts:
            f["text"] = text
        found += shorts
    keys = headline_keys(merged)
    runs = merged.runs or []
    if len(runs) >= 2:
        found += _unstable(merged, keys, runs)
    for i, r in enumerate(ok):
        for k in keys:
            w = r.windows(k)
            if len(w) < WARMUP_MIN_WINDOWS:
                continue
            rest = sorted(w[1:])
            mid = rest[len(rest) // 2] if len(rest) % 2 else (rest[len(rest) // 2 - 1] + rest[len(rest) // 2]) / 2
            if not mid:
                continue
            dev = (w[0] - mid) / abs(mid) * 100
            if abs(dev) > WARMUP_PCT:
                text = warmup(merged.metric_name(k), dev, i + 1 if len(ok) > 1 else None, len(w))
                found.append({"kind": "warmup", "figure": k, "run": i + 1, "deviation_pct": dev, "text": text})
    for f in found:
        merged.warn(f["text"])  # once: the short phases share one sentence
    merged.extra["quality"] = found
    return found
