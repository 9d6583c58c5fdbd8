"""``sweep``: DataLoader settings swept on a dataset.

``%iobench sweep DATASET_VAR --workers 0,2,4,8 --batch-size 64,256`` sweeps its settings;
in a terminal a folder takes the variable's place.  An ``s3://`` dataset is refused in one
line (``loader`` and ``feed`` read one).  torch is needed and imported when it runs.
"""

from __future__ import annotations

from ...probes.objects.client import is_s3
from ...probes.pipeline.dataloader import require_torch
from ...results import ProbeError
from .. import options, ranks
from ..options import Opt
from . import options as po

__all__ = ["SweepCommand"]


class SweepCommand(ranks.RankedCommand):
    name = "sweep"
    description = (
        "Sweep DataLoader settings (num_workers × batch size × pin_memory × prefetch factor) on a "
        "dataset, measure each on a short window after warm-up, and recommend the smallest "
        "configuration within 3% of the best (or the first reaching AU >= 90% with --emulate). "
        "Configurations that would crash (/dev/shm, open files) are skipped with the reason; "
        "a crashing worker fails its configuration only."
    )
    epilog = (
        "examples:  %iobench sweep train_ds --workers 0,2,4,8 --batch-size 64,256\n"
        "           nbbench sweep /dataset/train --workers 0,4,8 --emulate h100-resnet50"
    )

    arguments = (
        Opt(
            "source",
            help="a dataset variable in the notebook (a DataLoader: its dataset), or a folder",
            metavar="DATASET",
            nargs="?",
            default=None,
        ),
        po.DATASET,
        Opt(
            "--workers",
            options.int_list,
            None,
            "num_workers values, e.g. 0,2,4,8 (default 0,1,2,4… up to the usable CPUs)",
        ),
        Opt("--batch-size", options.int_list, [64], "batch sizes, e.g. 64,256 (64)"),
        Opt("--pin-memory", options.bool_list, [False], "pin_memory values, e.g. false,true (false)"),
        Opt("--prefetch", options.int_list, [2], "prefetch_factor values (2)"),
        Opt("--no-persistent", "store_false", help="persistent_workers=False", dest="persistent"),
        Opt("--duration", options.duration, 2.0, "measured seconds per configuration (2)"),
        Opt("--warmup", options.nonneg_int, 2, "warm-up steps (2)"),
        *po.STEP,
        *po.DIR_LOADER,
        ranks.OPTIONS,
    )

    def run(self, args, ctx):
        from ...probes.pipeline.params import sweep_kwargs
        from ...probes.pipeline.sweep import sweep

        params = self.params(args)
        if is_s3(args.source):
            raise ProbeError(
                "sweep takes a folder, a notebook dataset or --dataset module:function, not an s3:// "
                "dataset (loader s3://… and feed s3://… read one)"
            )
        value = po.ranked("sweep", "sweep", args, ctx, "source", params, f"sweep {args.source or args.dataset}")
        if value is not ranks.LOCAL:
            return value
        require_torch("sweep")
        if args.source is None and not args.dataset:
            raise ProbeError("give a dataset variable, a dataset folder or --dataset module:function")
        if args.dataset:
            from ...ranks.loaderjobs import load_dataset

            target, is_dir = load_dataset(args.dataset), False
        else:
            target, is_dir = po.resolve(ctx, args.source, "dataset")
        if is_dir:
            from ...probes.pipeline.imagefolder import ImageFolderDataset

            target = ImageFolderDataset(target, decode=args.decode, size=args.size)
        if 0 in args.prefetch:
            raise ProbeError("--prefetch values must be 1 or more")
        if 0 in args.batch_size:
            raise ProbeError("--batch-size values must be 1 or more")
        kwargs = sweep_kwargs(params)  # what a rank's sweep takes too (ranks.sweepfeed)
        res = ctx.run_probe(
            f"sweep {args.source or args.dataset}",
            lambda p, cancel: sweep(target, progress=p, cancel=cancel, **kwargs),
        )
        if is_dir:
            res.params["path"] = str(target.root)
        return res
