"""``loader``, ``sweep`` and ``feed``: the input-pipeline subcommands.

``%iobench loader LOADER_VAR [--steps N] [--emulate h100-resnet50]`` benchmarks a
DataLoader from the notebook's namespace; ``%iobench sweep DATASET_VAR --workers
0,2,4,8 --batch-size 64,256`` sweeps its settings; ``%iobench feed DIR --accelerator
h100-resnet50`` answers how many accelerators a folder's storage and this CPU feed.
In a terminal a directory takes the variable's place (the built-in image-folder
dataset).  Module-level imports stay light: torch loads when a command runs.  Where
torch is needed (a folder, ``sweep``, ``feed``) and missing, the command ends before
anything runs with one sentence saying how to install it (a ProbeError: exit code 1
in the CLI, the environment lacks something — the command line itself is right).
"""

from __future__ import annotations

import argparse
import os

from . import options
from ..probes.pipeline.dataloader import require_torch
from ..results import ProbeError
from . import ranks

__all__ = ["LoaderCommand", "SweepCommand", "FeedCommand"]


def _accelerator(text: str) -> str:
    from ..accelerators import get_accelerator

    try:
        return get_accelerator(text).name
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _step_of(args) -> object:
    if getattr(args, "emulate", None):
        return f"emulate:{args.emulate}"
    step = getattr(args, "step", "none")
    return None if step in (None, "none") else step


def _add_step_options(parser) -> None:
    parser.add_argument("--emulate", metavar="ACCEL", type=_accelerator, default=None,
                        help="compute step: sleep like this accelerator (MLPerf Storage): h100-resnet50, "
                             "a100-resnet50, h100-unet3d, a100-unet3d, h100-cosmoflow")
    parser.add_argument("--step", choices=("none", "gpu"), default="none",
                        help="compute step when not emulating: none (the loader alone) or gpu "
                             "(a real CUDA step: non-blocking copy + matmuls)")


def _add_dir_loader_options(parser, workers_default_help: str) -> None:
    parser.add_argument("--decode", choices=("auto", "pil", "none"), default="auto",
                        help="for a directory: decode with Pillow (random-resized crop + flip), bytes only, "
                             "or auto (Pillow when the files are images)")
    parser.add_argument("--size", type=options.positive_int, default=224, help="crop size in pixels (224)")


def _add_s3_options(parser) -> None:
    parser.add_argument("--endpoint-url", dest="endpoint_url", default=None,
                        help="for an s3:// dataset: an S3-compatible endpoint, e.g. http://127.0.0.1:9000")
    parser.add_argument("--region", default=None, help="for an s3:// dataset: the region (default: the AWS configuration)")


def _is_s3(name) -> bool:
    return isinstance(name, str) and name.startswith("s3://")


def _no_s3_ranks(args, name: str) -> None:
    if _is_s3(name) and (getattr(args, "ranks", None) is not None or getattr(args, "nnodes", 1) > 1):
        raise ProbeError("--ranks with an s3:// dataset is not supported yet (shards s3://… --ranks N reads "
                         "the same shards on N ranks)")


def _add_dataset_option(parser) -> None:
    parser.add_argument("--dataset", metavar="MODULE:FUNCTION", default=None,
                        help="a function returning a map-style Dataset (importable by every rank with --ranks), "
                             "instead of a folder or a notebook variable")


def _ranked(name: str, kind: str, args, ctx, what: str, params: dict, desc: str, plot=None):
    """Rank mode or ``--ranks``: the folder (or --dataset) and the options as plain values; else LOCAL."""
    from ..dist.rankenv import detect

    if args.ranks is None and detect(no_dist=args.no_dist) is None:
        return ranks.LOCAL
    src = getattr(args, what)
    if src is not None:
        ranks.refuse_variable(ctx, src)
    elif not args.dataset:
        raise ProbeError(f"give a dataset folder or --dataset module:function to run {kind} as ranks")
    if src is not None and not args.dataset:
        params["path"] = os.path.abspath(os.path.expanduser(src))
    params["dataset"] = args.dataset
    return ranks.dispatch(name, kind, args, ctx, params, desc, on_figures=_throttled(plot))


def _throttled(plot, every_s: float = 1.0):
    """The live plot fed at most once a second with the ranks' summed figures."""
    if plot is None:
        return None
    import time

    last = [0.0]

    def feed(figs):
        now = time.monotonic()
        if now - last[0] >= every_s:
            last[0] = now
            plot.on_window(figs)

    return feed


def _is_dir_arg(ctx, name: str) -> bool:
    in_ns = ctx.user_ns is not None and name in ctx.user_ns
    return not in_ns and os.path.isdir(os.path.expanduser(name))


def _resolve(ctx, name: str, what: str):
    """The notebook variable ``name``; else a directory; else a ProbeError."""
    if ctx.user_ns is not None and name in ctx.user_ns:
        return ctx.lookup(name), False
    path = os.path.expanduser(name)
    if os.path.isdir(path):
        return path, True
    if ctx.user_ns is None:   # a terminal: no notebook variables to look up
        raise ProbeError(f"{name} is not a directory (give a dataset folder, root/CLASS/IMAGE; there are no "
                         "notebook variables here)")
    raise ProbeError(f"no variable named {name!r} in the notebook's namespace and no directory {name!r}: "
                     f"give the name of a {what} or a dataset folder")


class LoaderCommand(ranks.RankedCommand):
    measures = True
    scale = ("--duration", "duration", "duration")
    name = "loader"
    description = ("Benchmark a DataLoader (any iterable of batches): time each next() (data) and each step "
                   "(compute); samples/s, AU = compute / wall time against the 90% line, the data-wait share "
                   "and its input-bound band, GPU utilisation from the monitor. Worker start-up (first batch) "
                   "and warm-up are reported apart.")
    epilog = ("examples:  %iobench loader train_loader --emulate h100-resnet50 --steps 200\n"
              "           nbbench loader /dataset/train --workers 8 --batch-size 256 --emulate a100-resnet50")

    def add_arguments(self, parser) -> None:
        parser.add_argument("loader", metavar="LOADER", nargs="?", default=None,
                            help="a DataLoader variable in the notebook, or a dataset folder (an image tree or "
                                 ".tar shards)")
        _add_dataset_option(parser)
        parser.add_argument("--steps", type=options.positive_int, default=None, help="measured steps")
        parser.add_argument("--duration", type=options.duration, default=None,
                            help="measured seconds (default 10 s when --steps is not given)")
        parser.add_argument("--warmup", type=options.nonneg_int, default=2,
                            help="steps after the first batch run but not measured (2)")
        parser.add_argument("--epochs", type=options.nonneg_int, default=None,
                            help="passes over the loader at most; 0: as many as --steps/--duration need "
                                 "(default 1 for a variable, 0 for a folder)")
        _add_step_options(parser)
        parser.add_argument("--accelerator", type=_accelerator, default=None,
                            help="for the loader alone: whose need to compare with (default h100-resnet50 "
                                 "for a folder)")
        parser.add_argument("--workers", type=options.nonneg_int, default=None,
                            help="for a folder: num_workers (default the usable CPUs)")
        parser.add_argument("--batch-size", dest="batch_size", type=options.positive_int, default=64,
                            help="for a folder: batch size (64)")
        _add_dir_loader_options(parser, "")
        _add_s3_options(parser)
        parser.add_argument("--no-plot", dest="no_plot", action="store_true", help="no live plot")
        ranks.add_rank_options(parser)

    def run(self, args, ctx):
        from ..probes.pipeline.loader import bench_loader

        from ..dist.rankenv import detect

        _no_s3_ranks(args, args.loader)
        if args.ranks is not None or args.dataset or detect(no_dist=args.no_dist) is not None:
            return self._run_ranked(args, ctx)
        if args.loader is None:
            raise ProbeError("give a DataLoader variable, a dataset folder or --dataset module:function")
        target, is_dir = (args.loader, True) if _is_s3(args.loader) else _resolve(ctx, args.loader, "DataLoader")
        dl = ds = None
        accelerator = args.accelerator
        if is_dir:
            require_torch("loader on a folder")
            from ..env import usable_cpus
            from ..probes.pipeline.dataloader import make_loader
            from ..probes.pipeline.imagefolder import ImageFolderDataset
            from ..probes.shards.tarshards import TarShardDataset, has_tar_shards

            if _is_s3(target):   # tar shards GET from the store (a local copy counts the samples first)
                from ..probes.objects.s3dataset import S3TarShardDataset

                ds = S3TarShardDataset(target, endpoint_url=args.endpoint_url, region=args.region,
                                       decode=args.decode, size=args.size)
            else:
                ds = (TarShardDataset if has_tar_shards(target) else ImageFolderDataset)(
                    target, decode=args.decode, size=args.size)
            nw = usable_cpus()["usable_int"] if args.workers is None else args.workers
            dl = make_loader(ds, args.batch_size, nw, persistent_workers=nw > 0)
            loader = dl
            if accelerator is None and not args.emulate:
                accelerator = "h100-resnet50"
        else:
            loader = target
            if isinstance(loader, (str, bytes, os.PathLike)):
                hint = ""
                if os.path.isdir(os.path.expanduser(os.fsdecode(loader))):
                    hint = f", or give the folder itself: {ctx.command_text('loader', os.fsdecode(loader))}"
                r = repr(loader) if len(repr(loader)) <= 40 else repr(loader)[:37] + "..."
                raise ProbeError(f"{args.loader} is a {type(loader).__name__} ({r}), not a DataLoader: give the "
                                 f"name of a DataLoader variable{hint}")
            if not hasattr(loader, "__iter__"):
                raise ProbeError(f"{args.loader} is a {type(loader).__name__}, not an iterable of batches "
                                 f"(a DataLoader); for a dataset use {ctx.command_text('sweep', args.loader)}")
        step = _step_of(args)
        epochs = args.epochs if args.epochs is not None else (0 if is_dir else 1)
        epochs = None if epochs == 0 else epochs
        plot = _live_plot(ctx, args)
        _plot_targets(plot, accelerator or args.emulate,
                      args.duration if args.duration is not None else (10.0 if args.steps is None else None))
        try:
            res = ctx.run_probe(
                f"loader {args.loader}",
                lambda p, cancel: bench_loader(loader, steps=args.steps, duration=args.duration,
                                               warmup=args.warmup, step=step, progress=p, cancel=cancel,
                                               accelerator=accelerator, epochs=epochs,
                                               monitor=plot.monitor if plot is not None and plot.monitor else "auto",
                                               on_window=plot.on_window if plot is not None else None))
        finally:
            if dl is not None:
                from ..probes.pipeline.dataloader import close_loader

                close_loader(dl, force=True)
            if ds is not None and hasattr(ds, "close"):
                ds.close()
            if plot is not None:
                plot.stop()
        if plot is not None:
            plot.finish(res)
        if is_dir:
            res.params["path"] = str(target)
            if _is_s3(target):
                res.labels["dataset"] = f"{ds!r}: every shard a GET from the store"
        return res

    def _run_ranked(self, args, ctx):
        epochs = None if not args.epochs else args.epochs
        params = dict(batch_size=args.batch_size, workers=args.workers, decode=args.decode, size=args.size,
                      steps=args.steps, duration=args.duration, warmup=args.warmup, step=_step_of(args),
                      accelerator=args.accelerator, epochs=epochs)
        plot = _live_plot(ctx, args) if args.ranks is not None else None
        try:
            value = _ranked("loader", "loader", args, ctx, "loader", params,
                            f"loader {args.loader or args.dataset}", plot)
        finally:
            if plot is not None:
                plot.stop()
        if value is ranks.LOCAL:   # --dataset alone: one process
            from ..probes.pipeline.dataloader import close_loader, make_loader
            from ..dist.loaderjobs import load_dataset
            from ..probes.pipeline.loader import bench_loader
            from ..env import usable_cpus

            ds = load_dataset(args.dataset)
            nw = usable_cpus()["usable_int"] if args.workers is None else args.workers
            dl = make_loader(ds, args.batch_size, nw, persistent_workers=nw > 0)
            try:
                value = ctx.run_probe(f"loader {args.dataset}", lambda p, cancel: bench_loader(
                    dl, steps=args.steps, duration=args.duration, warmup=args.warmup, step=_step_of(args),
                    progress=p, cancel=cancel, accelerator=args.accelerator, epochs=epochs))
            finally:
                close_loader(dl, force=True)
            value.params["path"] = args.dataset
        elif plot is not None and hasattr(value, "metrics"):
            plot.finish(value)
        return value


def _live_plot(ctx, args):
    if getattr(args, "no_plot", False):
        return None
    try:
        return ctx.loader_plot()   # the notebook's live view; None where there is none
    except Exception:  # noqa: BLE001 - no plot is better than no benchmark
        return None


def _plot_targets(plot, accelerator, span_s) -> None:
    """The live plot's need line (when the accelerator is known) and the run's expected length."""
    if plot is None:
        return
    try:
        if accelerator:
            from ..accelerators import get_accelerator

            acc = get_accelerator(accelerator)
            plot.set_need(acc.needed_samples_per_s(), acc.name)
        plot.set_span(span_s)
    except Exception:  # noqa: BLE001 - a plot detail never stops a benchmark
        pass


class SweepCommand(ranks.RankedCommand):
    name = "sweep"
    description = ("Sweep DataLoader settings (num_workers × batch size × pin_memory × prefetch factor) on a "
                   "dataset, measure each on a short window after warm-up, and recommend the smallest "
                   "configuration within 3% of the best (or the first reaching AU >= 90% with --emulate). "
                   "Configurations that would crash (/dev/shm, open files) are skipped with the reason; "
                   "a crashing worker fails its configuration only.")
    epilog = ("examples:  %iobench sweep train_ds --workers 0,2,4,8 --batch-size 64,256\n"
              "           nbbench sweep /dataset/train --workers 0,4,8 --emulate h100-resnet50")

    def add_arguments(self, parser) -> None:
        parser.add_argument("source", metavar="DATASET", nargs="?", default=None,
                            help="a dataset variable in the notebook (a DataLoader: its dataset), or a folder")
        _add_dataset_option(parser)
        parser.add_argument("--workers", type=options.int_list, default=None,
                            help="num_workers values, e.g. 0,2,4,8 (default 0,1,2,4… up to the usable CPUs)")
        parser.add_argument("--batch-size", dest="batch_size", type=options.int_list, default=[64],
                            help="batch sizes, e.g. 64,256 (64)")
        parser.add_argument("--pin-memory", dest="pin_memory", type=options.bool_list, default=[False],
                            help="pin_memory values, e.g. false,true (false)")
        parser.add_argument("--prefetch", dest="prefetch", type=options.int_list, default=[2],
                            help="prefetch_factor values (2)")
        parser.add_argument("--no-persistent", dest="persistent", action="store_false",
                            help="persistent_workers=False")
        parser.add_argument("--duration", type=options.duration, default=2.0,
                            help="measured seconds per configuration (2)")
        parser.add_argument("--warmup", type=options.nonneg_int, default=2, help="warm-up steps (2)")
        _add_step_options(parser)
        _add_dir_loader_options(parser, "")
        ranks.add_rank_options(parser)

    def run(self, args, ctx):
        from ..probes.pipeline.sweep import sweep

        params = dict(num_workers=args.workers, batch_size=args.batch_size, pin_memory=args.pin_memory,
                      prefetch_factor=args.prefetch, persistent_workers=args.persistent, step=_step_of(args),
                      duration=args.duration, warmup=args.warmup, decode=args.decode, size=args.size)
        value = _ranked("sweep", "sweep", args, ctx, "source", params, f"sweep {args.source or args.dataset}")
        if value is not ranks.LOCAL:
            return value
        require_torch("sweep")
        if args.source is None and not args.dataset:
            raise ProbeError("give a dataset variable, a dataset folder or --dataset module:function")
        if args.dataset:
            from ..dist.loaderjobs import load_dataset

            target, is_dir = load_dataset(args.dataset), False
        else:
            target, is_dir = _resolve(ctx, args.source, "dataset")
        if is_dir:
            from ..probes.pipeline.imagefolder import ImageFolderDataset

            target = ImageFolderDataset(target, decode=args.decode, size=args.size)
        if 0 in args.prefetch:
            raise ProbeError("--prefetch values must be 1 or more")
        if 0 in args.batch_size:
            raise ProbeError("--batch-size values must be 1 or more")
        step = _step_of(args)
        res = ctx.run_probe(f"sweep {args.source or args.dataset}",
            lambda p, cancel: sweep(target, num_workers=args.workers, batch_size=args.batch_size,
                                    pin_memory=args.pin_memory, prefetch_factor=args.prefetch,
                                    persistent_workers=args.persistent, step=step, duration=args.duration,
                                    warmup=args.warmup, progress=p, cancel=cancel))
        if is_dir:
            res.params["path"] = str(target.root)
        return res


class FeedCommand(ranks.RankedCommand):
    measures = True
    scale = ("--duration", "duration", "duration")
    name = "feed"
    description = ("How many accelerators can the storage under DIR and this CPU feed at AU >= 90%? Reads "
                   "the image folder (or its .tar shards, streamed) through a DataLoader (Pillow decode, "
                   "random-resized crop, flip) with a "
                   "cold page cache and a warm one (DS-Analyzer's differential method): if even the warm rate "
                   "falls short of the need, CPU preparation limits it; if only the cold rate does, storage "
                   "fetch. Needs torch (pip install 'nbbench[torch]').")
    epilog = "example:  nbbench feed /dataset/train --accelerator h100-resnet50 --json"

    def add_arguments(self, parser) -> None:
        parser.add_argument("path", metavar="DIR", help="an image folder (root/CLASS/IMAGE), a folder of .tar "
                                                        "shards (000123.jpg + 000123.cls samples, streamed), or "
                                                        "s3://BUCKET/PREFIX of tar shards")
        parser.add_argument("--accelerator", type=_accelerator, default="h100-resnet50",
                            help="h100-resnet50 (default), a100-resnet50, h100-unet3d, a100-unet3d, h100-cosmoflow")
        parser.add_argument("--count", type=options.positive_int, default=1,
                            help="how many such accelerators you mean to feed (1): what limits it is judged "
                                 "against their need")
        parser.add_argument("--batch-size", dest="batch_size", type=options.positive_int, default=64,
                            help="batch size (64)")
        parser.add_argument("--workers", type=options.nonneg_int, default=None,
                            help="num_workers (default the usable CPUs)")
        parser.add_argument("--duration", type=options.duration, default=5.0,
                            help="measured seconds per run (5); the cold run stops after one pass")
        parser.add_argument("--warmup", type=options.nonneg_int, default=2, help="warm-up steps (2)")
        parser.add_argument("--cold", choices=("auto", "fadvise", "drop_caches", "none"), default="auto",
                            help="how to make the cache cold: per-file fadvise (auto), drop_caches (root, "
                                 "whole machine) or none (warm run only)")
        parser.add_argument("--max-files", dest="max_files", type=options.positive_int, default=20000,
                            help="a random subset of a larger folder (20000)")
        _add_dir_loader_options(parser, "")
        _add_s3_options(parser)
        ranks.add_rank_options(parser)

    def run(self, args, ctx):
        from ..probes.pipeline.feed import feed

        _no_s3_ranks(args, args.path)

        value = ranks.dispatch("feed", "feed", args, ctx, dict(
            path=os.path.abspath(os.path.expanduser(args.path)), accelerator=args.accelerator,
            batch_size=args.batch_size, workers=args.workers, decode=args.decode, duration=args.duration,
            warmup=args.warmup, cold=args.cold, size=args.size, max_files=args.max_files), f"feed {args.path}")
        if value is not ranks.LOCAL:
            return value
        path = args.path if _is_s3(args.path) else os.path.expanduser(args.path)
        if not _is_s3(path) and not os.path.isdir(path):
            raise ProbeError(f"{args.path} is not a directory: give an image folder (root/CLASS/IMAGE), a folder "
                             "of .tar shards, or s3://BUCKET/PREFIX of tar shards")
        require_torch("feed")
        return ctx.run_probe(f"feed {args.path}",
            lambda p, cancel: feed(path, accelerator=args.accelerator, batch_size=args.batch_size,
                                   num_workers=args.workers, decode=args.decode, duration=args.duration,
                                   warmup=args.warmup, cold=args.cold, size=args.size, max_files=args.max_files,
                                   count=args.count, progress=p, cancel=cancel, endpoint_url=args.endpoint_url,
                                   region=args.region))
