"""The collectives as one rank runs them, nccl-tests' way: :func:`run_collectives`.

For each operation, each size of the ladder and each placement (out-of-place, in-place) the
rank times ``warmup`` + ``iters`` calls on the default process group (NCCL on GPUs, gloo on
CPU), each call on its own (CUDA events on a GPU, the wall clock on CPU), then — with ``check``
— runs the operation once more on a known pattern and counts the elements of its own result
that differ from what the operation must give (nccl-tests' ``#wrong``).  Every rank checks its
own result.  An operation the backend cannot do (or a form torch.distributed lacks: all-reduce
and broadcast are in-place only, alltoall and sendrecv out-of-place only) is a row saying so.

The ranks agree at every step whether to go on (one all-reduce of a flag), so a stop on one rank
stops every rank at the same step and none waits alone in a collective.  The times of every rank
are combined by rank 0 (:mod:`.table`).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from .busbw import DTYPES, OPS, REDOPS, counts

__all__ = ["run_collectives", "expected", "pattern", "missing_forms", "CHECK_CHUNK"]

#: elements compared at a time (the expected values are built in int64 chunks of this many)
CHECK_CHUNK = 1 << 22


def pattern(torch, rank, lo: int, hi: int, redop: str, device):
    """Rank ``rank``'s input at indices ``lo..hi``: small whole numbers, exact in every dtype
    (1..3; for prod 1..2, so that a product over the ranks stays a power of two).  ``rank`` may be a
    tensor (one rank per element)."""
    m = 2 if redop == "prod" else 3
    idx = torch.arange(lo, hi, device=device, dtype=torch.int64)
    return 1 + (idx + rank) % m


def _reduce(torch, parts, redop: str, n: int):
    acc = None
    for p in parts:
        if acc is None:
            acc = p.clone()
        elif redop in ("sum", "avg"):
            acc += p
        elif redop == "prod":
            acc *= p
        elif redop == "max":
            acc = torch.maximum(acc, p)
        else:
            acc = torch.minimum(acc, p)
    return acc.double() / n if redop == "avg" else acc


def expected(torch, op: str, rank: int, n: int, per: int, lo: int, hi: int, redop: str, device):
    """What output elements ``lo..hi`` of ``op`` on rank ``rank`` must hold (int64, float64 for avg)."""
    idx = torch.arange(lo, hi, device=device, dtype=torch.int64)
    m = 2 if redop == "prod" else 3
    if op == "all_reduce":
        return _reduce(torch, (pattern(torch, r, lo, hi, redop, device) for r in range(n)), redop, n)
    if op == "reduce_scatter":
        base = rank * per
        return _reduce(torch, (pattern(torch, r, base + lo, base + hi, redop, device) for r in range(n)), redop, n)
    if op == "all_gather":  # chunk j is rank j's input
        return 1 + (idx // per + idx % per) % m
    if op == "alltoall":  # chunk j came from rank j: its chunk number `rank`
        return 1 + (idx // per + rank * per + idx % per) % m
    if op == "broadcast":
        return pattern(torch, 0, lo, hi, redop, device)
    if op == "sendrecv":
        return pattern(torch, (rank - 1) % n, lo, hi, redop, device)
    raise ValueError(op)


def _count_wrong(torch, op, out, rank, n, per, redop, device) -> int:
    wrong = 0
    flat = out.reshape(-1)
    for lo in range(0, flat.numel(), CHECK_CHUNK):
        hi = min(flat.numel(), lo + CHECK_CHUNK)
        want = expected(torch, op, rank, n, per, lo, hi, redop, device)
        got = flat[lo:hi]
        if redop == "avg":
            bad = ~torch.isclose(got.double(), want, rtol=1e-2, atol=0.0)
        else:
            bad = got.double() != want.double()
        wrong += int(bad.sum().item())
    return wrong


class _Call:
    """The buffers and the one call of ``op`` in a ``placement`` (built once per size)."""

    def __init__(self, torch, dist, op, placement, count, n, rank, dtype, device, redop_obj):
        self.torch, self.dist, self.op, self.n, self.rank = torch, dist, op, n, rank
        self.redop = redop_obj
        per = count if OPS[op].split else None
        total = count * n if per is not None else count
        new = lambda k: torch.zeros(k, dtype=dtype, device=device)  # noqa: E731
        if op in ("all_reduce", "broadcast"):
            self.inp = self.out = new(total)
        elif op == "all_gather":
            self.out = new(total)
            self.inp = self.out[rank * count : (rank + 1) * count] if placement == "in-place" else new(count)
        elif op == "reduce_scatter":
            self.inp = new(total)
            self.out = self.inp[rank * count : (rank + 1) * count] if placement == "in-place" else new(count)
        else:  # alltoall, sendrecv
            self.inp, self.out = new(total), new(total)

    def fill(self, redop: str) -> None:
        """The known pattern in this rank's input (for the check)."""
        t = self.torch
        k = self.inp.numel()  # every op's input is the pattern from index 0 (all-gather in-place: its own chunk)
        self.inp.copy_(pattern(t, self.rank, 0, k, redop, self.inp.device).to(self.inp.dtype))

    def __call__(self) -> None:
        d = self.dist
        if self.op == "all_reduce":
            d.all_reduce(self.inp, op=self.redop)
        elif self.op == "broadcast":
            d.broadcast(self.inp, 0)
        elif self.op == "all_gather":
            d.all_gather_into_tensor(self.out, self.inp)
        elif self.op == "reduce_scatter":
            d.reduce_scatter_tensor(self.out, self.inp, op=self.redop)
        elif self.op == "alltoall":
            d.all_to_all_single(self.out, self.inp)
        else:
            ops = [
                d.P2POp(d.isend, self.inp, (self.rank + 1) % self.n),
                d.P2POp(d.irecv, self.out, (self.rank - 1) % self.n),
            ]
            for w in d.batch_isend_irecv(ops):
                w.wait()


def missing_forms(ops) -> list[str]:
    """The placements torch.distributed has no form for, in words (nccl-tests has both for every op)."""
    return [why for op in ops for _, why in _placements(op) if why]


def _placements(op: str) -> list[tuple[str, str | None]]:
    """``[(placement, why not)]``: nccl-tests' two rows, the one torch.distributed lacks saying so."""
    o = OPS[op]
    out = [("out-of-place", None if o.outofplace else f"torch.distributed has no out-of-place {op}")]
    out.append(("in-place", None if o.inplace else f"torch.distributed has no in-place {op}"))
    return out


def run_collectives(
    *,
    ops: list[str],
    sizes: list[int],
    iters: int,
    warmup: int,
    check: bool,
    redop: str = "sum",
    dtype: str = "float",
    device: str = "cpu",
    rank: int = 0,
    world: int = 1,
    torch=None,
    dist=None,
    progress: Callable | None = None,
    cancel=None,
    corrupt: Callable | None = None,
) -> tuple[list[dict], bool]:
    """This rank's rows (one per op × size × placement: ``times_us`` of every timed call, ``wrong``)
    and whether every rank agreed to stop early.  ``corrupt(op, out)``: changes a result before it
    is checked (tests: the check must catch it)."""
    if torch is None:
        import torch
    if dist is None:
        import torch.distributed as dist
    tdtype = getattr(torch, DTYPES[dtype][0])
    elem = DTYPES[dtype][1]
    redop_obj = getattr(dist.ReduceOp, REDOPS[redop])
    cuda = str(device).startswith("cuda")
    flag = torch.zeros(1, device=device)
    steps = [(op, s) for op in ops for s in sizes]
    rows: list[dict] = []
    broken: dict[tuple[str, str], str] = {}  # (op, placement) the backend refused: not tried again
    stopped = False
    for i, (op, size) in enumerate(steps):
        flag.fill_(1.0 if cancel is not None and cancel.is_set() else 0.0)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)  # every rank stops at the same step
        if float(flag.item()) > 0:
            stopped = True
            break
        count, nbytes = counts(op, size, elem, world)
        for placement, why_not in _placements(op):
            if why_not or (op, placement) in broken:  # a form torch lacks (said once: missing_forms), a broken one
                continue
            row = {"op": op, "placement": placement, "size_bytes": nbytes, "asked_bytes": size, "count": count}
            row.update({"dtype": dtype, "redop": redop if OPS[op].reduces else None})
            if op == "sendrecv" and world < 2:
                broken[(op, placement)] = row["error"] = "sendrecv needs 2 ranks or more"
                rows.append(row)
                continue
            if count == 0:
                row["error"] = f"below one {dtype} per rank"
                rows.append(row)
                continue
            try:
                row.update(
                    _time_one(
                        torch,
                        dist,
                        op,
                        placement,
                        count,
                        world,
                        rank,
                        tdtype,
                        device,
                        redop_obj,
                        redop,
                        iters,
                        warmup,
                        check,
                        cuda,
                        corrupt,
                    )
                )
            except (RuntimeError, ValueError, AttributeError, NotImplementedError) as exc:
                msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                broken[(op, placement)] = row["error"] = f"the backend cannot run {op} {placement}: {msg[:160]}"
            rows.append(row)
        if progress is not None:
            progress((i + 1) / len(steps), {})
    return rows, stopped


def _time_one(
    torch, dist, op, placement, count, n, rank, tdtype, device, redop_obj, redop, iters, warmup, check, cuda, corrupt
) -> dict:
    call = _Call(torch, dist, op, placement, count, n, rank, tdtype, device, redop_obj)
    for _ in range(warmup):
        call()
    times = []
    if cuda:
        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
        torch.cuda.synchronize()
        for a, b in ev:
            a.record()
            call()
            b.record()
        torch.cuda.synchronize()
        times = [a.elapsed_time(b) * 1e3 for a, b in ev]  # ms -> µs
    else:
        for _ in range(iters):
            t0 = time.perf_counter()
            call()
            times.append((time.perf_counter() - t0) * 1e6)
    out: dict = {"times_us": times}
    if check:
        call.fill(redop)
        call()
        if cuda:
            torch.cuda.synchronize()
        if corrupt is not None:
            corrupt(op, call.out)
        out["wrong"] = _count_wrong(torch, op, call.out, rank, n, count, redop, call.out.device)
    return out
