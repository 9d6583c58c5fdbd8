"""Shards: read a set of large files the way streaming loaders do (WebDataset, MDS, Parquet).

:func:`shards` finds the shards under a directory (:func:`find_shards`: ``.tar`` shards,
else ``.bin`` / ``.parquet`` / ``.mds`` / … chunks, else any file of ``min_size`` or more),
shuffles them (seeded) and deals them out to ``streams`` parallel streams, each reading
its files whole, one after another, sequentially with a ``bs`` buffer — as each
DataLoader worker of a streaming dataset reads its own shards.  Two passes: **cold**
(every file's pages dropped first with ``posix_fadvise(DONTNEED)``, outside the timed
window, checked with ``mincore``) and **warm** (the same reads again, from the page
cache).  It reports the aggregate rate, each stream's, the time to the first byte of
each shard (percentiles, fio's histogram) and, for tar shards, the samples per second:
members are grouped into WebDataset samples by key while the bytes go by
(:class:`~nbbench.probes.shards.tarwalk.TarWalker`; nothing is read twice).

Read-only: files are opened ``O_RDONLY`` (``O_NOATIME`` where permitted) and never
changed.  No torch needed.  ``rank`` / ``world_size``: this process reads only the
shards whose stable hash (:func:`shard_rank`, of the path relative to the directory)
falls to it, so ranks together read every shard once.
"""

from __future__ import annotations

import os
import random
import threading
import time
from array import array

from ...progress import call_progress
from ...results import ProbeError
from ...results.hist import LatencyHistogram
from ...results.shards import ShardsResult
from ...units import format_bytes, parse_size
from ..storage.files import _open_noatime, shard_of
from ..storage.target import inspect
from .tarwalk import TarWalker

__all__ = ["shards", "find_shards", "shard_rank", "plan_streams", "CHUNK_EXTENSIONS", "ShardsResult", "file_source"]

CHUNK_EXTENSIONS = (".bin", ".parquet", ".mds", ".arrow", ".tfrecord", ".tfrecords", ".npy", ".zst")


def shard_rank(relpath: str, world_size: int) -> int:
    """The rank (0 … world_size-1) that reads a shard: :func:`nbbench.probes.storage.files.shard_of`, the one
    stable split of paths over ranks (the files probe splits a tree the same way)."""
    return shard_of(relpath, world_size)


def find_shards(root: str, min_size: int = 1 << 20) -> tuple[list[tuple[str, int]], str]:
    """(path, size) of the shards under ``root`` (recursive, sorted) and their format.

    ``.tar`` files when there are any ("tar"); else the known chunk extensions ("chunks");
    else every regular file of ``min_size`` bytes or more ("files").  Hidden names and
    nbbench's own temporary files are left out; symlinks are not followed.
    """
    every: list[tuple[str, int]] = []
    stack = [root]
    while stack:
        d = stack.pop()
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        for e in entries:
            if e.name.startswith("."):
                continue
            try:
                if e.is_dir(follow_symlinks=False):
                    stack.append(e.path)
                elif e.is_file(follow_symlinks=False):
                    every.append((e.path, e.stat(follow_symlinks=False).st_size))
            except OSError:
                continue
    every.sort()
    tars = [f for f in every if f[0].lower().endswith(".tar")]
    if tars:
        return tars, "tar"
    chunks = [f for f in every if f[0].lower().endswith(CHUNK_EXTENSIONS)]
    if chunks:
        return chunks, "chunks"
    return [f for f in every if f[1] >= min_size], "files"


def plan_streams(files: list[tuple[str, int]], streams: int, seed: int = 0) -> list[list[tuple[str, int]]]:
    """The files shuffled (seeded) and dealt out: stream ``i`` reads ``shuffled[i::streams]`` in that order."""
    order = list(files)
    random.Random(seed).shuffle(order)
    return [order[i::streams] for i in range(streams)]


def shards(path, streams: int | None = None, bs="1M", min_size="1M", cold: bool = True, warm: bool = True,
           seed: int = 0, max_bytes=None, rank: int = 0, world_size: int = 1, progress=None, cancel=None,
           ready=None, endpoint_url: str | None = None, region: str | None = None) -> ShardsResult:
    """Read the shards under ``path`` with ``streams`` parallel sequential streams, cold then warm.

    streams: default the usable CPUs (at most one per shard).  bs: each read's size (1 MiB).
    min_size: the smallest file counted as a shard when the folder holds no ``.tar`` or known
        chunk files.  max_bytes: read at most this much (a seeded random subset of the shards);
        default half the memory the page cache can use (so the warm pass is warm), 0: all.
    rank, world_size: read only this rank's shards (:func:`shard_rank`).
    ready: ``ready(phase)`` just before each timed pass ("read", "read_warm").
    An ``s3://BUCKET/PREFIX`` path streams the objects instead (:mod:`.objects.s3shards`; ``endpoint_url``
    and ``region`` for S3-compatible stores): one pass, from the store, the same figures.
    """
    if str(path).startswith("s3://"):
        from ..objects.s3shards import s3_shards

        return s3_shards(str(path), streams=streams, bs=bs, seed=seed, max_bytes=max_bytes, rank=rank,
                         world_size=world_size, progress=progress, cancel=cancel, ready=ready,
                         endpoint_url=endpoint_url, region=region)
    from ...env import usable_cpus
    from .._engines import cache

    bs_b, min_b = parse_size(bs), parse_size(min_size)
    if bs_b < 1:
        raise ProbeError("bs must be at least 1 byte")
    if not (cold or warm):
        raise ProbeError("nothing to do: both the cold and the warm pass are off")
    rank, world_size = int(rank), int(world_size)
    if world_size < 1 or not 0 <= rank < world_size:
        raise ProbeError(f"rank must be in 0…{world_size - 1}, not {rank}")
    target = inspect(path, write=False, read=False)
    if target.kind != "dir":
        raise ProbeError(f"{target.path} is not a directory: shards reads the shard files of a folder")
    found, fmt = find_shards(target.path, min_b)
    if not found:
        raise ProbeError(f"no shards under {target.path}: no .tar files, no {'/'.join(CHUNK_EXTENSIONS)} chunks and "
                         f"no file of {format_bytes(min_b, binary=True)} or more (--min-size) "
                         "— nbbench make-dataset DIR --shards 8 makes a set to try")
    mine = [f for f in found if shard_rank(os.path.relpath(f[0], target.path), world_size) == rank]
    ram = cache.memory_bytes()
    cap = (ram // 2 if ram else None) if max_bytes is None else (parse_size(max_bytes) or None)
    picked = _subset(mine, cap, seed)
    n_streams = max(1, min(int(streams) if streams else usable_cpus()["usable_int"], len(picked) or 1))
    params = {"path": target.path, "streams": n_streams, "bs": bs_b, "min_size": min_b, "cold": bool(cold),
              "warm": bool(warm), "seed": seed, "max_bytes": max_bytes, "rank": rank, "world_size": world_size}
    res = ShardsResult(params=params)
    res.labels.update({"engine": "builtin", "cache": "buffered-cold" if cold else "buffered-warm", **target.labels(),
                       "shard_format": fmt, "order": f"shuffled (seed {seed}), dealt round-robin to the streams"})
    total = sum(s for _, s in picked)
    res.metrics.update({"shards_found_count": len(found), "dataset_total_bytes": sum(s for _, s in found),
                        "shards_count": len(picked), "streams_count": n_streams})
    if world_size > 1:
        res.labels["rank"] = f"{rank} of {world_size}: the shards whose hash(relative path) % {world_size} == {rank}"
    if len(picked) < len(mine):
        res.labels["subset"] = (f"{len(picked)} of {len(mine)} shards (seed {seed}), "
                                f"{format_bytes(total, binary=True)}: --max-bytes")
    if not picked:
        return res.fail("no shard falls to this rank" if mine == [] else "no shard fits in --max-bytes")
    if streams and int(streams) > len(picked):
        res.warn(f"{streams} streams asked for {len(picked)} shards: {n_streams} streams, one shard each")
    if target.memory:
        res.labels.update({"cache": "memory", "cache_drop": "none (the data live in RAM)"})
        res.warn(target.memory_warning())
    elif warm and ram and total > ram // 2:
        res.warn(f"the {format_bytes(total)} read are more than half the {format_bytes(ram)} the page cache can use: "
                 "the warm pass is partly cold (--max-bytes reads a subset)")
    plan = plan_streams(picked, n_streams, seed)
    passes = (["cold"] if cold else []) + (["warm"] if warm else [])
    tar = fmt == "tar"
    out: dict = {}
    for i, which in enumerate(passes):
        if cancel is not None and cancel.is_set():
            return res.finish("interrupted", f"stopped before the {which} pass")
        if which == "cold" and not target.memory:
            _drop(res, picked)
        elif which == "warm" and not cold:
            _read_once(picked, bs_b, cancel)
        if ready is not None:
            ready("read" if which == "cold" else "read_warm")
        res.extra.setdefault("t0_unix", {})["read" if which == "cold" else "read_warm"] = time.time()
        sub = None if progress is None else (
            lambda f, m, i=i: call_progress(progress, None if f is None else (i + f) / len(passes), m))
        out = _pass(plan, bs_b, tar, cancel, sub)
        _keep(res, which, out, tar)
        if out["interrupted"]:
            return res.finish("interrupted", f"stopped during the {which} pass; the figures cover what was read")
        if out["errors"]:
            res.warn(f"{out['errors']} shards could not be read and were skipped (first: {out['first_error']})")
    if out.get("tar_errors"):
        res.warn(f"{out['tar_errors']} .tar shards are not valid tar files past some point (first: "
                 f"{out['first_tar_error']}): their samples are counted up to there")
    m = res.metrics
    call_progress(progress, 1.0, {k: m[k] for k in ("read_bytes_per_s", "read_warm_bytes_per_s") if k in m})
    return res.finish()


def _subset(files, cap: int | None, seed: int):
    if cap is None or sum(s for _, s in files) <= cap:
        return list(files)
    order = list(files)
    random.Random(seed).shuffle(order)
    out, total = [], 0
    for f in order:
        if total + f[1] > cap and out:
            break
        out.append(f)
        total += f[1]
    return sorted(out)


def _drop(res: ShardsResult, files) -> None:
    from .._engines import cache

    size = resident = 0.0
    failed = None
    for p, s in files:
        try:
            fd = _open_noatime(p)
        except OSError as exc:
            failed = failed or f"{p}: {exc.strerror or exc}"
            continue
        try:   # dirty pages (a shard just written) cannot be dropped: written back first, as feed's eviction does
            ok, why = cache.drop_file(fd, 0, writable=True)
            if not ok:
                failed = failed or why
            frac = cache.resident_fraction(fd, s)
        finally:
            os.close(fd)
        size += s
        resident += (frac or 0.0) * s
    pct = 100.0 * resident / size if size else 0.0
    res.labels["cache_drop"] = "posix_fadvise(DONTNEED) per shard, checked with mincore"
    res.metrics["cold_resident_pct"] = pct
    if failed or pct > 5:
        res.labels["cache"] = "buffered-warm"
        res.warn(f"the page cache could not be emptied for the shards ({pct:.0f} % still cached"
                 f"{'; ' + failed if failed else ''}): the cold pass is partly warm")


def _read_once(files, bs: int, cancel) -> None:
    buf = bytearray(bs)
    for p, _ in files:
        if cancel is not None and cancel.is_set():
            return
        try:
            fd = _open_noatime(p)
        except OSError:
            continue
        try:
            while os.readv(fd, [buf]) > 0:
                pass
        finally:
            os.close(fd)


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


def _pass(plan, bs: int, tar: bool, cancel, progress, source=file_source) -> dict:
    """Every stream of ``plan`` in its own thread; the aggregate and per-stream figures.
    ``source(path)`` opens one shard for reading (:func:`file_source`; an S3 object's GET)."""
    n = len(plan)
    stop = threading.Event()
    counts = [[0, 0] for _ in range(n)]       # bytes, shards done (read by the monitor)
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
    per = [{"stream": i, "shards": counts[i][1], "bytes": counts[i][0],
            "seconds": ((ends[i] or end) - t0) / 1e9} for i in range(n)]
    for s in per:
        s["bytes_per_s"] = s["bytes"] / s["seconds"] if s["seconds"] > 0 else None
    return {"bytes": sum(c[0] for c in counts), "elapsed_s": (end - t0) / 1e9, "streams": per, "hist": hist,
            "windows": windows, "interrupted": interrupted, "errors": len(errors),
            "first_error": errors[0] if errors else None,
            "members": sum(w["members"] for w in walk), "samples": sum(w["samples"] for w in walk),
            "tar_errors": sum(w["errors"] for w in walk),
            "first_tar_error": next((w["first"] for w in walk if w["first"]), None)}


def _keep(res: ShardsResult, which: str, out: dict, tar: bool) -> None:
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
    res.samples[f"{pre}streams"] = {k: [s[k] for s in out["streams"]]
                                    for k in ("stream", "shards", "bytes", "seconds", "bytes_per_s")}
    res.samples[f"{pre}bw"] = out["windows"]
