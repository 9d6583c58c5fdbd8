"""Shared by the benches: the load average, a two-level (bimodal) check, and a busy loop calibrated to a
duration (what the overhead benches measure a sampler beside)."""

from __future__ import annotations

import statistics
import time


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


def work(n: int) -> int:
    """A pure-Python busy loop of ``n`` steps."""
    x = 0
    for i in range(n):
        x += i * i % 7
    return x


def calibrate(seconds: float) -> int:
    """The steps of :func:`work` that take about ``seconds`` here, now."""
    n = 100_000
    while True:
        t = time.perf_counter()
        work(n)
        dt = time.perf_counter() - t
        if dt > 0.1:
            return max(1, int(n * seconds / dt))
        n *= 2
