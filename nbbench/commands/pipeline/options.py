"""What ``loader``, ``sweep`` and ``feed`` share: their common options, the dataset argument
(a notebook variable, a folder, an ``s3://`` prefix of tar shards or images, or ``--dataset module:function``)
and the hand-over to ``--ranks`` (:func:`ranked`: the dataset and the options as plain values;
for ``s3://`` the endpoint and region too, credentials only through the ranks' environment).
"""

from __future__ import annotations

import argparse
import os

from ...probes.objects.client import is_s3
from ...results import ProbeError
from .. import options, ranks
from ..options import Opt

__all__ = [
    "accelerator_type",
    "step_of",
    "STEP",
    "DIR_LOADER",
    "S3",
    "DATASET",
    "dataset_path",
    "s3_params",
    "ranked",
    "resolve",
]


def accelerator_type(text: str) -> str:
    from ...accelerators import get_accelerator

    try:
        return get_accelerator(text).name
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def step_of(args) -> object:
    """The compute step the options name (:func:`nbbench.probes.pipeline.params.step_of`)."""
    from ...probes.pipeline.params import step_of as _step_of

    return _step_of(vars(args))


#: the compute step: --emulate an accelerator or --step none / gpu
STEP = (
    Opt(
        "--emulate",
        accelerator_type,
        None,
        "compute step: sleep like this accelerator (MLPerf Storage): h100-resnet50, a100-resnet50, h100-unet3d, "
        "a100-unet3d, h100-cosmoflow",
        metavar="ACCEL",
    ),
    Opt(
        "--step",
        ("none", "gpu"),
        "none",
        "compute step when not emulating: none (the loader alone) or gpu (a real CUDA step: non-blocking copy + "
        "matmuls)",
    ),
)
#: how a folder's images are read
DIR_LOADER = (
    Opt(
        "--decode",
        ("auto", "pil", "none"),
        "auto",
        "for a directory: decode with Pillow (random-resized crop + flip), bytes only, or auto (Pillow when the "
        "files are images)",
    ),
    Opt("--size", options.positive_int, 224, "crop size in pixels (224)"),
)
#: where an s3:// dataset is
S3 = (
    Opt("--endpoint-url", None, None, "for an s3:// dataset: an S3-compatible endpoint, e.g. http://127.0.0.1:9000"),
    Opt("--region", None, None, "for an s3:// dataset: the region (default: the AWS configuration)"),
)
DATASET = Opt(
    "--dataset",
    None,
    None,
    "a function returning a map-style Dataset (importable by every rank with --ranks), instead of a folder or "
    "a notebook variable",
    metavar="MODULE:FUNCTION",
)


def dataset_path(src: str) -> str:
    """What the ranks are given: an s3:// URL as typed, a folder as an absolute path."""
    return src if is_s3(src) else os.path.abspath(os.path.expanduser(src))


def s3_params(args, src) -> dict:
    """For an s3:// dataset, the endpoint and region the ranks use (never a credential: those reach the ranks
    through the environment they inherit, the standard AWS chain)."""
    if not is_s3(src):
        return {}
    return {k: getattr(args, k) for k in ("endpoint_url", "region") if getattr(args, k, None)}


def ranked(name: str, kind: str, args, ctx, what: str, params: dict, desc: str, plot=None):
    """Rank mode or ``--ranks``: the folder (or --dataset) and the options as plain values; else LOCAL."""
    from ...ranks.rankenv import detect

    if args.ranks is None and detect(no_dist=args.no_dist) is None:
        return ranks.LOCAL
    src = getattr(args, what)
    if src is not None:
        ranks.refuse_variable(ctx, src)
    elif not args.dataset:
        raise ProbeError(f"give a dataset folder or --dataset module:function to run {kind} as ranks")
    if src is not None and not args.dataset:
        params["path"] = dataset_path(src)
        params.update(s3_params(args, src))
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


def resolve(ctx, name: str, what: str):
    """The notebook variable ``name``; else a directory; else a ProbeError."""
    if ctx.user_ns is not None and name in ctx.user_ns:
        return ctx.lookup(name), False
    path = os.path.expanduser(name)
    if os.path.isdir(path):
        return path, True
    if ctx.user_ns is None:  # a terminal: no notebook variables to look up
        raise ProbeError(
            f"{name} is not a directory (give a dataset folder, root/CLASS/IMAGE; there are no notebook variables here)"
        )
    raise ProbeError(
        f"no variable named {name!r} in the notebook's namespace and no directory {name!r}: "
        f"give the name of a {what} or a dataset folder"
    )
