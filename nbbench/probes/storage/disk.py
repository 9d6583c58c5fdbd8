"""Storage probes: ``dd`` (sequential write then read), ``randread`` (random reads at a
block size and queue depth, IOPS and fio's latency percentiles) and ``preset``
(CrystalDiskMark's set, MLPerf-like sample reads) — plain functions returning
results; no IPython, no widgets.

PATH semantics (:mod:`nbbench.probes.storage.target`): a directory gets a new
``.nbbench-*`` temporary file that is always removed; an existing regular file or
block device is only ever read; anything else is refused within a second.  Every
probe takes a path or a :class:`~nbbench.probes.storage.target.StorageTarget` made before
(``target.inspect(path)``), inspected once either way.

Engines (one result schema, labelled ``engine`` and ``io_path``):

* ``builtin`` (default, nothing to install): QD1 is a plain ``os.preadv`` /
  ``os.pwritev`` loop; deeper queues use io_uring through raw syscalls
  (:mod:`._engines.uring`), or a thread pool where io_uring is unavailable.
* ``dd``: the system dd (sequential only), ``iflag=direct`` / ``oflag=direct``,
  ``conv=fdatasync`` for buffered writes.
* ``fio``: fio with ``ioengine=io_uring`` (libaio where io_uring is blocked).

Cache honesty: every result says ``cache`` = ``direct`` | ``buffered-cold`` |
``buffered-warm`` | ``memory`` (tmpfs and other RAM-backed targets, whatever O_DIRECT
says), how the cache was dropped (``cache_drop``), and when O_DIRECT was refused
(``direct_fallback``: overlayfs, some FUSE/NFS) — then buffered I/O with
posix_fadvise(DONTNEED) is used, and said so.  Caches are dropped outside the timed
window.  A job that got less than a block (a short read) counts the bytes it really
got; one that completed no full block fails with a sentence.
"""

from __future__ import annotations

import dataclasses
import os

from ...results import ProbeError, Result
from ...results.storage import DiskPresetResult, DiskResult, IoJobResult, RandreadResult
from ...units import format_bytes, format_metric
from .._engines import devlimits, registry
from .._engines.registry import SEQ, IoJob
from .io_args import ENGINES, check_bs, check_engine, check_jobs, os_error, size_arg
from .io_job import run_job, short_transfer, stage_progress
from .io_session import Session
from .presets import PRESETS, preset
from .randread import randread
from .target import inspect

__all__ = [
    "dd",
    "randread",
    "preset",
    "DiskResult",
    "IoJobResult",
    "RandreadResult",
    "DiskPresetResult",
    "PRESETS",
    "ENGINES",
]


# =========================================================================== dd
def dd(
    path,
    bs="1M",
    size="1G",
    count=None,
    direct=None,
    engine=registry.DEFAULT,
    progress=None,
    cancel=None,
    mode=None,
    buffers="pages",
    ready=None,
    jobs=1,
) -> DiskResult:
    """Sequential write then read, like ``dd``.

    Parameters
    ----------
    path : directory, regular file or block device (or a StorageTarget made from one)
        A directory: write a new ``.nbbench-dd-*`` temp file there, read it back, remove
        it.  A file or block device: read only (``dd if=PATH of=/dev/null``).
    bs : int or str
        Block size per I/O (``"1M"`` = 1 MiB; K/M/G are powers of 1024 as in dd).
    size : int or str
        Bytes to write/read (``"1G"``, ``"512M"``, ``"4GiB"``, ``"1.5G"``); on a file or device
        capped at its size.  ``count`` (blocks) overrides it, as dd's count.
    direct : bool or None
        None: O_DIRECT where the filesystem accepts it, else buffered (labelled
        ``direct_fallback``).  False: buffered; writes end with fdatasync inside the timed
        window (``conv=fdatasync``), reads start with the file's cache dropped.
    engine : "builtin" | "dd" | "fio"
    progress : callable ``(fraction, metrics)``, optional
    cancel : threading.Event, optional — set it to stop within 0.5 s; the result is then
        ``interrupted`` with what was measured.
    mode : None | "both" | "write" | "read"
        None: both in a directory, read on a file or device.  "write"/"both" on a file or
        device is refused (nbbench never writes to them).
    buffers : "pages" | "huge"
        The builtin engine's buffers: ordinary page-aligned memory as dd and fio use (default:
        the same request shape as theirs), or 2 MiB huge pages (a 1 MiB I/O stays one segment).
        Labelled ``buffers``; the device's request limits and any split are labelled too.
    ready : callable ``ready(phase)``, optional — called just before each timed phase
        ("write", "read"): the ranks of a many-rank run meet there, so their phases start together.
    jobs : 1-256 — the builtin engine only: the transfer split into ``jobs`` contiguous parts, each
        written/read by its own process at the same time (figures summed, one row per job).
    """
    engine = check_engine(engine)
    jobs, _ = check_jobs(jobs)
    devlimits.check_buffers(buffers)
    bs_b = size_arg(bs, "bs")
    check_bs(bs_b)
    # one sequential pass at QD1 (what dd does): a job as any other, the engine checked on its shape
    job = IoJob(engine=engine, pattern=SEQ, bs=bs_b, jobs=jobs, buffers=buffers, cancel=cancel)
    eng = registry.check(job, "dd")
    if count is not None:
        total = int(count) * bs_b
    else:
        total = size_arg(size, "size")
    if mode not in (None, "both", "write", "read"):
        raise ProbeError(f"mode must be both, write or read, not {mode!r}")
    target = inspect(path, write=mode in ("both", "write"))
    if mode is None:
        mode = "both" if target.kind == "dir" else "read"
    if target.kind == "dir" and mode == "read":
        mode = "both"  # reading in a directory needs our own file written first
    total = target.whole_blocks(total, bs_b, "size must be")
    params = {
        "path": target.path,
        "bs": bs_b,
        "size": total,
        "count": total // bs_b,
        "direct": direct,
        "engine": engine,
        "mode": mode,
        "buffers": buffers,
        "jobs": jobs,
    }
    res = DiskResult(params=params)
    wrote = mode in ("both", "write")
    with Session(target, direct, "dd", cancel=cancel, progress=progress, engine=engine) as s:
        w_out = r_out = None
        try:
            if wrote:
                if ready is not None:
                    ready("write")
                w_out = run_job(s, _pass(job, "write", total, not s.direct, stage_progress(progress, 0.0, 0.5)))
            if mode in ("both", "read") and not (w_out and w_out.interrupted):
                cache_mode = s.prepare_read(total)
                if ready is not None:
                    ready("read")
                r_out = run_job(
                    s, _pass(job, "read", total, False, stage_progress(progress, 0.5 if wrote else 0.0, 1.0))
                )
            else:
                cache_mode = "direct" if s.direct else "buffered-cold"
        except OSError as exc:
            writing = wrote and w_out is None
            done = None
            if writing and s.wfd >= 0:
                try:
                    done = os.fstat(s.wfd).st_size
                except OSError:
                    pass
            raise os_error(
                exc,
                s.path,
                s.direct,
                op="writing" if writing else "reading",
                done=done,
                total=total if writing else None,
            ) from None
        failed, short = None, []
        for out, op in ((w_out, "write"), (r_out, "read")):
            if out is not None and failed is None:
                failed, warning = short_transfer(out, bs_b, s.path, op, expected=total)
                short += [warning] if warning else []
        if r_out is not None and not (wrote and eng.writes_zeros) and failed is None:
            s.data_warnings(total, bs_b)
        s.buffered_warnings(total, cache_mode)
        res.labels = s.base_labels(engine, cache_mode)
        if wrote:
            res.labels["write_cache"] = "memory" if target.memory else "direct" if s.direct else "buffered + fdatasync"
            res.labels["write_data"] = eng.write_data
            if eng is not registry.DD:  # the one difference a user checking this write against dd meets
                res.labels["write_vs_dd"] = _vs_dd(eng, bs_b, w_out)
        for out, op in ((w_out, "write"), (r_out, "read")):
            if out is None:
                continue
            res.labels[f"{op}_io_path"] = out.io_path
            if "t0_unix" in out.extra:  # the phase's t = 0 on the wall clock (many-rank runs line series up)
                res.extra.setdefault("t0_unix", {})[op] = out.extra["t0_unix"]
            res.metrics[f"{op}_bytes_per_s"] = out.bytes_per_s
            res.metrics[f"{op}_elapsed_s"] = out.elapsed_s
            res.metrics[f"{op}_total_bytes"] = out.bytes
            if eng.in_process and "engine_cpu_ns_per_io" in out.extra:  # the I/O threads' CPU per block
                res.metrics[f"{op}_engine_cpu_per_io_ns"] = out.extra["engine_cpu_ns_per_io"]
            if out.hist.n:
                res.metrics[f"{op}_lat_mean_ns"] = out.hist.mean
                res.metrics[f"{op}_lat_p99_ns"] = out.hist.percentiles((99.0,))[99.0]
            if "jobs" in out.extra:
                res.samples[f"{op}_jobs"] = out.extra["jobs"]
            if "io_loop" in out.extra:
                res.labels["io_loop"] = out.extra["io_loop"]
            res.samples[f"{op}_bw"] = {
                "t_s": [w[0] for w in out.windows],
                f"{op}_bytes_per_s": [w[1] for w in out.windows],
            }
            if "series_interval" in out.extra:
                res.labels["series"] = out.extra["series_interval"]
        devlimits.annotate(res, target.path, bs_b, buffers, engine, s.direct, (w_out, r_out), target=target)
        for w in s.warnings + short:
            res.warn(w)
        interrupted = (w_out and w_out.interrupted) or (r_out and r_out.interrupted)
    if failed:
        return res.finish("failed", failed)
    if interrupted:
        return res.finish("interrupted", "cancelled; the figures cover what was done before")
    return res.finish()


def _vs_dd(eng, bs: int, out) -> str:
    """How this write differs from dd's literal ``dd if=/dev/zero … oflag=direct``, as measured by
    ``bench/dd_write_vs_dd.py`` (interleaved pairs on a virtio disk; the docs' engines page has the table)."""
    if not eng.in_process:
        return f"dd's literal command rewrites one buffer of zeros; {eng} writes its own buffers of random data"
    pool = out.extra.get("buffer_pool_bytes") if out is not None else None
    cycles = f"cycles {_binary(pool)} of random buffers" if pool else "cycles a pool of random buffers"
    return (
        f"either can be the higher: dd's literal command rewrites one {_binary(bs)} buffer, copying /dev/zero "
        f"into it before each block; this write {cycles} — on a virtio disk (bench/dd_write_vs_dd.py, medians of "
        "20-30 pairs) a 16 MiB pool wrote 0.70-0.80 of one rewritten buffer and dd 0.45-0.77 of it; zeros against "
        "random data, the compiled loop's per-block cost, fdatasync and pre-allocation made no difference beyond "
        "the noise"
    )


def _binary(n: int) -> str:
    """``n`` bytes as ``1 MiB`` / ``256 KiB`` (whole units), else :func:`format_bytes`."""
    for shift, unit in ((30, "GiB"), (20, "MiB"), (10, "KiB")):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return format_bytes(n, binary=True)


def _pass(job: IoJob, op: str, total: int, fsync_end: bool, progress) -> IoJob:
    """dd's write or read pass: ``total`` bytes in one sequential pass from offset 0; a buffered
    write ends with fdatasync inside the timed window (``conv=fdatasync``)."""
    return dataclasses.replace(job, op=op, region=total, total=total, fsync_end=fsync_end, progress=progress)


def describe(res: Result) -> str:  # pragma: no cover - convenience for notebooks
    return ", ".join(f"{k} {format_metric(k, v)}" for k, v in res.metrics.items())
