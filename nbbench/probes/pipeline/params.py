"""The pipeline commands' parameter object read the one way, by a command here and by every rank.

``loader``, ``sweep`` and ``feed`` hand their probes (and their ranks) the values of every option
they declare, under the options' own names (:meth:`nbbench.commands.Command.params`).  Where a
probe's keyword differs from the option (``--workers`` is ``num_workers``) or is made of two options
(``--emulate`` / ``--step`` are one compute ``step``), the translation is written here once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["step_of", "sweep_kwargs", "feed_kwargs", "loader_kwargs"]


def step_of(p: Mapping[str, Any]) -> object:
    """The compute step: ``emulate:ACCEL`` for ``--emulate``, else ``--step`` (None for "none")."""
    if p.get("emulate"):
        return f"emulate:{p['emulate']}"
    step = p.get("step", "none")
    return None if step in (None, "none") else step


def _present(p: Mapping[str, Any], names: dict[str, str]) -> dict[str, Any]:
    return {kw: p[opt] for opt, kw in names.items() if opt in p}


def sweep_kwargs(p: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`nbbench.probes.pipeline.sweep.sweep`'s keywords (less the dataset) from sweep's options."""
    out = _present(
        p,
        {
            "workers": "num_workers",
            "batch_size": "batch_size",
            "pin_memory": "pin_memory",
            "prefetch": "prefetch_factor",
            "persistent": "persistent_workers",
            "duration": "duration",
            "warmup": "warmup",
        },
    )
    out["step"] = step_of(p)
    return out


def feed_kwargs(p: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`nbbench.probes.pipeline.feed.feed`'s keywords (less the path and the workers) from feed's options."""
    names = ("accelerator", "batch_size", "duration", "warmup", "cold", "size", "max_files", "decode", "count")
    out = _present(p, {k: k for k in names})
    out.update({k: p[k] for k in ("endpoint_url", "region") if p.get(k)})
    return out


def loader_kwargs(p: Mapping[str, Any]) -> dict[str, Any]:
    """What a rank's :func:`~nbbench.probes.pipeline.loader.bench_loader` run takes from loader's options: the
    step, the accelerator (``--accelerator``, else the emulated one) and the epochs (0 or none: no limit)."""
    step = step_of(p)
    acc = p.get("accelerator") or (
        step[len("emulate:") :] if isinstance(step, str) and step.startswith("emulate:") else None
    )
    return {"step": step, "accelerator": acc, "epochs": p.get("epochs") or None}
