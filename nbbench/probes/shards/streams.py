"""One pass of the shards probe: ``streams`` threads, each reading its shards whole, one after another,
sequentially with one buffer (:func:`read_pass`; a shard opened by :func:`file_source`, or an S3 object's
GET), the time to each shard's first byte and, for tar shards, the WebDataset samples walked as the bytes
go by; and that pass's figures into the result (:func:`keep_pass`).
"""

from __future__ import annotations

import os
import threading
import time
from array import array

from ...progress import call_progress
from ...results import ProbeError
from ...results.hist import LatencyHistogram
from ...results.storage.shards import ShardsResult
from ..storage.files import _open_noatime
from .tarwalk import TarWalker

__all__ = ["read_pass", "keep_pass", "file_source"]


def file_source(path: str):
    """How a stream reads a shard file: ``(read(bufs) -> bytes read, close())``, opened read-only."""
    try:
        fd = _open_noatime(path)
    except OSError as exc:
        raise ProbeError(f"{path}: {exc.strerror or exc}") from None

    def read(bufs) -> int:
        try:
            return os.readv(fd, bufs)
        except OSError as exc:
            raise ProbeError(f"{path}: {exc.strerror or exc}") from None

    return read, lambda: os.close(fd)


def read_pass(plan, bs: int, tar: bool, cancel, progress, source=file_source) -> dict:
    """Every stream of ``plan`` in its own thread; the aggregate and per-stream figures.
    ``source(path)`` opens one shard for reading (:func:`file_source`; an S3 object's GET)."""
    n = len(plan)
    stop = threading.Event()
    counts = [[0, 0] for _ in range(n)]  # bytes, shards done (read by the monitor)
    ttfb = [array("q") for _ in range(n)]
    ends = [0] * n
    walk = [{"members": 0, "samples": 0, "errors": 0, "first": None} for _ in range(n)]
    errors: list[str] = []
    pc = time.perf_counter_ns

    def stream(i: int) -> None:
        buf = bytearray(bs)
        view, bufs = memoryview(buf), [buf]
        c, w = counts[i], walk[i]
        for p, _ in plan[i]:
            if stop.is_set():
                break
            t = pc()
            try:
                read, close = source(p)
            except ProbeError as exc:
                errors.append(str(exc))
                continue
            walker = TarWalker() if tar else None
            first = True
            try:
                while not stop.is_set():
                    k = read(bufs)
                    if first:
                        ttfb[i].append(pc() - t)
                        first = False
                    if k <= 0:
                        break
                    c[0] += k
                    if walker is not None and not walker.ended:
                        walker.feed(view[:k])
            except ProbeError as exc:
                errors.append(str(exc))
            finally:
                close()
            c[1] += 1
            if walker is not None:
                w["members"] += walker.members
                w["samples"] += walker.samples
                if walker.error:
                    w["errors"] += 1
                    w["first"] = w["first"] or f"{os.path.basename(p)}: {walker.error}"
        ends[i] = pc()

    total = sum(s for lst in plan for _, s in lst) or 1
    threads = [threading.Thread(target=stream, args=(i,), daemon=True, name=f"nbbench-shards-{i}") for i in range(n)]
    t0 = pc()
    for t in threads:
        t.start()
    windows = {"t_s": [], "read_bytes_per_s": []}
    next_win, last_b, interrupted = t0 + 500_000_000, 0, False
    while any(t.is_alive() for t in threads):
        time.sleep(0.01)
        if cancel is not None and cancel.is_set():
            interrupted = True
            stop.set()
            break
        now = pc()
        if now >= next_win:
            b = sum(c[0] for c in counts)
            windows["t_s"].append(round((next_win - t0) / 1e9, 3))
            windows["read_bytes_per_s"].append((b - last_b) / 0.5)
            last_b, next_win = b, next_win + 500_000_000
            call_progress(progress, b / total, {"read_bytes_per_s": windows["read_bytes_per_s"][-1]})
    for t in threads:
        t.join()
    end = max(e or pc() for e in ends)
    hist = LatencyHistogram()
    for a in ttfb:
        hist.add_many(a)
    per = [
        {"stream": i, "shards": counts[i][1], "bytes": counts[i][0], "seconds": ((ends[i] or end) - t0) / 1e9}
        for i in range(n)
    ]
    for s in per:
        s["bytes_per_s"] = s["bytes"] / s["seconds"] if s["seconds"] > 0 else None
    return {
        "bytes": sum(c[0] for c in counts),
        "elapsed_s": (end - t0) / 1e9,
        "streams": per,
        "hist": hist,
        "windows": windows,
        "interrupted": interrupted,
        "errors": len(errors),
        "first_error": errors[0] if errors else None,
        "members": sum(w["members"] for w in walk),
        "samples": sum(w["samples"] for w in walk),
        "tar_errors": sum(w["errors"] for w in walk),
        "first_tar_error": next((w["first"] for w in walk if w["first"]), None),
    }


def keep_pass(res: ShardsResult, which: str, out: dict, tar: bool) -> None:
    m, el = res.metrics, out["elapsed_s"]
    warm = which == "warm"
    rate = out["bytes"] / el if el > 0 else float("nan")
    m["read_warm_bytes_per_s" if warm else "read_bytes_per_s"] = rate
    m["warm_elapsed_s" if warm else "elapsed_s"] = el
    m["read_warm_total_bytes" if warm else "read_total_bytes"] = out["bytes"]
    pre = "warm_" if warm else ""
    rates = [s["bytes_per_s"] for s in out["streams"] if s["bytes_per_s"] is not None]
    if rates:
        m[f"{pre}stream_min_bytes_per_s"] = min(rates)
        m[f"{pre}stream_max_bytes_per_s"] = max(rates)
    if out["hist"].n:
        pcts = out["hist"].percentiles((50.0, 90.0, 99.0))
        for p in (50, 90, 99):
            m[f"{pre}ttfb_p{p}_ns"] = pcts[float(p)]
        res.samples[f"{pre}ttfb_hist"] = out["hist"].to_dict()
    if tar:
        m[f"{pre}samples_per_s"] = out["samples"] / el if el > 0 else float("nan")
        m["samples_count"] = out["samples"]
        m["members_count"] = out["members"]
        res.extra["tar_errors"] = out["tar_errors"]
    res.samples[f"{pre}streams"] = {
        k: [s[k] for s in out["streams"]] for k in ("stream", "shards", "bytes", "seconds", "bytes_per_s")
    }
    res.samples[f"{pre}bw"] = out["windows"]
