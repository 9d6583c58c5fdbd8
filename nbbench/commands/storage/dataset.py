"""The ``make-dataset`` subcommand: a synthetic image folder tree or tar shards to try the probes on.

Runs :mod:`nbbench.datasets` the way the storage commands run their probes (a progress
bar, cancellable; the datasets module is imported inside ``run`` so ``--help`` stays light).
"""

from __future__ import annotations

from .. import Command, options
from ..options import Opt
from .disk import _run_probe

__all__ = ["MakeDatasetCommand"]


class MakeDatasetCommand(Command):
    description = (
        "Make a synthetic ImageNet-like tree DIR/class_XXX/img_XXXXXXX.bin|jpg to try the probes, or "
        "with --shards N WebDataset-like tar shards DIR/shard-XXXXXX.tar of JPEG + class-label samples "
        "(a new or empty DIR; re-running with the same options adds missing files only)."
    )
    saves = False

    arguments = (
        Opt("path", help="a new or empty directory", metavar="DIR"),
        Opt("--files", options.positive_int, 1000, "number of files (default 1000)"),
        Opt("--size", options.size, "110k", "about this size each (default 110k)"),
        Opt("--classes", options.positive_int, 10, "class folders (default 10)"),
        Opt("--jpeg", "store_true", help="real JPEG images (Pillow) instead of random bytes"),
        Opt("--seed", options.nonneg_int, 0, "same seed, same bytes"),
        Opt(
            "--shards",
            options.positive_int,
            None,
            "write N tar shards (000123.jpg + 000123.cls samples, JPEGs of about --size) instead of a folder tree; "
            "--files and --jpeg do not apply",
        ),
        Opt("--shard-size", options.size, "32M", "about this size each shard (default 32M)"),
    )

    def run(self, args, ctx):
        from ... import datasets

        kw = self.params(args)
        path = kw.pop("path")
        if args.shards:
            make, other = datasets.make_tar_shards, ("files", "jpeg")
        else:
            make, other = datasets.make_image_folder, ("shards", "shard_size")
        for k in other:
            del kw[k]
        return str(_run_probe(ctx, f"make-dataset {path}", lambda p, c: make(path, progress=p, cancel=c, **kw)))

    def show(self, value, args, ctx) -> None:
        from ... import datasets

        try:
            ctx.echo(f"{value}: {datasets.describe(value)}")
        except (OSError, ValueError, KeyError):
            ctx.echo(str(value))
