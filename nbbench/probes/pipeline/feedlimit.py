"""What limits a feed, and how the answer says it: pure functions of the measured rates.

:func:`feed_limiter` decides from three figures — the cold rate (files fetched from
storage and prepared), the warm rate (files already in memory: preparation only) and
the rate the accelerators asked for need at AU >= 90 % — in this order:

1. the warm rate falls short of the need: even cached data does not feed them, so
   **CPU preparation** limits it (faster storage cannot help until preparation keeps up);
2. the warm rate meets the need but the cold one does not: **storage fetch** limits it;
3. both meet it: **storage fetch** when the cold runs are clearly slower (below
   ``1 - STORAGE_LIMIT_SHARE`` of the warm ones) *and* the warm rate feeds more
   accelerators than the cold one; else **CPU preparation** sets the ceiling.

:func:`limiter_sentence` words the verdict with the figures, and its advice follows
the limiter (never "faster storage helps" when warm data does not meet the need);
:func:`feed_answer` is the whole answer.  :func:`feed_limits` applies the verdict to a feed's
result from its cold/warm pairs (with the warnings of a close call); :func:`per_accelerator` says
how many of each accelerator of the workload the rates feed.  Nothing here measures or imports torch.
"""

from __future__ import annotations

import math
import statistics

from ...accelerators import ACCELERATORS
from ...results.pipeline.feed import CPU_HELP as _CPU_HELP
from ...results.pipeline.feed import STORAGE_HELP as _STORAGE_HELP
from ...units import format_metric

__all__ = ["feed_limiter", "limiter_sentence", "feed_answer", "feed_limits", "per_accelerator", "STORAGE_LIMIT_SHARE"]

#: cold slower than warm by more than this share counts as "clearly slower"
STORAGE_LIMIT_SHARE = 0.10


def _fed(rate, need) -> int:
    if rate is None or not math.isfinite(rate) or rate <= 0:
        return 0
    return int(math.floor(rate / need + 1e-9))  # as Accelerator.how_many: 2.0000001 counts as 2


def feed_limiter(
    cold: float | None,
    warm: float | None,
    need: float,
    count: int = 1,
    ratio: float | None = None,
    share: float = STORAGE_LIMIT_SHARE,
) -> dict | None:
    """Which limits the pipeline, storage fetch or CPU preparation (None: no cold or warm rate).

    cold / warm: samples/s from a cold and a warm page cache.  need: samples/s one
    accelerator needs at the AU target; count: how many were asked for (1).  ratio:
    cold/warm (default ``cold / warm``; feed passes the median of interleaved pairs).

    Returns ``limiter`` ("storage fetch" / "CPU preparation"), ``case`` ("warm short",
    "cold short", "storage ceiling", "CPU ceiling"), ``ratio``, ``storage_slower``
    (ratio below ``1 - share``), ``fed_cold``, ``fed_warm``, ``needed`` (count × need)
    and ``count``.
    """
    if cold is None or not warm or not need or need <= 0:
        return None
    ratio = cold / warm if ratio is None else ratio
    count = max(1, int(count))
    want = count * need
    fed_cold, fed_warm = _fed(cold, need), _fed(warm, need)
    slower = ratio < 1 - share
    if fed_warm < count:
        case, limiter = "warm short", "CPU preparation"
    elif fed_cold < count:
        case, limiter = "cold short", "storage fetch"
    elif slower and fed_warm > fed_cold:
        case, limiter = "storage ceiling", "storage fetch"
    else:
        case, limiter = "CPU ceiling", "CPU preparation"
    return {
        "limiter": limiter,
        "case": case,
        "ratio": ratio,
        "storage_slower": slower,
        "fed_cold": fed_cold,
        "fed_warm": fed_warm,
        "needed": want,
        "count": count,
    }


def _who(acc_name: str, count: int) -> str:
    return f"one {acc_name} needs" if count == 1 else f"{count} {acc_name}s need"


def limiter_sentence(info: dict, cold: float, warm: float, acc_name: str) -> str:
    """The verdict of :func:`feed_limiter` in words, with the figures and the advice that follows it."""
    sps = lambda v: format_metric("samples_per_s", v)  # noqa: E731
    pct = f"{100 * info['ratio']:.0f} %"
    need = f"the {sps(info['needed'])} {_who(acc_name, info['count'])}"
    case = info["case"]
    if case == "warm short":
        s = (
            f"CPU preparation limits it: even from memory (warm cache) it prepares only {sps(warm)}, short of "
            f"{need}, and from storage (cold cache) {sps(cold)}"
        )
        if info["storage_slower"]:
            s += f" ({pct} of warm: storage slows it too, but faster storage alone would not reach the need)"
        return s + f" — {_CPU_HELP} help; faster storage or caching does not, until preparation keeps up."
    if case == "cold short":
        return (
            f"Storage fetch limits it: from storage (cold cache) it delivers {sps(cold)}, short of {need}, "
            f"while from memory (warm cache) it reaches {sps(warm)}, enough for {info['fed_warm']} — "
            f"{_STORAGE_HELP} helps more than CPUs."
        )
    if case == "storage ceiling":
        return (
            f"Storage fetch limits how many it feeds: from storage (cold cache) {sps(cold)} feeds "
            f"{info['fed_cold']}, from memory (warm cache) {sps(warm)} would feed {info['fed_warm']} (the cold "
            f"runs reached {pct} of the warm ones) — {_STORAGE_HELP} helps more than CPUs."
        )
    if info["storage_slower"]:
        return (
            f"CPU preparation sets the ceiling: reading from storage costs some speed (the cold runs reached "
            f"{pct} of the warm ones, {sps(cold)} against {sps(warm)}) but not one more accelerator — "
            f"{_CPU_HELP} help feed more."
        )
    return (
        f"CPU preparation limits it: reading from storage did not slow it down (the cold runs reached {pct} "
        f"of the warm ones, {sps(cold)} against {sps(warm)}) — {_CPU_HELP} help; faster storage does not."
    )


def feed_answer(
    acc,
    rate: float | None,
    cold: float | None,
    warm: float | None,
    info: dict | None,
    nw: int,
    decode: str,
    method: str,
    au: float,
    unit: str = "shard",
) -> str:
    """The whole answer: what was delivered, how many ``acc`` it feeds, then what limits it (``unit``: what one
    GET reads from object storage)."""
    if not rate:
        return "No rate was measured: nothing to answer."
    n = acc.how_many(rate, au)
    need = acc.needed_samples_per_s(au)
    what = "read and decoded" if decode == "pil" else "read (no decoding)"
    if method == "object storage":  # cold: every GET from the store; warm: a local copy
        src = "from object storage" if cold else "from a local copy (warm)"
    else:
        src = "from storage (cold cache)" if cold else "from the page cache (warm)"
    s = (
        f"This storage and CPU ({nw} worker{'' if nw == 1 else 's'}) deliver "
        f"{format_metric('samples_per_s', rate)} {what} {src}; "
        f"one {acc.name} needs {format_metric('samples_per_s', need)} for AU >= {au:g} %, so they can feed "
        f"{n} such accelerator{'s' if n != 1 else ''}"
    )
    if n == 0:
        s += f" (one would run at AU {min(100.0, 100 * rate / acc.samples_per_s):.0f} %)"
    s += "."
    if info is not None:
        s += " " + limiter_sentence(info, cold, warm, acc.name)
    if method == "fadvise" and cold:
        s += " (Cold cache by per-file fadvise.)"
    elif method == "object storage" and cold and warm:
        s += f" (Cold: every {unit} a GET from the store; warm: a local copy of the {unit}s, as a local cache serves.)"
    return s


def feed_limits(res, runs, method: str, nw: int, need: float, count: int) -> dict:
    """Storage fetch or CPU preparation (:func:`feed_limiter`), from the
    cold/warm pairs (both rates measured) against the need of ``count`` accelerators."""
    cold_rate, warm_rate = res.metrics["cold_samples_per_s"], res.metrics["warm_samples_per_s"]
    # per interleaved pair, so drift on a shared machine cancels; the median of the pairs decides
    cold_rs = [r.metrics.get("samples_per_s") for k, r in runs if k == "cold"]
    warm_rs = [r.metrics.get("samples_per_s") for k, r in runs if k == "warm"]
    ratios = [c / w for c, w in zip(cold_rs, warm_rs) if c and w]
    ratio = statistics.median(ratios) if ratios else cold_rate / warm_rate
    res.metrics["cold_vs_warm_pct"] = 100.0 * ratio
    res.samples["pair_ratios"] = ratios
    if len(ratios) > 1 and min(ratios) > 0 and max(ratios) / min(ratios) > 1.5:
        res.warn(
            f"the cold/warm pairs disagree (cold at {100 * min(ratios):.0f}–{100 * max(ratios):.0f} % of "
            "warm): the machine is busy or the runs too short; rerun with a larger folder or --duration"
        )
    info = feed_limiter(cold_rate, warm_rate, need, count, ratio=ratio)
    res.labels["limiter"] = info["limiter"]
    res.labels["limiter_basis"] = info["case"]
    line = 1 - STORAGE_LIMIT_SHARE
    if (
        info["case"] in ("storage ceiling", "CPU ceiling")
        and info["fed_warm"] > info["fed_cold"]
        and abs(ratio - line) < 0.05
    ):
        res.warn(
            f"a close call: the cold runs reached {100 * ratio:.0f} % of the warm ones, near the "
            f"{100 * line:.0f} % line between the verdicts; a longer run (--duration, a larger folder) "
            "settles it"
        )
    if info["case"] == "cold short" and not info["storage_slower"]:
        res.warn(
            f"a close call: the cold runs reached {100 * ratio:.0f} % of the warm ones, on either side of "
            "the need; a longer run (--duration, a larger folder) settles it"
        )
    if method == "fadvise" and cold_rate >= 0.97 * warm_rate:
        res.warn(
            "the cold run was as fast as the warm one: either the CPU limits (likely with "
            f"{nw} workers) or the storage serves from a cache fadvise cannot drop (a network file "
            "system's client cache, a RAID controller); cold='drop_caches' as root is stricter"
        )
    return info


def per_accelerator(acc, rate, warm_rate, au_target_pct) -> dict:
    """Every emulated accelerator of ``acc``'s workload: its need and how many the rates feed."""
    per_acc = {"accelerator": [], "needed_samples_per_s": [], "fed_count": [], "fed_warm_count": []}
    for a in ACCELERATORS.values():
        if a.workload != acc.workload:
            continue
        per_acc["accelerator"].append(a.name)
        per_acc["needed_samples_per_s"].append(a.needed_samples_per_s(au_target_pct))
        per_acc["fed_count"].append(a.how_many(rate, au_target_pct) if rate else None)
        per_acc["fed_warm_count"].append(a.how_many(warm_rate, au_target_pct) if warm_rate else None)
    return per_acc
