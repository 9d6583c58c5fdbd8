"""GPU utilisation over a loader benchmark's window, read from a running monitor.

Works with :class:`nbbench.monitor.Monitor` (fields ``gpuN.util_pct``: NVML's
kernel-active share, not SM occupancy) and with anything offering ``fields()`` and
``mean(field, t0, t1, wait=True)``.
"""

from __future__ import annotations

import re

__all__ = ["gpu_util_over", "gpu_fields"]

_GPU_UTIL = re.compile(r"^gpu(\d+)\.util_pct$")


def gpu_fields(monitor) -> list[str]:
    try:
        names = list(monitor.fields())
    except Exception:  # noqa: BLE001
        return []
    return sorted((f for f in names if _GPU_UTIL.match(f)), key=lambda f: int(_GPU_UTIL.match(f).group(1)))


def _na_reason(monitor) -> str:
    na = getattr(monitor, "na", None)
    if isinstance(na, dict):
        for k, v in na.items():
            if k.startswith("gpu"):
                return str(getattr(v, "reason", v))
    notes = getattr(monitor, "notes", None) or []
    for n in notes:
        if "gpu" in n.lower() or "nvml" in n.lower():
            return n
    return "the monitor recorded no GPU utilisation (no GPU, or NVML does not report it)"


def gpu_util_over(monitor, t0: float, t1: float) -> tuple[float | None, str | None]:
    """(mean utilisation % over all GPUs in monotonic (t0, t1], None) or (None, why)."""
    fields = gpu_fields(monitor)
    if not fields:
        return None, _na_reason(monitor)
    means = []
    for f in fields:
        try:
            m = monitor.mean(f, t0, t1, wait=True)
        except TypeError:
            m = monitor.mean(f, t0, t1)
        if m is not None:
            means.append(float(m))
    if not means:
        return None, "the monitor took no GPU sample inside the measured window (it is shorter than one interval?)"
    return sum(means) / len(means), None
