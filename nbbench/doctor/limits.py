"""The container's limits and what they did so far: the doctor's "limits" checks.

- ``container limits``: the CPU quota and period, cpuset, memory limit, ``pids.max``, /dev/shm,
  and whether throttling counters and pressure stall information can be read
  (:func:`nbbench.limits.read_limits`, one line each, "no quota" where there is none);
- ``stalls``: what the kernel measured without waiting — the share of the quota's periods that
  ended throttled since the cgroup started (``cpu.stat``) and PSI's own 60-second averages for
  CPU, I/O and memory — worded by :func:`nbbench.limits.stall_verdict`; ``n/a`` in one line where
  the kernel exposes none of it.
"""

from __future__ import annotations

from typing import Any

from ..limits import describe_limits, read_limits, stall_files, stall_findings
from ..limits.counters import parse_cpu_stat, parse_memory_events, parse_pressure_avg
from ..limits.verdict import worker_bound
from .base import Check, na

__all__ = ["check_limits", "check_stalls", "read_stall_tally"]


def check_limits(root: str = "/", workers: int | None = None) -> Check:
    name, group = "container limits", "limits"
    lim = read_limits(root)
    lines = describe_limits(lim)
    if not lim.get("cgroup") and not lim.get("psi"):
        return na(name, lines[0], group)
    bound = worker_bound(lim, workers)
    if bound:
        return Check(
            name,
            "warn",
            "; ".join(lines) + f": {bound}",
            "size DataLoader num_workers by the quota (nbbench.env.usable_cpus()['usable_int']), or raise the "
            "container's CPU limit (Kubernetes resources.limits.cpu, docker --cpus, Slurm --cpus-per-task)",
            group,
            lim,
        )
    return Check(name, "ok", "; ".join(lines), "", group, lim)


def _read(path) -> str | None:
    try:
        with open(path, "rb") as fh:
            return fh.read().decode("ascii", "replace")
    except OSError:
        return None


def read_stall_tally(root: str = "/") -> dict[str, Any]:
    """Figures the kernel keeps without a window: ``cpu_throttled_periods_pct`` (since the cgroup
    started), ``nr_periods``, ``cpu_throttled_s``, PSI ``avg60`` as ``psi_*_pct``, ``psi_scope``,
    the memory-limit events so far."""
    files = stall_files(root)
    out: dict[str, Any] = {"psi_scope": files["psi_scope"]}
    text = _read(files["cpu_stat"]) if files["cpu_stat"] is not None else None
    stat = parse_cpu_stat(text) if text else None
    if stat:
        out["nr_periods"], out["cpu_throttled_s"] = stat[0], round(stat[2], 3)
        out["cpu_throttled_periods_pct"] = round(100.0 * stat[1] / stat[0], 2) if stat[0] else None
        out["since"] = ", since the cgroup started"
    for res, path in files["psi"].items():
        text = _read(path)
        if text:
            some, full = parse_pressure_avg(text, "avg60")
            out[f"psi_{res}_some_pct"], out[f"psi_{res}_full_pct"] = some, full
    ev = files["memory_events"]
    text = _read(ev) if ev is not None else None
    if text:
        got = parse_memory_events(text, v1=ev.name == "memory.failcnt")
        if got:
            out["memory_limit_events_count"], out["memory_oom_kills_count"] = got
    return out


def check_stalls(root: str = "/", workers: int | None = None) -> Check:
    name, group = "stalls", "limits"
    lim = read_limits(root)
    tally = read_stall_tally(root)
    has_cpu = "nr_periods" in tally
    has_psi = bool(tally.get("psi_scope"))
    if not has_cpu and not has_psi:
        return na(name, "not available: no cgroup cpu.stat and no pressure stall information (/proc/pressure)", group)
    parts = []
    if has_cpu:
        per = tally.get("cpu_throttled_periods_pct")
        parts.append(
            f"throttled in {per:g} % of {tally['nr_periods']} periods, {tally['cpu_throttled_s']:g} s in all, "
            "since the cgroup started (cpu.stat)"
            if per is not None
            else "no quota period has run (cpu.stat: no quota, or nothing ran under it)"
        )
    if has_psi:
        scope = "the cgroup's" if tally["psi_scope"] == "cgroup" else "system-wide"
        psi = ", ".join(
            f"{r} {tally[f'psi_{r}_some_pct']:g} %"
            for r in ("cpu", "io", "memory")
            if tally.get(f"psi_{r}_some_pct") is not None
        )
        parts.append(f"PSI some over the last 60 s ({scope}): {psi}")
    if tally.get("memory_limit_events_count"):
        parts.append(f"memory limit hit {tally['memory_limit_events_count']} times so far")
    found = stall_findings(tally, lim, workers)
    evidence = "; ".join(parts)
    if not found:
        return Check(name, "ok", evidence + ": no throttling or pressure stalls measured", "", group, tally)
    fixes = ["see what a run waits for, window by window: nbbench monitor -- python train.py"]
    text = " ".join(found)
    if "throttled" in text:
        fixes.append(
            "raise the container's CPU limit (Kubernetes resources.limits.cpu, docker --cpus) or use fewer "
            "DataLoader workers and torch threads (nbbench.env.usable_cpus()['usable_int'])"
        )
    if "waited for a CPU" in text and "system-wide" in text:
        fixes.append("other processes hold the machine's CPUs: run when it is quieter, or on a reserved node")
    if "memory" in text or "OOM" in text:
        fixes.append("raise the container's memory limit, or use fewer workers and a smaller prefetch_factor")
    return Check(name, "warn", evidence + " — " + "; ".join(found), "; ".join(fixes), group, tally)
