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
(:class:`~nbbench.probes.shards.tarwalk.TarWalker`; nothing is read twice).  A pass's streams are
:mod:`.streams`'s.

Read-only: files are opened ``O_RDONLY`` (``O_NOATIME`` where permitted) and never
changed.  No torch needed.  ``rank`` / ``world_size``: this process reads only the
shards whose stable hash (:func:`shard_rank`, of the path relative to the directory)
falls to it, so ranks together read every shard once.
"""

from __future__ import annotations

import os
import random
import time

from ...env import usable_cpus
from ...progress import call_progress
from ...results import ProbeError
from ...results.storage.shards import ShardsResult
from ...units import format_bytes, parse_size
from .._engines import cache, registry
from ..storage.files import _open_noatime, shard_of
from ..storage.target import inspect
from .streams import keep_pass, read_pass

__all__ = ["shards", "find_shards", "shard_rank", "plan_streams", "CHUNK_EXTENSIONS", "ShardsResult"]

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


def shards(
    path,
    streams: int | None = None,
    bs="1M",
    min_size="1M",
    cold: bool = True,
    warm: bool = True,
    seed: int = 0,
    max_bytes=None,
    rank: int = 0,
    world_size: int = 1,
    progress=None,
    cancel=None,
    ready=None,
    endpoint_url: str | None = None,
    region: str | None = None,
) -> ShardsResult:
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
        # here, not at the top: ..objects.s3shards imports this module
        from ..objects.s3shards import s3_shards

        return s3_shards(
            str(path),
            streams=streams,
            bs=bs,
            seed=seed,
            max_bytes=max_bytes,
            rank=rank,
            world_size=world_size,
            progress=progress,
            cancel=cancel,
            ready=ready,
            endpoint_url=endpoint_url,
            region=region,
        )

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
        raise ProbeError(
            f"no shards under {target.path}: no .tar files, no {'/'.join(CHUNK_EXTENSIONS)} chunks and "
            f"no file of {format_bytes(min_b, binary=True)} or more (--min-size) "
            "— nbbench make-dataset DIR --shards 8 makes a set to try"
        )
    mine = [f for f in found if shard_rank(os.path.relpath(f[0], target.path), world_size) == rank]
    ram = cache.memory_bytes()
    cap = (ram // 2 if ram else None) if max_bytes is None else (parse_size(max_bytes) or None)
    picked = _subset(mine, cap, seed)
    n_streams = max(1, min(int(streams) if streams else usable_cpus()["usable_int"], len(picked) or 1))
    params = {
        "path": target.path,
        "streams": n_streams,
        "bs": bs_b,
        "min_size": min_b,
        "cold": bool(cold),
        "warm": bool(warm),
        "seed": seed,
        "max_bytes": max_bytes,
        "rank": rank,
        "world_size": world_size,
    }
    res = ShardsResult(params=params)
    res.labels.update(
        {
            "engine": registry.BUILTIN.name,
            "cache": "buffered-cold" if cold else "buffered-warm",
            **target.labels(),
            "shard_format": fmt,
            "order": f"shuffled (seed {seed}), dealt round-robin to the streams",
        }
    )
    total = sum(s for _, s in picked)
    res.metrics.update(
        {
            "shards_found_count": len(found),
            "dataset_total_bytes": sum(s for _, s in found),
            "shards_count": len(picked),
            "streams_count": n_streams,
        }
    )
    if world_size > 1:
        res.labels["rank"] = f"{rank} of {world_size}: the shards whose hash(relative path) % {world_size} == {rank}"
    if len(picked) < len(mine):
        res.labels["subset"] = (
            f"{len(picked)} of {len(mine)} shards (seed {seed}), {format_bytes(total, binary=True)}: --max-bytes"
        )
    if not picked:
        return res.fail("no shard falls to this rank" if mine == [] else "no shard fits in --max-bytes")
    if streams and int(streams) > len(picked):
        res.warn(f"{streams} streams asked for {len(picked)} shards: {n_streams} streams, one shard each")
    if target.memory:
        res.labels.update({"cache": "memory", "cache_drop": "none (the data live in RAM)"})
        res.warn(target.memory_warning())
    elif warm and ram and total > ram // 2:
        res.warn(
            f"the {format_bytes(total)} read are more than half the {format_bytes(ram)} the page cache can use: "
            "the warm pass is partly cold (--max-bytes reads a subset)"
        )
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
        sub = (
            None
            if progress is None
            else (lambda f, m, i=i: call_progress(progress, None if f is None else (i + f) / len(passes), m))
        )
        out = read_pass(plan, bs_b, tar, cancel, sub)
        keep_pass(res, which, out, tar)
        if out["interrupted"]:
            return res.finish("interrupted", f"stopped during the {which} pass; the figures cover what was read")
        if out["errors"]:
            res.warn(f"{out['errors']} shards could not be read and were skipped (first: {out['first_error']})")
    if out.get("tar_errors"):
        res.warn(
            f"{out['tar_errors']} .tar shards are not valid tar files past some point (first: "
            f"{out['first_tar_error']}): their samples are counted up to there"
        )
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
    size = resident = 0.0
    failed = None
    for p, s in files:
        try:
            fd = _open_noatime(p)
        except OSError as exc:
            failed = failed or f"{p}: {exc.strerror or exc}"
            continue
        try:  # dirty pages (a shard just written) cannot be dropped: written back first, as feed's eviction does
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
        res.warn(
            f"the page cache could not be emptied for the shards ({pct:.0f} % still cached"
            f"{'; ' + failed if failed else ''}): the cold pass is partly warm"
        )


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
