"""The GPU stack's fit, from the GPU check's own verdicts (no second copy of its logic)."""

from __future__ import annotations

from ..probes import gpu as _gpu
from ..results.advice import entry
from .base import Check, na

__all__ = ["check_gpu", "from_verdicts"]

_STATUS = {"ok": "ok", "warn": "warn", "fail": "fail"}


def from_verdicts(verdicts: list[dict]) -> list[Check]:
    out = []
    for v in verdicts:
        status = _STATUS.get(str(v.get("status")), "warn")
        name = f"gpu: {v.get('check', '?')}"
        fix = "" if status == "ok" else "see the GPU check for the details"
        advice = [entry("run {command}", "gpu")] if fix else []  # worded by the front end that shows it
        out.append(
            Check(
                name, status, f"{v.get('message', '')} (nbbench.probes.gpu.check)", fix, "gpu", dict(v), advice=advice
            )
        )
    return out


def check_gpu(check=None) -> list[Check]:
    """``check``: the GPU check function (default ``nbbench.probes.gpu.check``), called with benchmark=False."""
    check = check or _gpu.check
    try:
        res = check(benchmark=False)
    except Exception as exc:  # noqa: BLE001 - one broken check must not stop the doctor
        return [na("gpu", f"the GPU check failed to run: {type(exc).__name__}: {exc}", "gpu")]
    verdicts = list(getattr(res, "verdicts", None) or [])
    if not verdicts:
        return [na("gpu", "the GPU check gave no verdicts", "gpu")]
    return from_verdicts(verdicts)
