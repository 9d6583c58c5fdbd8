"""Whether the CPU, not the storage, was the limit of a builtin-engine job, and which CPU:
one job's I/O thread (then ``--jobs`` spreads the I/Os over more cores) or all usable
cores (then only less CPU per I/O helps).
"""

from __future__ import annotations

import os

from ...results import Result
from .._engines import registry
from .._engines.job import JobOutput

__all__ = ["CPU_BOUND_PCT", "cpu_bound_warning"]


#: the share of the measured time the I/O thread spent on the CPU from which the figure is the
#: engine's CPU cost per I/O rather than the storage's speed
CPU_BOUND_PCT = 85.0


def _usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def cpu_bound_warning(res: Result, out: JobOutput, engine: str) -> None:
    """The builtin engine's thread CPU time (``engine_cpu_pct``: the busiest job's I/O thread,
    ``engine_cpu_per_io_ns``: CPU per I/O over all jobs), and where the CPU was the limit a
    warning saying which one — one job's thread (then ``--jobs`` spreads the I/Os over more
    cores) or all usable cores (then only less CPU per I/O helps: ``--engine fio``)."""
    pct, per_io = out.extra.get("engine_cpu_pct"), out.extra.get("engine_cpu_ns_per_io")
    if not registry.get(engine).in_process or pct is None or per_io is None:
        return
    res.metrics["engine_cpu_pct"] = pct
    res.metrics["engine_cpu_per_io_ns"] = per_io
    jobs = len(out.extra.get("jobs") or ()) or 1
    total = out.extra.get("engine_cpu_pct_sum", pct)
    cores = _usable_cores()
    cost = f"{per_io / 1e3:.1f} µs of CPU per I/O (Python and the kernel" + (
        f", {out.extra['io_loop']})" if "io_loop" in out.extra else ")"
    )
    if jobs > 1 and total >= CPU_BOUND_PCT * min(jobs, cores):
        res.labels["cpu_bound"] = (
            f"all cores: the {jobs} jobs' I/O threads used {total / 100:.1f} of the {cores} usable cores"
        )
        res.warn(
            f"CPU-bound on all cores: the {jobs} jobs' I/O threads used {total / 100:.1f} of the {cores} "
            f"usable cores, {cost}; this figure is what this machine's CPUs submit and reap, a lower bound "
            "of what the storage gives — more jobs cannot lift it; fio spends less CPU per I/O "
            "(compare with --engine fio)"
        )
    elif pct >= CPU_BOUND_PCT:
        busiest = "the busiest job's I/O thread" if jobs > 1 else "the I/O thread"
        res.labels["cpu_bound"] = f"one job's CPU: {busiest} was on the CPU {pct:.0f} % of the measured time"
        more = (
            f"--jobs {min(256, max(2, 2 * jobs))} spreads the I/Os over more of the {cores} usable cores"
            if cores > jobs
            else f"all {cores} usable cores have a job already"
        )
        res.warn(
            f"CPU-bound in one job: {busiest} was busy {pct:.0f} % of the measured time, {cost}, "
            f"which caps one job near {1e9 / per_io / 1e3:.0f} k I/Os per second; this figure is the "
            f"engine's limit, a lower bound of what the storage gives — {more} (or compare with --engine fio)"
        )
