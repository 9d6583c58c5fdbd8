"""``s3``: GET throughput, time to first byte and a concurrency sweep from an S3 bucket."""

from __future__ import annotations

from .. import Command, options
from ..options import Opt

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
    probe = "s3"
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

    arguments = (
        Opt("url", _url, help="s3://BUCKET/PREFIX: the objects whose keys start with PREFIX", metavar="URL"),
        Opt(
            "--endpoint-url", _endpoint, None, "an S3-compatible endpoint, e.g. http://127.0.0.1:9000 (default: AWS's)"
        ),
        Opt("--region", None, None, "the region (default: from the AWS configuration)"),
        Opt(
            "--streams",
            _streams_or_knee,
            None,
            "concurrent GET streams of the measured phase (default: the sweep's knee, else 8)",
        ),
        Opt("--max-streams", _streams, 32, "the sweep's last level: 1, 2, 4, … up to this (default 32)"),
        Opt("--no-sweep", "store_false", help="skip the concurrency sweep", dest="sweep"),
        Opt("--runtime", options.duration, 5.0, "seconds of the measured phase (default 5)"),
        Opt("--sweep-runtime", options.duration, 1.5, "seconds per sweep level (default 1.5)"),
        Opt("--part-size", options.size, "8M", "ranged GETs' part size (default 8M), against whole-object GETs"),
        Opt("--no-ranged", "store_false", help="skip the ranged GETs", dest="ranged"),
        Opt("--max-keys", options.positive_int, 100_000, "list at most this many keys (default 100000)"),
        Opt("--seed", options.nonneg_int, 0, "the shuffle's seed"),
        Opt(
            "--write",
            "store_true",
            help="also PUT new objects (and one multipart upload) under a new prefix "
            "PREFIX/.nbbench-HOST-PID-RANDOM/, never overwriting a key, all deleted at the end",
        ),
        Opt("--write-size", options.size, "8M", "with --write: each PUT's size (default 8M)"),
        Opt("--write-count", _write_count, 16, "with --write: how many PUTs (default 16, at most 10000)"),
    )

    def run(self, args, ctx):
        from ...results import ProbeError

        if args.runtime <= 0 or args.sweep_runtime <= 0:
            raise ProbeError("--runtime and --sweep-runtime must be more than 0 s")
        if args.write:  # SIGTERM / SIGHUP: the keys written are deleted first, then the temp-file clean-up
            from ... import tempfiles
            from ...probes.objects import writes

            tempfiles.install_handlers()
            writes.install_handlers()
        params = self.params(args)
        return ctx.run_probe(f"s3 {args.url}", lambda p, c: self.call_probe(params, progress=p, cancel=c))

    def show(self, value, args, ctx) -> None:
        """The card, then the concurrency sweep's picture where images show (drawn only there)."""
        ctx.display(value)
        if (value.samples.get("sweep") or [])[1:]:
            from ...plots import figure_png

            ctx.display_image(lambda: figure_png(value.plot()))
