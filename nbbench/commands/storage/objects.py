"""``s3``: GET throughput, time to first byte and a concurrency sweep from an S3 bucket."""

from __future__ import annotations

from .. import Command, options

__all__ = ["S3Command"]


#: concurrent GET streams (the panel's bounded fields read these bounds from the parser)
_streams = options.int_range(1, 1024)
_write_count = options.int_range(1, 10_000)


def _streams_or_knee(text: str) -> int:
    """--streams: 1 to 1024; not given means the sweep's knee (so the panel shows a text field, empty by default)."""
    return _streams(text)


def _url(text: str) -> str:
    """An s3:// URL, checked as the command line is parsed (a bad one is a usage error)."""
    import argparse

    from ...probes.objects.client import parse_url
    from ...results import ProbeError

    try:
        return str(parse_url(text))
    except ProbeError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _endpoint(text: str) -> str:
    import argparse

    from ...probes.objects.client import check_endpoint
    from ...results import ProbeError

    try:
        check_endpoint(text)
    except ProbeError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


class S3Command(Command):
    measures = True
    scale = ("--runtime", "runtime", "duration")
    description = (
        "GET objects from S3 or an S3-compatible store (MinIO, Ceph RGW, R2, GCS's XML API) at "
        "N concurrent streams: throughput, requests/s, time to first byte and latency percentiles "
        "per object-size class; a concurrency sweep (1, 2, 4, … streams) that names the knee; ranged "
        "GETs against whole-object GETs; LIST throughput. Read only: the bucket is never changed. "
        "Credentials come from the standard AWS chain (environment, profile, role) and are never shown."
    )
    epilog = (
        "example:  nbbench s3 s3://datasets/imagenet/train/\n"
        "          nbbench s3 s3://bench/shards/ --endpoint-url http://127.0.0.1:9000 --streams 16 --no-sweep"
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "path", metavar="URL", type=_url, help="s3://BUCKET/PREFIX: the objects whose keys start with PREFIX"
        )
        parser.add_argument(
            "--endpoint-url",
            type=_endpoint,
            default=None,
            help="an S3-compatible endpoint, e.g. http://127.0.0.1:9000 (default: AWS's)",
        )
        parser.add_argument("--region", default=None, help="the region (default: from the AWS configuration)")
        parser.add_argument(
            "--streams",
            type=_streams_or_knee,
            default=None,
            help="concurrent GET streams of the measured phase (default: the sweep's knee, else 8)",
        )
        parser.add_argument(
            "--max-streams",
            type=_streams,
            default=32,
            help="the sweep's last level: 1, 2, 4, … up to this (default 32)",
        )
        parser.add_argument(
            "--no-sweep",
            dest="sweep",
            action="store_const",
            const=False,
            default=None,
            help="skip the concurrency sweep",
        )
        parser.add_argument(
            "--runtime", type=options.duration, default=5.0, help="seconds of the measured phase (default 5)"
        )
        parser.add_argument(
            "--sweep-runtime",
            type=options.duration,
            default=1.5,
            help="seconds per sweep level (default 1.5)",
        )
        parser.add_argument(
            "--part-size",
            type=options.size,
            default="8M",
            help="ranged GETs' part size (default 8M), against whole-object GETs",
        )
        parser.add_argument(
            "--no-ranged", dest="ranged", action="store_const", const=False, default=None, help="skip the ranged GETs"
        )
        parser.add_argument(
            "--max-keys",
            type=options.positive_int,
            default=100_000,
            help="list at most this many keys (default 100000)",
        )
        parser.add_argument("--seed", type=options.nonneg_int, default=0, help="the shuffle's seed")
        parser.add_argument(
            "--write",
            action="store_true",
            help="also PUT new objects (and one multipart upload) under a new prefix "
            "PREFIX/.nbbench-HOST-PID-RANDOM/, never overwriting a key, all deleted at the end",
        )
        parser.add_argument(
            "--write-size",
            type=options.size,
            default="8M",
            help="with --write: each PUT's size (default 8M)",
        )
        parser.add_argument(
            "--write-count",
            type=_write_count,
            default=16,
            help="with --write: how many PUTs (default 16, at most 10000)",
        )

    def run(self, args, ctx):
        from ...probes.objects import s3
        from ...results import ProbeError

        if args.runtime <= 0 or args.sweep_runtime <= 0:
            raise ProbeError("--runtime and --sweep-runtime must be more than 0 s")
        if args.write:  # SIGTERM / SIGHUP: the keys written are deleted first, then the temp-file clean-up
            from ... import tempfiles
            from ...probes.objects import writes

            tempfiles.install_handlers()
            writes.install_handlers()
        return ctx.run_probe(
            f"s3 {args.path}",
            lambda p, c: s3(
                args.path,
                endpoint_url=args.endpoint_url,
                region=args.region,
                streams=args.streams,
                max_streams=args.max_streams,
                sweep=args.sweep is not False,
                runtime=args.runtime,
                sweep_runtime=args.sweep_runtime,
                part_size=args.part_size,
                ranged=args.ranged is not False,
                max_keys=args.max_keys,
                seed=args.seed,
                write=args.write,
                write_size=args.write_size,
                write_count=args.write_count,
                progress=p,
                cancel=c,
            ),
        )

    def show(self, value, args, ctx) -> None:
        """The card, then the concurrency sweep's picture where images show (drawn only there)."""
        ctx.display(value)
        if (value.samples.get("sweep") or [])[1:]:
            from ...plots import figure_png

            ctx.display_image(lambda: figure_png(value.plot()))
