"""How many accelerators can this storage and CPU feed?

:func:`feed` reads an image folder with the built-in
:class:`~nbbench.probes.pipeline.imagefolder.ImageFolderDataset` through a DataLoader
(loader alone: the input pipeline's ceiling) twice, DS-Analyzer's differential way:

* **cold**: the files' pages are first evicted from the page cache (per file
  ``posix_fadvise(POSIX_FADV_DONTNEED)``, or ``/proc/sys/vm/drop_caches`` when asked
  and root), so every file comes from storage: fetch + preparation;
* **warm**: every file is read once first, so they come from memory: preparation only.

The measured rate against each accelerator's need at AU >= 90 % answers how many such
accelerators it can keep fed.  What limits it (:mod:`nbbench.probes.pipeline.feedlimit`): if
even the warm rate falls short of what the accelerators asked for need, CPU
preparation (decoding, cropping) does; if only the cold rate falls short, storage
fetch does; if both meet it, storage fetch only when the cold runs are clearly slower
and the warm rate would feed more.  Files are only ever opened read-only.  torch is
needed (``pip install 'nbbench[torch]'``).
"""

from __future__ import annotations

import os
import random
import statistics
import time

from ...accelerators import AU_TARGET_PCT, get_accelerator
from ...env import usable_cpus
from ...progress import call_progress
from ...results import ProbeError
from ...results.pipeline.feed import FeedResult
from ...units import format_bytes
from ..objects.client import endpoint_labels
from .dataloader import close_loader, make_loader, require_torch
from .feedlimit import feed_answer, feed_limits, per_accelerator
from .imagefolder import ImageFolderDataset
from .loader import bench_loader
from .stallwindow import quota_note

__all__ = ["feed", "FeedResult", "evict_files", "warm_files", "COLD_METHODS"]

COLD_METHODS = ("auto", "fadvise", "drop_caches", "none")


def evict_files(paths, method: str = "fadvise", cancel=None) -> dict:
    """Drop the page cache of ``paths``; returns what was done.

    ``fadvise``: per file POSIX_FADV_DONTNEED (opened read-only; its dirty pages, if
    any, are written back first with fdatasync so they can be dropped).
    ``drop_caches``: ``sync`` then ``echo 1 > /proc/sys/vm/drop_caches`` (root only;
    drops every clean page on the machine).
    """
    if method == "drop_caches":
        if os.geteuid() != 0:
            raise ProbeError("cold='drop_caches' needs root; use cold='fadvise' (per file, no root needed)")
        os.sync()
        try:
            with open("/proc/sys/vm/drop_caches", "w") as f:
                f.write("1\n")
        except OSError as exc:
            raise ProbeError(
                f"cannot write /proc/sys/vm/drop_caches ({exc}): in a container it is usually "
                "read-only; use cold='fadvise'"
            ) from None
        return {"method": "drop_caches", "files": len(paths), "failed": 0}
    if not hasattr(os, "posix_fadvise"):
        raise ProbeError("posix_fadvise is not available on this system: use cold='none'")
    failed = 0
    for i, p in enumerate(paths):
        if cancel is not None and i % 256 == 0 and cancel.is_set():
            break
        try:
            fd = os.open(p, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            failed += 1
            continue
        try:
            try:
                os.fdatasync(fd)
            except OSError:
                pass
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        except OSError:
            failed += 1
        finally:
            os.close(fd)
    return {"method": "fadvise", "files": len(paths), "failed": failed}


def warm_files(paths, cancel=None) -> int:
    """Read every file once (read-only) so it sits in the page cache; returns bytes read."""
    total = 0
    for i, p in enumerate(paths):
        if cancel is not None and i % 256 == 0 and cancel.is_set():
            break
        try:
            with open(p, "rb", buffering=0) as f:
                while True:
                    chunk = f.read(1 << 20)
                    if not chunk:
                        break
                    total += len(chunk)
        except OSError:
            pass
    return total


# ----------------------------------------------------------------------- feed
def feed(
    path,
    accelerator: str = "h100-resnet50",
    batch_size: int = 64,
    num_workers: int | None = None,
    decode: str = "auto",
    duration: float = 5.0,
    warmup: int = 2,
    cold: str = "auto",
    size: int = 224,
    pin_memory: bool = False,
    prefetch_factor: int = 2,
    max_files: int | None = 20000,
    au_target_pct: float = AU_TARGET_PCT,
    seed: int = 0,
    repeats: int = 3,
    progress=None,
    cancel=None,
    dataset=None,
    count: int = 1,
    endpoint_url: str | None = None,
    region: str | None = None,
) -> FeedResult:
    """How many ``accelerator`` s can the storage under ``path`` and this CPU feed at AU >= 90 %?

    path: an image folder (root/CLASS/IMAGE), or a folder of ``.tar`` shards (WebDataset's
        layout: :class:`~nbbench.probes.shards.tarshards.TarShardDataset` streams them; the cold run
        evicts the shard files).  decode: "auto" (Pillow when the files are images), "pil" or
        "none" (bytes only).
    num_workers: DataLoader workers (default: the usable CPUs).
    duration: each run's measured window (s); the cold run also ends after one pass over
        the files, since a second pass would be warm.
    cold: "auto"/"fadvise" (per-file page-cache eviction), "drop_caches" (root; the whole
        machine's page cache) or "none" (warm run only, no limiter verdict).
    max_files: a seeded random subset of a larger folder, so warming it fits in memory.
    repeats: when one pass over the files is shorter than 1 s, up to this many
        interleaved cold/warm pairs are run and their medians reported.
    count: how many accelerators you mean to feed (1); the limiter is judged against their need.
    An ``s3://BUCKET/PREFIX`` of tar shards or image objects (``endpoint_url``, ``region`` for
        S3-compatible stores): :func:`~nbbench.probes.objects.s3dataset.open_s3_dataset`; the cold run
        GETs every shard (or every image object) from the store, the warm run reads a local copy (a local
        cache, said so).
    progress: called as the runs go; its last call carries the result's own figures.
    """
    require_torch("feed")
    try:
        acc = get_accelerator(accelerator)
    except ValueError as exc:
        raise ProbeError(str(exc)) from None
    if cold not in COLD_METHODS:
        raise ProbeError(f"cold must be one of {', '.join(COLD_METHODS)}, not {cold!r}")
    method = "fadvise" if cold == "auto" else cold
    if batch_size < 1:
        raise ProbeError(f"batch_size must be 1 or more, not {batch_size}")
    if count < 1:
        raise ProbeError(f"count must be 1 or more, not {count}")
    s3 = str(path).startswith("s3://")  # a dataset given for it: a rank's share, closed by its giver
    if s3 and method != "none":
        method = "object storage"
    if dataset is not None:
        ds = dataset
    elif s3:
        # only for an S3 dataset: loads the S3 client
        from ..objects.s3dataset import open_s3_dataset

        ds = open_s3_dataset(path, endpoint_url=endpoint_url, region=region, decode=decode, size=size, seed=seed)
    else:
        # loads torch (TarShardDataset is an IterableDataset): only for a local folder
        from ..shards.tarshards import TarShardDataset, has_tar_shards

        ds = (
            TarShardDataset(path, decode=decode, size=size, seed=seed)
            if has_tar_shards(path)
            else ImageFolderDataset(path, decode=decode, size=size)
        )
    try:
        total_files = len(ds)
        if max_files is not None and len(ds.samples) > max_files:
            rng = random.Random(seed)
            ds.samples = rng.sample(ds.samples, int(max_files))
        cpus = usable_cpus()
        nw = cpus["usable_int"] if num_workers is None else int(num_workers)
        paths = ds.paths()
        nbytes = ds.total_bytes()
        batches_per_pass = len(ds) // batch_size
        if batches_per_pass < warmup + 2:
            raise ProbeError(
                f"{len(ds)} files make only {batches_per_pass} batches of {batch_size}: "
                f"use a smaller batch size (at most {max(1, len(ds) // (warmup + 2))}) or more files"
            )

        res = FeedResult(
            params={
                "path": str(path),
                "accelerator": acc.name,
                "batch_size": batch_size,
                "num_workers": nw,
                "decode": ds.decode,
                "duration_s": duration,
                "warmup": warmup,
                "cold": cold,
                "size": size,
                "pin_memory": pin_memory,
                "prefetch_factor": prefetch_factor,
                "max_files": max_files,
                "au_target_pct": au_target_pct,
                "repeats": repeats,
                "count": count,
            }
        )
        res.labels.update(
            {
                "accelerator": acc.name,
                "decode": ds.decode,
                "num_workers": nw,
                "cold_method": "none" if method == "none" else method,
            }
        )
        if s3:
            res.labels.update(ds.feed_labels(), endpoint=_endpoint_label(endpoint_url))
        res.metrics["files_count"] = len(ds)
        res.metrics["dataset_bytes"] = nbytes
        if getattr(ds, "shards", None) is not None:  # tar shards: samples streamed from whole files
            res.labels["dataset"] = f"{type(ds).__name__}: {len(ds.shards)} tar shards, {len(ds)} samples"
            res.metrics["shards_count"] = len(ds.shards)
        elif s3:  # image objects: one GET per sample
            res.labels["dataset"] = ds.describe()
            res.metrics["objects_count"] = len(ds)
        if len(ds) < total_files:
            res.labels["subset"] = f"{len(ds)} of {total_files} files (seed {seed})"
        try:
            import psutil

            avail = psutil.virtual_memory().available
        except Exception:  # noqa: BLE001
            avail = None
        if avail and nbytes > 0.5 * avail:
            res.warn(
                f"the {format_bytes(nbytes)} read are more than half the {format_bytes(avail)} of free memory: "
                "the warm run cannot hold them all in the page cache, so it is partly cold; lower max_files"
            )
        res.metrics["needed_samples_per_s"] = acc.needed_samples_per_s(au_target_pct)
        res.metrics["accelerator_samples_per_s"] = acc.samples_per_s

        pass_steps = max(1, batches_per_pass - warmup - 1)
        # a short pass is noisy: up to `repeats` interleaved cold/warm pairs, medians reported
        n_pairs = 1 if method == "none" else max(1, int(repeats))
        total_runs = n_pairs * (1 if method == "none" else 2)
        done = [0]

        def run(label, steps=None, epochs=False):
            dl = make_loader(
                ds, batch_size, nw, pin_memory, prefetch_factor, persistent_workers=epochs and nw > 0, shuffle=True
            )
            k = done[0]
            sub = (
                None
                if progress is None
                else (lambda f, m: call_progress(progress, None if f is None else (k + f) / total_runs, m))
            )
            try:
                r = bench_loader(
                    dl,
                    steps=steps,
                    duration=duration,
                    warmup=warmup,
                    progress=sub,
                    cancel=cancel,
                    monitor=False,
                    accelerator=acc,
                    close=False,
                    epochs=None if epochs else 1,
                )
            finally:
                close_loader(dl, force=True)
            done[0] += 1
            return r

        runs: list[tuple[str, object]] = []
        evict_info = []
        for _rep in range(n_pairs):
            if cancel is not None and cancel.is_set():
                break
            if method != "none":
                t = time.perf_counter()
                if s3:  # every GET comes from the store: nothing to evict
                    ds.use("s3")
                    info = {"files": len(paths), "failed": 0}
                else:
                    info = evict_files(paths, method, cancel)
                evict_info.append(dict(info, seconds=time.perf_counter() - t))
                if info["failed"]:
                    res.warn(
                        f"{info['failed']} of {info['files']} files could not be evicted from the page cache: "
                        "the cold figure is partly warm"
                    )
                cold_r = run("cold", steps=pass_steps)
                runs.append(("cold", cold_r))
                if cancel is not None and cancel.is_set():
                    break
            t = time.perf_counter()
            if s3:
                ds.use("local")
            warm_bytes = warm_files(paths, cancel)
            res.extra["warm_read"] = {"bytes": warm_bytes, "seconds": time.perf_counter() - t}
            # the warm run is measured like the cold one (one pass, same steps) so only the cache differs;
            # alone (cold="none") it may go round the files for the whole duration
            warm_r = run("warm", steps=pass_steps if method != "none" else None, epochs=method == "none")
            runs.append(("warm", warm_r))
            if method == "none" or (cold_r.metrics.get("measured_s") or 0) >= 1.0:
                break  # a pass long enough: one pair is enough
        if evict_info:
            res.extra["evict"] = evict_info
        status, reason = _summarise(res, runs)
        quota_note(res, nw)
        if s3:
            ds.label_requests(res)
        measured = res.metrics.get("cold_measured_s") or res.metrics.get("warm_measured_s") or 0
        if status == "ok" and method != "none" and measured < 1.0:
            res.warn(
                f"each pass over the {len(ds)} files took only {measured:.2f} s (median of {len(runs) // 2} "
                "cold/warm pairs): a larger folder gives a steadier figure"
            )

        cold_rate = res.metrics.get("cold_samples_per_s")
        warm_rate = res.metrics.get("warm_samples_per_s")
        rate = cold_rate if cold_rate else warm_rate
        res.metrics["samples_per_s"] = rate
        res.metrics["accelerators_fed_count"] = acc.how_many(rate, au_target_pct) if rate else None
        if warm_rate:
            res.metrics["accelerators_fed_warm_count"] = acc.how_many(warm_rate, au_target_pct)
        if rate:
            res.metrics["au_one_accelerator_pct"] = min(100.0, 100.0 * rate / acc.samples_per_s)

        info = (
            feed_limits(res, runs, method, nw, acc.needed_samples_per_s(au_target_pct), count)
            if cold_rate and warm_rate
            else None
        )
        res.samples["accelerators"] = per_accelerator(acc, rate, warm_rate, au_target_pct)
        res.extra["answer"] = feed_answer(
            acc, rate, cold_rate, warm_rate, info, nw, ds.decode, method, au_target_pct, getattr(ds, "unit", "shard")
        )
        # the bar ends on the result's own figures, not on the last run's last window
        final = {
            "samples_per_s": rate,
            "warm_samples_per_s": warm_rate if cold_rate else None,
            "accelerators_fed_count": res.metrics["accelerators_fed_count"],
        }
        call_progress(progress, 1.0 if status == "ok" else None, {k: v for k, v in final.items() if v is not None})
        res.finish(status, reason)
        return res
    finally:
        if s3 and dataset is None:
            ds.close()  # the local copy of the shards or image objects


def _endpoint_label(endpoint_url):
    return endpoint_labels(None, endpoint_url)["endpoint"] if endpoint_url else "AWS S3"


def _summarise(res: FeedResult, runs) -> tuple[str, str | None]:
    """Each kind's runs into medians (cold_*, warm_*), the runs' samples and warnings; the status."""
    status, reason = "ok", None
    res.samples["runs"] = [
        {
            "kind": k,
            "samples_per_s": r.metrics.get("samples_per_s"),
            "measured_s": r.metrics.get("measured_s"),
            "steps_count": r.metrics.get("steps_count"),
            "startup_s": r.metrics.get("startup_s"),
            "wait_s": r.samples["steps"]["wait_s"],
            "samples": r.samples["steps"]["samples"],
            "status": r.status,
        }
        for k, r in runs
    ]
    for kind in ("cold", "warm"):
        rs = [r for k, r in runs if k == kind]
        if not rs:
            continue
        for mk in ("samples_per_s", "bytes_per_s", "startup_s", "data_wait_p50_s", "measured_s"):
            vals = [r.metrics.get(mk) for r in rs if r.metrics.get(mk) is not None]
            res.metrics[f"{kind}_{mk}"] = statistics.median(vals) if vals else None
        res.metrics[f"{kind}_steps_count"] = sum(r.metrics.get("steps_count") or 0 for r in rs)
        res.metrics[f"{kind}_runs_count"] = len(rs)
        for r in rs:
            if r.status != "ok":
                status, reason = r.status, f"{kind} run: {r.reason}"
            for w in r.warnings:
                if "ran out" not in w:  # one pass is what the cold run asks for
                    res.warn(f"{kind} run: {w}")
    return status, reason
