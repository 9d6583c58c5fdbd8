"""Many small files, read the way an image dataset is read.

:func:`read_files` walks the tree with ``os.scandir`` (an explicit stack, no
recursion, symlinks not followed; a directory or entry that cannot be read is counted and
skipped, the first one named) keeping memory bounded whatever its size: a
reservoir sample of the files to read (Algorithm R) and a streaming log-linear
histogram of file sizes — never the full list.  It then reads ``sample`` random
files whole with ``threads`` threads and reports files/s, bytes/s, per-file latency
percentiles and the tree's size distribution.

Read only: files are opened ``O_RDONLY`` (with ``O_NOATIME`` where permitted) and
never changed.  ``cold=True`` empties the page cache first: the whole machine's cache via
``/proc/sys/vm/drop_caches`` when running as root with a writable /proc (the result says
so in a warning: every workload on the host then reads from disk), else each sampled
file's pages with ``posix_fadvise(DONTNEED)``; the label says which.  Without it the
run is labelled ``buffered-warm``; a tree in RAM (tmpfs) ``memory``.
"""

from __future__ import annotations

import os
import random
import stat
import threading
import time
from array import array

from ...progress import call_progress
from ...results import ProbeError
from ...results.hist import LatencyHistogram
from ...results.storage.local import FilesResult
from .. import limits
from .._engines import cache, registry
from .target import inspect

__all__ = ["read_files", "walk", "FilesResult", "TreeIndex", "shard_of"]


def shard_of(relpath: str, shards: int) -> int:
    """The shard (0 … shards-1) a file belongs to: a stable hash (BLAKE2b, 64 bits) of its path relative
    to the tree's root, modulo ``shards`` — the same on every host and run, so the ranks of a many-rank
    run read disjoint shards.  Not crc32: CRCs are linear, so names that differ only in a counter fall
    unevenly (``shard-000000.tar`` … ``shard-000007.tar`` all have an even crc32)."""
    import hashlib

    digest = hashlib.blake2b(relpath.encode("utf-8", "surrogateescape"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % max(1, int(shards))


class TreeIndex:
    """What the walk keeps: counts, a size histogram and a bounded reservoir of paths."""

    def __init__(self, sample: int, seed: int = 0):
        self.sample = sample
        self.rng = random.Random(seed)
        self.files = 0
        self.bytes = 0
        self.dirs = 0
        self.skipped = 0  # entries that are not regular files (symlinks, sockets, …)
        self.unreadable = 0  # directories or entries that could not be read
        self.first_unreadable: str | None = None  # "PATH: reason" of the first
        self.sizes = LatencyHistogram()
        self.reservoir: list[tuple[str, int]] = []

    def add(self, path: str, size: int) -> None:
        self.files += 1
        self.bytes += size
        self.sizes.add(size)
        if len(self.reservoir) < self.sample:
            self.reservoir.append((path, size))
        else:
            j = self.rng.randrange(self.files)
            if j < self.sample:
                self.reservoir[j] = (path, size)

    def cannot_read(self, path: str, exc: OSError) -> None:
        self.unreadable += 1
        if self.first_unreadable is None:
            self.first_unreadable = f"{path}: {exc.strerror or exc}"


def walk(root: str, sample: int, seed: int = 0, cancel=None, progress=None, keep=None) -> TreeIndex:
    """Index the tree under ``root``; memory is O(sample + directory depth x width of one level).
    ``keep(path)``: index only the files it accepts (a rank's shard)."""
    idx = TreeIndex(sample, seed)
    stack = [root]
    last = time.monotonic()
    t0 = last
    n = 0
    while stack:
        d = stack.pop()
        idx.dirs += 1
        try:
            it = os.scandir(d)
        except OSError as exc:
            idx.cannot_read(d, exc)
            continue
        with it:
            while True:
                try:  # the listing itself can fail part-way (EACCES, EIO, a directory removed)
                    e = next(it)
                except StopIteration:
                    break
                except OSError as exc:
                    idx.cannot_read(d, exc)
                    break
                n += 1
                if e.name.startswith(".nbbench-"):
                    continue
                try:
                    if e.is_dir(follow_symlinks=False):
                        stack.append(e.path)
                    elif e.is_file(follow_symlinks=False):
                        if keep is None or keep(e.path):
                            idx.add(e.path, e.stat(follow_symlinks=False).st_size)
                    else:
                        idx.skipped += 1
                except OSError as exc:
                    idx.cannot_read(e.path, exc)
                if n % 4096 == 0:
                    if cancel is not None and cancel.is_set():
                        return idx
                    now = time.monotonic()
                    if now - last > 0.25:
                        last = now
                        call_progress(progress, None, {"files_per_s": idx.files / max(now - t0, 1e-9)})
    return idx


def _open_noatime(path: str) -> int:
    flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0) | os.O_NONBLOCK
    noatime = getattr(os, "O_NOATIME", 0)
    if noatime:
        try:
            return os.open(path, flags | noatime)
        except PermissionError:
            pass
    return os.open(path, flags)


def read_files(
    path, sample=1000, threads=8, cold=False, progress=None, cancel=None, seed=0, shard=None, ready=None
) -> FilesResult:
    """Read ``sample`` random files of the tree at ``path`` whole, with ``threads`` threads.

    Parameters
    ----------
    path : directory (or a StorageTarget made from one)
        The tree (e.g. ``/dataset/train``).  Only existing files are read; nothing is written.
    sample : int
        How many files to read (a uniform random sample of the tree; all when fewer).
    threads : int
        Reader threads (like DataLoader workers reading files).
    cold : bool
        Empty the page cache first (drop_caches as root, else posix_fadvise per file);
        labelled ``cache`` = ``buffered-cold`` and ``cache_drop`` = the method.
    progress : callable ``(fraction, metrics)``; cancel : threading.Event (honoured within 0.5 s).
    seed : the sample's random seed.
    shard : ``(i, n)``: only the files of shard ``i`` of ``n`` (:func:`shard_of`) — one rank's part.
    ready : callable ``ready("read")``, called just before the timed reads (the ranks of a
        many-rank run meet there).
    """
    sample = limits.check("sample", sample, limits.FILES_SAMPLE)
    threads = limits.check("threads", threads, limits.FILES_THREADS)
    target = inspect(path, write=False, read=False)
    if target.kind != "dir":
        raise ProbeError(
            f"{target.path} is not a directory: files reads the files of a tree "
            "(use randread or dd for one file or a device)"
        )
    if not os.access(target.path, os.R_OK | os.X_OK):
        raise ProbeError(f"no permission to list {target.path}")
    params = {"path": target.path, "sample": sample, "threads": threads, "cold": bool(cold), "seed": seed}
    keep = None
    if shard is not None:
        i, n = int(shard[0]), int(shard[1])
        params["shard"] = [i, n]
        root = target.path
        keep = lambda p: shard_of(os.path.relpath(p, root), n) == i  # noqa: E731
    res = FilesResult(params=params)
    t0 = time.perf_counter()
    idx = walk(target.path, sample, seed, cancel, progress, keep)
    walk_s = time.perf_counter() - t0
    res.labels = {"engine": registry.BUILTIN.name, "cache": "buffered-warm", "cache_drop": "none", **target.labels()}
    if target.memory:
        res.labels.update({"cache": "memory", "cache_drop": "none (the data live in RAM)"})
        res.warn(target.memory_warning())
    res.metrics.update(
        {
            "tree_files_count": idx.files,
            "tree_total_bytes": idx.bytes,
            "tree_dirs_count": idx.dirs,
            "walk_elapsed_s": walk_s,
            "walk_rate_files_per_s": idx.files / walk_s if walk_s > 0 else float("nan"),
        }
    )
    if idx.files:
        sp = idx.sizes.percentiles((50.0, 90.0, 99.0))
        res.metrics.update(
            {
                "file_size_mean_bytes": idx.bytes / idx.files,
                "file_size_p50_bytes": sp[50.0],
                "file_size_p90_bytes": sp[90.0],
                "file_size_p99_bytes": sp[99.0],
            }
        )
        res.samples["size_hist"] = idx.sizes.to_dict()
    if cancel is not None and cancel.is_set():
        return res.finish("interrupted", "cancelled while indexing the tree")
    if not idx.files and idx.unreadable:
        raise ProbeError(
            f"nothing under {target.path} could be read: {_unreadable(idx)}, and no regular file was found in the rest"
        )
    if not idx.files:
        raise ProbeError(f"{target.path} holds no regular files to read")
    if idx.unreadable:
        res.warn(f"{_unreadable(idx)}; skipped")
    if idx.skipped:
        res.warn(f"{idx.skipped} entries are not regular files (symlinks, sockets…); skipped")
    picks = list(idx.reservoir)
    random.Random(seed + 1).shuffle(picks)
    sample_bytes = sum(s for _, s in picks)
    if cold and not target.memory:
        ok, method = cache.drop_all() if os.geteuid() == 0 else (False, "not root")
        if ok:
            res.labels["cache_drop"] = f"{method}: the whole machine's page cache"
            res.warn(
                f"emptied the whole machine's page cache ({method}) — other workloads on this host now "
                "read from disk too"
            )
        else:
            dropped = 0
            for p, _ in picks:
                try:
                    fd = _open_noatime(p)
                except OSError:
                    continue
                try:
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                    dropped += 1
                except OSError:
                    pass
                finally:
                    os.close(fd)
            res.labels["cache_drop"] = f"posix_fadvise(DONTNEED) per file ({dropped} files; {method})"
        res.labels["cache"] = "buffered-cold"
    elif not target.memory:
        ram = cache.memory_bytes()
        if ram and sample_bytes < 2 * ram:
            res.warn("warm run: files read before may come from the page cache; use --cold to measure the storage")

    if ready is not None:
        ready("read")
    out = _read_all(picks, threads, cancel, progress)
    el = out["elapsed_s"]
    n = out["files"]
    res.metrics.update(
        {
            "files_per_s": n / el if el > 0 else float("nan"),
            "read_bytes_per_s": out["bytes"] / el if el > 0 else float("nan"),
            "files_count": n,
            "read_total_bytes": out["bytes"],
            "elapsed_s": el,
        }
    )
    res.metrics.update(out["hist"].metrics("lat"))
    res.samples["bw"] = out["windows"]
    res.samples["lat_hist"] = out["hist"].to_dict()
    res.extra["t0_unix"] = {"read": out["t0_unix"]}  # the wall-clock time of the reads' t = 0
    if out["errors"] and not n and not out["interrupted"]:
        return res.finish(
            "failed", f"none of the {len(picks)} files sampled could be read (first: {out['first_error']})"
        )
    if out["errors"]:
        res.warn(f"{out['errors']} files could not be read (removed or no permission) and were skipped")
    if sample > idx.files:
        res.warn(f"the tree holds only {idx.files} files; all were read")
    if out["interrupted"]:
        return res.finish("interrupted", "cancelled; the figures cover the files read before")
    return res.finish()


def _unreadable(idx: TreeIndex) -> str:
    n = idx.unreadable
    return (
        f"{n} {'directory or entry' if n == 1 else 'directories or entries'} could not be read "
        f"(first: {idx.first_unreadable})"
    )


def _read_all(picks, threads: int, cancel, progress) -> dict:
    lock = threading.Lock()
    it = iter(picks)
    total = len(picks)
    state = {"files": 0, "bytes": 0, "errors": 0, "stop": False, "first_error": None}
    lats = [array("q") for _ in range(threads)]
    pc = time.perf_counter_ns

    def failed(path, why: str) -> None:
        with lock:
            state["errors"] += 1
            state["first_error"] = state["first_error"] or f"{path}: {why}"

    def worker(i: int):
        buf = bytearray(1 << 20)
        bufs = [buf]
        mine = lats[i]
        nfiles = nbytes = 0
        while not state["stop"]:
            with lock:
                item = next(it, None)
                state["files"] += nfiles
                state["bytes"] += nbytes
            nfiles = nbytes = 0
            if item is None:
                return
            t = pc()
            try:
                fd = _open_noatime(item[0])
            except OSError as exc:
                failed(item[0], exc.strerror or exc)
                continue
            try:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode):
                    failed(item[0], "not a regular file")
                    continue
                got = 0
                while True:
                    k = os.readv(fd, bufs)
                    if k <= 0:
                        break
                    got += k
            except OSError as exc:
                failed(item[0], exc.strerror or exc)
                continue
            finally:
                os.close(fd)
            mine.append(pc() - t)
            nfiles = 1
            nbytes = got

    ts = [threading.Thread(target=worker, args=(i,), daemon=True, name=f"nbbench-files-{i}") for i in range(threads)]
    t0 = pc()
    for t in ts:
        t.start()
    windows = {"t_s": [], "files_per_s": [], "read_bytes_per_s": []}
    next_win = t0 + 500_000_000
    last_f = last_b = 0
    interrupted = False
    while any(t.is_alive() for t in ts):
        time.sleep(0.01)
        now = pc()
        if cancel is not None and cancel.is_set():
            interrupted = True
            state["stop"] = True
            break
        if now >= next_win:
            f, b = state["files"], state["bytes"]
            windows["t_s"].append(round((next_win - t0) / 1e9, 3))
            windows["files_per_s"].append((f - last_f) / 0.5)
            windows["read_bytes_per_s"].append((b - last_b) / 0.5)
            last_f, last_b = f, b
            next_win += 500_000_000
            call_progress(
                progress,
                f / total if total else None,
                {
                    "files_per_s": windows["files_per_s"][-1],
                    "read_bytes_per_s": windows["read_bytes_per_s"][-1],
                    "done": f,
                    "total": total or None,
                    "unit": "files",
                },
            )
    for t in ts:
        t.join()
    end = pc()
    el = (end - t0) / 1e9
    t0_unix = time.time() - (pc() - t0) / 1e9
    hist = LatencyHistogram()
    for a in lats:
        hist.add_many(a)
    call_progress(progress, None if interrupted else 1.0, {"files_per_s": state["files"] / el if el > 0 else 0.0})
    return {
        "files": state["files"],
        "bytes": state["bytes"],
        "errors": state["errors"],
        "first_error": state["first_error"],
        "elapsed_s": el,
        "hist": hist,
        "windows": windows,
        "interrupted": interrupted,
        "t0_unix": t0_unix,
    }
