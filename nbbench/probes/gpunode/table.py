"""Every rank's collective timings combined into nccl-tests' table, pure (no torch): :func:`combine`.

As nccl-tests does by default (its ``-a 1``), a call's time is the mean over the ranks; a row's
``time_us`` is the mean over the timed calls, ``algbw`` the size over it, ``busbw`` algbw × the
operation's factor (:mod:`.busbw`).  The spread: the busbw of each timed call (its time averaged
over the ranks) — lowest, median, highest — and the calls' coefficient of variation.  ``wrong``:
the wrong elements summed over the ranks (None unchecked), ``wrong_ranks`` the ranks that had any.

:func:`plateau`: the median busbw of the three largest sizes; :func:`metrics`: the figures the
store keeps and compare compares (busbw per operation and size, the plateaus, the wrong count).
"""

from __future__ import annotations

import statistics

from .busbw import OPS, bus_factor

__all__ = ["combine", "plateau", "metrics", "size_tag", "primary_rows", "PLATEAU_SIZES"]

#: the plateau is the median busbw of this many largest sizes
PLATEAU_SIZES = 3


def combine(per_rank: list[list[dict]], world: int) -> list[dict]:
    """One row per (op, placement, size) from every rank's rows (rank 0's order)."""
    if not per_rank:
        return []
    keyed = [{(r["op"], r["placement"], r["asked_bytes"]): r for r in rows} for rows in per_rank]
    out = []
    for base in per_rank[0]:
        key = (base["op"], base["placement"], base["asked_bytes"])
        mine = [k.get(key) for k in keyed]
        row = {k: base.get(k) for k in ("op", "placement", "size_bytes", "asked_bytes", "count", "dtype", "redop")}
        errs = [m.get("error") for m in mine if m is not None and m.get("error")]
        if errs or any(m is None for m in mine):
            row["error"] = errs[0] if errs else "a rank has no row for it"
            out.append(row)
            continue
        n_it = min(len(m["times_us"]) for m in mine)
        per_call = [statistics.fmean(m["times_us"][i] for m in mine) for i in range(n_it)]
        if not per_call:
            row["error"] = "no timed call"
            out.append(row)
            continue
        t = statistics.fmean(per_call)
        size = row["size_bytes"]
        f = bus_factor(row["op"], world)
        row["time_us"] = t
        row["algbw_bytes_per_s"] = size / (t * 1e-6) if t > 0 else None
        row["busbw_bytes_per_s"] = row["algbw_bytes_per_s"] * f if row["algbw_bytes_per_s"] else None
        calls = sorted(size / (c * 1e-6) * f for c in per_call if c > 0)
        if calls:
            row["busbw_min_bytes_per_s"] = calls[0]
            row["busbw_median_bytes_per_s"] = statistics.median(calls)
            row["busbw_max_bytes_per_s"] = calls[-1]
        row["time_cv_pct"] = 100 * statistics.pstdev(per_call) / t if len(per_call) > 1 and t > 0 else None
        row["iters"] = n_it
        checked = [m.get("wrong") for m in mine]
        if all(w is not None for w in checked):
            row["wrong"] = sum(checked)
            row["wrong_ranks"] = [i for i, w in enumerate(checked) if w]
        else:
            row["wrong"] = None
        out.append(row)
    return out


def primary_rows(rows: list[dict], op: str) -> list[dict]:
    """``op``'s rows of its first placement that ran (out-of-place where torch has it), by size."""
    for placement in ("out-of-place", "in-place"):
        got = [r for r in rows if r["op"] == op and r["placement"] == placement and r.get("busbw_bytes_per_s")]
        if got:
            return sorted(got, key=lambda r: r["size_bytes"])
    return []


def plateau(rows: list[dict], op: str) -> dict | None:
    """``{"busbw", "algbw", "from_bytes", "to_bytes", "placement"}``: the median of the largest sizes."""
    got = primary_rows(rows, op)[-PLATEAU_SIZES:]
    if not got:
        return None
    return {
        "busbw": statistics.median(r["busbw_bytes_per_s"] for r in got),
        "algbw": statistics.median(r["algbw_bytes_per_s"] for r in got),
        "from_bytes": got[0]["size_bytes"],
        "to_bytes": got[-1]["size_bytes"],
        "placement": got[0]["placement"],
    }


def size_tag(n: int) -> str:
    """8 -> '8B', 65536 -> '64KiB', 3 MiB -> '3MiB' (a whole binary unit, else bytes)."""
    for unit, f in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= f and n % f == 0:
            return f"{n // f}{unit}"
    return f"{n}B"


def metrics(rows: list[dict]) -> dict[str, float]:
    """The figures kept and compared: ``{op}_busbw_bytes_per_s`` (the plateau), ``{op}_algbw_bytes_per_s``,
    ``{op}_avg_busbw_bytes_per_s`` (nccl-tests' "Avg bus bandwidth": over every size and placement),
    ``{op}_busbw_at_{size}_bytes_per_s`` (each size, its first placement), ``wrong_count``."""
    out: dict[str, float] = {}
    for op in OPS:
        p = plateau(rows, op)
        if p is None:
            continue
        out[f"{op}_busbw_bytes_per_s"] = p["busbw"]
        out[f"{op}_algbw_bytes_per_s"] = p["algbw"]
        every = [r["busbw_bytes_per_s"] for r in rows if r["op"] == op and r.get("busbw_bytes_per_s")]
        out[f"{op}_avg_busbw_bytes_per_s"] = statistics.fmean(every)
        for r in primary_rows(rows, op):
            out[f"{op}_busbw_at_{size_tag(r['size_bytes'])}_bytes_per_s"] = r["busbw_bytes_per_s"]
    wrong = [r.get("wrong") for r in rows if "time_us" in r]
    if wrong and all(w is not None for w in wrong):
        out["wrong_count"] = sum(wrong)
    return out
