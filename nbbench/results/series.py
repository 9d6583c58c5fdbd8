"""Statistics of a sampled time series, written once for the live monitor and its result.

A record at time ``t`` describes the interval that ends at ``t`` (rates, NVML
utilisation), so a window ``(t0, t1]`` takes the samples with ``t0 < t <= t1``
(:func:`window`).  :class:`FieldStats` keeps running statistics of one field: the
:class:`~nbbench.monitor.Monitor` updates one per field with every sample (so its
summaries cover the whole run after its ring buffer wraps), and describes a window
with it; a stored run keeps them in ``extra["field_stats"]``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

__all__ = ["IDLE_THRESHOLD_PCT", "FieldStats", "window"]

#: a GPU sample whose kernel-active % is below this counts as idle
IDLE_THRESHOLD_PCT = 5.0


def window(points: Iterable[tuple[float, Any]], t0: float | None = None, t1: float | None = None) -> tuple[list, list]:
    """``(times, values)`` of the ``(t, value)`` pairs with ``t0 < t <= t1`` (None: open
    end), None values left out."""
    lo = -math.inf if t0 is None else t0
    hi = math.inf if t1 is None else t1
    ts, vs = [], []
    for t, v in points:
        if v is not None and lo < t <= hi:
            ts.append(t)
            vs.append(v)
    return ts, vs


class FieldStats:
    """Running statistics of one field (None values are the caller's to skip)."""

    __slots__ = ("n", "total", "min", "max", "n_below", "first_t", "last_t", "last")

    def __init__(self):
        self.n = 0
        self.total = 0.0
        self.min = math.inf
        self.max = -math.inf
        self.n_below = 0  # samples below IDLE_THRESHOLD_PCT
        self.first_t = None
        self.last_t = None
        self.last = None

    @classmethod
    def of(cls, times: Iterable[float], values: Iterable[float]) -> FieldStats:
        """The statistics of a finished series (e.g. a :func:`window`'s)."""
        st = cls()
        for t, v in zip(times, values):
            st.add(t, v)
        return st

    def add(self, t: float, v: float) -> None:
        self.n += 1
        self.total += v
        if v < self.min:
            self.min = v
        if v > self.max:
            self.max = v
        if v < IDLE_THRESHOLD_PCT:
            self.n_below += 1
        if self.first_t is None:
            self.first_t = t
        self.last_t = t
        self.last = v

    @property
    def mean(self) -> float | None:
        return self.total / self.n if self.n else None

    def describe(self) -> dict:
        """``{"n", "mean", "min", "max"}`` (None without samples)."""
        if not self.n:
            return {"n": 0, "mean": None, "min": None, "max": None}
        return {"n": self.n, "mean": self.mean, "min": self.min, "max": self.max}

    def to_dict(self) -> dict:
        """What a stored result keeps: :meth:`describe` and the share of samples below the
        idle threshold (``{"n": 0}`` without samples)."""
        if not self.n:
            return {"n": 0}
        return {
            "n": self.n,
            "mean": self.mean,
            "min": self.min,
            "max": self.max,
            "below_idle_share": self.n_below / self.n,
        }
