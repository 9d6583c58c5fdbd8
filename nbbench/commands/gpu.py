"""``%iobench gpu`` / ``nbbench gpu``."""

from __future__ import annotations

import argparse

from ..probes import limits
from . import Command, options
from .options import Opt


class GpuCommand(Command):
    measures = True
    scale = ("--iters", "iters", "count")
    help = "check the GPU stack: CUDA, driver, versions, a short benchmark"
    description = (
        "Is CUDA usable from torch, on which devices, do torch's CUDA build and the driver fit "
        "together — and why not when it isn't. When CUDA works, a short sanity benchmark: "
        "matmul FLOP/s (fp32, tf32, bf16) and host↔device copies, pageable vs pinned."
    )

    arguments = (
        Opt("--no-bench", "store_false", help="skip the matmul/copy sanity benchmark", dest="bench"),
        Opt(
            "--size",
            options.int_range(limits.GPU_MATMUL_SIZE),
            4096,
            "matmul size N (N×N by N×N, {} to {}; default 4096)".format(*limits.GPU_MATMUL_SIZE),
            metavar="N",
        ),
        Opt(
            "--iters",
            options.int_range(limits.GPU_ITERS),
            10,
            "timed iterations per benchmark inside one run, {} to {}, median reported (default 10); "
            "--repeat N repeats the whole run".format(*limits.GPU_ITERS),
            metavar="R",
        ),
        Opt(
            "--health",
            "store_true",
            help="read each GPU's health through NVML under a short matmul load: clocks event reasons, PCIe link "
            "vs its maximum, ECC, row remaps, Xid during the run, persistence, MIG, NVLink, fabric manager, "
            "power limit (findings are checks: they set the exit code)",
        ),
        Opt("--load-seconds", float, 5.0, "with --health: how long the load runs (default 5)", metavar="S"),
        # the old name, kept working but not shown: "--repeat" (whole runs) is another option
        Opt("--repeats", options.int_range(limits.GPU_ITERS), 10, argparse.SUPPRESS, dest="iters"),
    )

    def run(self, args, ctx):
        from ..probes.gpu import check

        return check(
            benchmark=args.bench,
            matmul_size=args.size,
            repeats=args.iters,
            health=args.health,
            health_seconds=args.load_seconds,
        )
