"""Storage probes: ``dd`` (sequential write then read), ``randread`` (random reads at a
block size and queue depth, IOPS and fio's latency percentiles) and ``preset``
(CrystalDiskMark's set, MLPerf-like sample reads) — plain functions returning
results; no IPython, no widgets.

PATH semantics (:mod:`nbbench.probes.pathcheck`): a directory gets a new
``.nbbench-*`` temporary file that is always removed; an existing regular file or
block device is only ever read; anything else is refused within a second.

Engines (one result schema, labelled ``engine`` and ``io_path``):

* ``builtin`` (default, nothing to install): QD1 is a plain ``os.preadv`` /
  ``os.pwritev`` loop; deeper queues use io_uring through raw syscalls
  (:mod:`._engines.uring`), or a thread pool where io_uring is unavailable.
* ``dd``: the system dd (sequential only), ``iflag=direct`` / ``oflag=direct``,
  ``conv=fdatasync`` for buffered writes.
* ``fio``: fio with ``ioengine=io_uring`` (libaio where io_uring is blocked).

Cache honesty: every result says ``cache`` = ``direct`` | ``buffered-cold`` |
``buffered-warm``, how the cache was dropped (``cache_drop``), and when O_DIRECT
was refused (``direct_fallback``: tmpfs, overlayfs, some FUSE/NFS) — then buffered
I/O with posix_fadvise(DONTNEED) is used, and said so.  Caches are dropped outside
the timed window.
"""

from __future__ import annotations

import os
from typing import Any

from ..results import ProbeError, Result
from ..units import format_bytes, format_metric
from ._engines import devlimits
from ._engines.job import JobOutput, JobSpec
from ..results.storage import DiskPresetResult, DiskResult, IoJobResult, RandreadResult
from .io_session import ENGINES, Session as _Session
from .io_session import (_builtin_job, _check_bs, _check_engine, _duration, _job_metrics, _os_error, _run_threads_of,
                         _series, _size, _stage_progress)
from .pathcheck import Target, check_free_space, inspect

__all__ = ["dd", "randread", "preset", "DiskResult", "IoJobResult", "RandreadResult", "DiskPresetResult",
           "PRESETS", "ENGINES"]

DEFAULT_READ_FILE = 1 << 30


# =========================================================================== dd

def _whole_blocks(target, nbytes: int, bs_b: int, what: str) -> int:
    """``nbytes`` cut to the file or device behind ``target`` and to whole blocks of ``bs_b``.

    In a directory (where the probe writes its own file first) free space is checked here.
    """
    if target.kind != "dir":
        nbytes = min(nbytes, target.size)
    nbytes = (nbytes // bs_b) * bs_b
    if nbytes < bs_b:
        raise ProbeError(f"{what} at least one block of {format_bytes(bs_b, binary=True)}")
    if target.kind == "dir":
        check_free_space(target.path, nbytes)
    return nbytes

def dd(path, bs="1M", size="1G", count=None, direct=None, engine="builtin", progress=None, cancel=None,
       mode=None, buffers="pages") -> DiskResult:
    """Sequential write then read, like ``dd``.

    Parameters
    ----------
    path : directory, regular file or block device
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
    """
    engine = _check_engine(engine)
    devlimits.check_buffers(buffers, engine)
    bs_b = _size(bs, "bs")
    _check_bs(bs_b)
    if count is not None:
        total = int(count) * bs_b
    else:
        total = _size(size, "size")
    if mode not in (None, "both", "write", "read"):
        raise ProbeError(f"mode must be both, write or read, not {mode!r}")
    target = inspect(path, write=mode in ("both", "write"))
    if mode is None:
        mode = "both" if target.kind == "dir" else "read"
    if target.kind == "dir" and mode == "read":
        mode = "both"  # reading in a directory needs our own file written first
    total = _whole_blocks(target, total, bs_b, "size must be")
    params = {"path": target.path, "bs": bs_b, "size": total, "count": total // bs_b, "direct": direct,
              "engine": engine, "mode": mode, "buffers": buffers}
    res = DiskResult(params=params)
    wrote = mode in ("both", "write")
    with _Session(target, direct, "dd", cancel=cancel, progress=progress) as s:
        w_out = r_out = None
        try:
            if wrote:
                w_out = _dd_write(s, engine, bs_b, total, cancel, _stage_progress(progress, 0.0, 0.5), buffers)
            if mode in ("both", "read") and not (w_out and w_out.interrupted):
                cache_mode = s.prepare_read(total)
                r_out = _dd_read(s, engine, bs_b, total, cancel,
                                 _stage_progress(progress, 0.5 if wrote else 0.0, 1.0), buffers)
            else:
                cache_mode = "direct" if s.direct else "buffered-cold"
        except OSError as exc:
            raise _os_error(exc, s.path, s.direct) from None
        if r_out is not None and engine != "dd":
            s.data_warnings(total, bs_b)
        s.buffered_warnings(total, cache_mode)
        res.labels = s.base_labels(engine, cache_mode)
        if wrote:
            res.labels["write_cache"] = "direct" if s.direct else "buffered + fdatasync"
            res.labels["write_data"] = "zeros (/dev/zero)" if engine == "dd" else "random"
        for out, op in ((w_out, "write"), (r_out, "read")):
            if out is None:
                continue
            res.labels[f"{op}_io_path"] = out.io_path
            res.metrics[f"{op}_bytes_per_s"] = out.bytes_per_s
            res.metrics[f"{op}_elapsed_s"] = out.elapsed_s
            res.metrics[f"{op}_total_bytes"] = out.bytes
            if out.hist.n:
                res.metrics[f"{op}_lat_mean_ns"] = out.hist.mean
                res.metrics[f"{op}_lat_p99_ns"] = out.hist.percentiles((99.0,))[99.0]
            res.samples[f"{op}_bw"] = {"t_s": [w[0] for w in out.windows],
                                       f"{op}_bytes_per_s": [w[1] for w in out.windows]}
            if "series_interval" in out.extra:
                res.labels["series"] = out.extra["series_interval"]
        devlimits.annotate(res, target.path, bs_b, buffers, engine, s.direct, (w_out, r_out), target.extra.get("source"))
        for w in s.warnings:
            res.warn(w)
        interrupted = (w_out and w_out.interrupted) or (r_out and r_out.interrupted)
    if interrupted:
        return res.finish("interrupted", "cancelled; the figures cover what was done before")
    return res.finish()


def _dd_write(s: _Session, engine: str, bs: int, total: int, cancel, progress, buffers="pages") -> JobOutput:
    fsync = not s.direct
    if engine == "builtin":
        from ._engines.sync import run_sync

        fd = s._write_fd()
        try:
            return run_sync(JobSpec(fd=fd, op="write", pattern="seq", bs=bs, qd=1, region=total, total=total,
                                    fsync_end=fsync, cancel=cancel, progress=progress,
                                    progress_key="write_bytes_per_s", buffers=buffers))
        finally:
            if fd != s.wfd:
                os.close(fd)
    if engine == "dd":
        from ._engines.extern import run_dd

        return run_dd(src="/dev/zero", dst=s.path, bs=bs, count=total // bs, direct=s.direct, op="write",
                      fsync_end=fsync, cancel=cancel, progress=progress, progress_key="write_bytes_per_s")
    from ._engines.extern import run_fio

    return run_fio(s.path, op="write", pattern="seq", bs=bs, qd=1, size=total, runtime=None, ramp=0,
                   direct=s.direct, fsync_end=fsync, cancel=cancel, progress=progress,
                   progress_key="write_bytes_per_s")


def _dd_read(s: _Session, engine: str, bs: int, total: int, cancel, progress, buffers="pages") -> JobOutput:
    if engine == "builtin":
        from ._engines.sync import run_sync

        return run_sync(JobSpec(fd=s.fd, op="read", pattern="seq", bs=bs, qd=1, region=total, total=total,
                                cancel=cancel, progress=progress, buffers=buffers))
    if engine == "dd":
        from ._engines.extern import run_dd

        return run_dd(src=s.path, dst="/dev/null", bs=bs, count=total // bs, direct=s.direct, op="read",
                      fsync_end=False, cancel=cancel, progress=progress)
    from ._engines.extern import run_fio

    return run_fio(s.path, op="read", pattern="seq", bs=bs, qd=1, size=total, runtime=None, ramp=0,
                   direct=s.direct, invalidate=not s.direct, cancel=cancel, progress=progress)


# =========================================================================== jobs
def _run_job(s: _Session, engine: str, *, op: str, pattern: str, bs: int, qd: int, threads: int, region: int,
             runtime: float, ramp: float, cache_mode: str, cancel, progress, seed: int = 0,
             builtin_path: str | None = None, buffers: str = "pages") -> JobOutput:
    key = f"{op}_bytes_per_s"
    if engine == "builtin":
        fd = s.fd if op == "read" else s._write_fd()
        if not s.direct and hasattr(os, "posix_fadvise"):
            # as fio's fadvise_hint: no readahead for random I/O, more for sequential
            advice = os.POSIX_FADV_RANDOM if pattern == "rand" else os.POSIX_FADV_SEQUENTIAL
            try:
                os.posix_fadvise(fd, 0, 0, advice)
            except OSError:
                pass
        try:
            spec = JobSpec(fd=fd, op=op, pattern=pattern, bs=bs, qd=qd, region=region, runtime=runtime,
                           ramp=ramp, cancel=cancel, progress=progress, progress_key=key, seed=seed,
                           threads=threads, force=builtin_path, buffers=buffers)
            return _run_threads_of(spec, threads, _builtin_job)
        finally:
            if op == "write" and fd != s.wfd:
                os.close(fd)
    if engine == "dd":
        raise ProbeError("the dd engine does sequential dd transfers only; use --engine builtin or fio here")
    from ._engines.extern import run_fio

    return run_fio(s.path, op=op, pattern=pattern, bs=bs, qd=qd, size=region, runtime=runtime, ramp=ramp,
                   direct=s.direct, invalidate=(cache_mode == "buffered-cold"), cancel=cancel,
                   progress=progress, progress_key=key, threads=threads)


def _fill_size(target: Target, size) -> int:
    if size is None:
        return DEFAULT_READ_FILE if target.kind == "dir" else target.size
    return _size(size, "size")


def randread(path, bs="4k", qd=1, runtime=10, ramp=1, size=None, direct=None, engine="builtin", threads=1,
             progress=None, cancel=None, warm=False, seed=0, builtin_path=None, buffers="pages") -> RandreadResult:
    """Random reads, time based: IOPS, bytes/s, latency mean/stddev and fio's 17 percentiles.

    Parameters
    ----------
    path : directory, regular file or block device
        A directory: a ``size`` temp file (default 1 GiB) is written first (not timed) and
        removed afterwards.  A file or device: read only, over its first ``size`` bytes
        (default all of it).
    bs : block size (``"4k"``); qd : I/Os in flight per thread; threads : T in QnTm.
    runtime, ramp : seconds (or ``"500ms"``); the ramp is not counted.
    direct : None (O_DIRECT where accepted) | True | False (buffered; the file's cache is
        dropped first, unless ``warm=True``: the region is read once first — page cache speed).
    engine : "builtin" | "fio" (dd has no random reads).
    progress, cancel : as :func:`dd`.
    builtin_path : None | "sync" | "uring" | "threads" — force the builtin engine's I/O path
        (for comparisons; default: sync at QD1, io_uring deeper, threads without io_uring).
    buffers : "pages" | "huge" — the builtin engine's buffers, as :func:`dd`.
    """
    engine = _check_engine(engine)
    devlimits.check_buffers(buffers, engine)
    bs_b = _size(bs, "bs")
    _check_bs(bs_b)
    qd = int(qd)
    threads = int(threads)
    if qd < 1 or qd > 4096:
        raise ProbeError(f"qd must be between 1 and 4096, not {qd}")
    if threads < 1 or threads > 256:
        raise ProbeError(f"threads must be between 1 and 256, not {threads}")
    runtime_s = _duration(runtime, "runtime")
    ramp_s = _duration(ramp, "ramp")
    if runtime_s <= 0:
        raise ProbeError("runtime must be more than 0 s")
    if engine == "dd":
        raise ProbeError("the dd engine does sequential transfers only; use --engine builtin or fio for randread")
    target = inspect(path, write=False)
    region = _fill_size(target, size)
    region = _whole_blocks(target, region, bs_b, "the region must hold")
    params = {"path": target.path, "bs": bs_b, "qd": qd, "threads": threads, "runtime": runtime_s,
              "ramp": ramp_s, "size": region, "direct": direct, "engine": engine, "warm": bool(warm),
              "op": "read", "pattern": "rand", "buffers": buffers}
    res = RandreadResult(params=params)
    fill = region if target.kind == "dir" else 0
    with _Session(target, direct, "randread", fill=fill, cancel=cancel, progress=progress) as s:
        if s.interrupted:
            res.labels = s.base_labels(engine, "direct" if s.direct else "buffered-cold")
            return res.finish("interrupted", "cancelled while writing the file to read")
        try:
            cache_mode = s.prepare_read(region, warm=warm)
            out = _run_job(s, engine, op="read", pattern="rand", bs=bs_b, qd=qd, threads=threads, region=region,
                           runtime=runtime_s, ramp=ramp_s, cache_mode=cache_mode, cancel=cancel,
                           progress=_stage_progress(progress, 0.15 if fill else 0.0, 1.0), seed=seed,
                           builtin_path=builtin_path, buffers=buffers)
        except OSError as exc:
            raise _os_error(exc, s.path, s.direct) from None
        _fill_job_result(res, s, out, engine, cache_mode, "read", region, bs_b)
    if out.interrupted:
        return res.finish("interrupted", "cancelled; the figures cover the time measured before")
    return res.finish()


def _fill_job_result(res: Result, s: _Session, out: JobOutput, engine: str, cache_mode: str, op: str,
                     region: int, bs: int) -> None:
    if op == "read":
        s.data_warnings(region, bs)
        s.buffered_warnings(region, cache_mode)
    res.labels = s.base_labels(engine, cache_mode)
    res.labels["io_path"] = out.io_path
    res.labels["rw"] = ("rand" if res.params.get("pattern") == "rand" else "seq") + op
    if "uring_unavailable" in out.extra:
        res.labels["uring_unavailable"] = out.extra["uring_unavailable"]
    res.metrics.update(_job_metrics(out, op))
    res.samples["bw"] = _series(out, op)
    if out.hist.n:
        res.samples["lat_hist"] = out.hist.to_dict()
    if out.extra.get("fio_iodepth_level"):
        res.samples["fio_iodepth_level"] = out.extra["fio_iodepth_level"]
    devlimits.annotate(res, s.target.path, bs, res.params.get("buffers", "pages"), engine, s.direct, (out,),
                       s.target.extra.get("source"))
    qd_asked = res.params.get("qd", 1) * res.params.get("threads", 1)
    if out.qd_mean and out.qd_mean < 0.9 * qd_asked and out.ios > 100:
        res.warn(f"the queue depth reached (mean {out.qd_mean:.1f}) stayed below the {qd_asked} asked for: "
                 "the CPU, not the storage, may be the limit")
    for w in s.warnings:
        res.warn(w)


# =========================================================================== presets
# (test name, op pattern, block size, queue depth, threads)
PRESETS: dict[str, dict[str, Any]] = {
    "cdm": {
        "title": "CrystalDiskMark default set",
        "tests": [("SEQ1M Q8T1", "seq", 1 << 20, 8, 1), ("SEQ1M Q1T1", "seq", 1 << 20, 1, 1),
                  ("RND4K Q32T1", "rand", 4096, 32, 1), ("RND4K Q1T1", "rand", 4096, 1, 1)],
    },
    "mlperf-resnet50": {
        "title": "MLPerf Storage ResNet-50-like: random reads of ~115 KB samples (112 KiB, 4 KiB aligned)",
        "tests": [("RND112K Q1T1", "rand", 112 << 10, 1, 1), ("RND112K Q8T1", "rand", 112 << 10, 8, 1),
                  ("RND112K Q32T1", "rand", 112 << 10, 32, 1)],
        "sample_bytes": 115 * 1000,
        "reads_only": True,
    },
    "mlperf-unet3d": {
        "title": "MLPerf Storage UNet3D-like: ~147 MB samples read whole, as 1 MiB sequential reads",
        "tests": [("SEQ1M Q1T1", "seq", 1 << 20, 1, 1), ("SEQ1M Q8T1", "seq", 1 << 20, 8, 1)],
        "sample_bytes": 146_600_000,
        "min_size": 256 << 20,
        "reads_only": True,
    },
}


def preset(path, name="cdm", size="1G", runtime=5, ramp=1, direct=None, engine="builtin", progress=None,
           cancel=None, write=None, buffers="pages") -> DiskPresetResult:
    """A preset set of tests as one table: ``cdm`` (CrystalDiskMark's SEQ1M Q8T1, SEQ1M Q1T1,
    RND4K Q32T1, RND4K Q1T1, read and — in a directory — write), ``mlperf-resnet50`` (random
    reads of ~115 KB samples) or ``mlperf-unet3d`` (~147 MB samples).

    ``size``: the test file (a new temp file in a directory; the first ``size`` bytes of a file
    or device, read only).  ``runtime``/``ramp`` per test (seconds).  ``write``: None = write
    tests where the preset has them and PATH is a directory; True on a file/device is refused.
    Other parameters as :func:`randread`.
    """
    if name not in PRESETS:
        raise ProbeError(f"unknown preset {name!r}: choose from {', '.join(PRESETS)}")
    p = PRESETS[name]
    engine = _check_engine(engine)
    devlimits.check_buffers(buffers, engine)
    if engine == "dd":
        raise ProbeError("presets need queue depths; use --engine builtin or fio")
    runtime_s = _duration(runtime, "runtime")
    ramp_s = _duration(ramp, "ramp")
    target = inspect(path, write=bool(write))
    region = _fill_size(target, size)
    region = max(region, p.get("min_size", 0)) if target.kind == "dir" else min(region, target.size)
    region = (region // (1 << 20)) * (1 << 20) or region
    do_write = target.kind == "dir" and not p.get("reads_only") and write is not False
    if target.kind == "dir":
        check_free_space(target.path, region)
    tests = p["tests"]
    params = {"path": target.path, "preset": name, "size": region, "runtime": runtime_s, "ramp": ramp_s,
              "direct": direct, "engine": engine, "write": do_write, "buffers": buffers}
    res = DiskPresetResult(params=params)
    ops = ["read", "write"] if do_write else ["read"]
    n_jobs = len(tests) * len(ops)
    fill = region if target.kind == "dir" else 0
    rows: list[dict] = []
    outs: list = []
    interrupted = False
    with _Session(target, direct, "disk", fill=fill, cancel=cancel, progress=progress) as s:
        if s.interrupted:
            res.labels = s.base_labels(engine, "direct" if s.direct else "buffered-cold")
            return res.finish("interrupted", "cancelled while writing the test file")
        k = 0
        cache_mode = "direct"
        for test, pattern, bs, qd, threads in tests:
            for op in ops:
                if cancel is not None and cancel.is_set():
                    interrupted = True
                    break
                lo = 0.15 + 0.85 * k / n_jobs if fill else k / n_jobs
                hi = 0.15 + 0.85 * (k + 1) / n_jobs if fill else (k + 1) / n_jobs
                k += 1
                sub = IoJobResult(params={"path": target.path, "test": test, "op": op, "pattern": pattern,
                                          "bs": bs, "qd": qd, "threads": threads, "runtime": runtime_s,
                                          "ramp": ramp_s, "size": region, "engine": engine, "buffers": buffers})
                try:
                    cache_mode = s.prepare_read(region) if op == "read" else ("direct" if s.direct else "buffered")
                    out = _run_job(s, engine, op=op, pattern=pattern, bs=bs, qd=qd, threads=threads, region=region,
                                   runtime=runtime_s, ramp=ramp_s, cache_mode=cache_mode, cancel=cancel,
                                   progress=_stage_progress(progress, lo, hi), buffers=buffers)
                except OSError as exc:
                    raise _os_error(exc, s.path, s.direct) from None
                _fill_job_result(sub, s, out, engine, cache_mode, op, region, bs)
                outs.append(out)
                if "sample_bytes" in p:
                    sub.metrics["samples_per_s"] = sub.metrics[f"{op}_bytes_per_s"] / p["sample_bytes"]
                sub.finish("interrupted" if out.interrupted else "ok")
                rows.append(sub.to_dict())
                pre = test.lower().replace(" ", "_")
                res.metrics[f"{pre}_{op}_bytes_per_s"] = sub.metrics[f"{op}_bytes_per_s"]
                res.metrics[f"{pre}_{op}_iops"] = sub.metrics["iops"]
                res.metrics[f"{pre}_{op}_lat_mean_ns"] = sub.metrics.get("lat_mean_ns")
                if out.interrupted:
                    interrupted = True
                    break
            if interrupted:
                break
        res.samples["rows"] = rows
        res.labels = s.base_labels(engine, "direct" if s.direct else "buffered-cold")
        res.labels["preset"] = p["title"]
        # the table's largest request: its limits and split (each row carries its own too)
        devlimits.annotate(res, target.path, max(t[2] for t in tests), buffers, engine, s.direct,
                           [r_ for r_ in outs if r_ is not None], target.extra.get("source"))
        for w in s.warnings:
            res.warn(w)
        if target.kind != "dir" and not p.get("reads_only"):
            res.warn("write tests need a directory (nbbench never writes to an existing file or device): "
                     "only reads were measured")
    if interrupted:
        return res.finish("interrupted", "cancelled; the table holds the tests done before")
    return res.finish()


def describe(res: Result) -> str:  # pragma: no cover - convenience for notebooks
    return ", ".join(f"{k} {format_metric(k, v)}" for k, v in res.metrics.items())
