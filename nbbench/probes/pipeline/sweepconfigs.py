"""The sweep's configurations: the grid it tries (:func:`grid`, :func:`default_workers`), how a
configuration is named (:func:`config_text`) and ordered, and the one it recommends (:func:`recommend`:
the smallest within a few per cent of the best throughput, or the first that keeps the accelerator fed).
"""

from __future__ import annotations

import itertools

from ...env import usable_cpus
from ...results import ProbeError
from ...results.pipeline.sweep import SweepResult
from ...units import format_metric

__all__ = ["as_list", "default_workers", "grid", "config_text", "recommend"]


def as_list(v, name) -> list:
    if v is None:
        return []
    if isinstance(v, (list, tuple, set)):
        out = list(v)
    else:
        out = [v]
    if not out:
        raise ProbeError(f"{name} needs at least one value")
    return out


def default_workers(usable: int | None = None) -> list[int]:
    """0, 1, 2, 4, 8 … up to the usable CPUs (and the usable count itself)."""
    if usable is None:
        usable = usable_cpus()["usable_int"]
    out = [0, 1]
    w = 2
    while w <= usable:
        out.append(w)
        w *= 2
    if usable not in out:
        out.append(usable)
    return sorted(set(out))


def grid(workers, batches, pins, prefetches) -> list[dict]:
    """Every distinct configuration, smallest first (the prefetch factor only counts with workers)."""
    configs: list[dict] = []
    seen = set()
    for bs, pin, pf, nw in itertools.product(batches, pins, prefetches, workers):
        pfv = pf if nw > 0 else None
        key = (nw, bs, bool(pin), pfv)
        if key in seen:
            continue
        seen.add(key)
        configs.append({"num_workers": nw, "batch_size": bs, "pin_memory": bool(pin), "prefetch_factor": pfv})
    configs.sort(key=order_key)
    return configs


def order_key(c: dict):
    return (c["num_workers"], c["batch_size"], c["prefetch_factor"] or 0, bool(c["pin_memory"]))


def config_text(c: dict) -> str:
    s = f"num_workers={c['num_workers']}, batch_size={c['batch_size']}, pin_memory={c['pin_memory']}"
    if c["num_workers"] > 0:
        s += f", prefetch_factor={c['prefetch_factor']}"
    return s


def recommend(res: SweepResult, within_pct: float, au_target_pct: float) -> None:
    """The configuration to use among ``res``'s rows, with the sentence saying why, into ``res``'s metrics
    and extra (``recommended``, ``recommendation``, ``why``)."""
    ok = [c for c in res.configs if c.get("status") == "ok" and c.get("samples_per_s")]
    if not ok:
        res.extra["recommendation"] = "No configuration was measured: nothing to recommend (see the reasons)."
        return
    ok.sort(key=order_key)
    best = max(ok, key=lambda c: c["samples_per_s"])
    res.metrics["best_samples_per_s"] = best["samples_per_s"]
    acc = res.labels.get("accelerator")
    has_au = any(c.get("au_pct") is not None for c in ok)
    chosen, why = None, ""
    if has_au:
        fed = [c for c in ok if c.get("au_pct") is not None and c["au_pct"] >= au_target_pct]
        if fed:
            chosen = fed[0]
            who = acc or "the step"
            why = f"the first configuration that keeps {who} at AU >= {au_target_pct:g} %"
        else:
            top = max(ok, key=lambda c: c.get("au_pct") or 0)
            chosen = top
            need = res.metrics.get("needed_samples_per_s")
            why = f"no configuration reaches AU {au_target_pct:g} %; this one comes closest"
            why += f" (one {acc} needs {format_metric('samples_per_s', need)})" if need else ""
            why += ": the input pipeline is the bottleneck — more CPUs, cheaper decoding or faster storage"
    if chosen is None:
        floor = best["samples_per_s"] * (1 - within_pct / 100.0)
        chosen = next(c for c in ok if c["samples_per_s"] >= floor)
        if chosen is best:
            why = f"the best throughput of the {len(ok)} that ran"
        else:
            why = (
                f"the smallest configuration within {within_pct:g} % of the best "
                f"({format_metric('samples_per_s', best['samples_per_s'])} with {config_text(best)})"
            )
    res.extra["recommended"] = dict(chosen)
    res.metrics["recommended_samples_per_s"] = chosen["samples_per_s"]
    res.metrics["recommended_num_workers"] = chosen["num_workers"]
    res.metrics["recommended_batch_size"] = chosen["batch_size"]
    sentence = f"Use {config_text(chosen)}: {why}."
    more = ""
    usable = res.extra.get("preflight", {}).get("usable_cpus", {}).get("usable")
    if usable is not None and chosen["num_workers"] > usable:
        more += f" It runs more workers than the {usable:g} usable CPUs: worth it only when loading waits on I/O."
    if (
        chosen["num_workers"] == max(c["num_workers"] for c in res.configs)
        and len({c["num_workers"] for c in res.configs}) > 1
        and chosen["num_workers"] > 0
        and not has_au
    ):
        more += " It is the largest num_workers tried: more workers may go further."
    res.extra["recommendation"] = sentence + more
    res.extra["why"] = f"why: {why}.{more}"
