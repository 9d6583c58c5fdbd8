"""The arithmetic of a many-rank run, over plain per-rank records (no torch, no I/O).

Every rank's progress in a phase (dd's write, a read, the loader's steps) is a **track**
on the common clock (seconds since the start barrier)::

    {"start": 0.012, "t": [0.5, 1.0, 1.23], "cum": {"read_bytes_per_s": [4.1e8, 8.3e8, 1.0e9]}}

``t`` are times from the track's start, ``cum`` the amount moved by then for each
rate it integrates to (bytes for ``*_bytes_per_s``, I/Os for ``iops``, files, samples);
between points the amount grows linearly.  From the tracks of all ranks:

* **first done** (elbencho's term, the figure a synchronised job sees): the amount all
  ranks moved in the window in which every rank was running — from the latest start to
  the earliest end, the moment the first rank finished — over that window;
* **last done**: everything all ranks moved, over the span from the first start to the
  last end (``<metric>_last_done``);
* per rank, its own rate (its amount over its own run); the slowest and fastest rank and
  their spread, ``rank_spread_pct`` = 100 × (fastest − slowest) / fastest;
* the same amounts in fixed buckets of the common clock (the aggregate series);
* a per-host table: ranks, their summed rates, CPU % and disk busy % from each host's
  local rank 0.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Phase",
    "Combined",
    "track",
    "track_from_windows",
    "amount_at",
    "phase_figures",
    "buckets",
    "combine",
    "spread_pct",
    "BUCKET_S",
]

#: the width of the common clock's buckets (the probes' own series use 500 ms windows)
BUCKET_S = 0.5


@dataclass(frozen=True)
class Phase:
    """One phase of a probe as the aggregate sees it."""

    name: str  # "write", "read", "steps"
    keys: tuple[str, ...]  # the rates its tracks integrate to, the first the primary one
    series: str = ""  # the aggregate result's sample name for its bucket series ("" = none)

    @property
    def primary(self) -> str:
        return self.keys[0]


# ---------------------------------------------------------------- tracks
def track(start: float, t: list[float], cum: dict[str, list[float]]) -> dict:
    return {
        "start": float(start),
        "t": [float(x) for x in t],
        "cum": {k: [float(x) for x in v] for k, v in cum.items()},
    }


def track_from_windows(
    start: float,
    t_s: list[float],
    rates: dict[str, list[float]],
    end: float | None = None,
    totals: dict[str, float] | None = None,
) -> dict:
    """A track from a probe's series: ``t_s`` the end of each window (from the phase's start),
    ``rates[key]`` the rate over each window (a window lasts from the previous end).  ``end``
    and ``totals`` (the probe's elapsed time and amounts) close the track exactly where the
    series left a short tail out."""
    t: list[float] = []
    cum = {k: [] for k in rates}
    prev = 0.0
    acc = {k: 0.0 for k in rates}
    for i, te in enumerate(t_s):
        dt = float(te) - prev
        if dt <= 0:
            continue
        for k, vals in rates.items():
            v = vals[i] if i < len(vals) and vals[i] is not None else 0.0
            acc[k] += float(v) * dt
            cum[k].append(acc[k])
        t.append(float(te))
        prev = float(te)
    if end is not None and totals:
        if t and end <= t[-1] + 1e-9:
            for k in cum:
                if k in totals and totals[k] is not None:
                    cum[k][-1] = float(totals[k])
        elif end > 0:
            t.append(float(end))
            for k in cum:
                cum[k].append(float(totals[k]) if totals.get(k) is not None else acc[k])
    return track(start, t, cum)


def _end(tr: dict) -> float:
    return tr["start"] + (tr["t"][-1] if tr["t"] else 0.0)


def _total(tr: dict, key: str) -> float:
    vals = tr["cum"].get(key) or []
    return vals[-1] if vals else 0.0


def amount_at(tr: dict, key: str, when: float) -> float:
    """How much of ``key`` the track had moved by common time ``when`` (linear between points)."""
    ts, cs = tr["t"], tr["cum"].get(key) or []
    if not ts or not cs:
        return 0.0
    x = when - tr["start"]
    if x <= 0:
        return 0.0
    if x >= ts[-1]:
        return cs[-1]
    i = bisect.bisect_left(ts, x)
    t0, c0 = (ts[i - 1], cs[i - 1]) if i > 0 else (0.0, 0.0)
    t1, c1 = ts[i], cs[i]
    return c0 + (c1 - c0) * (x - t0) / (t1 - t0) if t1 > t0 else c1


def spread_pct(values: list[float]) -> float | None:
    """100 × (fastest − slowest) / fastest; None without two positive values."""
    vals = [v for v in values if v is not None and not math.isnan(v)]
    if len(vals) < 2 or max(vals) <= 0:
        return None
    return 100.0 * (max(vals) - min(vals)) / max(vals)


def phase_figures(tracks: dict[int, dict], key: str) -> dict[str, Any]:
    """First done, last done and the per-rank rates of ``key`` over the tracks (rank -> track)."""
    live = {r: tr for r, tr in tracks.items() if tr and tr["t"]}
    if not live:
        return {"first_done": None, "last_done": None, "per_rank": {}, "window": None, "span": None}
    starts = [tr["start"] for tr in live.values()]
    ends = [_end(tr) for tr in live.values()]
    a, b = max(starts), min(ends)
    s, e = min(starts), max(ends)
    first = None
    if b > a:
        moved = sum(amount_at(tr, key, b) - amount_at(tr, key, a) for tr in live.values())
        first = moved / (b - a)
    total = sum(_total(tr, key) for tr in live.values())
    last = total / (e - s) if e > s else None
    per_rank = {}
    for r, tr in live.items():
        dur = _end(tr) - tr["start"]
        per_rank[r] = _total(tr, key) / dur if dur > 0 else None
    return {
        "first_done": first,
        "last_done": last,
        "per_rank": per_rank,
        "window": (a, b) if b > a else None,
        "span": (s, e),
        "total": total,
    }


def buckets(tracks: list[dict], keys, width: float = BUCKET_S, t_from: float | None = None) -> dict[str, list]:
    """Rates summed over ``tracks`` in fixed buckets of the common clock: ``{"t_s": [bucket ends], key: [...]}``.

    Buckets are aligned to multiples of ``width`` from the common zero (the start barrier);
    ``t_s`` is each bucket's end, from ``t_from`` (default: the first bucket's start)."""
    live = [tr for tr in tracks if tr and tr["t"]]
    out: dict[str, list] = {"t_s": [], **{k: [] for k in keys}}
    if not live:
        return out
    s = min(tr["start"] for tr in live)
    e = max(_end(tr) for tr in live)
    j0 = math.floor(s / width + 1e-9)
    j1 = max(j0 + 1, math.ceil(e / width - 1e-9))
    origin = j0 * width if t_from is None else t_from
    for j in range(j0, j1):
        lo, hi = j * width, (j + 1) * width
        out["t_s"].append(round(hi - origin, 6))
        for k in keys:
            out[k].append(sum(amount_at(tr, k, hi) - amount_at(tr, k, lo) for tr in live) / width)
    return out


# ------------------------------------------------------------- combining
@dataclass
class Combined:
    """What rank 0 makes of every rank's record."""

    metrics: dict = field(default_factory=dict)
    labels: dict = field(default_factory=dict)
    samples: dict = field(default_factory=dict)
    ranks: list = field(default_factory=list)  # one row per rank (extra.ranks)
    hosts: list = field(default_factory=list)  # one row per host (extra.hosts)
    status: str = "ok"
    reason: str | None = None
    warnings: list = field(default_factory=list)


def _who(rec: dict) -> str:
    return f"rank {rec.get('rank')} ({rec.get('host', '?')})"


def combine(records: list[dict], phases: list[Phase], world_size: int | None = None) -> Combined:
    """The aggregate of per-rank ``records`` (plain dicts: rank, host, local_rank, status, reason,
    metrics, tracks, host_stats, warnings) for a probe made of ``phases``."""
    recs = sorted(records, key=lambda r: r.get("rank", 0))
    out = Combined()
    world = world_size if world_size is not None else len(recs)
    out.labels["ranks"] = world
    out.labels["hosts"] = len({r.get("host") for r in recs}) if recs else 0
    multi = len(phases) > 1
    spreads = []
    per_rank_rates: dict[int, dict] = {r["rank"]: {} for r in recs}
    for ph in phases:
        tracks = {r["rank"]: (r.get("tracks") or {}).get(ph.name) for r in recs}
        tracks = {k: v for k, v in tracks.items() if v}
        if not tracks:
            continue
        pre = f"{ph.name}_" if multi else ""
        for key in ph.keys:
            fig = phase_figures(tracks, key)
            out.metrics[key] = fig["first_done"]
            out.metrics[f"{key}_last_done"] = fig["last_done"]
            for r, v in fig["per_rank"].items():
                per_rank_rates[r][key] = v
            if key != ph.primary:
                continue
            if fig["window"] is None and len(tracks) > 1:
                out.warnings.append(
                    f"the ranks' {ph.name} phases did not overlap (one finished before another "
                    f"began): there is no first-done figure; {key}_last_done covers them all"
                )
            if fig["window"] is not None:
                out.metrics[f"{pre}first_done_window_s"] = fig["window"][1] - fig["window"][0]
            out.metrics[f"{pre}last_done_span_s"] = fig["span"][1] - fig["span"][0]
            rated = {r: v for r, v in fig["per_rank"].items() if v is not None}
            if rated:
                slow = min(rated, key=rated.get)
                fast = max(rated, key=rated.get)
                out.metrics[f"slowest_rank_{key}"] = rated[slow]
                out.metrics[f"fastest_rank_{key}"] = rated[fast]
                by_rank = {r["rank"]: r for r in recs}
                out.labels[f"{pre}slowest_rank"] = _who(by_rank[slow])
                out.labels[f"{pre}fastest_rank"] = _who(by_rank[fast])
                sp = spread_pct(list(rated.values()))
                out.metrics[f"{pre}rank_spread_pct"] = sp
                if sp is not None:
                    spreads.append(sp)
        if ph.series:
            out.samples[ph.series] = buckets(list(tracks.values()), ph.keys)
    if multi:
        out.metrics["rank_spread_pct"] = max(spreads) if spreads else None
    out.ranks = [_rank_row(r, phases, per_rank_rates.get(r["rank"], {})) for r in recs]
    out.hosts = host_rows(recs, [p.primary for p in phases], per_rank_rates)
    _status(out, recs, world)
    return out


def _rank_row(rec: dict, phases: list[Phase], rates: dict) -> dict:
    row = {
        "rank": rec.get("rank"),
        "host": rec.get("host"),
        "local_rank": rec.get("local_rank"),
        "status": rec.get("status", "ok"),
        "reason": rec.get("reason"),
        "metrics": dict(rec.get("metrics") or {}),
    }
    ran = (rec.get("result") or {}).get("params")
    if ran:  # what this rank's probe was called with, as it says itself
        row["params"] = dict(ran)
    series = {}
    for ph in phases:
        tr = (rec.get("tracks") or {}).get(ph.name)
        if tr:
            series[ph.name] = buckets([tr], ph.keys, t_from=0.0)
            row["metrics"].setdefault(f"{ph.name}_start_s", tr["start"])
    if series:
        row["series"] = series
    if rates:
        row["rates"] = {k: v for k, v in rates.items() if v is not None}
    return row


def host_rows(recs: list[dict], primaries: list[str], rates: dict[int, dict]) -> list[dict]:
    """One row per host: its ranks, the sum of their rates, CPU % and disk busy % (its local rank 0)."""
    hosts: dict[str, dict] = {}
    for rec in recs:
        h = rec.get("host") or "?"
        row = hosts.setdefault(h, {"host": h, "ranks": 0, "rank_ids": []})
        row["ranks"] += 1
        row["rank_ids"].append(rec.get("rank"))
        for k in primaries:
            v = rates.get(rec.get("rank"), {}).get(k)
            if v is not None:
                row[k] = row.get(k, 0.0) + v
        st = rec.get("host_stats") or {}
        for k in ("cpu_util_pct", "disk_busy_pct", "disk_device"):
            if st.get(k) is not None and row.get(k) is None:
                row[k] = st[k]
    return list(hosts.values())


def _status(out: Combined, recs: list[dict], world: int) -> None:
    seen = {r.get("rank") for r in recs}
    missing = [r for r in range(world) if r not in seen]
    failed = [r for r in recs if r.get("status") == "failed"]
    stopped = [r for r in recs if r.get("status") == "interrupted"]
    if failed or missing:
        out.status = "failed"
        parts = [f"{_who(r)} failed: {r.get('reason') or 'no reason given'}" for r in failed]
        if missing:
            parts.append("no result from rank" + ("s " if len(missing) > 1 else " ") + ", ".join(map(str, missing)))
        out.reason = "; ".join(parts)
    elif stopped:
        out.status = "interrupted"
        out.reason = stopped[0].get("reason") or "stopped; the figures cover what the ranks did before"
    said: dict[str, list] = {}
    for r in recs:
        for w in r.get("warnings") or []:
            said.setdefault(w, []).append(str(r.get("rank")))
    for w, who in said.items():
        if len(recs) == 1:
            out.warnings.append(w)
        else:
            out.warnings.append(f"rank{'s' if len(who) > 1 else ''} {', '.join(who)}: {w}")
