"""nccl-tests' arithmetic, pure (no torch): the operations, the size ladder, algbw and busbw.

``algbw = size / time`` and ``busbw = algbw × factor``, the factor making every operation's figure
comparable with the link's own speed (nccl-tests' doc/PERFORMANCE.md):

=================================================  ==============
all_reduce                                          2 (n − 1) / n
all_gather, reduce_scatter, alltoall                (n − 1) / n
broadcast, reduce, sendrecv                         1
=================================================  ==============

``size`` is, as nccl-tests counts it, the whole buffer: all-reduce and broadcast the tensor,
all-gather the gathered output (each rank gives size / n), reduce-scatter the input (each rank
keeps size / n), alltoall each rank's buffer (size / n to each peer), sendrecv what each rank sends.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "OPS",
    "DTYPES",
    "REDOPS",
    "Op",
    "bus_factor",
    "size_ladder",
    "counts",
    "algbw",
    "busbw",
    "DEFAULT_MIN",
    "DEFAULT_MAX",
    "DEFAULT_MAX_CPU",
    "DEFAULT_STEP",
    "DEFAULT_ITERS",
    "DEFAULT_WARMUP",
]

#: nccl-tests' defaults: -b 8 -e 128M -f 2 -n 20 -w 5 (gloo on CPU: -e 1M unless given, to keep a run short)
DEFAULT_MIN = 8
DEFAULT_MAX = 128 * 2**20
DEFAULT_MAX_CPU = 2**20
DEFAULT_STEP = 2
DEFAULT_ITERS = 20
DEFAULT_WARMUP = 5


@dataclass(frozen=True)
class Op:
    name: str
    #: "2(n-1)/n", "(n-1)/n" or "1"
    factor: str
    #: the whole buffer is split in n parts (all-gather, reduce-scatter, alltoall): the size is rounded down
    split: bool
    #: the torch.distributed API has an in-place form (all_reduce, broadcast: only in-place)
    inplace: bool
    #: the torch.distributed API has an out-of-place form
    outofplace: bool
    #: the reduction op (-o) applies
    reduces: bool


OPS: dict[str, Op] = {
    "all_reduce": Op("all_reduce", "2(n-1)/n", False, True, False, True),
    "all_gather": Op("all_gather", "(n-1)/n", True, True, True, False),
    "reduce_scatter": Op("reduce_scatter", "(n-1)/n", True, True, True, True),
    "alltoall": Op("alltoall", "(n-1)/n", True, False, True, False),
    "broadcast": Op("broadcast", "1", False, True, False, False),
    "sendrecv": Op("sendrecv", "1", False, False, True, False),
}

#: nccl-tests' -d names -> (torch dtype attribute, bytes per element)
DTYPES: dict[str, tuple[str, int]] = {
    "int8": ("int8", 1),
    "uint8": ("uint8", 1),
    "int32": ("int32", 4),
    "int64": ("int64", 8),
    "half": ("float16", 2),
    "float": ("float32", 4),
    "double": ("float64", 8),
    "bfloat16": ("bfloat16", 2),
}

#: the largest whole number each type holds exactly (the correctness check compares exact values)
EXACT_UP_TO: dict[str, int] = {
    "int8": 127,
    "uint8": 255,
    "int32": 2**31 - 1,
    "int64": 2**63 - 1,
    "half": 2048,
    "float": 2**24,
    "double": 2**53,
    "bfloat16": 256,
}


def check_exact(dtype: str, redop: str, n: int) -> str | None:
    """Why ``-c 1`` cannot check ``redop`` over ``n`` ranks in ``dtype`` exactly (the inputs are 1..3, 1..2
    for prod: the largest result is 2^n for prod, 3n for sum and avg, 3 for max and min), else None."""
    top = 2**n if redop == "prod" else 3 * n if redop in ("sum", "avg") else 3
    limit = EXACT_UP_TO.get(dtype)
    if limit is None or top <= limit:
        return None
    return (
        f"-d {dtype} -o {redop} over {n} ranks: results reach {top}, past the {limit} {dtype} holds exactly, so "
        "the check would report wrong results that are only overflow; use a wider -d, fewer ranks, or -c 0"
    )


#: nccl-tests' -o names -> torch.distributed.ReduceOp attribute
REDOPS: dict[str, str] = {"sum": "SUM", "prod": "PRODUCT", "max": "MAX", "min": "MIN", "avg": "AVG"}


def bus_factor(op: str, n: int) -> float:
    """nccl-tests' bus bandwidth factor of ``op`` on ``n`` ranks."""
    f = OPS[op].factor
    if n < 1:
        raise ValueError(f"ranks must be >= 1, not {n}")
    if f == "2(n-1)/n":
        return 2.0 * (n - 1) / n
    if f == "(n-1)/n":
        return (n - 1) / n
    return 1.0


def size_ladder(minbytes: int, maxbytes: int, stepfactor: int = DEFAULT_STEP) -> list[int]:
    """-b/-e/-f: minbytes, ×stepfactor, … up to maxbytes (maxbytes itself when the ladder does not
    land on it, as nccl-tests ends there)."""
    if minbytes < 1 or maxbytes < minbytes:
        raise ValueError(f"need 1 <= minbytes <= maxbytes, not {minbytes} .. {maxbytes}")
    if stepfactor < 2:
        raise ValueError(f"stepfactor must be >= 2, not {stepfactor}")
    out, s = [], minbytes
    while s <= maxbytes:
        out.append(s)
        s *= stepfactor
    if out[-1] != maxbytes:
        out.append(maxbytes)
    return out


def counts(op: str, size: int, elem: int, n: int) -> tuple[int, int]:
    """``(count, bytes)``: nccl-tests' count column (elements each rank gives for all-gather, keeps
    for reduce-scatter, sends each peer for alltoall; the tensor's for the others) and the size
    actually moved once rounded to whole elements (0 when the size is below one element per rank)."""
    total = size // elem
    if OPS[op].split:
        per = total // n
        return per, per * n * elem
    return total, total * elem


def algbw(size: int, time_s: float | None) -> float | None:
    """Bytes per second: the buffer's size over one operation's time."""
    return size / time_s if time_s and time_s > 0 else None


def busbw(op: str, size: int, time_s: float | None, n: int) -> float | None:
    a = algbw(size, time_s)
    return None if a is None else a * bus_factor(op, n)
