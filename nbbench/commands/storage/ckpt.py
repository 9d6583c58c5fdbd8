"""The two other storage patterns of training: ``checkpoint`` (save / load model state) and
``shards`` (streams of large shard files).

Each parses its options, checks the path before any bar (as the storage commands do),
then runs the probe of :mod:`nbbench.probes.checkpoint.probe` / :mod:`nbbench.probes.shards.probe`
cancellably with a progress bar.  Both run as ranks too (``--ranks N``, torchrun, srun:
:mod:`nbbench.commands.ranks`; their rank parts are :mod:`nbbench.ranks.ckptjobs`).  Probe modules are
imported inside ``run`` so ``--help`` stays light (no torch).
"""

from __future__ import annotations

import argparse

from ...probes.checkpoint.models import MODELS as _MODELS
from .. import options, ranks
from ..options import Opt
from .disk import PathProbeCommand

__all__ = ["CheckpointCommand", "ShardsCommand"]


def _scale(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not v > 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number, not {text}")
    return v


class CheckpointCommand(PathProbeCommand):
    probe = "checkpoint"
    measures = True
    scale = ("--size", "size", "size")
    description = (
        "Save a model-like state dict the way training scripts do — torch.save to one new file, "
        "fsync'd (write_bytes_per_s), and torch.distributed.checkpoint to a new directory — then load "
        "it back with the page cache emptied (torch.load cold: read_bytes_per_s; DCP cold) and warm "
        "(torch.load, DCP, torch.load(mmap=True)). New temp files only, removed at the end; free space "
        "and memory (about twice the state) are checked first. Stop ends after the save or load call "
        "under way. Needs torch."
    )
    epilog = (
        "presets: llama3-8b, llama3-70b, llama3-405b, llama3-1t take MLPerf Storage's per-process checkpoint "
        "size (mlcommons/storage mlpstorage/config.py LLM_SIZE_BY_RANK) and layer shapes "
        "(configs/dlio/workload/llama3_*.yaml); scale them with --scale 0.01 on a small disk.\n"
        "examples:  nbbench checkpoint /scratch --size 256M --json\n"
        "           nbbench checkpoint /scratch --model llama3-8b --scale 0.01\n"
        "           nbbench checkpoint /shared/ckpt --size 1G --ranks 8   (each rank its own state and files)"
    )

    arguments = (
        Opt("path", help="a directory (new .nbbench-* temp files are written there and removed)", metavar="DIR"),
        Opt(
            "--model",
            _MODELS,
            "transformer",
            "the state dict's shape: transformer (default), resnet50, or an MLPerf preset",
        ),
        Opt(
            "--size",
            options.size,
            None,
            "the state's size (transformer: default 512M; resnet50: default its own, ~195 MiB); presets take "
            "MLPerf's size — use --scale",
        ),
        Opt("--scale", _scale, 1.0, "a factor on the size, e.g. 0.01 for a preset on a small disk (default 1)"),
        Opt(
            "--no-optimizer",
            "store_false",
            help="weights only (default: with the optimizer state, as training saves it)",
            dest="optimizer",
        ),
        Opt("--device", None, "cpu", "cpu (default) or cuda / cuda:N: built on, saved from and loaded back to the GPU"),
        Opt(
            "--no-dcp", "store_false", help="torch.save / torch.load only, no torch.distributed.checkpoint", dest="dcp"
        ),
        Opt("--seed", options.nonneg_int, 0, "the random fill's seed"),
        ranks.OPTIONS,
    )

    def preflight(self, params, target) -> None:
        from ...probes.checkpoint.preflight import preflight

        preflight(target, **{k: v for k, v in params.items() if k not in ("path", "seed")})


class ShardsCommand(PathProbeCommand):
    probe = "shards"
    measures = True
    scale = ("--max-bytes", "max_bytes", "size")
    description = (
        "Read a set of large files the way streaming loaders (WebDataset, MDS, Parquet) do: --streams "
        "parallel streams, each reading whole shards in shuffled order with a --bs buffer, cold (page "
        "cache dropped per shard) then warm; aggregate and per-stream MB/s, time to first byte per "
        "shard, and for .tar shards WebDataset samples/s. Read only; no torch needed."
    )
    epilog = (
        "example:  nbbench make-dataset /scratch/shards --shards 8 --shard-size 32M; nbbench shards /scratch/shards\n"
        "          nbbench shards /shared/shards --ranks 8   (each rank its own shards, each shard read once)"
    )

    arguments = (
        Opt(
            "path",
            help="a folder of .tar shards, .bin/.parquet/.mds chunks, or other large files (read only); or "
            "s3://BUCKET/PREFIX",
            metavar="DIR",
        ),
        Opt("--streams", options.positive_int, None, "parallel streams (default the usable CPUs)"),
        Opt("--bs", options.size, "1M", "each read's size (default 1M)"),
        Opt(
            "--min-size",
            options.size,
            "1M",
            "without .tar or chunk files: read files of this size or more (default 1M)",
        ),
        Opt(
            "--max-bytes",
            options.size,
            None,
            "read at most this much, a random subset of the shards (default: half the memory, so the warm pass is "
            "warm; 0: all)",
        ),
        Opt("--no-cold", "store_false", help="skip the cold pass", dest="cold"),
        Opt("--no-warm", "store_false", help="skip the warm pass", dest="warm"),
        Opt("--seed", options.nonneg_int, 0, "the shuffle's seed"),
        Opt("--endpoint-url", None, None, "with s3://: an S3-compatible endpoint, e.g. http://127.0.0.1:9000"),
        Opt("--region", None, None, "with s3://: the region (default: the AWS configuration)"),
        ranks.OPTIONS,
    )

    def target(self, args):
        return args.path if str(args.path).startswith("s3://") else super().target(args)
