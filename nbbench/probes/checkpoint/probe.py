"""Checkpoints: save a model-like state dict the way training scripts do, and load it back.

:func:`checkpoint` builds a state dict in memory (:mod:`nbbench.probes.checkpoint.models`: a
generic transformer, ResNet-50 or one of MLPerf Storage's llama3 checkpointing
workloads), filled with random bits, on the CPU or a CUDA device, then in a directory:

1. ``torch.save`` to a new temporary file, fsync'd with its directory inside the timed
   window — ``write_bytes_per_s``, the headline;
2. ``torch.distributed.checkpoint.save`` into a new temporary directory, durable the
   same way — ``dcp_write_bytes_per_s``;
3. the page cache of both emptied (``posix_fadvise(DONTNEED)`` per file, checked with
   ``mincore``; outside the timed windows), then ``torch.load`` — ``read_bytes_per_s``
   (cache ``buffered-cold``) — and DCP's reader into the state's own tensors —
   ``dcp_read_bytes_per_s`` (cold too);
4. warm, from the page cache: ``torch.load`` again (``read_warm_bytes_per_s``), DCP's
   reader again (``dcp_read_warm_bytes_per_s``) and ``torch.load(mmap=True)``: seconds
   to the first tensor touched and to all of them (``load_mmap_first_tensor_s``,
   ``load_mmap_all_s``).

Safety, as every write probe: only new temporary files and directories
(``.nbbench-ckptr<rank>-…`` and ``.nbbench-dcpr<rank>-…``), removed at the end, on
an error, Ctrl-C, SIGTERM / SIGHUP and exit, and swept by the next probe after a
SIGKILL; the free space is checked first (both copies), and the memory before the state
is built: about twice its size (the state and one loaded copy) must be available, or
the probe refuses with the numbers rather than swap.  Stop is honoured between phases
and between tensors while building; a ``torch.save`` or ``torch.load`` call already
started runs to its end (one call cannot be interrupted), so Stop ends after it.

``rank`` / ``world_size`` name this process's part when several run at once (each
writes its own files, the rank in their names); ``ready(phase)`` is called just
before each timed phase (``"write"``, ``"dcp_write"``, ``"read"``, ``"dcp_read"``,
``"read_warm"``, ``"dcp_read_warm"``), as the storage probes do, and
``extra["t0_unix"][phase]`` is the wall-clock time the phase began (after ``ready``
returned).  The refusals before anything is built or written — the free space, the memory
— are :mod:`.preflight`'s.
"""

from __future__ import annotations

import os
import time

from ... import tempfiles, tempsweep
from ...progress import call_progress
from ...results import ProbeError
from ...results.storage.checkpoint import CheckpointResult
from ...units import format_bytes
from . import saveload as ckptio
from .preflight import preflight

__all__ = ["checkpoint", "CheckpointResult", "PHASES", "TIMED"]

PHASES = (
    "build",
    "save",
    "dcp save",
    "drop cache",
    "load cold",
    "dcp load cold",
    "load warm",
    "dcp load warm",
    "mmap load",
)
#: the timed phases, as ``ready`` and ``extra["t0_unix"]`` name them
TIMED = ("write", "dcp_write", "read", "dcp_read", "read_warm", "dcp_read_warm")


def checkpoint(
    path,
    model: str = "transformer",
    size=None,
    scale: float = 1.0,
    optimizer: bool = True,
    device: str = "cpu",
    dcp: bool = True,
    seed: int = 0,
    rank: int = 0,
    world_size: int = 1,
    progress=None,
    cancel=None,
    ready=None,
) -> CheckpointResult:
    """Save a ``model``-like state dict to ``path`` (a directory) and load it back; see the module doc.

    size: the state's bytes for ``transformer`` (default 512 MiB) and ``resnet50`` (default its own
        size); the llama3 presets take MLPerf's per-process size.  scale: a factor on either.
    optimizer: include the optimizer state (Adam's moments and master weights; SGD's momentum).
    device: "cpu" or "cuda"/"cuda:N" (built, saved from and loaded back to the device).
    dcp: also save and load with torch.distributed.checkpoint.
    rank, world_size: this process's part when several run at once (its files carry the rank).
    progress: ``(fraction, metrics)`` per phase; cancel: a threading.Event, honoured between phases.
    ready: ``ready(phase)`` just before each timed phase (:data:`TIMED`).
    """
    rank, world_size = int(rank), int(world_size)
    if world_size < 1 or not 0 <= rank < world_size:
        raise ProbeError(f"rank must be in 0…{world_size - 1}, not {rank}")
    pl, target, dev, mem_how = preflight(path, model, size, scale, optimizer, device, dcp)
    nbytes = pl.total_bytes

    res = CheckpointResult(
        params={
            "path": target.path,
            "model": pl.model,
            "size": size,
            "scale": scale,
            "optimizer": bool(optimizer),
            "device": dev,
            "dcp": bool(dcp),
            "seed": seed,
            "rank": rank,
            "world_size": world_size,
        }
    )
    res.labels.update(
        {
            "engine": "torch.save / torch.load",
            "cache": "buffered-cold",
            **target.labels(),
            "model": pl.model,
            "model_shape": pl.shape_text,
            "dtypes": pl.dtypes_text,
            "size_rule": pl.size_text,
            "tensor_device": dev,
            "fill": "random bits (incompressible; no two blocks alike)",
            "write": "buffered; file and directory fsync'd inside the timed window",
            "cache_read": "buffered-cold",
            "cache_read_warm": "buffered-warm",
            "cache_mmap": "buffered-warm",
        }
    )
    res.extra["memory_check"] = mem_how
    if pl.source:
        res.labels["preset_source"] = pl.source
    if dcp:
        res.labels.update(
            {
                "dcp": "torch.distributed.checkpoint FileSystemWriter (single file per rank, "
                "sync_files, 1 thread), no process group (no_dist)",
                "cache_dcp_read": "buffered-cold",
                "cache_dcp_read_warm": "buffered-warm",
            }
        )
    if world_size > 1:
        res.labels["rank"] = f"{rank} of {world_size}"
    if target.memory:
        for k in [k for k in res.labels if k == "cache" or k.startswith("cache_")]:
            res.labels[k] = "memory"
        res.warn(target.memory_warning())
    res.metrics.update({"state_bytes": nbytes, "tensors_count": pl.count})
    _sweep(res, target.path)
    run = _Run(res, pl, dev, target.path, progress, cancel, ready, rank, dcp, seed)
    try:
        run.go()
    finally:
        run.cleanup()
    return res


def _sweep(res: CheckpointResult, directory: str) -> None:
    n, nbytes, kept = tempsweep.sweep_stale(directory)
    if n:
        what = "entry" if n == 1 else "entries"
        res.labels["stale_temp_removed"] = f"{n} {what}, {format_bytes(nbytes, binary=True)}"
        res.warn(
            f"removed {n} stale nbbench temporary {what} ({format_bytes(nbytes, binary=True)}) from "
            f"{directory}: left by runs on this host whose process was killed"
        )
    if kept:
        res.warn(f"stale nbbench temporary entries in {directory}: {tempsweep.kept_note(kept)}")


class _Run:
    """One checkpoint run's phases, in order, with what they made (removed by :meth:`cleanup`)."""

    def __init__(self, res, pl, dev, directory, progress, cancel, ready, rank, dcp, seed):
        self.res, self.pl, self.dev, self.dir = res, pl, dev, directory
        self.progress, self.cancel, self.ready = progress, cancel, ready
        self.rank, self.dcp, self.seed = rank, dcp, seed
        self.phases = [p for p in PHASES if dcp or not p.startswith("dcp")]
        self.tf = self.td = None
        self.state = None

    def _stop(self, after: str) -> bool:
        if self.cancel is not None and self.cancel.is_set():
            self.res.finish("interrupted", f"stopped after {after}; the figures measured before are kept")
            return True
        return False

    def _step(self, name: str, metrics: dict | None = None, within: float = 1.0) -> None:
        i = self.phases.index(name)
        call_progress(self.progress, (i + within) / len(self.phases), metrics)

    def _mark(self, phase: str) -> None:
        """Just before a timed phase: meet the other ranks (``ready``), then note when it begins."""
        if self.ready is not None:
            self.ready(phase)
        self.res.extra.setdefault("t0_unix", {})[phase] = time.time()

    def _rate(self, key: str, nbytes: int, seconds: float, elapsed_key: str) -> dict:
        m = self.res.metrics
        m[elapsed_key] = seconds
        m[key] = nbytes / seconds if seconds > 0 else float("nan")
        return {key: m[key]}

    def go(self) -> None:
        res, m = self.res, self.res.metrics
        t0 = time.perf_counter()
        self.state = ckptio.build_state(
            self.pl.specs, self.dev, self.seed, self.cancel, lambda f: self._step("build", None, f)
        )
        res.extra["build_s"] = time.perf_counter() - t0  # filling memory, not storage: not a metric
        if self.state is None:
            res.finish("interrupted", "stopped while building the state dict: nothing was written")
            return
        self._step("build")
        try:
            self.current = "torch.save"
            self.tf = tempfiles.create(self.dir, f"ckptr{self.rank}")
            self._mark("write")
            secs = ckptio.save_torch(self.state, self.tf.path, self.tf.fd)
            m["file_bytes"] = os.fstat(self.tf.fd).st_size
            self._step("save", self._rate("write_bytes_per_s", m["file_bytes"], secs, "write_elapsed_s"))
            if self._stop("torch.save"):
                return
            if self.dcp:
                self.current = "the DCP save"
                self.td = tempfiles.create_dir(self.dir, f"dcpr{self.rank}")
                self._mark("dcp_write")
                secs = ckptio.save_dcp(self.state, self.td.path)
                m["dcp_bytes"] = sum(os.path.getsize(p) for p in ckptio.files_of(self.td.path))
                m["dcp_files_count"] = len(ckptio.files_of(self.td.path))
                self._step("dcp save", self._rate("dcp_write_bytes_per_s", m["dcp_bytes"], secs, "dcp_write_elapsed_s"))
                if self._stop("the DCP save"):
                    return
            self._cold()
            if self.res.status != "ok" or self._stop("the cold loads"):
                return
            self._warm()
        except (OSError, RuntimeError) as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            res.fail(f"{self.current or 'the run'} failed: {first}")
            return
        if res.status == "ok" and res.ended_at is None:
            call_progress(self.progress, 1.0, {k: m[k] for k in ("write_bytes_per_s", "read_bytes_per_s") if k in m})
            res.finish()

    current: str | None = None

    def _cold(self) -> None:
        res, m = self.res, self.res.metrics
        paths = [self.tf.path] + (ckptio.files_of(self.td.path) if self.td else [])
        if not self.res.labels.get("cache") == "memory":
            info = ckptio.drop_cache(paths)
            res.labels["cache_drop"] = info["method"]
            m["cold_resident_pct"] = 100.0 * info["resident_fraction"]
            if info["failed"] or info["resident_fraction"] > 0.05:
                for k in ("cache", "cache_read", "cache_dcp_read"):
                    if k in res.labels:
                        res.labels[k] = "buffered-warm"
                res.warn(
                    f"the page cache could not be emptied for the checkpoint's files "
                    f"({m['cold_resident_pct']:.0f} % still cached"
                    f"{'; ' + info['failed'][0] if info['failed'] else ''}): "
                    "the 'cold' loads are partly warm"
                )
        self._step("drop cache")
        self.current = "torch.load"
        self._mark("read")
        loaded, secs = ckptio.load_torch(self.tf.path, self.dev)
        self._step("load cold", self._rate("read_bytes_per_s", m["file_bytes"], secs, "read_elapsed_s"))
        self._verify(loaded)
        del loaded
        if self.td is not None and res.status == "ok" and not self._stop("the cold torch.load"):
            self.current = "the DCP load"
            self._mark("dcp_read")
            secs = ckptio.load_dcp(self.state, self.td.path, self.dev)
            self._step("dcp load cold", self._rate("dcp_read_bytes_per_s", m["dcp_bytes"], secs, "dcp_read_elapsed_s"))

    def _warm(self) -> None:
        m = self.res.metrics
        self.current = "the warm torch.load"
        self._mark("read_warm")
        loaded, secs = ckptio.load_torch(self.tf.path, self.dev)
        del loaded
        self._step("load warm", self._rate("read_warm_bytes_per_s", m["file_bytes"], secs, "read_warm_elapsed_s"))
        if self._stop("the warm torch.load"):
            return
        if self.td is not None:
            self.current = "the warm DCP load"
            self._mark("dcp_read_warm")
            secs = ckptio.load_dcp(self.state, self.td.path, self.dev)
            self._step(
                "dcp load warm",
                self._rate("dcp_read_warm_bytes_per_s", m["dcp_bytes"], secs, "dcp_read_warm_elapsed_s"),
            )
            if self._stop("the warm DCP load"):
                return
        self.current = "torch.load(mmap=True)"
        first, all_s = ckptio.load_mmap(self.tf.path, self.pl.specs, self.dev, self.cancel)
        m["load_mmap_first_tensor_s"] = first
        if all_s is not None:
            m["load_mmap_all_s"] = all_s
        self._step("mmap load", {"load_mmap_first_tensor_s": first})
        self._stop("the mmap load")

    def _verify(self, loaded) -> None:
        specs = self.pl.specs
        for spec in {specs[0], specs[-1]}:
            if not ckptio.same_bytes(ckptio.get_path(loaded, spec.path), ckptio.get_path(self.state, spec.path)):
                self.res.fail(f"the checkpoint read back differs from the one saved ({spec.name})")
                return

    def cleanup(self) -> None:
        self.state = None
        if self.tf is not None:
            self.tf.remove()
        if self.td is not None:
            self.td.remove()
