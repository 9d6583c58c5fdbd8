"""The ``make-dataset`` subcommand: a synthetic image folder tree or tar shards to try the probes on.

Runs :mod:`nbbench.datasets` the way the storage commands run their probes (a progress
bar, cancellable; the datasets module is imported inside ``run`` so ``--help`` stays light).
"""

from __future__ import annotations

from .. import Command, options
from .disk import _run_probe

__all__ = ["MakeDatasetCommand"]


class MakeDatasetCommand(Command):
    description = (
        "Make a synthetic ImageNet-like tree DIR/class_XXX/img_XXXXXXX.bin|jpg to try the probes, or "
        "with --shards N WebDataset-like tar shards DIR/shard-XXXXXX.tar of JPEG + class-label samples "
        "(a new or empty DIR; re-running with the same options adds missing files only)."
    )
    saves = False

    def add_arguments(self, parser) -> None:
        parser.add_argument("path", metavar="DIR", help="a new or empty directory")
        parser.add_argument("--files", type=options.positive_int, default=1000, help="number of files (default 1000)")
        parser.add_argument("--size", type=options.size, default="110k", help="about this size each (default 110k)")
        parser.add_argument("--classes", type=options.positive_int, default=10, help="class folders (default 10)")
        parser.add_argument("--jpeg", action="store_true", help="real JPEG images (Pillow) instead of random bytes")
        parser.add_argument("--seed", type=options.nonneg_int, default=0, help="same seed, same bytes")
        parser.add_argument(
            "--shards",
            type=options.positive_int,
            default=None,
            help="write N tar shards (000123.jpg + 000123.cls samples, JPEGs of about --size) "
            "instead of a folder tree; --files and --jpeg do not apply",
        )
        parser.add_argument(
            "--shard-size",
            type=options.size,
            default="32M",
            help="about this size each shard (default 32M)",
        )

    def run(self, args, ctx):
        from ... import datasets

        if args.shards:
            root = _run_probe(
                ctx,
                f"make-dataset {args.path}",
                lambda p, c: datasets.make_tar_shards(
                    args.path,
                    shards=args.shards,
                    shard_size=args.shard_size,
                    size=args.size,
                    classes=args.classes,
                    seed=args.seed,
                    progress=p,
                    cancel=c,
                ),
            )
            return str(root)
        root = _run_probe(
            ctx,
            f"make-dataset {args.path}",
            lambda p, c: datasets.make_image_folder(
                args.path,
                files=args.files,
                size=args.size,
                classes=args.classes,
                jpeg=args.jpeg,
                seed=args.seed,
                progress=p,
                cancel=c,
            ),
        )
        return str(root)

    def show(self, value, args, ctx) -> None:
        from ... import datasets

        try:
            ctx.echo(f"{value}: {datasets.describe(value)}")
        except (OSError, ValueError, KeyError):
            ctx.echo(str(value))
