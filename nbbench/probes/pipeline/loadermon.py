"""GPU utilisation over a loader benchmark's window, read from a monitor.

:func:`start_monitor` gives a running monitor for the loader, sweep and live views
(one started here when NVML works, the caller's own, or none and why);
:func:`gpu_util_mean` reads the mean utilisation over the measured window from it
and :func:`stop_monitor` stops one started here.  :func:`nvml_reason` says why there
is no GPU utilisation to read (the "N/A: …" labels).

Works with :class:`nbbench.monitor.Monitor` (fields ``gpuN.util_pct``: NVML's
kernel-active share, not SM occupancy) and with anything offering ``fields()`` and
``mean(field, t0, t1, wait=True)``.
"""

from __future__ import annotations

import re

from ... import monitor as monmod
from ...nvml import get_nvml

__all__ = ["start_monitor", "stop_monitor", "gpu_util_mean", "nvml_reason", "gpu_util_over", "gpu_fields"]

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


def gpu_util_over(monitor, t0: float, t1: float, gpus: list[int] | None = None) -> tuple[float | None, str | None]:
    """(mean utilisation % in monotonic (t0, t1], None) or (None, why): of the NVML GPUs ``gpus``
    (a GPU step's own device), else the mean over every GPU the monitor samples."""
    fields = gpu_fields(monitor)
    if not fields:
        return None, _na_reason(monitor)
    if gpus is not None:
        want = {f"gpu{int(i)}.util_pct" for i in gpus}
        fields = [f for f in fields if f in want]
        if not fields:
            which = ", ".join(str(i) for i in gpus)
            return None, f"the monitor did not sample GPU {which} (NVML), the one the step computes on"
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


def nvml_reason() -> str | None:
    """Why there is no GPU utilisation to read here (None when NVML works)."""
    try:
        ok = get_nvml().init()
    except Exception as exc:  # noqa: BLE001
        return f"NVML unavailable: {exc}"
    if ok is True:
        return None
    hint = getattr(ok, "hint", "")
    return f"{getattr(ok, 'reason', 'NVML unavailable')}" + (f" ({hint})" if hint else "")


def start_monitor(monitor):
    """(monitor, started_here, reason): a running monitor for GPU utilisation, or None and why.

    ``monitor``: "auto"/None (one when NVML works), True (one even without NVML: host
    figures), False/"off" (none), or a running monitor of the caller's (used as is).
    """
    if monitor is False or monitor == "off":
        return None, False, "no monitor (monitor=False)"
    if monitor is None or monitor is True or monitor == "auto":
        reason = nvml_reason()
        if reason is not None and monitor is not True:
            return None, False, reason
        try:
            m = monmod.Monitor(interval=0.2)
            m.start()
            return m, True, reason
        except Exception as exc:  # noqa: BLE001 - a monitor problem must not stop the benchmark
            return None, False, f"the monitor could not start: {exc}"
    return monitor, False, None


def stop_monitor(monitor, started: bool) -> None:
    """Stop ``monitor`` if :func:`start_monitor` started it here."""
    if monitor is not None and started:
        try:
            monitor.stop()
        except Exception:  # noqa: BLE001
            pass


def gpu_util_mean(monitor, t0: float, t1: float, gpus: list[int] | None = None) -> tuple[float | None, str | None]:
    """(mean GPU utilisation % over monotonic [t0, t1], None) from the monitor's samples, or (None, why);
    ``gpus``: only these NVML GPUs (see :func:`gpu_util_over`)."""
    if monitor is None:
        return None, "no monitor"
    try:
        util, why = gpu_util_over(monitor, t0, t1, gpus)
        if util is None and not gpu_fields(monitor):  # no GPU sampled at all: NVML says why
            nv = nvml_reason()
            if nv is not None:
                why = nv
        return util, why
    except Exception as exc:  # noqa: BLE001
        return None, f"could not read GPU utilisation from the monitor: {exc}"
