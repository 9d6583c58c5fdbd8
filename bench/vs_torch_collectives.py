"""nbbench collectives against a plain torch.distributed loop timed nccl-tests' way.

nbbench times each call on its own (the spread needs it) and averages over the ranks; nccl-tests times
the whole loop of ``-n`` calls and divides.  This bench runs both on the same ranks' shape — N gloo ranks
on this host, one operation at one size — in interleaved pairs (the order alternates), and prints the
median of the per-pair ratios nbbench busbw / reference busbw, with the noise floor: the median ratio of
two reference runs against each other (what the machine alone moves between two runs).  A ratio within
the floor of 1.00 means the per-call timing costs nothing measurable.

Run: .venv/bin/python bench/vs_torch_collectives.py [--ranks 2] [--size 1M] [--pairs 5] [--op all_reduce]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

FACTOR = {"all_reduce": lambda n: 2 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n}


def _rank(rank, n, store_path, op, size, iters, warmup, out_q):
    os.environ["OMP_NUM_THREADS"] = "1"  # as nbbench's spawner (and torchrun) set it for each rank
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{store_path}", rank=rank, world_size=n)
    count = size // 4
    if op == "all_reduce":
        t = torch.zeros(count)

        def call():
            dist.all_reduce(t)
    else:
        per = count // n
        inp, out = torch.zeros(per), torch.zeros(per * n)

        def call():
            dist.all_gather_into_tensor(out, inp)

    for _ in range(warmup):
        call()
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(iters):
        call()
    elapsed = (time.perf_counter() - t0) / iters  # nccl-tests: the whole loop over the calls
    times = [None] * n
    dist.all_gather_object(times, elapsed)
    if rank == 0:
        out_q.put(statistics.fmean(times))
    dist.destroy_process_group()


def reference(n, op, size, iters, warmup) -> float:
    """busbw (B/s) of the plain loop on ``n`` gloo ranks (spawned processes, a FileStore)."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    with tempfile.TemporaryDirectory() as d:
        store = os.path.join(d, "store")
        ps = [ctx.Process(target=_rank, args=(r, n, store, op, size, iters, warmup, q)) for r in range(n)]
        for p in ps:
            p.start()
        t = q.get(timeout=300)
        for p in ps:
            p.join(60)
    moved = size if op == "all_reduce" else (size // 4 // n) * n * 4
    return moved / t * FACTOR[op](n)


def nbbench_run(n, op, size, iters, warmup) -> float:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    argv = ["collectives", "--ranks", str(n), "--ops", op, "-b", str(size), "-e", str(size)]
    argv += ["-n", str(iters), "-w", str(warmup), "-c", "0", "--json", "--no-save"]
    p = subprocess.run([sys.executable, "-m", "nbbench", *argv], capture_output=True, text=True, env=env, timeout=600)
    if p.returncode != 0:
        raise SystemExit(f"nbbench collectives failed: {p.stderr[-2000:]}")
    res = json.loads(p.stdout)
    (row,) = [r for r in res["samples"]["rows"] if r.get("busbw_bytes_per_s") and r["op"] == op][:1]
    return row["busbw_bytes_per_s"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--size", default="1M", help="the one size (default 1M)")
    ap.add_argument("--op", choices=sorted(FACTOR), default="all_reduce")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    args = ap.parse_args()
    from nbbench.units import format_rate, parse_size

    size = parse_size(args.size)
    ratios, floor = [], []
    for i in range(args.pairs):
        a_first = i % 2 == 0
        runs = {}
        for which in ("nbbench", "reference") if a_first else ("reference", "nbbench"):
            fn = nbbench_run if which == "nbbench" else reference
            runs[which] = fn(args.ranks, args.op, size, args.iters, args.warmup)
        again = reference(args.ranks, args.op, size, args.iters, args.warmup)
        ratios.append(runs["nbbench"] / runs["reference"])
        floor.append(max(again, runs["reference"]) / min(again, runs["reference"]))
        print(
            f"pair {i + 1}: nbbench {format_rate(runs['nbbench'], 'bytes/s')} busbw, reference "
            f"{format_rate(runs['reference'], 'bytes/s')} (again {format_rate(again, 'bytes/s')}): "
            f"ratio {ratios[-1]:.3f}",
            flush=True,
        )
    med, noise = statistics.median(ratios), statistics.median(floor)
    print(
        f"{args.op} {args.size} on {args.ranks} gloo ranks: nbbench / reference busbw = {med:.3f} (median of "
        f"{args.pairs} interleaved pairs); noise floor: two reference runs differ by {noise:.3f}× (median)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
