"""The DataLoader under DDP: loader as a rank part (sweep and feed: :mod:`.sweepfeed`).

Each rank builds its DataLoader over its own shard of the data — a
``DistributedSampler`` over an image folder or over the dataset the user names as
``module:function`` (importable by every rank), or for an ``s3://`` prefix of tar shards or
image objects its own share of them (a stable hash of the key:
:func:`~nbbench.probes.objects.s3dataset.open_s3_dataset`; before the ranks start,
:func:`~nbbench.probes.objects.s3dataset.check_shares` makes sure none is left without one) —
with ``num_workers`` defaulting to the usable CPUs shared among the ranks of the host.

**loader**: the compute step (emulated accelerator, sleep, or a real step on
``LOCAL_RANK``'s GPU) is followed, as DDP's gradient all-reduce (and DLIO's per-step
barrier), by a tiny ``all_reduce`` that every rank meets once per step
(:class:`~nbbench.ranks.syncedstep.SyncedStep`).  It also carries each rank's vote to stop (its
window is over, or it was asked to stop), so every rank runs the same steps — unless its loader
runs out first (``--epochs N`` over unequal s3:// shares): then it meets the others' steps
without a batch until all are out, its figures its own.  The time spent there is
kept apart (``sync_s`` per step, ``sync_wait_pct``): per rank, data wait and AU stay the
rank's own; together, the step time is set by the slowest rank, and rank 0 reports the
global samples/s (first done), the global AU (the ranks' mean, as DLIO) and which rank
stalled most (the largest data wait).

"""

from __future__ import annotations

import importlib

from ..accelerators import get_accelerator, input_bound_band
from ..env import usable_cpus
from ..probes.objects.client import is_s3
from ..probes.pipeline.dataloader import close_loader, make_loader
from ..probes.pipeline.imagefolder import ImageFolderDataset
from ..probes.pipeline.loader import bench_loader
from ..probes.pipeline.params import loader_kwargs
from ..probes.pipeline.steps import resolve_step
from ..probes.storage.target import inspect
from ..results import ProbeError, Result
from .aggregate import Phase, track
from .jobs import RankJob
from .syncedstep import SyncedStep

# The probes are imported inside the jobs' methods: a rank, which unpickles its job, loads only
# the probe that job runs.

__all__ = ["LoaderJob", "load_dataset", "s3_job", "job_for"]


def load_dataset(spec: str):
    """``module:function`` -> the dataset ``function()`` returns (a ProbeError says why not)."""
    mod, _, fn = (spec or "").partition(":")
    if not mod or not fn:
        raise ProbeError(f"--dataset takes module:function (a function returning a Dataset), not {spec!r}")
    try:
        f = getattr(importlib.import_module(mod), fn)
    except (ImportError, AttributeError) as exc:
        raise ProbeError(f"cannot import {spec}: {exc} (every rank must be able to import it)") from None
    return f()


def s3_job(p: dict) -> bool:
    """Is the job's dataset an s3:// prefix (of tar shards or image objects), not a --dataset function?"""
    return not p.get("dataset") and is_s3(p.get("path"))


def s3_dataset(p: dict, rank: int, world_size: int, copy: bool = True):
    """This rank's share of the tar shards or image objects under the job's s3:// prefix (to be closed; copied
    locally with ``copy``: tar shards always are)."""
    # loads torch (a tar-shard dataset): only for an s3:// dataset
    from ..probes.objects.s3dataset import open_s3_dataset

    return open_s3_dataset(
        p["path"],
        endpoint_url=p.get("endpoint_url"),
        region=p.get("region"),
        copy=copy,
        decode=p.get("decode", "auto"),
        size=p.get("size", 224),
        rank=rank,
        world_size=world_size,
    )


def s3_checks(p: dict, nranks: int, local_copies: bool | None = False) -> None:
    """For an s3:// dataset, before the ranks start: every rank has a share of it, and with ``local_copies`` (the
    launcher: every rank on this host) their local copies fit together (else one line)."""
    if s3_job(p):
        # loads torch (a tar-shard dataset): only for an s3:// dataset
        from ..probes.objects.s3dataset import check_shares

        check_shares(p["path"], nranks, p.get("endpoint_url"), p.get("region"), local_copies=local_copies)


#: the loader benchmark's own window under ranks: none (SyncedStep's votes end the steps)
_FOREVER = 1e9


def _dataset(p: dict):
    if p.get("dataset"):
        return load_dataset(p["dataset"])
    return ImageFolderDataset(p["path"], decode=p.get("decode", "auto"), size=p.get("size", 224))


def _workers(p: dict, env_local_world: int) -> int:
    if p.get("workers") is not None:
        return int(p["workers"])
    return max(0, usable_cpus()["usable_int"] // max(1, env_local_world))


class LoaderJob(RankJob):
    kind = "loader"
    phases = [Phase("steps", ("samples_per_s", "batches_per_s"), "windows")]

    def __init__(self, params):
        super().__init__(params)
        self.local_world = 1
        self.local_rank = 0
        self._synced = None

    def bind(self, env) -> None:
        super().bind(env)
        self.local_world = env.local_world_size or 1
        self.local_rank = env.local_rank

    def local_checks(self, nranks: int) -> None:
        # the ranks are all on this host: tar shards are always copied, image objects by feed (its warm pass)
        s3_checks(self.params, nranks, local_copies=True if self.kind == "feed" else None)

    def preflight(self, env) -> None:
        p = self.params
        if s3_job(p):
            s3_checks(p, env.world_size)
        elif p.get("dataset"):
            mod = p["dataset"].partition(":")[0]
            try:
                importlib.import_module(mod)
            except ImportError as exc:
                raise ProbeError(f"cannot import {mod} for --dataset: {exc}") from None
        else:
            t = inspect(p.get("path"), write=False, read=False)
            if t.kind != "dir":
                raise ProbeError(f"{t.path} is not a directory: give a dataset folder (root/CLASS/IMAGE)")

    def monitor_path(self):
        return None if s3_job(self.params) else self.params.get("path")

    def run(self, progress, cancel) -> Result:
        import threading

        from torch.utils.data.distributed import DistributedSampler

        p = self.params
        s3 = s3_job(p)
        ds = s3_dataset(p, self.rank, self.world_size, copy=False) if s3 else _dataset(p)
        try:  # an s3:// dataset splits its shards or objects itself (by a stable hash of the key)
            sampler = (
                None
                if s3
                else DistributedSampler(ds, num_replicas=self.world_size, rank=self.rank, shuffle=True, seed=0)
            )
            nw = _workers(p, self.local_world)
            dl = make_loader(
                ds, p.get("batch_size", 64), nw, persistent_workers=nw > 0, shuffle=s3, sampler=sampler
            )  # image objects: the share in a random order (shards: their own)
        except BaseException:
            if s3:
                ds.close()
            raise
        run = loader_kwargs(p)
        step = run["step"]
        device = f"cuda:{self.local_rank}" if step == "gpu" else None
        inner = resolve_step(step, cancel=cancel, device=device)
        stop = threading.Event()
        duration = p.get("duration")
        if p.get("steps") is None and duration is None:
            duration = 10.0
        synced = self._synced = SyncedStep(inner, p.get("warmup", 2), duration, p.get("steps"), cancel, stop)
        acc = run["accelerator"]
        try:
            try:
                res = bench_loader(
                    dl,
                    steps=None,
                    duration=_FOREVER,
                    warmup=p.get("warmup", 2),
                    step=synced,
                    progress=progress,
                    cancel=stop,
                    accelerator=acc,
                    epochs=run["epochs"],
                    monitor=False,
                    device=device,
                )
            except BaseException:
                try:
                    synced.join(failed=True)  # the others, blocked in the step's all_reduce, stop (the reason: ours)
                except Exception:  # noqa: BLE001 - a peer gone too: this rank's own error is the one to report
                    pass
                raise
            # out of batches (unequal shares): meet the others' steps until all are out; failed (a worker): stop them
            synced.join(failed=res.status == "failed")
        finally:
            close_loader(dl, force=True)
            if s3:
                ds.close()  # the local copy of the rank's shards
        if s3:
            res.labels["dataset"] = ds.describe()
            res.metrics["shards_count" if ds.unit == "shard" else "objects_count"] = len(ds.samples)
            res.metrics["dataset_samples_count"] = len(ds)
            ds.label_requests(res)
        return self._fix(res, synced, step, duration)

    def _fix(self, res, synced: SyncedStep, step, duration) -> Result:
        """The rank's own figures: the all_reduce's time out of the compute time, the window as asked."""
        steps = res.samples.get("steps") or {}
        n_warm = len((res.samples.get("warmup") or {}).get("wait_s") or [])
        n = len(steps.get("wait_s") or [])
        syncs = synced.sync_s[n_warm : n_warm + n]
        if len(syncs) == n and n:
            steps["compute_s"] = [max(0.0, c - s) for c, s in zip(steps["compute_s"], syncs)]
            steps["sync_s"] = syncs
        res.params.update(
            {
                "step": step,
                "duration_s": duration,
                "steps": self.params.get("steps"),
                "path": self.params.get("path") or self.params.get("dataset"),
            }
        )
        res.labels["step"] = synced.label
        res.warnings[:] = [w.replace(f" of the {_FOREVER:g} s asked", "") for w in res.warnings]  # not asked
        res.labels["sampler"] = (
            f"its share of the dataset's objects (rank {self.rank} of {self.world_size}, a stable hash of the key)"
            if s3_job(self.params)
            else f"DistributedSampler (rank {self.rank} of {self.world_size})"
        )
        res.derive()
        wall = res.metrics.get("measured_s") or 0
        if steps.get("sync_s") and wall > 0:
            res.metrics["sync_wait_pct"] = 100.0 * sum(steps["sync_s"]) / wall
        if res.metrics.get("steps_count"):
            res.metrics["step_time_s"] = wall / res.metrics["steps_count"]
        if synced.cause == "done" and res.status == "interrupted":
            res.status, res.reason = "ok", None
        elif synced.cause == "stop" and res.status == "ok":
            res.finish("interrupted", "stopped; the figures cover the steps before")
        res.extra["t0_unix"] = {"steps": synced.anchor}
        return res

    def tracks(self, res, clock):
        st = res.samples.get("steps") or {}
        t0 = (res.extra.get("t0_unix") or {}).get("steps")
        if t0 is None or not st.get("t_s"):
            return {}
        cum_s, cum_b, a = [], [], 0
        for i, s in enumerate(st.get("samples") or []):
            a += s or 0
            cum_s.append(a)
            cum_b.append(i + 1)
        return {"steps": track(clock.at(t0), st["t_s"], {"samples_per_s": cum_s, "batches_per_s": cum_b})}

    def finish(self, res, records):
        per = [(r["rank"], r.get("host"), r.get("metrics") or {}) for r in records]
        if s3_job(self.params):
            tar = all(m.get("shards_count") is not None for _, _, m in per)
            what, one = ("tar shards", "shard") if tar else ("image objects", "object")
            res.labels["sampler"] = (
                f"the {what} split over {len(records)} ranks by a stable hash of their key: each {one} read by one rank"
            )
            n = sum(m.get("dataset_samples_count") or 0 for _, _, m in per)
            res.labels["dataset"] = (
                f"{self.params['path']}: tar shards, every shard a GET from the store"
                if tar
                else f"{self.params['path']}: {n} image objects, every sample one GET"
            )
            for k in ("shards_count", "objects_count", "dataset_samples_count", "requests_count", "retries_count"):
                vals = [m.get(k) for _, _, m in per]  # the shares sum to the dataset
                res.metrics[k] = sum(vals) if all(v is not None for v in vals) else None
        else:
            res.labels["sampler"] = f"DistributedSampler: {len(records)} shards, one per rank"
        aus = [m.get("au_pct") for _, _, m in per if m.get("au_pct") is not None]
        res.metrics["au_pct"] = sum(aus) / len(aus) if aus else None
        waits = [(m.get("data_wait_pct"), r, h) for r, h, m in per if m.get("data_wait_pct") is not None]
        if waits:
            w, r, h = max(waits)
            res.metrics["data_wait_pct"] = sum(x for x, _, _ in waits) / len(waits)
            res.metrics["max_rank_data_wait_pct"] = w
            res.labels["stalled_most"] = f"rank {r} ({h}): data wait {w:.1f} %"
        steps = [m.get("step_time_s") for _, _, m in per if m.get("step_time_s")]
        if steps:
            res.metrics["step_time_s"] = max(steps)  # every rank meets every step: the slowest sets it
        for k in ("steps_count", "samples_count"):  # steps: those met together (a rank out of data meets the rest)
            vals = [m.get(k) for _, _, m in per if m.get(k) is not None]
            if vals:
                res.metrics[k] = max(vals) if k == "steps_count" else sum(vals)
        _label_unequal(res, per)
        if waits:
            res.labels["input_bound"] = input_bound_band(res.metrics["max_rank_data_wait_pct"])
            res.labels["input_bound_basis"] = "the rank that waited most for data (every rank waits for it)"
        acc = res.labels.get("accelerator")
        rate = res.metrics.get("samples_per_s")
        if acc and rate:
            a = get_accelerator(acc)
            res.metrics["needed_samples_per_s"] = a.needed_samples_per_s() * len(records)
            if res.metrics.get("au_pct") is None:
                res.metrics["accelerators_fed_count"] = a.how_many(rate)
        if res.metrics.get("au_pct") is not None:
            res.extra["answer"] += (
                f"; global AU {res.metrics['au_pct']:.1f} % (the ranks' mean), step time "
                f"{res.metrics.get('step_time_s', 0) * 1e3:.0f} ms set by the slowest rank"
            )
        if res.labels.get("stalled_most"):
            res.extra["answer"] += f"; stalled most: {res.labels['stalled_most']}"


def _label_unequal(res, per) -> None:
    """Ranks that ran out of batches at different steps (--epochs N over unequal shares): say so, per rank."""
    steps = {r: m.get("steps_count") for r, _, m in per if m.get("steps_count") is not None}
    if len(set(steps.values())) < 2:
        return
    most = max(steps.values())
    short = ", ".join(
        f"rank {r} after {n} ({_of(per, r, 'samples_count')} samples)" for r, n in sorted(steps.items()) if n < most
    )
    res.labels["unequal_shares"] = (
        f"the ranks' shares differ, so their loaders ran out at different steps: {short} "
        f"of the {most} measured; each then met the others' steps without a batch until "
        "all were out. Every rank's figures are the samples it really read"
    )


def _of(per, rank, key):
    return next((m.get(key) for r, _, m in per if r == rank), None)


def job_for(kind: str, params: dict) -> RankJob:
    if kind == "loader":
        return LoaderJob(params)
    # here, not at the top: .sweepfeed imports this module
    from .sweepfeed import FeedJob, SweepJob

    return {"sweep": SweepJob, "feed": FeedJob}[kind](params)
