"""Storage presets: a set of storage tests run as one table (:func:`preset`).

``cdm`` is CrystalDiskMark's default set (SEQ1M Q8T1, SEQ1M Q1T1, RND4K Q32T1, RND4K
Q1T1; reads, and writes in a directory); ``cdm-nvme`` its NVMe SSD set (SEQ1M Q8T1,
SEQ128K Q32T1, RND4K Q32T16, RND4K Q1T1), T16 as 16 jobs (processes); ``mlperf-resnet50`` and ``mlperf-unet3d``
read samples the size MLPerf Storage's workloads read.  Every test is one job on one
:class:`~nbbench.probes.storage.io_session.Session` (one test file for the whole table).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ...results import ProbeError
from ...results.storage import DiskPresetResult, IoJobResult
from .._engines import devlimits, registry
from .._engines.registry import IoJob
from .io_args import DEFAULT_READ_FILE, check_engine, check_jobs, duration_arg, os_error, size_arg
from .io_job import fill_job_result, run_job, stage_progress
from .io_session import Session
from .target import inspect

__all__ = ["preset", "PRESETS"]


# (test name, op pattern, block size, queue depth, T: jobs — independent processes, as fio's numjobs)
PRESETS: dict[str, dict[str, Any]] = {
    "cdm": {
        "title": "CrystalDiskMark default set",
        "tests": [
            ("SEQ1M Q8T1", "seq", 1 << 20, 8, 1),
            ("SEQ1M Q1T1", "seq", 1 << 20, 1, 1),
            ("RND4K Q32T1", "rand", 4096, 32, 1),
            ("RND4K Q1T1", "rand", 4096, 1, 1),
        ],
    },
    "cdm-nvme": {
        "title": "CrystalDiskMark NVMe SSD set (T16: 16 jobs)",
        "tests": [
            ("SEQ1M Q8T1", "seq", 1 << 20, 8, 1),
            ("SEQ128K Q32T1", "seq", 128 << 10, 32, 1),
            ("RND4K Q32T16", "rand", 4096, 32, 16),
            ("RND4K Q1T1", "rand", 4096, 1, 1),
        ],
    },
    "mlperf-resnet50": {
        "title": "MLPerf Storage ResNet-50-like: random reads of ~115 KB samples (112 KiB, 4 KiB aligned)",
        "tests": [
            ("RND112K Q1T1", "rand", 112 << 10, 1, 1),
            ("RND112K Q8T1", "rand", 112 << 10, 8, 1),
            ("RND112K Q32T1", "rand", 112 << 10, 32, 1),
        ],
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


def preset(
    path,
    preset="cdm",
    size="1G",
    runtime=5,
    ramp=1,
    direct=None,
    engine=registry.DEFAULT,
    progress=None,
    cancel=None,
    write=None,
    buffers="pages",
    jobs=1,
    threads=1,
) -> DiskPresetResult:
    """A preset set of tests on ``path`` (a path or a :class:`~nbbench.probes.storage.target.StorageTarget`)
    as one table: ``cdm`` (CrystalDiskMark's SEQ1M Q8T1, SEQ1M Q1T1,
    RND4K Q32T1, RND4K Q1T1, read and — in a directory — write), ``mlperf-resnet50`` (random
    reads of ~115 KB samples) or ``mlperf-unet3d`` (~147 MB samples).

    ``size``: the test file (a new temp file in a directory; the first ``size`` bytes of a file
    or device, read only).  ``runtime``/``ramp`` per test (seconds).  ``write``: None = write
    tests where the preset has them and PATH is a directory; True on a file/device is refused.
    ``jobs``: every test runs T × ``jobs`` jobs (independent processes; ``threads`` is a
    deprecated alias).  Other parameters (``buffers`` too) as :func:`~nbbench.probes.storage.disk.randread`.
    """
    if preset not in PRESETS:
        raise ProbeError(f"unknown preset {preset!r}: choose from {', '.join(PRESETS)}")
    p = PRESETS[preset]
    jobs, deprecated = check_jobs(jobs, threads)
    engine = check_engine(engine)
    devlimits.check_buffers(buffers)
    runtime_s = duration_arg(runtime, "runtime")
    ramp_s = duration_arg(ramp, "ramp")
    jobs_of = [
        IoJob(engine=engine, pattern=pat, bs=bs, qd=qd, runtime=runtime_s, ramp=ramp_s, jobs=t * jobs, buffers=buffers)
        for _, pat, bs, qd, t in p["tests"]
    ]
    for job in jobs_of:  # every row's job, before the file is written
        registry.check(job, f"disk --preset {preset}")
    target = inspect(path, write=bool(write))
    region = target.read_region(None if size is None else size_arg(size, "size"), DEFAULT_READ_FILE)
    region = max(region, p.get("min_size", 0)) if target.kind == "dir" else min(region, target.size)
    region = (region // (1 << 20)) * (1 << 20) or region
    do_write = target.kind == "dir" and not p.get("reads_only") and write is not False
    target.ensure_room(region)
    tests = p["tests"]
    params = {
        "path": target.path,
        "preset": preset,
        "size": region,
        "runtime": runtime_s,
        "ramp": ramp_s,
        "direct": direct,
        "engine": engine,
        "write": do_write,
        "buffers": buffers,
        "jobs": jobs,
    }
    res = DiskPresetResult(params=params)
    if deprecated:
        res.warn(deprecated)
    ops = ["read", "write"] if do_write else ["read"]
    n_jobs = len(tests) * len(ops)
    fill = region if target.kind == "dir" else 0
    rows: list[dict] = []
    outs: list = []
    interrupted = False
    failed = None
    with Session(target, direct, "disk", fill=fill, cancel=cancel, progress=progress, engine=engine) as s:
        if s.interrupted:
            res.labels = s.base_labels(engine, "direct" if s.direct else "buffered-cold")
            return res.finish("interrupted", "cancelled while writing the test file")
        k = 0
        cache_mode = "direct"
        for row, (test, pattern, bs, qd, t) in enumerate(tests):
            for op in ops:
                if cancel is not None and cancel.is_set():
                    interrupted = True
                    break
                lo = 0.15 + 0.85 * k / n_jobs if fill else k / n_jobs
                hi = 0.15 + 0.85 * (k + 1) / n_jobs if fill else (k + 1) / n_jobs
                k += 1
                sub = IoJobResult(
                    params={
                        "path": target.path,
                        "test": test,
                        "op": op,
                        "pattern": pattern,
                        "bs": bs,
                        "qd": qd,
                        "jobs": t * jobs,
                        "runtime": runtime_s,
                        "ramp": ramp_s,
                        "size": region,
                        "engine": engine,
                        "buffers": buffers,
                    }
                )
                try:
                    cache_mode = s.prepare_read(region) if op == "read" else ("direct" if s.direct else "buffered")
                    job = dataclasses.replace(
                        jobs_of[row],
                        op=op,
                        region=region,
                        cache_mode=cache_mode,
                        cancel=cancel,
                        progress=stage_progress(progress, lo, hi),
                    )
                    out = run_job(s, job)
                except OSError as exc:
                    raise os_error(exc, s.path, s.direct) from None
                failed = fill_job_result(sub, s, out, engine, cache_mode, op, region, bs)
                outs.append(out)
                if "sample_bytes" in p:
                    sub.metrics["samples_per_s"] = sub.metrics[f"{op}_bytes_per_s"] / p["sample_bytes"]
                sub.finish("failed" if failed else "interrupted" if out.interrupted else "ok", failed)
                rows.append(sub.to_dict())
                pre = test.lower().replace(" ", "_")
                res.metrics[f"{pre}_{op}_bytes_per_s"] = sub.metrics[f"{op}_bytes_per_s"]
                res.metrics[f"{pre}_{op}_iops"] = sub.metrics["iops"]
                res.metrics[f"{pre}_{op}_lat_mean_ns"] = sub.metrics.get("lat_mean_ns")
                if out.interrupted:
                    interrupted = True
                if interrupted or failed:
                    break
            if interrupted or failed:
                break
        res.samples["rows"] = rows
        res.labels = s.base_labels(engine, "direct" if s.direct else "buffered-cold")
        res.labels["preset"] = p["title"]
        # the table's largest request: its limits and split (each row carries its own too)
        devlimits.annotate(res, target.path, max(t[2] for t in tests), buffers, engine, s.direct, outs, target=target)
        for w in s.warnings:
            res.warn(w)
        if target.kind != "dir" and not p.get("reads_only"):
            res.warn(
                "write tests need a directory (nbbench never writes to an existing file or device): "
                "only reads were measured"
            )
    if failed:
        return res.finish("failed", f"{failed} (test {rows[-1]['params']['test']})")
    if interrupted:
        return res.finish("interrupted", "cancelled; the table holds the tests done before")
    return res.finish()
