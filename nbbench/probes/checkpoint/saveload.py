"""The checkpoint probe's torch side: fill a state dict, save it, empty the cache, load it back.

Each function does one timed step the way a training script does it and returns its
seconds; the caller (:mod:`nbbench.probes.checkpoint.probe`) decides the order, keeps the
figures and removes the files.  torch is imported inside the functions.

* :func:`build_state` — the nested dict of :class:`~nbbench.probes.checkpoint.models.TensorSpec`
  tensors, filled with random bits (incompressible, no two blocks alike: storage that
  compresses or deduplicates gets nothing for free), on the CPU or a CUDA device;
* :func:`save_torch` — ``torch.save(state, path)``, then ``fsync`` of the file and its
  directory, all inside the timed window (a checkpoint must survive a crash);
* :func:`save_dcp` — ``torch.distributed.checkpoint.save`` with a ``FileSystemWriter``
  (one file per rank, ``sync_files``), then the directory and its parent fsync'd;
* :func:`drop_cache` — ``posix_fadvise(DONTNEED)`` per file (clean after the fsync, so
  the pages can go), checked with ``mincore``;
* :func:`load_torch`, :func:`load_dcp` (in place, as DCP loads into a model's own
  tensors), :func:`load_mmap` (``torch.load(mmap=True)``: time to the first tensor
  touched and to all of them).
"""

from __future__ import annotations

import os
import time
import warnings

from ...templock import DIR_LOCK
from .._engines import cache

__all__ = [
    "build_state",
    "save_torch",
    "save_dcp",
    "drop_cache",
    "load_torch",
    "load_dcp",
    "load_mmap",
    "files_of",
    "same_bytes",
    "get_path",
    "sync_device",
]

_NO_DIST = "torch.distributed is disabled, unavailable or uninitialized"
PAGE = 4096


def get_path(d: dict, path: tuple):
    for k in path:
        d = d[k]
    return d


def _fill_random(t, gen) -> None:
    import torch

    b = t.view(-1).view(torch.uint8)
    n = b.numel()
    k = n // 8 * 8
    if k:
        b[:k].view(torch.int64).random_(generator=gen)
    if n > k:
        b[k:].random_(0, 256, generator=gen)


def build_state(specs, device: str = "cpu", seed: int = 0, cancel=None, progress=None) -> dict | None:
    """The state dict of ``specs`` on ``device``, filled with random bits; None when cancelled."""
    import torch

    gen = torch.Generator(device=device)
    gen.manual_seed(int(seed))
    total = sum(s.nbytes for s in specs) or 1
    done = 0
    last = time.monotonic()
    sd: dict = {}
    for spec in specs:
        if cancel is not None and cancel.is_set():
            return None
        t = torch.empty(spec.shape, dtype=getattr(torch, spec.dtype), device=device)
        _fill_random(t, gen)
        d = sd
        for k in spec.path[:-1]:
            d = d.setdefault(k, {})
        d[spec.path[-1]] = t
        done += spec.nbytes
        if progress is not None and time.monotonic() - last > 0.2:
            last = time.monotonic()
            progress(done / total)
    sync_device(device)
    return sd


def sync_device(device: str) -> None:
    if str(device).startswith("cuda"):
        import torch

        torch.cuda.synchronize(device)


def fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def save_torch(state: dict, path: str, fd: int) -> float:
    """``torch.save`` to ``path`` (a new file the caller created; ``fd`` is open on it) + fsync; seconds."""
    import torch

    t0 = time.perf_counter()
    torch.save(state, path)
    os.fsync(fd)
    fsync_dir(os.path.dirname(path))
    return time.perf_counter() - t0


def files_of(directory: str) -> list[str]:
    """The checkpoint's files in ``directory`` (not the lock file nbbench keeps there: templock.DIR_LOCK)."""
    out = []
    for dirpath, _, names in os.walk(directory):
        out += [os.path.join(dirpath, n) for n in sorted(names) if not (n == DIR_LOCK and dirpath == directory)]
    return out


def save_dcp(state: dict, directory: str) -> float:
    """``torch.distributed.checkpoint.save`` into ``directory`` (new: only nbbench's lock file in it), durable; seconds.

    Without a process group DCP saves as one process; under one (``--ranks``) ``no_dist``
    keeps each rank's save its own, into its own directory, as the probe's parts are.
    """
    import torch.distributed.checkpoint as dcp

    writer = dcp.FileSystemWriter(directory, single_file_per_rank=True, sync_files=True, thread_count=1)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_NO_DIST)
        dcp.save(state, storage_writer=writer, no_dist=True)
    for p in files_of(directory):  # sync_files fsyncs the data files and .metadata; the entries too
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    fsync_dir(directory)
    fsync_dir(os.path.dirname(directory))
    return time.perf_counter() - t0


def drop_cache(paths) -> dict:
    """Drop each file's pages (fadvise DONTNEED), then ask mincore what is left; outside any timing."""
    total = resident = 0.0
    failed = []
    for p in paths:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            size = os.fstat(fd).st_size
            ok, why = cache.drop_file(fd, 0, writable=False)
            if not ok:
                failed.append(why)
            frac = cache.resident_fraction(fd, size)
        finally:
            os.close(fd)
        total += size
        resident += (frac if frac is not None else 0.0) * size
    return {
        "files": len(list(paths)),
        "resident_fraction": resident / total if total else 0.0,
        "failed": failed,
        "method": "posix_fadvise(DONTNEED) per file, checked with mincore",
    }


def load_torch(path: str, device: str):
    """``torch.load(path, map_location=device, weights_only=True)``; (state, seconds)."""
    import torch

    t0 = time.perf_counter()
    obj = torch.load(path, map_location=device, weights_only=True)
    sync_device(device)
    return obj, time.perf_counter() - t0


def load_dcp(state: dict, directory: str, device: str) -> float:
    """``torch.distributed.checkpoint.load`` into ``state``'s own tensors (in place); seconds."""
    import torch.distributed.checkpoint as dcp

    reader = dcp.FileSystemReader(directory)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_NO_DIST)
        dcp.load(state, storage_reader=reader, no_dist=True)
    sync_device(device)
    return time.perf_counter() - t0


def _touch(t, device: str):
    """Bring a mapped tensor in: one byte of every page read (CPU), or the tensor copied to ``device``."""
    import torch

    if str(device).startswith("cuda"):
        return t.to(device)
    flat = t.reshape(-1).view(torch.uint8)
    return int(flat[::PAGE].sum()) if flat.numel() else 0


def load_mmap(path: str, specs, device: str, cancel=None) -> tuple[float, float | None]:
    """``torch.load(path, mmap=True)``: seconds to the first tensor touched and to all (None when cancelled)."""
    import torch

    t0 = time.perf_counter()
    obj = torch.load(path, mmap=True, weights_only=True, map_location="cpu")
    kept = []
    first = None
    for i, spec in enumerate(specs):
        if cancel is not None and i % 64 == 0 and cancel.is_set():
            return first if first is not None else time.perf_counter() - t0, None
        kept.append(_touch(get_path(obj, spec.path), device))
        if first is None:
            sync_device(device)
            first = time.perf_counter() - t0
    sync_device(device)
    all_s = time.perf_counter() - t0
    del kept, obj
    return first if first is not None else all_s, all_s


def same_bytes(a, b) -> bool:
    """Do two tensors hold the same bytes (NaN patterns included)?"""
    import torch

    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return bool(
        torch.equal(a.detach().cpu().reshape(-1).view(torch.uint8), b.detach().cpu().reshape(-1).view(torch.uint8))
    )
