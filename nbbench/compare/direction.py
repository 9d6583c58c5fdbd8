"""Which way of a metric is better: the rule behind a comparison's arrows and colours.

Only what a probe achieved has a direction — a rate (higher) or a latency or the time an
operation took (lower); settings, requirements and observations of a workload are neutral.
"""

from __future__ import annotations

import fnmatch

from ..units import unit_of

__all__ = ["better", "delta_colour", "DIRECTION_BY_UNIT", "NEUTRAL_KINDS", "NEUTRAL_KEYS", "SETTING_TIMES"]

# times that are settings (a time-based run's length), not outcomes
SETTING_TIMES = ("runtime_s", "duration_s", "ramp_s", "window_s", "interval_s")

# Which way is better (arrows, delta and bar colours): only what a probe achieved has a direction,
# a rate (higher) or a latency or the time an operation took (lower); all else is neutral.
DIRECTION_BY_UNIT = {
    **dict.fromkeys(
        ("bytes/s", "iops", "flop/s", "samples/s", "files/s", "batches/s", "requests/s", "keys/s", "1/s"), "higher"
    ),
    **dict.fromkeys(("ns", "us", "ms", "s"), "lower"),
}
NEUTRAL_KINDS = ("monitor", "env", "doctor")  # observations of a workload: neither better nor worse
# keys with a rate or time unit that are settings, requirements (what an accelerator needs) or observations
NEUTRAL_KEYS = tuple("*" + t for t in SETTING_TIMES) + (
    "wall_s",
    "needed_samples_per_s",
    "accelerator_samples_per_s",
    "disk_*",
    "gpu*_pcie_*",
    "sampler_cpu_pct",
)


def better(key: str, kind: str | None = None) -> str | None:
    """'higher' / 'lower' when one direction of this metric (of a result of ``kind``) is better,
    else None: :data:`DIRECTION_BY_UNIT`, except :data:`NEUTRAL_KINDS` and :data:`NEUTRAL_KEYS`."""
    if kind in NEUTRAL_KINDS or any(fnmatch.fnmatchcase(key, p) for p in NEUTRAL_KEYS):
        return None
    unit = unit_of(key)
    return DIRECTION_BY_UNIT.get(unit, "lower" if "lat" in key and not unit else None)


def delta_colour(metric: str, d: float | None, neutral: str, kind: str | None = None) -> str:
    """Green for a delta of 1 % or more the better way for ``metric``, red the worse way, else ``neutral``."""
    way = better(metric, kind)
    if d is not None and way and abs(d) >= 1:
        return "#2e7d32" if (d > 0) == (way == "higher") else "#c62828"
    return neutral
