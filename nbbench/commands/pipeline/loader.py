"""``loader``: benchmark a DataLoader.

``%iobench loader LOADER_VAR [--steps N] [--emulate h100-resnet50]`` benchmarks a
DataLoader from the notebook's namespace; in a terminal a directory (the built-in
image-folder or tar-shard dataset) or an ``s3://`` prefix of tar shards or image objects
takes the variable's place.  With ``--ranks N`` each rank reads its own share of the folder's
files or of the prefix's shards or objects.  Module-level imports stay light: torch loads when a command
runs.  Where torch is needed (a folder) and missing, the command ends before anything runs
with one sentence saying how to install it (a ProbeError: exit code 1 in the CLI, the
environment lacks something — the command line itself is right).
"""

from __future__ import annotations

import os

from ...probes.objects.client import is_s3
from ...probes.pipeline.dataloader import require_torch
from ...results import ProbeError
from .. import options, ranks
from ..options import Opt
from . import options as po

__all__ = ["LoaderCommand"]


class LoaderCommand(ranks.RankedCommand):
    measures = True
    front_only = frozenset({"no_plot"})  # the live plot: drawn here, never by a rank
    scale = ("--duration", "duration", "duration")
    name = "loader"
    description = (
        "Benchmark a DataLoader (any iterable of batches): time each next() (data) and each step "
        "(compute); samples/s, AU = compute / wall time against the 90% line, the data-wait share "
        "and its input-bound band, GPU utilisation from the monitor. Worker start-up (first batch) "
        "and warm-up are reported apart."
    )
    epilog = (
        "examples:  %iobench loader train_loader --emulate h100-resnet50 --steps 200\n"
        "           nbbench loader /dataset/train --workers 8 --batch-size 256 --emulate a100-resnet50"
    )

    arguments = (
        Opt(
            "loader",
            help="a DataLoader variable in the notebook, a dataset folder (an image tree or .tar shards), or "
            "s3://BUCKET/PREFIX of tar shards or image objects",
            metavar="LOADER",
            nargs="?",
            default=None,
        ),
        po.DATASET,
        Opt("--steps", options.positive_int, None, "measured steps"),
        Opt("--duration", options.duration, None, "measured seconds (default 10 s when --steps is not given)"),
        Opt("--warmup", options.nonneg_int, 2, "steps after the first batch run but not measured (2)"),
        Opt(
            "--epochs",
            options.nonneg_int,
            None,
            "passes over the loader at most; 0: as many as --steps/--duration need (default 1 for a variable, 0 "
            "for a folder)",
        ),
        *po.STEP,
        Opt(
            "--accelerator",
            po.accelerator_type,
            None,
            "for the loader alone: whose need to compare with (default h100-resnet50 for a folder)",
        ),
        Opt("--workers", options.nonneg_int, None, "for a folder: num_workers (default the usable CPUs)"),
        Opt("--batch-size", options.positive_int, 64, "for a folder: batch size (64)"),
        *po.DIR_LOADER,
        *po.S3,
        Opt("--no-plot", "store_true", help="no live plot"),
        ranks.OPTIONS,
    )

    def run(self, args, ctx):
        from ...probes.pipeline.loader import bench_loader
        from ...ranks.rankenv import detect

        if args.ranks is not None or args.dataset or detect(no_dist=args.no_dist) is not None:
            value = self._run_ranked(args, ctx)
            if value is not ranks.LOCAL:
                return value  # else --dataset alone: one process, a DataLoader made here as for a folder
        if args.loader is None and not args.dataset:
            raise ProbeError("give a DataLoader variable, a dataset folder or --dataset module:function")
        dl = ds = None
        accelerator = args.accelerator
        if args.dataset:
            from ...ranks.loaderjobs import load_dataset

            target, is_dir, ds = args.dataset, False, load_dataset(args.dataset)
        else:
            target, is_dir = (args.loader, True) if is_s3(args.loader) else po.resolve(ctx, args.loader, "DataLoader")
        if is_dir:
            require_torch("loader on a folder")
            from ...probes.pipeline.imagefolder import ImageFolderDataset
            from ...probes.shards.tarshards import TarShardDataset, has_tar_shards

            if is_s3(target):  # tar shards (copied first to count their samples) or image objects, by GETs
                from ...probes.objects.s3dataset import open_s3_dataset

                ds = open_s3_dataset(
                    target,
                    endpoint_url=args.endpoint_url,
                    region=args.region,
                    copy=False,
                    decode=args.decode,
                    size=args.size,
                )
            else:
                ds = (TarShardDataset if has_tar_shards(target) else ImageFolderDataset)(
                    target, decode=args.decode, size=args.size
                )
            if accelerator is None and not args.emulate:
                accelerator = "h100-resnet50"
        if ds is not None:  # a folder, an s3:// prefix or --dataset: the DataLoader is made here
            from ...env import usable_cpus
            from ...probes.pipeline.dataloader import make_loader

            nw = usable_cpus()["usable_int"] if args.workers is None else args.workers
            dl = make_loader(ds, args.batch_size, nw, persistent_workers=nw > 0)
            loader = dl
        else:
            loader = target
            if isinstance(loader, (str, bytes, os.PathLike)):
                hint = ""
                if os.path.isdir(os.path.expanduser(os.fsdecode(loader))):
                    hint = f", or give the folder itself: {ctx.command_text('loader', os.fsdecode(loader))}"
                r = repr(loader) if len(repr(loader)) <= 40 else repr(loader)[:37] + "..."
                raise ProbeError(
                    f"{args.loader} is a {type(loader).__name__} ({r}), not a DataLoader: give the "
                    f"name of a DataLoader variable{hint}"
                )
            if not hasattr(loader, "__iter__"):
                raise ProbeError(
                    f"{args.loader} is a {type(loader).__name__}, not an iterable of batches "
                    f"(a DataLoader); for a dataset use {ctx.command_text('sweep', args.loader)}"
                )
        step = po.step_of(args)
        epochs = args.epochs if args.epochs is not None else (0 if ds is not None else 1)
        epochs = None if epochs == 0 else epochs
        plot = _live_plot(ctx, args)
        _plot_targets(
            plot,
            accelerator or args.emulate,
            args.duration if args.duration is not None else (10.0 if args.steps is None else None),
        )
        try:
            res = ctx.run_probe(
                f"loader {args.loader or args.dataset}",
                lambda p, cancel: bench_loader(
                    loader,
                    steps=args.steps,
                    duration=args.duration,
                    warmup=args.warmup,
                    step=step,
                    progress=p,
                    cancel=cancel,
                    accelerator=accelerator,
                    epochs=epochs,
                    monitor=plot.monitor if plot is not None and plot.monitor else "auto",
                    on_window=plot.on_window if plot is not None else None,
                ),
            )
        finally:
            if dl is not None:
                from ...probes.pipeline.dataloader import close_loader

                close_loader(dl, force=True)
            if is_dir and hasattr(ds, "close"):  # a dataset made here (a user's --dataset is theirs)
                ds.close()
            if plot is not None:
                plot.stop()
        if plot is not None:
            plot.finish(res)
        if ds is not None:
            res.params["path"] = str(target)
        if is_dir and is_s3(target):
            res.labels["dataset"] = ds.describe()
            ds.label_requests(res)
        return res

    def _run_ranked(self, args, ctx):
        params = self.params(args)
        plot = _live_plot(ctx, args) if args.ranks is not None else None
        try:
            value = po.ranked(
                "loader", "loader", args, ctx, "loader", params, f"loader {args.loader or args.dataset}", plot
            )
        finally:
            if plot is not None:
                plot.stop()
        if value is not ranks.LOCAL and plot is not None and hasattr(value, "metrics"):
            plot.finish(value)
        return value


def _live_plot(ctx, args):
    if getattr(args, "no_plot", False):
        return None
    try:
        return ctx.loader_plot()  # the notebook's live view; None where there is none
    except Exception:  # noqa: BLE001 - no plot is better than no benchmark
        return None


def _plot_targets(plot, accelerator, span_s) -> None:
    """The live plot's need line (when the accelerator is known) and the run's expected length."""
    if plot is None:
        return
    try:
        if accelerator:
            from ...accelerators import get_accelerator

            acc = get_accelerator(accelerator)
            plot.set_need(acc.needed_samples_per_s(), acc.name)
        plot.set_span(span_s)
    except Exception:  # noqa: BLE001 - a plot detail never stops a benchmark
        pass
