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
from ..options import Group, Opt

__all__ = ["PathProbeCommand", "DdCommand", "RandreadCommand", "FilesCommand", "DiskCommand"]

_PATH_HELP = (
    "a directory (a new .nbbench-* temp file is written there and removed), "
    "or an existing file / block device (read only)"
)


#: --direct / --buffered: at most one of them
CACHE = Group(
    Opt(
        "--direct",
        "store_const",
        None,
        "O_DIRECT: bypass the page cache; O_DIRECT where the filesystem accepts it (default)",
        const=True,
    ),
    Opt(
        "--buffered",
        "store_const",
        help="through the page cache (its cache is dropped before reads; writes end with fdatasync)",
        dest="direct",
        const=False,
    ),
    exclusive=True,
)


def engine(pattern, timed=False):
    """--engine with the choices the engine registry declares for the probe's jobs
    (:func:`nbbench.probes._engines.registry.engine_names`), an entry of a command's ``arguments``."""

    def add(parser):
        from ...probes._engines.registry import DEFAULT, engine_names

        choices = engine_names(pattern, timed=timed, queue=timed)
        others = ", ".join(c for c in choices if c != DEFAULT)
        help = f"{DEFAULT} (default, nothing to install), {others} (the system tool; one result schema)"
        return Opt("--engine", choices, DEFAULT, help)(parser)

    return add


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


PATH = Opt("path", help=_PATH_HELP, metavar="PATH")
JOBS = Opt(
    "--jobs",
    options.jobs,
    1,
    "independent I/O loops in as many processes, as fio's numjobs; figures summed over them (1-256, default 1)",
)
#: randread's and disk's --threads, an alias kept for old command lines
THREADS = Opt(
    "--threads",
    options.jobs,
    1,
    "deprecated: an alias of --jobs (processes measure better than threads sharing one interpreter)",
)
BUFFERS = Opt(
    "--buffers",
    ["pages", "huge"],
    "pages",
    "builtin engine's I/O buffers: pages (default: ordinary page-aligned memory, the request shape of dd and "
    "fio) or huge (2 MiB huge pages: a 1 MiB I/O stays one segment; labelled, not comparable with dd's and "
    "fio's figures where that splits)",
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

    arguments = (
        PATH,
        Opt("--bs", options.size, "1M", "block size (default 1M = 1 MiB)"),
        Opt("--size", options.size, "1G", "bytes to write and read (default 1G; 512M, 4GiB, 1.5G…)"),
        Opt("--count", options.positive_int, None, "number of blocks, as dd's count (overrides --size)"),
        Opt("--mode", ["both", "write", "read"], None, "default: both in a directory, read on a file or device"),
        CACHE,
        engine("seq"),
        BUFFERS,
        JOBS,
        ranks.OPTIONS,
    )


class RandreadCommand(PathProbeCommand):
    probe = "randread"
    measures = True
    scale = ("--runtime", "runtime", "duration")
    description = (
        "Random reads at a block size and queue depth, time based: IOPS, bandwidth, latency "
        "mean/stddev and fio's 17 percentiles, and the queue depth reached."
    )

    arguments = (
        PATH,
        Opt("--bs", options.size, "4k", "block size (default 4k)"),
        Opt("--qd", options.int_range(limits.RANDREAD_QD), 1, "I/Os in flight (default 1)"),
        JOBS,
        THREADS,
        Opt("--runtime", options.duration, 10.0, "seconds measured (default 10)"),
        Opt("--ramp", options.duration, 1.0, "seconds not counted first (default 1)"),
        Opt(
            "--size",
            options.size,
            None,
            "region read: default 1G in a directory (written first, not timed), the whole file or device otherwise",
        ),
        Opt("--warm", "store_true", help="with --buffered: read the region once first, measuring the page cache"),
        CACHE,
        engine("rand", timed=True),
        BUFFERS,
        ranks.OPTIONS_FILE_PER_RANK,
    )


class FilesCommand(PathProbeCommand):
    probe = "files"
    measures = True
    scale = ("--sample", "sample", "count")
    description = (
        "Read many files the way an image dataset is read: walk the tree (memory bounded), "
        "read --sample random files whole with --threads threads; files/s, bytes/s, per-file "
        "latency, the tree's size distribution."
    )

    arguments = (
        Opt("path", help="the tree, e.g. /dataset/train (read only)", metavar="DIR"),
        Opt(
            "--sample",
            options.int_range(limits.FILES_SAMPLE),
            1000,
            "files to read, a random sample of the tree (default 1000)",
        ),
        Opt("--threads", options.int_range(limits.FILES_THREADS), 8, "reader threads (default 8)"),
        Opt("--cold", "store_true", help="drop the page cache first (root: drop_caches, else posix_fadvise per file)"),
        Opt("--seed", options.nonneg_int, 0, "the sample's seed"),
        ranks.OPTIONS,
    )


class DiskCommand(PathProbeCommand):
    probe = "disk"
    measures = True
    scale = ("--runtime", "runtime", "duration")
    description = (
        "A preset set of storage tests as one table: cdm (CrystalDiskMark: SEQ1M Q8T1, SEQ1M Q1T1, "
        "RND4K Q32T1, RND4K Q1T1, read and — in a directory — write), mlperf-resnet50 (~115 KB "
        "sample reads), mlperf-unet3d (~147 MB samples)."
    )

    arguments = (
        PATH,
        Opt("--preset", ["cdm", "cdm-nvme", "mlperf-resnet50", "mlperf-unet3d"], "cdm", "which set (default cdm)"),
        Opt("--size", options.size, "1G", "test file size (default 1G)"),
        Opt("--runtime", options.duration, 5.0, "seconds per test (default 5)"),
        Opt("--ramp", options.duration, 1.0, "seconds not counted per test (default 1)"),
        Opt("--no-write", "store_const", None, "reads only, also in a directory", dest="write", const=False),
        CACHE,
        engine(None, timed=True),
        BUFFERS,
        JOBS,
        THREADS,
    )

    def run(self, args, ctx):
        params = self.params(args)
        target = self.target(args)
        return _run_probe(
            ctx, f"disk {args.preset}", lambda p, c: self.call_probe(params, path=target, progress=p, cancel=c)
        )
