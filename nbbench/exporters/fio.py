"""Disk results as fio-shaped JSON (``fio --output-format=json``), so tools that read fio's
output (fio2gnuplot-style scripts, dashboards) can take nbbench's numbers too.

Figures that nbbench did not measure are left out rather than made up; the document says
it was written by nbbench, not fio.
"""

from __future__ import annotations

import re
import time
from typing import Any

from ..results import Result
from ..units import parse_size
from ..version import __version__

__all__ = ["is_disk_result", "to_fio", "DISK_KINDS"]

DISK_KINDS = {"dd", "randread", "randwrite", "io", "fio", "disk", "seqread", "seqwrite"}
_PCT = re.compile(r"^(?:(read|write)_)?(?:c?lat)_p(\d+)(?:_(\d+))?_ns$")


def is_disk_result(r: Result) -> bool:
    return r.kind in DISK_KINDS or r.kind.startswith("disk")


def _dir(r: Result, d: str, single: bool) -> dict[str, Any] | None:
    m = r.metrics
    pre = f"{d}_"

    def get(key):
        v = m.get(pre + key)
        if v is None and single:
            v = m.get(key)
        return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    bw = get("bytes_per_s")
    iops = get("iops")
    if bw is None and iops is None:
        return None
    out: dict[str, Any] = {}
    bs = r.params.get("bs_bytes") or r.params.get("bs")
    if isinstance(bs, str):
        try:
            bs = parse_size(bs)
        except ValueError:
            bs = None
    if iops is None and bw is not None and isinstance(bs, int) and bs > 0:
        iops = bw / bs
    runtime_s = get("s") or get("elapsed_s") or get("runtime_s")
    io_bytes = get("total_bytes") or get("bytes") or get("io_bytes") or (bw * runtime_s if bw and runtime_s else None)
    if io_bytes is not None:
        out["io_bytes"] = int(io_bytes)
        out["io_kbytes"] = int(io_bytes // 1024)
    if bw is not None:
        out["bw_bytes"] = int(bw)
        out["bw"] = int(bw // 1024)  # KiB/s, as fio writes it
    if iops is not None:
        out["iops"] = float(iops)
    if runtime_s is not None:
        out["runtime"] = int(round(runtime_s * 1000))  # ms
    if io_bytes is not None and isinstance(bs, int) and bs > 0:
        out["total_ios"] = int(io_bytes // bs)
    lat: dict[str, Any] = {}
    pct: dict[str, float] = {}
    for k, v in m.items():
        mm = _PCT.match(k)
        if not mm or not isinstance(v, (int, float)):
            continue
        kd, whole, frac = mm.groups()
        if kd not in (None, d) or (kd is None and not single):
            continue
        p = float(f"{whole}.{frac}" if frac else whole)
        pct[f"{p:.6f}"] = int(v)
    for stat in ("min", "max", "mean", "stddev"):
        v = get(f"lat_{stat}_ns")
        if v is not None:
            lat[stat] = v
    if pct:
        lat["percentile"] = dict(sorted(pct.items(), key=lambda kv: float(kv[0])))
    if lat:
        lat.setdefault("N", out.get("total_ios", 0))
        out["clat_ns"] = lat
    return out


def to_fio(results: list[Result], version: str = "") -> dict[str, Any]:
    """A fio JSON document with one job per disk result (others are skipped)."""
    jobs = []
    for r in results:
        if not is_disk_result(r):
            continue
        has = {d: any(k.startswith(d + "_") for k in r.metrics) for d in ("read", "write")}
        single = not (has["read"] and has["write"])
        opts: dict[str, Any] = {}
        for k in ("bs", "size", "iodepth", "qd", "numjobs", "runtime", "engine", "ioengine"):
            if k in r.params:
                opts["iodepth" if k == "qd" else k] = str(r.params[k])
        if r.params.get("path"):
            opts["filename" if r.labels.get("target") in ("file", "block") else "directory"] = str(r.params["path"])
        cache = r.labels.get("cache")
        if cache is not None:
            opts["direct"] = "1" if "direct" in str(cache) else "0"
        if r.labels.get("engine"):
            opts.setdefault("ioengine", str(r.labels["engine"]))
        opts["rw"] = {"dd": "write,read", "randread": "randread"}.get(r.kind, r.kind)
        job: dict[str, Any] = {
            # the user's label names the job (as fio's --name would), else the kind and run id
            "jobname": str(r.labels.get("label") or (f"{r.kind}-{r.run_id}" if r.run_id is not None else r.kind)),
            "groupid": 0,
            "error": 0 if r.status == "ok" else 1,
            "job options": opts,
            "nbbench": {"kind": r.kind, "run_id": r.run_id, "status": r.status, "labels": r.labels, "env_id": r.env_id},
        }
        for d in ("read", "write"):
            part = _dir(r, d, single=single and (d == "read" or not has["read"]))
            if part is not None:
                job[d] = part
        if r.duration_s is not None:
            job["job_runtime"] = int(round(r.duration_s * 1000))
        jobs.append(job)
    now = time.time()
    return {
        "fio version": f"nbbench-{version or __version__} (fio-shaped; not measured by fio)",
        "timestamp": int(now),
        "timestamp_ms": int(now * 1000),
        "time": time.strftime("%a %b %d %H:%M:%S %Y", time.localtime(now)),
        "global options": {},
        "jobs": jobs,
    }
