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

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "path", metavar="DIR", help="a directory (new .nbbench-* temp files are written there and removed)"
        )
        parser.add_argument(
            "--model",
            choices=_MODELS,
            default="transformer",
            help="the state dict's shape: transformer (default), resnet50, or an MLPerf preset",
        )
        parser.add_argument(
            "--size",
            type=options.size,
            default=None,
            help="the state's size (transformer: default 512M; resnet50: default its own, "
            "~195 MiB); presets take MLPerf's size — use --scale",
        )
        parser.add_argument(
            "--scale",
            type=_scale,
            default=1.0,
            help="a factor on the size, e.g. 0.01 for a preset on a small disk (default 1)",
        )
        parser.add_argument(
            "--no-optimizer",
            dest="optimizer",
            action="store_false",
            help="weights only (default: with the optimizer state, as training saves it)",
        )
        parser.add_argument(
            "--device",
            default="cpu",
            help="cpu (default) or cuda / cuda:N: built on, saved from and loaded back to the GPU",
        )
        parser.add_argument(
            "--no-dcp",
            dest="dcp",
            action="store_false",
            help="torch.save / torch.load only, no torch.distributed.checkpoint",
        )
        parser.add_argument("--seed", type=options.nonneg_int, default=0, help="the random fill's seed")
        ranks.add_rank_options(parser)

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

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "path",
            metavar="DIR",
            help="a folder of .tar shards, .bin/.parquet/.mds chunks, or "
            "other large files (read only); or s3://BUCKET/PREFIX",
        )
        parser.add_argument(
            "--streams", type=options.positive_int, default=None, help="parallel streams (default the usable CPUs)"
        )
        parser.add_argument("--bs", type=options.size, default="1M", help="each read's size (default 1M)")
        parser.add_argument(
            "--min-size",
            type=options.size,
            default="1M",
            help="without .tar or chunk files: read files of this size or more (default 1M)",
        )
        parser.add_argument(
            "--max-bytes",
            type=options.size,
            default=None,
            help="read at most this much, a random subset of the shards (default: half the "
            "memory, so the warm pass is warm; 0: all)",
        )
        parser.add_argument("--no-cold", dest="cold", action="store_false", help="skip the cold pass")
        parser.add_argument("--no-warm", dest="warm", action="store_false", help="skip the warm pass")
        parser.add_argument("--seed", type=options.nonneg_int, default=0, help="the shuffle's seed")
        parser.add_argument(
            "--endpoint-url",
            default=None,
            help="with s3://: an S3-compatible endpoint, e.g. http://127.0.0.1:9000",
        )
        parser.add_argument("--region", default=None, help="with s3://: the region (default: the AWS configuration)")
        ranks.add_rank_options(parser)

    def target(self, args):
        return args.path if str(args.path).startswith("s3://") else super().target(args)
