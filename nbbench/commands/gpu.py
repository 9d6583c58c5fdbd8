"""``%iobench gpu`` / ``nbbench gpu``."""

from __future__ import annotations

import argparse

from ..probes import limits
from . import Command, options


class GpuCommand(Command):
    measures = True
    scale = ("--iters", "iters", "count")
    help = "check the GPU stack: CUDA, driver, versions, a short benchmark"
    description = (
        "Is CUDA usable from torch, on which devices, do torch's CUDA build and the driver fit "
        "together — and why not when it isn't. When CUDA works, a short sanity benchmark: "
        "matmul FLOP/s (fp32, tf32, bf16) and host↔device copies, pageable vs pinned."
    )

    def add_arguments(self, p) -> None:
        p.add_argument("--no-bench", dest="bench", action="store_false", help="skip the matmul/copy sanity benchmark")
        p.add_argument(
            "--size",
            type=options.int_range(limits.GPU_MATMUL_SIZE),
            default=4096,
            metavar="N",
            help="matmul size N (N×N by N×N, {} to {}; default 4096)".format(*limits.GPU_MATMUL_SIZE),
        )
        p.add_argument(
            "--iters",
            type=options.int_range(limits.GPU_ITERS),
            default=10,
            metavar="R",
            help="timed iterations per benchmark inside one run, {} to {}, median reported (default 10); "
            "--repeat N repeats the whole run".format(*limits.GPU_ITERS),
        )
        p.add_argument(
            "--health",
            action="store_true",
            help="read each GPU's health through NVML under a short matmul load: clocks event reasons, PCIe link "
            "vs its maximum, ECC, row remaps, Xid during the run, persistence, MIG, NVLink, fabric manager, "
            "power limit (findings are checks: they set the exit code)",
        )
        p.add_argument(
            "--load-seconds",
            type=float,
            default=5.0,
            metavar="S",
            help="with --health: how long the load runs (default 5)",
        )
        # the old name, kept working but not shown: "--repeat" (whole runs) is another option
        p.add_argument(
            "--repeats", dest="iters", type=options.int_range(limits.GPU_ITERS), default=10, help=argparse.SUPPRESS
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
