"""The checkpoint and shards probes as rank parts.

**checkpoint** — each rank saves and loads a state dict of its own (as every DDP / FSDP
rank saves its own part): its own ``.nbbench-ckptr<rank>-…`` file and
``.nbbench-dcpr<rank>-…`` directory in the shared directory, DCP with ``no_dist`` (each
rank's save its own, even under the process group), its state filled from its own seed
(``seed + 1000 × rank``: no two ranks' files alike, nothing a deduplicating store could
fold).  The ranks meet before each timed phase (torch.save, DCP save, the cold and warm
loads).  Each phase is one call, so a rank's progress in it is taken as even from its
start to its end; rank 0 reports the usual figures under their names (first done), with
``*_last_done`` and the spread per phase.  Before anything is written the launcher (and
every rank) refuses when the directory cannot hold N × what one rank writes, or a host's
memory N local ranks × twice the state.

**shards** — each rank streams the shards whose stable hash
(:func:`nbbench.probes.shards.probe.shard_rank`) falls to it, so every shard is read once, by
one rank; the streams (default: the usable CPUs shared among the host's ranks) and the
``--max-bytes`` default (half the page cache, shared likewise) are per rank.  Rank 0 sums
bytes and samples, merges the time-to-first-byte histograms and reports
``read_bytes_per_s``, ``samples_per_s`` and ``read_warm_bytes_per_s`` first done.  A
rank's samples are counted as its bytes go (its series has bytes only), which is exact
at the end of each pass.
"""

from __future__ import annotations

import os

from .. import tempsweep
from ..env import usable_cpus
from ..probes._engines import cache
from ..probes.checkpoint.models import plan
from ..probes.checkpoint.preflight import check_memory, disk_bytes
from ..probes.objects.s3shards import list_shards
from ..probes.pipeline.dataloader import require_torch
from ..probes.shards.probe import find_shards, shard_rank
from ..probes.storage.target import inspect
from ..results import ProbeError, Result
from ..results.storage.shards import samples_phrase, shards_what, ttfb_phrase, warm_phrase
from ..units import format_bytes, format_metric, parse_size
from .aggregate import Phase, track_from_windows
from .rankjob import RankJob, merge_hists, rank_metric, sum_metrics

# The probes are imported inside the jobs' methods: a rank, which unpickles its job, loads only
# the probe that job runs.

__all__ = ["CheckpointJob", "ShardsJob"]

#: checkpoint phase -> (rate, the bytes it moved, its seconds)
_CKPT = {
    "write": ("write_bytes_per_s", "file_bytes", "write_elapsed_s"),
    "dcp_write": ("dcp_write_bytes_per_s", "dcp_bytes", "dcp_write_elapsed_s"),
    "read": ("read_bytes_per_s", "file_bytes", "read_elapsed_s"),
    "dcp_read": ("dcp_read_bytes_per_s", "dcp_bytes", "dcp_read_elapsed_s"),
    "read_warm": ("read_warm_bytes_per_s", "file_bytes", "read_warm_elapsed_s"),
    "dcp_read_warm": ("dcp_read_warm_bytes_per_s", "dcp_bytes", "dcp_read_warm_elapsed_s"),
}


def _together(m: dict, k: str) -> str | None:
    first, last = m.get(k), m.get(f"{k}_last_done")
    if first is not None:
        return f"{format_metric(k, first)} together while all ran ({format_metric(k, last)} until the last finished)"
    if last is not None:
        return f"{format_metric(k, last)} together until the last finished (the ranks' phases never overlapped)"
    return None


def _who(res: Result) -> str:
    n, h = res.labels.get("ranks"), res.labels.get("hosts")
    return f"{n} ranks on {h} host{'s' if h != 1 else ''}"


def _worst_cache(res: Result, records: list[dict]) -> None:
    """A cache label is 'buffered-warm' when any rank's page cache could not be emptied."""
    for rec in records:
        labels = (rec.get("result") or {}).get("labels") or {}
        for k, v in labels.items():
            if (k == "cache" or k.startswith("cache_")) and v == "buffered-warm" and k in res.labels:
                res.labels[k] = v


def _local_ranks(env) -> int:
    return max(1, int(getattr(env, "local_world_size", 0) or 1))


# ========================================================== checkpoint
class CheckpointJob(RankJob):
    """Each rank: the checkpoint probe on a state of its own, in files of its own."""

    kind = "checkpoint"
    phases = [Phase(name, (rate,), f"{name}_bw") for name, (rate, _, _) in _CKPT.items()]

    def __init__(self, params):
        super().__init__(params)
        self.local_rank = 0

    def bind(self, env) -> None:
        super().bind(env)
        self.local_rank = env.local_rank

    def _plan(self):

        require_torch("checkpoint")
        p = self.params
        return plan(p.get("model", "transformer"), p.get("size"), p.get("scale", 1.0), p.get("optimizer", True))

    def _checks(self, nranks: int, local_ranks: int) -> None:
        """The directory holds ``nranks`` × what one rank writes; this host's memory ``local_ranks`` states."""

        pl = self._plan()
        target = inspect(self.params["path"], write=True)
        if target.kind != "dir":
            raise ProbeError(
                f"{target.path} is not a directory: checkpoint writes new files of its own in a "
                "directory (and removes them)"
            )
        per = disk_bytes(pl, self.params.get("dcp", True))
        self.write_bytes = per
        try:
            target.ensure_room(per * nranks)
        except ProbeError as exc:
            if nranks == 1:
                raise
            what = "its torch.save file and DCP directory" if self.params.get("dcp", True) else "its torch.save file"
            raise ProbeError(
                f"{nranks} ranks × {format_bytes(per, binary=True)} each ({what}) = "
                f"{format_bytes(per * nranks, binary=True)} to write: {exc}"
            ) from None
        check_memory(
            pl.total_bytes, self.params.get("device", "cpu"), f"a {pl.model} checkpoint", ranks=local_ranks, gpu=False
        )

    def local_checks(self, nranks: int) -> None:
        self._checks(nranks, nranks)  # --ranks N: all N on this host
        self._gpus(nranks - 1)

    def preflight(self, env) -> None:
        self._checks(env.world_size, _local_ranks(env))
        self._gpus(env.local_rank)

    def _gpus(self, local_rank: int) -> None:
        """``--device cuda``: a GPU for this local rank (counted, no CUDA context made)."""
        d = str(self.params.get("device") or "cpu")
        if not d.startswith("cuda"):
            return
        import torch

        n = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if n == 0:
            raise ProbeError(
                f"--device {d}: CUDA is not usable here (torch {torch.__version__}); run on the CPU "
                "(the default) or where a GPU is visible"
            )
        if d == "cuda" and local_rank >= n:
            raise ProbeError(
                f"--device cuda gives each rank the GPU of its local rank: {local_rank + 1} ranks on a "
                f"host with {n} GPU(s); use at most {n} rank{'s' if n != 1 else ''} per host, "
                "or --device cuda:0 for every rank to share one"
            )

    def _device(self) -> str:
        d = str(self.params.get("device") or "cpu")
        return f"cuda:{self.local_rank}" if d == "cuda" else d  # each rank its own GPU, as DDP

    def own(self):
        seed = int(self.params.get("seed", 0)) + 1000 * self.rank
        return {"device": self._device(), "seed": seed, "rank": self.rank, "world_size": self.world_size}

    def tracks(self, res, clock):
        out = {}
        for phase, (rate, nbytes, elapsed_key) in _CKPT.items():
            elapsed, moved = res.metrics.get(elapsed_key), res.metrics.get(nbytes)
            if res.metrics.get(rate) is None or not elapsed or moved is None:
                continue
            t0 = self._anchor(res, phase, elapsed, rate)
            if t0 is not None:  # one call: even progress from its start to its end
                out[phase] = track_from_windows(clock.at(t0), [], {rate: []}, end=elapsed, totals={rate: moved})
        return out

    def sweep_left(self) -> int:

        return tempsweep.sweep_stale(self.params["path"])[0]

    def finish(self, res, records):
        m = res.metrics
        res.labels.pop("rank", None)
        res.params.pop("rank", None)
        res.params["device"] = self.params.get("device", "cpu")
        res.params["seed"] = self.params.get("seed", 0)
        res.labels["fill_per_rank"] = "seed + 1000 × rank: no two ranks' files alike"
        res.labels["rank_files"] = "each rank its own torch.save file and DCP directory (DCP no_dist)"
        res.labels["rank_progress"] = (
            "each phase is one call: a rank's progress taken as even from its start to its end"
        )
        first = next((r["result"] for r in sorted(records, key=lambda r: r["rank"]) if r.get("result")), None)
        for k in ("state_bytes", "tensors_count"):  # each rank's own, alike on every rank
            v = ((first or {}).get("metrics") or {}).get(k)
            if v is not None:
                m[k] = v
        for k, name in (
            ("file_bytes", "write_total_bytes"),
            ("dcp_bytes", "dcp_write_total_bytes"),
            ("state_bytes", "state_total_bytes"),
        ):
            vals = rank_metric(records, k)
            if any(v is not None for v in vals):
                m[name] = sum(v or 0 for v in vals)
        for k in ("load_mmap_first_tensor_s", "load_mmap_all_s", "cold_resident_pct"):  # the slowest / worst rank's
            vals = [v for v in rank_metric(records, k) if v is not None]
            if vals:
                m[k] = max(vals)
        if m.get("load_mmap_first_tensor_s") is not None:
            res.labels["load_mmap"] = "torch.load(mmap=True): the slowest rank's seconds"
        _worst_cache(res, records)
        heads = [m.get(f"{p}_rank_spread_pct") for p in ("write", "read")]
        heads = [v for v in heads if v is not None]
        m["rank_spread_pct"] = max(heads) if heads else None  # torch.save and the cold torch.load
        if m.get("write_bytes_per_s") is not None or m.get("write_bytes_per_s_last_done") is not None:
            res.extra["answer"] = self._answer(res)

    def _answer(self, res) -> str:
        m, lab = res.metrics, res.labels
        size = format_bytes(m["state_bytes"], binary=True) if m.get("state_bytes") else "a"
        bits = [f"torch.save wrote {_together(m, 'write_bytes_per_s')}"]
        read = _together(m, "read_bytes_per_s")
        if read:
            s = f"torch.load ({lab.get('cache_read', 'buffered-cold')}) read back {read}"
            if m.get("read_warm_bytes_per_s") is not None:
                s += f", {format_metric('read_warm_bytes_per_s', m['read_warm_bytes_per_s'])} from the page cache"
            bits.append(s)
        if m.get("dcp_write_bytes_per_s") is not None:
            s = f"DCP {format_metric('dcp_write_bytes_per_s', m['dcp_write_bytes_per_s'])} write"
            if m.get("dcp_read_bytes_per_s") is not None:
                s += f", {format_metric('dcp_read_bytes_per_s', m['dcp_read_bytes_per_s'])} read"
            bits.append(s + " together")
        sp = m.get("rank_spread_pct")
        tail = f"; the slowest rank got {sp:.0f} % less than the fastest" if sp is not None else ""
        model = res.params.get("model", "")
        return f"{_who(res)}, a {size} {model} checkpoint each: " + "; ".join(bits) + tail


# ============================================================== shards
class ShardsJob(RankJob):
    """Each rank streams its own shards (a stable hash of the relative path), cold then warm."""

    kind = "shards"
    phases = [
        Phase("read", ("read_bytes_per_s", "samples_per_s"), "bw"),
        Phase("read_warm", ("read_warm_bytes_per_s", "warm_samples_per_s"), "warm_bw"),
    ]

    def __init__(self, params):
        super().__init__(params)
        self.local_world = 1

    def bind(self, env) -> None:
        super().bind(env)
        self.local_world = _local_ranks(env)

    def _split(self, nranks: int) -> None:
        """Every rank gets at least one shard (else a rank would have nothing to read)."""

        if str(self.params["path"]).startswith("s3://"):
            url, found, fmt = list_shards(
                self.params["path"], self.params.get("endpoint_url"), self.params.get("region")
            )
            rel = [k[len(url.prefix) :] for k, _ in found]
        else:
            t = inspect(self.params["path"], write=False, read=False)
            if t.kind != "dir":
                raise ProbeError(f"{t.path} is not a directory: shards reads the shard files of a folder")
            found, fmt = find_shards(t.path, parse_size(self.params.get("min_size", "1M")))
            rel = [os.path.relpath(p, t.path) for p, _ in found]
        if not found:
            return  # the probe says why, on every rank
        counts = [0] * nranks
        for r in rel:
            counts[shard_rank(r, nranks)] += 1
        idle = [str(r) for r, c in enumerate(counts) if c == 0]
        if idle:
            raise ProbeError(
                f"{len(found)} {fmt} shards split over {nranks} ranks by a stable hash of their path "
                f"leave rank{'s' if len(idle) > 1 else ''} {', '.join(idle)} none to read: use fewer "
                "ranks or more shards"
            )

    def local_checks(self, nranks: int) -> None:
        self._split(nranks)

    def preflight(self, env) -> None:
        self._split(env.world_size)

    def own(self):

        p = self.params
        streams, max_bytes = p.get("streams"), p.get("max_bytes")
        if not streams:  # the host's CPUs shared among its ranks
            streams = max(1, usable_cpus()["usable_int"] // self.local_world)
        if max_bytes is None:  # half the page cache, shared among the host's ranks (the warm pass stays warm)
            ram = cache.memory_bytes()
            max_bytes = max(1, ram // 2 // self.local_world) if ram else 0
        return {"streams": streams, "max_bytes": max_bytes, "rank": self.rank, "world_size": self.world_size}

    def tracks(self, res, clock):
        out = {}
        m = res.metrics
        for phase, series, rate, srate, elapsed_key, total_key in (
            ("read", "bw", "read_bytes_per_s", "samples_per_s", "elapsed_s", "read_total_bytes"),
            (
                "read_warm",
                "warm_bw",
                "read_warm_bytes_per_s",
                "warm_samples_per_s",
                "warm_elapsed_s",
                "read_warm_total_bytes",
            ),
        ):
            elapsed, total = m.get(elapsed_key), m.get(total_key)
            if m.get(rate) is None or not elapsed:
                continue
            t0 = self._anchor(res, phase, elapsed, rate)
            if t0 is None:
                continue
            data = res.samples.get(series) or {}
            bw = data.get("read_bytes_per_s") or []
            rates, totals = {rate: bw}, {rate: total}
            if m.get(srate) is not None and m.get("samples_count") is not None and total:
                per_byte = m["samples_count"] / total  # samples counted as the bytes go
                rates[srate] = [(v or 0.0) * per_byte for v in bw]
                totals[srate] = m["samples_count"]
            out[phase] = track_from_windows(clock.at(t0), data.get("t_s") or [], rates, end=elapsed, totals=totals)
        return out

    def finish(self, res, records):
        m = res.metrics
        res.labels.pop("rank", None)
        res.params.pop("rank", None)
        for k in ("streams", "max_bytes"):
            res.params[k] = self.params.get(k)
        sum_metrics(
            res,
            records,
            (
                "read_total_bytes",
                "read_warm_total_bytes",
                "samples_count",
                "members_count",
                "shards_count",
                "streams_count",
            ),
        )
        first = next((r["result"] for r in sorted(records, key=lambda r: r["rank"]) if r.get("result")), None)
        for k in ("shards_found_count", "dataset_total_bytes"):  # the whole set, alike on every rank
            v = ((first or {}).get("metrics") or {}).get(k)
            if v is not None:
                m[k] = v
        for pre in ("", "warm_"):
            for k, pick in ((f"{pre}stream_min_bytes_per_s", min), (f"{pre}stream_max_bytes_per_s", max)):
                vals = [v for v in rank_metric(records, k) if v is not None]
                if vals:
                    m[k] = pick(vals)
            hist = merge_hists(res, records, f"{pre}ttfb_hist", None)
            if hist.n:
                pcts = hist.percentiles((50.0, 90.0, 99.0))
                for p in (50, 90, 99):
                    m[f"{pre}ttfb_p{p}_ns"] = pcts[float(p)]
        cold = [v for v in rank_metric(records, "cold_resident_pct") if v is not None]
        if cold:
            m["cold_resident_pct"] = max(cold)
        _worst_cache(res, records)
        subsets = [((r.get("result") or {}).get("labels") or {}).get("subset") for r in records]
        res.labels.pop("subset", None)
        if any(subsets):
            res.labels["subset"] = "some ranks read a random subset of their shards (--max-bytes, per rank)"
        res.labels["shards"] = "split between ranks by a stable hash of the relative path: each shard read by one rank"
        res.labels["per_rank"] = (
            "--streams and the --max-bytes default are per rank: the host's usable CPUs and "
            "half its page cache shared among its ranks"
        )
        heads = [m.get(f"{p}_rank_spread_pct") for p in ("read", "read_warm")]
        m["rank_spread_pct"] = next((v for v in heads if v is not None), None)  # the cold pass first
        if m.get("samples_per_s") is not None:
            res.labels["samples_rule"] = "samples counted as each rank's bytes go (exact at the end of each pass)"
        if (
            m.get("read_bytes_per_s") is not None
            or m.get("read_warm_bytes_per_s") is not None
            or m.get("read_bytes_per_s_last_done") is not None
        ):
            res.extra["answer"] = self._answer(res)

    def _answer(self, res) -> str:

        m, lab = res.metrics, res.labels
        what = shards_what(m, lab)
        bits = []
        cold = _together(m, "read_bytes_per_s")
        if cold:
            where = (
                "from object storage"
                if str(res.params.get("path", "")).startswith("s3://")
                else f"from storage ({lab.get('cache')})"
            )
            bits.append(f"read {cold} {where}" + samples_phrase(m, "samples_per_s"))
        bits += [x for x in (warm_phrase(m), ttfb_phrase(m)) if x]
        if bits and ttfb_phrase(m) == bits[-1]:
            bits[-1] += ", every rank's shards merged"
        sp = m.get("rank_spread_pct")
        tail = f"; the slowest rank got {sp:.0f} % less than the fastest" if sp is not None else ""
        return f"{_who(res)}, {what} each read by one rank: " + ("; ".join(bits) or "no figures") + tail
