"""sweep and feed as rank parts: run side by side, summed by rank 0.

**sweep** and **feed** run on every rank over its shard, started together by the start
barrier and measured side by side; rank 0 sums the ranks' rates per configuration (sweep,
with the recommendation made from the sums) and per pass (feed: how many accelerators these
ranks feed together).  They do not meet per step: a configuration one host's preflight
skips would put the meetings out of step.  feed over an ``s3://`` prefix of tar shards or
image objects: each rank its own share of them (a stable hash of the key), cold from the
store, warm from its local copy (said so).
"""

from __future__ import annotations

from ..accelerators import get_accelerator
from ..probes.pipeline.feed import feed
from ..probes.pipeline.imagefolder import ImageFolderDataset
from ..probes.pipeline.params import feed_kwargs, sweep_kwargs
from ..probes.pipeline.sweep import sweep
from ..probes.pipeline.sweepconfigs import recommend
from ..probes.storage.files import shard_of
from ..results import ProbeError, Result
from ..units import format_metric
from .loaderjobs import LoaderJob, _dataset, _workers, s3_dataset, s3_job

# The probes are imported inside the jobs' methods: a rank, which unpickles its job, loads only
# the probe that job runs.

__all__ = ["SweepJob", "FeedJob"]


class _Shard:
    """A map-style dataset's shard (the indices i with i % n == rank), keeping its collate_fn."""

    def __init__(self, ds, rank: int, n: int):
        self.ds = ds
        self.idx = list(range(rank, len(ds), n))
        self.collate_fn = getattr(ds, "collate_fn", None)

    def __len__(self):
        return len(self.idx)

    def __getitem__(self, i):
        return self.ds[self.idx[i]]

    def __repr__(self):
        return f"{self.ds!r} shard of {len(self.idx)}"


class SweepJob(LoaderJob):
    kind = "sweep"
    phases: list = []

    def run(self, progress, cancel) -> Result:

        p = self.params
        ds = _Shard(_dataset(p), self.rank, self.world_size)
        kw = sweep_kwargs(p)
        res = sweep(ds, progress=progress, cancel=cancel, monitor=False, **kw)
        res.params["path"] = p.get("path") or p.get("dataset")
        return res

    def finish(self, res, records):

        rows = [((r.get("result") or {}).get("samples") or {}).get("configs") or [] for r in records]
        if not rows or not rows[0]:
            return
        merged = []
        for i, base in enumerate(rows[0]):
            row = dict(base)
            same = [rs[i] for rs in rows if i < len(rs)]
            if any(c.get("status") != "ok" for c in same):
                bad = next(c for c in same if c.get("status") != "ok")
                row["status"], row["reason"] = bad.get("status"), bad.get("reason")
            for k in ("samples_per_s", "bytes_per_s", "batches_per_s"):
                vals = [c.get(k) for c in same if c.get(k) is not None]
                row[k] = sum(vals) if vals and len(vals) == len(same) else None
            for k in ("au_pct", "data_wait_pct"):
                vals = [c.get(k) for c in same if c.get(k) is not None]
                row[k] = sum(vals) / len(vals) if vals else None
            merged.append(row)
        res.samples["configs"] = merged
        res.metrics.pop("best_samples_per_s", None)
        recommend(res, res.params.get("within_pct", 3.0), res.params.get("au_target_pct", 90.0))
        res.extra["recommendation"] = f"All {len(records)} ranks together: " + res.extra.get("recommendation", "")


class FeedJob(LoaderJob):
    kind = "feed"
    phases: list = []

    def run(self, progress, cancel) -> Result:
        import os

        p = self.params
        kw = feed_kwargs(p)
        if s3_job(p):  # the rank's share of the shards or objects, copied locally (the warm pass reads the copy)
            ds = s3_dataset(p, self.rank, self.world_size)
            try:
                return feed(
                    p["path"],
                    num_workers=_workers(p, self.local_world),
                    dataset=ds,
                    progress=progress,
                    cancel=cancel,
                    **kw,
                )
            finally:
                ds.close()
        ds = ImageFolderDataset(p["path"], decode=p.get("decode", "auto"), size=p.get("size", 224))
        root = str(ds.root)
        ds.samples = [s for s in ds.samples if shard_of(os.path.relpath(s[0], root), self.world_size) == self.rank]
        if not ds.samples:
            raise ProbeError(f"rank {self.rank}'s shard of {root} holds no files: use more files or fewer ranks")
        return feed(
            p["path"], num_workers=_workers(p, self.local_world), dataset=ds, progress=progress, cancel=cancel, **kw
        )

    def finish(self, res, records):

        ms = [((r.get("result") or {}).get("metrics") or {}) for r in records]
        acc = get_accelerator(res.labels.get("accelerator") or self.params.get("accelerator", "h100-resnet50"))
        for k in (
            "cold_samples_per_s",
            "warm_samples_per_s",
            "samples_per_s",
            "files_count",
            "dataset_bytes",
            "shards_count",
            "objects_count",
            "requests_count",
            "retries_count",
        ):
            vals = [m.get(k) for m in ms if m.get(k) is not None]
            res.metrics[k] = sum(vals) if vals and len(vals) == len(ms) else None
        rate = res.metrics.get("samples_per_s")
        res.metrics["accelerators_fed_count"] = acc.how_many(rate) if rate else None
        warm = res.metrics.get("warm_samples_per_s")
        res.metrics["accelerators_fed_warm_count"] = acc.how_many(warm) if warm else None
        res.metrics.pop("au_one_accelerator_pct", None)

        s3 = s3_job(self.params)
        if s3:
            tar = res.metrics.get("shards_count") is not None
            what = (
                f"{res.metrics.get('shards_count')} tar shards, {res.metrics.get('files_count')} samples"
                if tar
                else f"{res.metrics.get('files_count')} image objects, every sample one GET"
            )
            res.labels["dataset"] = f"{what}, split over the ranks by a stable hash of their key"
            res.labels["warm"] = (
                f"each rank's local copy of its {'shards' if tar else 'image objects'} (page cache): "
                "a local cache, as a caching FUSE client would serve"
            )
        where = "from object storage" if s3 else "from cold storage"
        warm_s = f"; {format_metric('samples_per_s', warm)} from a local copy (warm)" if s3 and warm else ""
        hosts = res.labels.get("hosts")
        res.extra["answer"] = (
            f"{len(records)} ranks on {hosts} host{'' if str(hosts) == '1' else 's'} together deliver "
            f"{format_metric('samples_per_s', rate)} {where}: enough for "
            f"{res.metrics['accelerators_fed_count']} × {acc.name} at AU >= 90 % "
            f"(each needs {format_metric('samples_per_s', acc.needed_samples_per_s())})" + warm_s
        )
