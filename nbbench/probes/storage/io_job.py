"""Running one job on an open :class:`~nbbench.probes.storage.io_session.Session` (:func:`run_job`, the
one dispatcher: every storage probe's job, sequential or random, size or time based, goes through it to
the engine the registry declares, :mod:`nbbench.probes._engines.registry`) and turning its output into a
result (:func:`fill_job_result`, :func:`short_transfer`: a job that moved less than a block).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ...results import Result
from ...units import format_bytes
from .._engines import devlimits, registry
from .._engines.builtin import run_builtin, run_threads_of
from .._engines.extern import run_dd, run_fio
from .._engines.job import JobOutput, JobSpec
from .._engines.multijob import run_jobs
from .._engines.registry import RAND, IoJob
from .io_cpu import cpu_bound_warning

if TYPE_CHECKING:
    from .io_session import Session


def run_job(s: Session, job: IoJob) -> JobOutput:
    """Run ``job`` on the session's file with the job's engine — the one dispatcher of the storage
    probes (dd's sequential passes, randread, the presets' rows, ``--jobs``).  The engine is checked
    first (:func:`~.._engines.registry.check`: one sentence where it cannot run the job)."""
    engine = registry.check(job)
    return _RUNNERS[engine.name](s, job)


def _live(job: IoJob) -> dict:
    """What every engine takes of a job while it runs: the flush at its end, Stop, the progress bar."""
    return {
        "fsync_end": job.fsync_end,
        "cancel": job.cancel,
        "progress": job.progress,
        "progress_key": job.progress_key,
    }


def _run_builtin(s: Session, job: IoJob) -> JobOutput:
    """The builtin engine on the session's descriptors: ``jobs`` > 1 in as many processes
    (:mod:`.._engines.multijob`), else ``threads`` copies of one (QD1 loop, io_uring or threads)."""
    fd = s.fd if job.op == "read" else s._write_fd()
    if job.timed and not s.direct and hasattr(os, "posix_fadvise"):
        # as fio's fadvise_hint: no readahead for random I/O, more for sequential (a size-based
        # pass, dd's, reads with the kernel's default readahead, as dd does)
        advice = os.POSIX_FADV_RANDOM if job.pattern == RAND else os.POSIX_FADV_SEQUENTIAL
        try:
            os.posix_fadvise(fd, 0, 0, advice)
        except OSError:
            pass
    spec = JobSpec(
        fd=fd,
        op=job.op,
        pattern=job.pattern,
        bs=job.bs,
        qd=job.qd,
        region=job.region,
        runtime=job.runtime,
        ramp=job.ramp,
        total=job.total,
        seed=job.seed,
        threads=job.threads,
        force=job.builtin_path,
        buffers=job.buffers,
        **_live(job),
    )
    if job.jobs > 1:
        return run_jobs(spec, job.jobs)
    return run_threads_of(spec, job.threads, run_builtin)


def _run_dd(s: Session, job: IoJob) -> JobOutput:
    """The system dd: a write copies /dev/zero into the session's file, a read copies it to /dev/null."""

    write = job.op == "write"
    return s.run_extern(
        "dd",
        lambda: run_dd(
            src="/dev/zero" if write else s.path,
            dst=s.path if write else "/dev/null",
            bs=job.bs,
            count=job.total // job.bs,
            direct=s.direct,
            op=job.op,
            **_live(job),
        ),
    )


def _run_fio(s: Session, job: IoJob) -> JobOutput:
    """The system fio on the session's file by name (given its size first: fio replaces a shorter file)."""

    size = job.total if job.total is not None else job.region
    return s.run_extern(
        "fio",
        lambda: run_fio(
            s.path,
            op=job.op,
            pattern=job.pattern,
            bs=job.bs,
            qd=job.qd,
            size=size,
            runtime=job.runtime,
            ramp=job.ramp,
            direct=s.direct,
            # a cold read starts with the file's cache dropped, as a buffered size-based pass does
            invalidate=job.cache_mode == "buffered-cold" or (job.total is not None and not s.direct),
            threads=job.threads * job.jobs,
            **_live(job),
        ),
        presize=size,
    )


#: each declared engine's runner (a test checks that every engine of the registry has one)
_RUNNERS = {registry.BUILTIN.name: _run_builtin, registry.DD.name: _run_dd, registry.FIO.name: _run_fio}


def fill_job_result(
    res: Result, s: Session, out: JobOutput, engine: str, cache_mode: str, op: str, region: int, bs: int
) -> str | None:
    """A job's figures, labels, series and warnings into ``res``; the reason to fail it when not one
    full block was transferred (:func:`short_transfer`)."""
    reason, warning = short_transfer(out, bs, s.path, op)
    if op == "read":
        if reason is None:  # nothing read: no data to judge
            s.data_warnings(region, bs)
        s.buffered_warnings(region, cache_mode)
    res.labels = s.base_labels(engine, cache_mode)
    res.labels["io_path"] = out.io_path
    res.labels["rw"] = ("rand" if res.params.get("pattern") == "rand" else "seq") + op
    if "uring_unavailable" in out.extra:
        res.labels["uring_unavailable"] = out.extra["uring_unavailable"]
    if "io_loop" in out.extra:
        res.labels["io_loop"] = out.extra["io_loop"]
    if "jobs" in out.extra:  # --jobs N: one row per process (the metrics are their sums)
        res.samples["jobs"] = out.extra["jobs"]
    res.metrics.update(_job_metrics(out, op))
    res.samples["bw"] = _series(out, op)
    if "t0_unix" in out.extra:  # the job's t = 0 on the wall clock (many-rank runs line series up)
        res.extra.setdefault("t0_unix", {})[op] = out.extra["t0_unix"]
    if out.hist.n:
        res.samples["lat_hist"] = out.hist.to_dict()
    if out.extra.get("fio_iodepth_level"):
        res.samples["fio_iodepth_level"] = out.extra["fio_iodepth_level"]

    devlimits.annotate(
        res, s.target.path, bs, res.params.get("buffers", "pages"), engine, s.direct, (out,), target=s.target
    )
    # the builtin engine's merged output sums its jobs' depths; fio's reached depth is per job
    per = res.params.get("threads", 1) * res.params.get("jobs", 1) if registry.get(engine).in_process else 1
    qd_asked = res.params.get("qd", 1) * per
    if out.qd_mean and out.qd_mean < 0.9 * qd_asked and out.ios > 100:
        res.warn(
            f"the queue depth reached (mean {out.qd_mean:.1f}) stayed below the {qd_asked} asked for: "
            "the CPU, not the storage, may be the limit"
        )
    cpu_bound_warning(res, out, engine)
    for w in s.warnings:
        res.warn(w)
    if warning:
        res.warn(warning)
    return reason


def short_transfer(out: JobOutput, bs: int, path: str, op: str, expected: int | None = None):
    """``(reason to fail, warning)`` for a job that moved less than asked: a short I/O (the file gave
    fewer bytes than a block) or, size based (``expected`` bytes), an early end; ``(None, None)`` else.
    It fails when not one full block was transferred."""
    if out.interrupted:
        return None, None
    info = out.extra.get("short_io")
    if isinstance(info, dict):
        got, at = max(0, int(info.get("bytes", 0))), info.get("offset")
    elif expected is not None and out.bytes < expected:
        got, at = out.bytes % bs, out.bytes - out.bytes % bs
    else:
        return None, None
    full = out.bytes // bs
    where = f" at offset {at}" if at is not None else ""
    gave = f"{path} gave {got} bytes{where} where a block of {format_bytes(bs, binary=True)} was asked"
    if full == 0:
        verb = "read" if op == "read" else "written"
        return (f"not one full block was {verb}: {gave} — a pseudo file, or a file shorter than its size says"), None
    return None, (
        f"the {op} stopped early: {gave} (the file shrank, or is shorter than its size says); the "
        f"figures cover the {full} full blocks before it"
    )


def _job_metrics(out: JobOutput, op: str) -> dict[str, Any]:
    m: dict[str, Any] = {f"{op}_bytes_per_s": out.bytes_per_s, "iops": out.iops}
    if out.hist.n:
        m.update(out.hist.metrics("lat"))
    elif "lat_metrics" in out.extra:
        m.update(out.extra["lat_metrics"])
    m["qd_reached"] = out.qd_max
    m["qd_mean"] = round(out.qd_mean, 2)
    m["runtime_s"] = out.elapsed_s
    m[f"{op}_total_bytes"] = out.bytes
    m["ios_count"] = out.ios
    return m


def _series(out: JobOutput, op: str) -> dict[str, list]:
    return {
        "t_s": [w[0] for w in out.windows],
        f"{op}_bytes_per_s": [w[1] for w in out.windows],
        "iops": [w[2] for w in out.windows],
    }


def stage_progress(progress, lo: float, hi: float):
    if progress is None:
        return None

    def p(frac, metrics):
        progress(None if frac is None else lo + (hi - lo) * frac, metrics)

    return p
