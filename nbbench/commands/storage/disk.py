"""Storage subcommands: dd, randread, files, disk (presets).

Each parses its options, runs the probe of :mod:`nbbench.probes.storage.disk` /
:mod:`nbbench.probes.storage.files` through :func:`nbbench.runner.run_cancellable` (Ctrl-C and
the notebook's interrupt button set the cancel event: the probe removes its temp
file and returns an ``interrupted`` result) with a progress bar, and returns the
result.  Probe modules are imported inside ``run`` so ``--help`` stays light.
``make-dataset`` is in :mod:`nbbench.commands.storage.dataset`; the PATH check of the control
panel (:func:`describe_path`) in :mod:`nbbench.commands.storage.pathinfo`.
"""

from __future__ import annotations

from ...probes import limits
from .. import options, ranks

__all__ = ["PathProbeCommand", "DdCommand", "RandreadCommand", "FilesCommand", "DiskCommand"]

_PATH_HELP = (
    "a directory (a new .nbbench-* temp file is written there and removed), "
    "or an existing file / block device (read only)"
)


def _add_cache(parser, default_help="O_DIRECT where the filesystem accepts it (default)"):
    g = parser.add_mutually_exclusive_group()
    g.add_argument(
        "--direct",
        action="store_const",
        const=True,
        default=None,
        help=f"O_DIRECT: bypass the page cache; {default_help}",
    )
    g.add_argument(
        "--buffered",
        dest="direct",
        action="store_const",
        const=False,
        help="through the page cache (its cache is dropped before reads; writes end with fdatasync)",
    )


def _add_engine(parser, pattern, timed=False):
    """--engine with the choices the engine registry declares for the probe's jobs
    (:func:`nbbench.probes._engines.registry.engine_names`)."""
    from ...probes._engines.registry import DEFAULT, engine_names

    choices = engine_names(pattern, timed=timed, queue=timed)
    parser.add_argument(
        "--engine",
        choices=choices,
        default=DEFAULT,
        help=f"{DEFAULT} (default, nothing to install), "
        + ", ".join(c for c in choices if c != DEFAULT)
        + " (the system tool; one result schema)",
    )


def _target(path):
    """What PATH is, as the storage probes see it (a ProbeError when they cannot use it).

    The one place commands ask the storage probes about a path: inspected once, here in
    the main thread, so missing / FIFO / socket / device errors come before any bar; the
    probe then takes the target as it is.  Also the control panel's PATH field
    (:func:`nbbench.commands.storage.pathinfo.describe_path`).
    """
    from ...probes.storage.target import inspect

    # read=False: a read-only dataset tree is fine for files / feed / sweep
    return inspect(path, write=False, read=False)


def _add_jobs(parser, threads_alias: bool = False):
    parser.add_argument(
        "--jobs",
        type=options.jobs,
        default=1,
        help="independent I/O loops in as many processes, as fio's numjobs; figures summed "
        "over them (1-256, default 1)",
    )
    if threads_alias:
        parser.add_argument(
            "--threads",
            type=options.jobs,
            default=1,
            help="deprecated: an alias of --jobs (processes measure better than threads sharing one interpreter)",
        )


def _add_buffers(parser):
    parser.add_argument(
        "--buffers",
        choices=["pages", "huge"],
        default="pages",
        help="builtin engine's I/O buffers: pages (default: ordinary page-aligned memory, the "
        "request shape of dd and fio) or huge (2 MiB huge pages: a 1 MiB I/O stays one "
        "segment; labelled, not comparable with dd's and fio's figures where that splits)",
    )


def _run_probe(ctx, desc: str, fn):
    """Make the progress bar here in the main thread, run the probe cancellably."""
    from ... import tempfiles

    tempfiles.install_handlers()  # SIGTERM/SIGHUP clean-up; only works from the main thread
    return ctx.run_probe(desc, fn)


class PathProbeCommand(ranks.RankedCommand):
    """A probe on one PATH: its :meth:`params` to the ranks (where its parser takes ``--ranks``) or to the
    probe here, on the target inspected once in the main thread, with a progress bar and Stop."""

    def target(self, args):
        return _target(args.path)

    def preflight(self, params: dict, target) -> None:
        """Refusals before the bar (free space, memory): none by default."""

    def run(self, args, ctx):
        params = self.params(args)
        desc = f"{self.name} {args.path}"
        value = ranks.dispatch(self.name, self.probe, args, ctx, params, desc)
        if value is not ranks.LOCAL:
            return value
        target = self.target(args)
        self.preflight(params, target)
        return _run_probe(ctx, desc, lambda p, c: self.call_probe(params, path=target, progress=p, cancel=c))


class DdCommand(PathProbeCommand):
    probe = "dd"
    measures = True
    scale = ("--size", "size", "size")
    description = (
        "Sequential write then read, like dd: in a directory a new temp file is written, "
        "read back and removed; a file or block device is only read. Sizes follow dd: "
        "K/M/G = powers of 1024, KB/MB/GB = powers of 1000, KiB/MiB/GiB explicit."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("path", metavar="PATH", help=_PATH_HELP)
        parser.add_argument("--bs", type=options.size, default="1M", help="block size (default 1M = 1 MiB)")
        parser.add_argument(
            "--size", type=options.size, default="1G", help="bytes to write and read (default 1G; 512M, 4GiB, 1.5G…)"
        )
        parser.add_argument(
            "--count",
            type=options.positive_int,
            default=None,
            help="number of blocks, as dd's count (overrides --size)",
        )
        parser.add_argument(
            "--mode",
            choices=["both", "write", "read"],
            default=None,
            help="default: both in a directory, read on a file or device",
        )
        _add_cache(parser)
        _add_engine(parser, "seq")
        _add_buffers(parser)
        _add_jobs(parser)
        ranks.add_rank_options(parser)


class RandreadCommand(PathProbeCommand):
    probe = "randread"
    measures = True
    scale = ("--runtime", "runtime", "duration")
    description = (
        "Random reads at a block size and queue depth, time based: IOPS, bandwidth, latency "
        "mean/stddev and fio's 17 percentiles, and the queue depth reached."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("path", metavar="PATH", help=_PATH_HELP)
        parser.add_argument("--bs", type=options.size, default="4k", help="block size (default 4k)")
        parser.add_argument(
            "--qd", type=options.int_range(limits.RANDREAD_QD), default=1, help="I/Os in flight (default 1)"
        )
        _add_jobs(parser, threads_alias=True)
        parser.add_argument("--runtime", type=options.duration, default=10.0, help="seconds measured (default 10)")
        parser.add_argument("--ramp", type=options.duration, default=1.0, help="seconds not counted first (default 1)")
        parser.add_argument(
            "--size",
            type=options.size,
            default=None,
            help="region read: default 1G in a directory (written first, not timed), "
            "the whole file or device otherwise",
        )
        parser.add_argument(
            "--warm", action="store_true", help="with --buffered: read the region once first, measuring the page cache"
        )
        _add_cache(parser)
        _add_engine(parser, "rand", timed=True)
        _add_buffers(parser)
        ranks.add_rank_options(parser, file_per_rank=True)


class FilesCommand(PathProbeCommand):
    probe = "files"
    measures = True
    scale = ("--sample", "sample", "count")
    description = (
        "Read many files the way an image dataset is read: walk the tree (memory bounded), "
        "read --sample random files whole with --threads threads; files/s, bytes/s, per-file "
        "latency, the tree's size distribution."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("path", metavar="DIR", help="the tree, e.g. /dataset/train (read only)")
        parser.add_argument(
            "--sample",
            type=options.int_range(limits.FILES_SAMPLE),
            default=1000,
            help="files to read, a random sample of the tree (default 1000)",
        )
        parser.add_argument(
            "--threads", type=options.int_range(limits.FILES_THREADS), default=8, help="reader threads (default 8)"
        )
        parser.add_argument(
            "--cold",
            action="store_true",
            help="drop the page cache first (root: drop_caches, else posix_fadvise per file)",
        )
        parser.add_argument("--seed", type=options.nonneg_int, default=0, help="the sample's seed")
        ranks.add_rank_options(parser)


class DiskCommand(PathProbeCommand):
    probe = "disk"
    measures = True
    scale = ("--runtime", "runtime", "duration")
    description = (
        "A preset set of storage tests as one table: cdm (CrystalDiskMark: SEQ1M Q8T1, SEQ1M Q1T1, "
        "RND4K Q32T1, RND4K Q1T1, read and — in a directory — write), mlperf-resnet50 (~115 KB "
        "sample reads), mlperf-unet3d (~147 MB samples)."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("path", metavar="PATH", help=_PATH_HELP)
        parser.add_argument(
            "--preset",
            choices=["cdm", "cdm-nvme", "mlperf-resnet50", "mlperf-unet3d"],
            default="cdm",
            help="which set (default cdm)",
        )
        parser.add_argument("--size", type=options.size, default="1G", help="test file size (default 1G)")
        parser.add_argument("--runtime", type=options.duration, default=5.0, help="seconds per test (default 5)")
        parser.add_argument(
            "--ramp", type=options.duration, default=1.0, help="seconds not counted per test (default 1)"
        )
        parser.add_argument(
            "--no-write",
            dest="write",
            action="store_const",
            const=False,
            default=None,
            help="reads only, also in a directory",
        )
        _add_cache(parser)
        _add_engine(parser, None, timed=True)
        _add_buffers(parser)
        _add_jobs(parser, threads_alias=True)

    def run(self, args, ctx):
        params = self.params(args)
        target = self.target(args)
        return _run_probe(
            ctx, f"disk {args.preset}", lambda p, c: self.call_probe(params, path=target, progress=p, cancel=c)
        )
