"""``nbbench collectives`` / ``%iobench collectives``: nccl-tests' operations on the ranks of a run.

The options keep nccl-tests' names (``-b/--minbytes``, ``-e/--maxbytes``, ``-f/--stepfactor``,
``-n/--iters``, ``-w/--warmup_iters``, ``-c/--check``, ``-o/--op``, ``-d/--datatype``); where a front
end already gives ``-o`` its own meaning (the notebook's "return the result") ``--op`` is the name.
The measurement is :mod:`nbbench.probes.gpunode` run by every rank (:mod:`nbbench.ranks.colljobs`);
it runs only as ranks (``--ranks N``, torchrun, srun): never in this process alone.
"""

from __future__ import annotations

import argparse

from ..results import ProbeError
from . import Command, options, ranks
from .options import Opt

__all__ = ["CollectivesCommand", "CopiesCommand"]

_OPS = ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "sendrecv")
_DTYPES = ("int8", "uint8", "int32", "int64", "half", "float", "double", "bfloat16")
_REDOPS = ("sum", "prod", "max", "min", "avg")


def _b(n: int) -> str:
    from ..units import format_bytes

    return format_bytes(n, binary=True)


def _check(text: str) -> int:
    v = options.nonneg_int(text)
    if v > 1:
        raise argparse.ArgumentTypeError(f"0 or 1, not {text}")
    return v


class CollectivesCommand(ranks.RankedCommand):
    measures = True
    scale = ("--iters", "iters", "count")
    description = (
        "nccl-tests on the ranks of a run: all_reduce, all_gather, reduce_scatter, alltoall, broadcast and "
        "sendrecv over a size ladder, each size timed (warm-up then -n calls) out-of-place and in-place where "
        "torch.distributed has the form, with algbw (size / time) and busbw (algbw × the operation's factor: "
        "all_reduce 2(n−1)/n; all_gather, reduce_scatter, alltoall (n−1)/n; broadcast, sendrecv 1), every "
        "result checked on every rank (-c 1), the transport NCCL used (from its INFO lines) and the NCCL "
        "variables in force, and a verdict of the plateau against the link that joins the GPUs (NVLink, PCIe). "
        "NCCL on GPUs (--backend nccl, one GPU per rank), gloo on CPU (the default; its figures are host "
        "memory and loopback TCP, not a GPU link). Runs only as ranks: --ranks N, torchrun or srun."
    )
    epilog = (
        "defaults: nccl-tests' -b 8 -e 128M -f 2 -w 5 -n 20 -c 1 with --backend nccl; on gloo (CPU) -e is 1M "
        "unless given, to keep a CPU run short.\n"
        "examples:  nbbench collectives --ranks 8 --backend nccl            (8 GPUs of this host)\n"
        "           nbbench collectives --ranks 3 -b 1K -e 1M               (3 CPU ranks, gloo)\n"
        "           torchrun --nproc-per-node 8 -m nbbench collectives --backend nccl --ops all_reduce"
    )

    arguments = (
        Opt("--minbytes", options.size, 8, "smallest size (default 8)", short="-b"),
        Opt("--maxbytes", options.size, None, "largest size (default 128M with nccl, 1M with gloo on CPU)", short="-e"),
        Opt("--stepfactor", options.int_range(2, 1024), 2, "size ×F each step (default 2)", short="-f"),
        Opt("--iters", options.int_range(1, 100000), 20, "timed calls per size (default 20)", short="-n"),
        Opt(
            "--warmup_iters",
            options.int_range(0, 100000),
            5,
            "untimed calls first (default 5)",
            short="-w",
            dest="warmup",
        ),
        Opt("--check", _check, 1, "1: check every result on every rank (default), 0: do not", short="-c"),
        Opt("--op", _REDOPS, "sum", "reduction (default sum; avg needs a float type)", short="-o", dest="redop"),
        Opt("--datatype", _DTYPES, "float", "default float", short="-d", dest="dtype"),
        Opt(
            "--ops",
            options.choice_list(_OPS),
            list(_OPS),
            "operations, comma-separated (default all: " + ",".join(_OPS) + ")",
        ),
        Opt("--inject-wrong", options.nonneg_int, help=argparse.SUPPRESS),
        ranks.OPTIONS,
    )

    def run(self, args, ctx):
        from ..probes.gpunode.busbw import DEFAULT_MAX, DEFAULT_MAX_CPU, size_ladder

        maxbytes = args.maxbytes
        if maxbytes is None:  # nccl-tests' 128M; on CPU 1M (a short run); never below -b
            maxbytes = max(args.minbytes, DEFAULT_MAX if args.backend == "nccl" else DEFAULT_MAX_CPU)
        if args.redop == "avg" and args.dtype not in ("half", "float", "double", "bfloat16"):
            raise ProbeError(f"--op avg needs a float type (-d half, float, double, bfloat16), not {args.dtype}")
        try:
            sizes = size_ladder(args.minbytes, maxbytes, args.stepfactor)
        except ValueError as exc:
            raise ProbeError(str(exc)) from None
        params = self.params(args)  # every option, as typed; the ladder and the default -e derived from them
        params.update(sizes=sizes, maxbytes=maxbytes, check=bool(args.check), backend=args.backend)
        params["ladder"] = f"{_b(sizes[0])} … {_b(sizes[-1])} ×{args.stepfactor}" + (
            " (gloo on CPU: -e 1M unless given, to keep a CPU run short; nccl-tests' default is 128M)"
            if args.maxbytes is None and args.backend != "nccl"
            else ""
        )
        value = ranks.dispatch("collectives", "collectives", args, ctx, params, "collectives")
        if value is ranks.LOCAL:
            raise ProbeError(
                "collectives run on ranks: add --ranks N (N >= 2; one per GPU with --backend nccl), "
                "or start nbbench under torchrun / srun"
            )
        return value


class CopiesCommand(Command):
    measures = True
    scale = ("--bytes", "nbytes", "size")
    description = (
        "CUDA's bandwidthTest and p2pBandwidthLatencyTest questions: host→device and device→host copies from "
        "pageable and from pinned memory (what pin_memory=True buys here), and the GPU-to-GPU matrix — "
        "bandwidth directly (peer-to-peer where the pair has it) and through host memory (peer access off), "
        "latency of a 4-byte copy. Needs a GPU; with none it says so in one line."
    )

    arguments = (
        Opt("--bytes", options.size, "256M", "host↔device copy size (default 256M)", dest="nbytes"),
        Opt("--p2p-bytes", options.size, "64M", "GPU→GPU copy size (default 64M)"),
        Opt("--iters", options.int_range(1, 1000), 10, "timed copies each (default 10)", short="-n"),
        Opt("--no-matrix", "store_false", help="host↔device only", dest="matrix"),
    )

    def run(self, args, ctx):
        from ..probes.gpunode.copies import copies, need_gpu

        need_gpu()  # before the bar: "no GPU visible: …", one line
        return ctx.run_probe(
            "copies",
            lambda p, c: copies(**self.params(args)),
        )
