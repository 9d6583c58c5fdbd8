"""Shared by the comparison benches: the load average and a two-level (bimodal) check."""

from __future__ import annotations

import statistics


def loadavg() -> str:
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


def bimodal(values: list[float]) -> tuple[int, float, int, float] | None:
    """(runs, median) of the low and the high group when the values fall in two (a gap of
    more than 1.4x with at least two runs on each side), else None."""
    v = sorted(values)
    if len(v) < 4:
        return None
    gaps = [(v[i + 1] / v[i], i) for i in range(1, len(v) - 2) if v[i] > 0]
    if not gaps:
        return None
    g, i = max(gaps)
    if g < 1.4:
        return None
    lo, hi = v[: i + 1], v[i + 1 :]
    return len(lo), statistics.median(lo), len(hi), statistics.median(hi)
