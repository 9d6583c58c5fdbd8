"""``feed``: how many accelerators can a folder's (or a bucket's) storage and this CPU feed?

``nbbench feed DIR --accelerator h100-resnet50`` reads an image folder, a folder of tar
shards or an ``s3://`` prefix of tar shards or image objects cold and warm (the warm pass of
an ``s3://`` dataset reads a local copy: a local cache, said so).  With ``--ranks N`` every rank reads
its own share and rank 0 sums the rates.  torch is needed and imported when it runs.
"""

from __future__ import annotations

import os

from ...probes.objects.client import is_s3
from ...probes.pipeline.dataloader import require_torch
from ...results import ProbeError
from .. import options, ranks
from ..options import Opt
from . import options as po

__all__ = ["FeedCommand"]


class FeedCommand(ranks.RankedCommand):
    measures = True
    scale = ("--duration", "duration", "duration")
    name = "feed"
    description = (
        "How many accelerators can the storage under DIR and this CPU feed at AU >= 90%? Reads "
        "the image folder (or its .tar shards, streamed) through a DataLoader (Pillow decode, "
        "random-resized crop, flip) with a "
        "cold page cache and a warm one (DS-Analyzer's differential method): if even the warm rate "
        "falls short of the need, CPU preparation limits it; if only the cold rate does, storage "
        "fetch. Needs torch (pip install 'nbbench[torch]')."
    )
    epilog = "example:  nbbench feed /dataset/train --accelerator h100-resnet50 --json"

    arguments = (
        Opt(
            "path",
            help="an image folder (root/CLASS/IMAGE), a folder of .tar shards (000123.jpg + 000123.cls samples, "
            "streamed), or s3://BUCKET/PREFIX of tar shards or image objects",
            metavar="DIR",
        ),
        Opt(
            "--accelerator",
            po.accelerator_type,
            "h100-resnet50",
            "h100-resnet50 (default), a100-resnet50, h100-unet3d, a100-unet3d, h100-cosmoflow",
        ),
        Opt(
            "--count",
            options.positive_int,
            1,
            "how many such accelerators you mean to feed (1): what limits it is judged against their need",
        ),
        Opt("--batch-size", options.positive_int, 64, "batch size (64)"),
        Opt("--workers", options.nonneg_int, None, "num_workers (default the usable CPUs)"),
        Opt("--duration", options.duration, 5.0, "measured seconds per run (5); the cold run stops after one pass"),
        Opt("--warmup", options.nonneg_int, 2, "warm-up steps (2)"),
        Opt(
            "--cold",
            ("auto", "fadvise", "drop_caches", "none"),
            "auto",
            "how to make the cache cold: per-file fadvise (auto), drop_caches (root, whole machine) or none (warm "
            "run only)",
        ),
        Opt("--max-files", options.positive_int, 20000, "a random subset of a larger folder (20000)"),
        *po.DIR_LOADER,
        *po.S3,
        ranks.OPTIONS,
    )

    def run(self, args, ctx):
        from ...probes.pipeline.feed import feed
        from ...probes.pipeline.params import feed_kwargs

        params = dict(self.params(args), path=po.dataset_path(args.path))
        value = ranks.dispatch(self.name, "feed", args, ctx, params, f"feed {args.path}")
        if value is not ranks.LOCAL:
            return value
        path = args.path if is_s3(args.path) else os.path.expanduser(args.path)
        if not is_s3(path) and not os.path.isdir(path):
            raise ProbeError(
                f"{args.path} is not a directory: give an image folder (root/CLASS/IMAGE), a folder "
                "of .tar shards, or s3://BUCKET/PREFIX of tar shards or image objects"
            )
        require_torch("feed")
        kwargs = feed_kwargs(params)  # what a rank's feed takes too (ranks.sweepfeed)
        return ctx.run_probe(
            f"feed {args.path}",
            lambda p, cancel: feed(path, num_workers=args.workers, progress=p, cancel=cancel, **kwargs),
        )
