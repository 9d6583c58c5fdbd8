"""``randread``: random reads, time based, at a block size and queue depth — IOPS, bytes/s and fio's
latency percentiles over one :class:`~nbbench.probes.storage.io_session.Session` (engines and cache
honesty as :mod:`nbbench.probes.storage.disk` says).
"""

from __future__ import annotations

from ...results import ProbeError
from ...results.storage import RandreadResult
from .. import limits
from .._engines import devlimits, registry
from .._engines.registry import RAND, IoJob
from .io_args import DEFAULT_READ_FILE, check_bs, check_engine, check_jobs, duration_arg, os_error, size_arg
from .io_job import fill_job_result, run_job, stage_progress
from .io_session import Session
from .target import inspect

__all__ = ["randread"]


def randread(
    path,
    bs="4k",
    qd=1,
    runtime=10,
    ramp=1,
    size=None,
    direct=None,
    engine=registry.DEFAULT,
    threads=1,
    progress=None,
    cancel=None,
    warm=False,
    seed=0,
    builtin_path=None,
    buffers="pages",
    ready=None,
    jobs=1,
) -> RandreadResult:
    """Random reads, time based: IOPS, bytes/s, latency mean/stddev and fio's 17 percentiles.

    Parameters
    ----------
    path : directory, regular file or block device (or a StorageTarget made from one)
        A directory: a ``size`` temp file (default 1 GiB) is written first (not timed) and
        removed afterwards.  A file or device: read only, over its first ``size`` bytes
        (default all of it).
    bs : block size (``"4k"``); qd : I/Os in flight per job.
    jobs : 1-256 independent I/O loops in as many processes on the same region (as fio's numjobs on
        one file, seeds apart): iops and bytes/s summed, histograms merged, one row per job
        (``samples["jobs"]``).  threads : deprecated, an alias of jobs.
    runtime, ramp : seconds (or ``"500ms"``); the ramp is not counted.
    direct : None (O_DIRECT where accepted) | True | False (buffered; the file's cache is
        dropped first, unless ``warm=True``: the region is read once first — page cache speed).
    engine : "builtin" | "fio" (dd has no random reads).
    progress, cancel : as :func:`~nbbench.probes.storage.disk.dd`.
    builtin_path : None | "sync" | "uring" | "threads" — force the builtin engine's I/O path
        (for comparisons; default: sync at QD1, io_uring deeper, threads without io_uring).
    buffers : "pages" | "huge" — the builtin engine's buffers, as :func:`~nbbench.probes.storage.disk.dd`.
    ready : callable ``ready("read")``, optional — called just before the timed reads (as
        :func:`~nbbench.probes.storage.disk.dd`).
    """
    engine = check_engine(engine)
    devlimits.check_buffers(buffers)
    bs_b = size_arg(bs, "bs")
    check_bs(bs_b)
    qd = limits.check("qd", qd, limits.RANDREAD_QD)
    jobs, deprecated = check_jobs(jobs, threads)
    runtime_s = duration_arg(runtime, "runtime")
    ramp_s = duration_arg(ramp, "ramp")
    if runtime_s <= 0:
        raise ProbeError("runtime must be more than 0 s")
    job = IoJob(
        engine=engine,
        op="read",
        pattern=RAND,
        bs=bs_b,
        qd=qd,
        runtime=runtime_s,
        ramp=ramp_s,
        jobs=jobs,
        seed=seed,
        buffers=buffers,
        builtin_path=builtin_path,
        cancel=cancel,
    )
    registry.check(job, "randread")
    target = inspect(path, write=False)
    region = target.read_region(None if size is None else size_arg(size, "size"), DEFAULT_READ_FILE)
    region = target.whole_blocks(region, bs_b, "the region must hold")
    params = {
        "path": target.path,
        "bs": bs_b,
        "qd": qd,
        "jobs": jobs,
        "runtime": runtime_s,
        "ramp": ramp_s,
        "size": region,
        "direct": direct,
        "engine": engine,
        "warm": bool(warm),
        "op": "read",
        "pattern": "rand",
        "buffers": buffers,
    }
    res = RandreadResult(params=params)
    if deprecated:
        res.warn(deprecated)
    fill = region if target.kind == "dir" else 0
    with Session(target, direct, "randread", fill=fill, cancel=cancel, progress=progress, engine=engine) as s:
        if s.interrupted:
            res.labels = s.base_labels(engine, "direct" if s.direct else "buffered-cold")
            return res.finish("interrupted", "cancelled while writing the file to read")
        try:
            cache_mode = s.prepare_read(region, warm=warm)
            if ready is not None:
                ready("read")
            job.region, job.cache_mode = region, cache_mode
            job.progress = stage_progress(progress, 0.15 if fill else 0.0, 1.0)
            out = run_job(s, job)
        except OSError as exc:
            raise os_error(exc, s.path, s.direct) from None
        failed = fill_job_result(res, s, out, engine, cache_mode, "read", region, bs_b)
    if failed:
        return res.finish("failed", failed)
    if out.interrupted:
        return res.finish("interrupted", "cancelled; the figures cover the time measured before")
    return res.finish()
