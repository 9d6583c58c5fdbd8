"""Storage subcommands: dd, randread, files, disk (presets), make-dataset.

Each parses its options, runs the probe of :mod:`nbbench.probes.disk` /
:mod:`nbbench.probes.files` through :func:`nbbench.runner.run_cancellable` (Ctrl-C and
the notebook's interrupt button set the cancel event: the probe removes its temp
file and returns an ``interrupted`` result) with a progress bar, and returns the
result.  Probe modules are imported inside ``run`` so ``--help`` stays light.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from . import options
from . import Command
from . import ranks
from ..probes import limits
from ..results import ProbeError
from ..units import format_bytes

__all__ = ["DdCommand", "RandreadCommand", "FilesCommand", "DiskCommand", "MakeDatasetCommand",
           "PathInfo", "describe_path"]

_PATH_HELP = ("a directory (a new .nbbench-* temp file is written there and removed), "
              "or an existing file / block device (read only)")


def _add_cache(parser, default_help="O_DIRECT where the filesystem accepts it (default)"):
    g = parser.add_mutually_exclusive_group()
    g.add_argument("--direct", dest="direct", action="store_const", const=True, default=None,
                   help=f"O_DIRECT: bypass the page cache; {default_help}")
    g.add_argument("--buffered", dest="direct", action="store_const", const=False,
                   help="through the page cache (its cache is dropped before reads; writes end with fdatasync)")


def _add_engine(parser, choices=("builtin", "dd", "fio")):
    parser.add_argument("--engine", choices=list(choices), default="builtin",
                        help="builtin (default, nothing to install), " + ", ".join(c for c in choices if c != "builtin")
                        + " (the system tool; one result schema)")


def _target(path):
    """What PATH is, as the storage probes see it (a ProbeError when they cannot use it).

    The one place commands ask the storage probes about a path: inspected once, here in
    the main thread, so missing / FIFO / socket / device errors come before any bar; the
    probe then takes the target as it is.  Also the control panel's PATH field
    (:func:`describe_path`).
    """
    from ..probes.target import inspect

    # read=False: a read-only dataset tree is fine for files / feed / sweep
    return inspect(path, write=False, read=False)


def _add_jobs(parser, threads_alias: bool = False):
    parser.add_argument("--jobs", type=options.jobs, default=None,
                        help="independent I/O loops in as many processes, as fio's numjobs; figures summed "
                             "over them (1-256, default 1)")
    if threads_alias:
        parser.add_argument("--threads", type=options.jobs, default=None,
                            help="deprecated: an alias of --jobs (processes measure better than threads "
                                 "sharing one interpreter)")


def _add_buffers(parser):
    parser.add_argument("--buffers", choices=["pages", "huge"], default="pages",
                        help="builtin engine's I/O buffers: pages (default: ordinary page-aligned memory, the "
                             "request shape of dd and fio) or huge (2 MiB huge pages: a 1 MiB I/O stays one "
                             "segment; labelled, not comparable with dd's and fio's figures where that splits)")


def _run_probe(ctx, desc: str, fn):
    """Make the progress bar here in the main thread, run the probe cancellably."""
    from .. import tempfiles

    tempfiles.install_handlers()  # SIGTERM/SIGHUP clean-up; only works from the main thread
    return ctx.run_probe(desc, fn)


class DdCommand(ranks.RankedCommand):
    measures = True
    scale = ("--size", "size", "size")
    description = ("Sequential write then read, like dd: in a directory a new temp file is written, "
                   "read back and removed; a file or block device is only read. Sizes follow dd: "
                   "K/M/G = powers of 1024, KB/MB/GB = powers of 1000, KiB/MiB/GiB explicit.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("path", metavar="PATH", help=_PATH_HELP)
        parser.add_argument("--bs", type=options.size, default="1M", help="block size (default 1M = 1 MiB)")
        parser.add_argument("--size", type=options.size, default="1G",
                            help="bytes to write and read (default 1G; 512M, 4GiB, 1.5G…)")
        parser.add_argument("--count", type=options.positive_int, default=None,
                            help="number of blocks, as dd's count (overrides --size)")
        parser.add_argument("--mode", choices=["both", "write", "read"], default=None,
                            help="default: both in a directory, read on a file or device")
        _add_cache(parser)
        _add_engine(parser)
        _add_buffers(parser)
        _add_jobs(parser)
        ranks.add_rank_options(parser)

    def run(self, args, ctx):
        from ..probes import disk

        value = ranks.dispatch("dd", "dd", args, ctx, dict(
            path=args.path, bs=args.bs, size=args.size, count=args.count, direct=args.direct, engine=args.engine,
            mode=args.mode, jobs=args.jobs or 1), f"dd {args.path}")
        if value is not ranks.LOCAL:
            return value
        target = _target(args.path)
        return _run_probe(ctx, f"dd {args.path}", lambda p, c: disk.dd(
            target, bs=args.bs, size=args.size, count=args.count, direct=args.direct, engine=args.engine,
            mode=args.mode, buffers=args.buffers, jobs=args.jobs or 1, progress=p, cancel=c))


class RandreadCommand(ranks.RankedCommand):
    measures = True
    scale = ("--runtime", "runtime", "duration")
    description = ("Random reads at a block size and queue depth, time based: IOPS, bandwidth, latency "
                   "mean/stddev and fio's 17 percentiles, and the queue depth reached.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("path", metavar="PATH", help=_PATH_HELP)
        parser.add_argument("--bs", type=options.size, default="4k", help="block size (default 4k)")
        parser.add_argument("--qd", type=options.int_range(limits.RANDREAD_QD), default=1,
                            help="I/Os in flight (default 1)")
        _add_jobs(parser, threads_alias=True)
        parser.add_argument("--runtime", type=options.duration, default=10.0, help="seconds measured (default 10)")
        parser.add_argument("--ramp", type=options.duration, default=1.0, help="seconds not counted first (default 1)")
        parser.add_argument("--size", type=options.size, default=None,
                            help="region read: default 1G in a directory (written first, not timed), "
                                 "the whole file or device otherwise")
        parser.add_argument("--warm", action="store_true",
                            help="with --buffered: read the region once first, measuring the page cache")
        _add_cache(parser)
        _add_engine(parser, ("builtin", "fio"))
        _add_buffers(parser)
        ranks.add_rank_options(parser, file_per_rank=True)

    def run(self, args, ctx):
        from ..probes import disk

        value = ranks.dispatch("randread", "randread", args, ctx, dict(
            path=args.path, bs=args.bs, qd=args.qd, runtime=args.runtime, ramp=args.ramp, size=args.size,
            direct=args.direct, engine=args.engine, jobs=args.jobs or 1, threads=args.threads or 1, warm=args.warm,
            file_per_rank=args.file_per_rank), f"randread {args.path}")
        if value is not ranks.LOCAL:
            return value
        target = _target(args.path)
        return _run_probe(ctx, f"randread {args.path}", lambda p, c: disk.randread(
            target, bs=args.bs, qd=args.qd, runtime=args.runtime, ramp=args.ramp, size=args.size,
            direct=args.direct, engine=args.engine, jobs=args.jobs or 1, threads=args.threads or 1, warm=args.warm,
            buffers=args.buffers, progress=p, cancel=c))


class FilesCommand(ranks.RankedCommand):
    measures = True
    scale = ("--sample", "sample", "count")
    description = ("Read many files the way an image dataset is read: walk the tree (memory bounded), "
                   "read --sample random files whole with --threads threads; files/s, bytes/s, per-file "
                   "latency, the tree's size distribution.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("path", metavar="DIR", help="the tree, e.g. /dataset/train (read only)")
        parser.add_argument("--sample", type=options.int_range(limits.FILES_SAMPLE), default=1000,
                            help="files to read, a random sample of the tree (default 1000)")
        parser.add_argument("--threads", type=options.int_range(limits.FILES_THREADS), default=8,
                            help="reader threads (default 8)")
        parser.add_argument("--cold", action="store_true",
                            help="drop the page cache first (root: drop_caches, else posix_fadvise per file)")
        parser.add_argument("--seed", type=options.nonneg_int, default=0, help="the sample's seed")
        ranks.add_rank_options(parser)

    def run(self, args, ctx):
        from ..probes import files

        value = ranks.dispatch("files", "files", args, ctx, dict(
            path=args.path, sample=args.sample, threads=args.threads, cold=args.cold, seed=args.seed),
            f"files {args.path}")
        if value is not ranks.LOCAL:
            return value
        target = _target(args.path)
        return _run_probe(ctx, f"files {args.path}", lambda p, c: files.read_files(
            target, sample=args.sample, threads=args.threads, cold=args.cold, seed=args.seed,
            progress=p, cancel=c))


class DiskCommand(Command):
    measures = True
    scale = ("--runtime", "runtime", "duration")
    description = ("A preset set of storage tests as one table: cdm (CrystalDiskMark: SEQ1M Q8T1, SEQ1M Q1T1, "
                   "RND4K Q32T1, RND4K Q1T1, read and — in a directory — write), mlperf-resnet50 (~115 KB "
                   "sample reads), mlperf-unet3d (~147 MB samples).")

    def add_arguments(self, parser) -> None:
        parser.add_argument("path", metavar="PATH", help=_PATH_HELP)
        parser.add_argument("--preset", choices=["cdm", "cdm-nvme", "mlperf-resnet50", "mlperf-unet3d"], default="cdm",
                            help="which set (default cdm)")
        parser.add_argument("--size", type=options.size, default="1G", help="test file size (default 1G)")
        parser.add_argument("--runtime", type=options.duration, default=5.0, help="seconds per test (default 5)")
        parser.add_argument("--ramp", type=options.duration, default=1.0, help="seconds not counted per test (default 1)")
        parser.add_argument("--no-write", dest="write", action="store_const", const=False, default=None,
                            help="reads only, also in a directory")
        _add_cache(parser)
        _add_engine(parser, ("builtin", "fio"))
        _add_buffers(parser)
        _add_jobs(parser, threads_alias=True)

    def run(self, args, ctx):
        from ..probes import disk

        target = _target(args.path)
        return _run_probe(ctx, f"disk {args.preset}", lambda p, c: disk.preset(
            target, name=args.preset, size=args.size, runtime=args.runtime, ramp=args.ramp, direct=args.direct,
            engine=args.engine, write=args.write, buffers=args.buffers, jobs=args.jobs or 1,
            threads=args.threads or 1, progress=p, cancel=c))


class MakeDatasetCommand(Command):
    description = ("Make a synthetic ImageNet-like tree DIR/class_XXX/img_XXXXXXX.bin|jpg to try the probes, or "
                   "with --shards N WebDataset-like tar shards DIR/shard-XXXXXX.tar of JPEG + class-label samples "
                   "(a new or empty DIR; re-running with the same options adds missing files only).")
    saves = False

    def add_arguments(self, parser) -> None:
        parser.add_argument("path", metavar="DIR", help="a new or empty directory")
        parser.add_argument("--files", type=options.positive_int, default=1000, help="number of files (default 1000)")
        parser.add_argument("--size", type=options.size, default="110k", help="about this size each (default 110k)")
        parser.add_argument("--classes", type=options.positive_int, default=10, help="class folders (default 10)")
        parser.add_argument("--jpeg", action="store_true", help="real JPEG images (Pillow) instead of random bytes")
        parser.add_argument("--seed", type=options.nonneg_int, default=0, help="same seed, same bytes")
        parser.add_argument("--shards", type=options.positive_int, default=None,
                            help="write N tar shards (000123.jpg + 000123.cls samples, JPEGs of about --size) "
                                 "instead of a folder tree; --files and --jpeg do not apply")
        parser.add_argument("--shard-size", dest="shard_size", type=options.size, default="32M",
                            help="about this size each shard (default 32M)")

    def run(self, args, ctx):
        from .. import datasets

        if args.shards:
            root = _run_probe(ctx, f"make-dataset {args.path}", lambda p, c: datasets.make_tar_shards(
                args.path, shards=args.shards, shard_size=args.shard_size, size=args.size, classes=args.classes,
                seed=args.seed, progress=p, cancel=c))
            return str(root)
        root = _run_probe(ctx, f"make-dataset {args.path}", lambda p, c: datasets.make_image_folder(
            args.path, files=args.files, size=args.size, classes=args.classes, jpeg=args.jpeg, seed=args.seed,
            progress=p, cancel=c))
        return str(root)

    def show(self, value, args, ctx) -> None:
        from .. import datasets

        try:
            ctx.echo(f"{value}: {datasets.describe(value)}")
        except (OSError, ValueError, KeyError):
            ctx.echo(str(value))


# ------------------------------------------------------------------ PATH, described
@dataclass
class PathInfo:
    """What the storage probes would make of a path (the control panel's PATH field shows it)."""

    path: str
    ok: bool
    kind: str | None = None          # dir | file | block
    filesystem: str | None = None
    device: str | None = None
    mount: str | None = None
    size_bytes: int | None = None
    free_bytes: int | None = None
    total_bytes: int | None = None
    direct: bool | None = None       # O_DIRECT works there
    direct_reason: str | None = None
    can_write: bool | None = None    # a directory where nbbench may create its temporary file
    error: str | None = None         # why the probes cannot use it
    notes: list[str] = field(default_factory=list)   # warnings (not errors)

    @property
    def writable(self) -> bool:
        return self.ok and self.kind == "dir" and bool(self.can_write)

    def summary(self) -> str:
        """One line of text, e.g. 'directory · ext4 on sda1 · 12.3 GiB free of 40 GiB · O_DIRECT ok'."""
        if not self.ok:
            return self.error or "cannot be used"
        what = {"dir": "directory", "file": "regular file", "block": "block device"}.get(self.kind or "", "?")
        parts = [what]
        if self.kind in ("file", "block") and self.size_bytes is not None:
            parts[0] += f" of {format_bytes(self.size_bytes, binary=True)} (read-only probes)"
        fs = self.filesystem or "unknown filesystem"
        if self.device:
            fs += f" on {self.device}"
        parts.append(fs)
        if self.free_bytes is not None and self.total_bytes:
            parts.append(f"{format_bytes(self.free_bytes, binary=True)} free of "
                         f"{format_bytes(self.total_bytes, binary=True)}")
        if self.direct is True:
            parts.append("O_DIRECT ok")
        elif self.direct is False:
            parts.append("no O_DIRECT: " + (self.direct_reason or "refused") + " (buffered + fadvise instead)")
        return " · ".join(parts)


def _direct_in_dir(directory: str) -> tuple[bool, str | None]:
    """Try one aligned O_DIRECT write on a new temporary file (the probes' own kind, removed at once)."""
    from .. import tempfiles
    from ..probes.target import direct_io_supported

    with tempfiles.temp_file(directory, "odirect") as tf:
        return direct_io_supported(tf.fd, write=True)


def _direct_on_file(path: str) -> tuple[bool, str | None]:
    from ..probes.target import direct_io_supported, open_read

    fd = open_read(path)
    try:
        return direct_io_supported(fd, write=False)
    finally:
        os.close(fd)


def describe_path(path: str, try_direct: bool = True) -> PathInfo:
    """Check ``path`` the way the storage probes will (never raises): what it is, its filesystem
    and device, the free space against the write rule, whether O_DIRECT works there (tried: one
    aligned I/O on a new temporary file in a directory, read-only on a file or device)."""
    from ..probes import target as pathcheck

    text = (path or "").strip()
    if not text:
        return PathInfo(path="", ok=False, error="type a directory (write and read probes) or a file / block "
                                                  "device (read probes)")
    try:
        target = _target(text)
    except ProbeError as exc:
        return PathInfo(path=text, ok=False, error=str(exc))
    except Exception as exc:  # noqa: BLE001 - shown, not raised
        return PathInfo(path=text, ok=False, error=f"cannot check {text}: {type(exc).__name__}: {exc}")
    info = PathInfo(path=target.path, ok=True, kind=target.kind, filesystem=target.filesystem or None,
                    device=target.device or None, mount=target.mount or None,
                    size_bytes=target.size if target.kind != "dir" else None)
    if target.kind == "dir":
        info.can_write = os.access(target.path, os.W_OK | os.X_OK)
        if not info.can_write:
            info.notes.append(f"no permission to create a file in {target.path}: dd, randread and disk cannot "
                              "write their test file here; files, feed and sweep can read the tree")
    fs_dir = target.path if target.kind == "dir" else os.path.dirname(target.path)
    try:
        space = pathcheck.check_free_space(fs_dir, 0)
        info.free_bytes, info.total_bytes = space["free_bytes"], space["total_bytes"]
    except ProbeError as exc:
        try:
            vfs = os.statvfs(fs_dir)
            info.free_bytes, info.total_bytes = vfs.f_bavail * vfs.f_frsize, vfs.f_blocks * vfs.f_frsize
        except OSError:
            pass
        if target.kind == "dir":
            info.notes.append("write probes will refuse: " + str(exc))
    if try_direct and not (target.kind == "dir" and not info.can_write):
        try:
            if target.kind == "dir":
                info.direct, info.direct_reason = _direct_in_dir(target.path)
            else:
                info.direct, info.direct_reason = _direct_on_file(target.path)
        except (OSError, ProbeError) as exc:
            info.direct, info.direct_reason = None, None
            info.notes.append(f"could not try O_DIRECT there: {exc}")
    return info
