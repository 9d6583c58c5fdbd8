"""What does bench_loader cost?  The same DataLoader iterated bare and through
bench_loader, in interleaved pairs (the order alternates), over the same number of
measured batches after the same warm-up; the figure is the median of the per-pair
throughput ratios (bench_loader / bare).  Target: >= 0.99.

A second, deliberately tiny loader (a list of small tensors: microseconds per batch)
shows the fixed cost per step in microseconds, the worst case for the ratio.

Run: .venv/bin/python bench/loader_overhead.py [--pairs 15]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


class Cyclic:
    """``n`` samples cycling over a small tensor of images (map-style, a label per sample)."""

    def __init__(self, images, n):
        self.images, self.n = images, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.images[i % len(self.images)], i


def bare_rate(loader, steps: int, warmup: int) -> float:
    it = iter(loader)
    for _ in range(warmup + 1):  # the first batch and the warm-up, as bench_loader does
        next(it)
    n = 0
    t0 = time.perf_counter()
    for _ in range(steps):
        b = next(it)
        n += b[0].shape[0]
        del b  # as bench_loader does: the batch is freed before the next one is made
    dt = time.perf_counter() - t0
    return n / dt


def bench_rate(loader, steps: int, warmup: int) -> float:
    from nbbench.probes.pipeline.loader import bench_loader

    r = bench_loader(loader, steps=steps, warmup=warmup, monitor=False)
    assert r.ok and r.metrics["steps_count"] == steps, (r.status, r.reason)
    return r.metrics["samples_per_s"]


def pairs(make, steps, warmup, n_pairs, second=None):
    """Interleaved (bare, bench_loader) pairs; ``second`` replaces bench_loader (an A/A check)."""
    second = second or bench_rate
    ratios, bare, bench = [], [], []
    for i in range(n_pairs):
        order = ("bare", "bench") if i % 2 == 0 else ("bench", "bare")
        got = {}
        for which in order:
            loader = make()
            got[which] = (bare_rate if which == "bare" else second)(loader, steps, warmup)
        bare.append(got["bare"])
        bench.append(got["bench"])
        ratios.append(got["bench"] / got["bare"])
    return ratios, bare, bench


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=61)
    args = ap.parse_args()

    import torch
    from torch.utils.data import DataLoader

    torch.set_num_threads(1)
    n = 256 * 130
    data = Cyclic(torch.randint(0, 255, (4096, 3, 64, 64), dtype=torch.uint8), n)
    steps, warmup = 120, 2  # short halves: the two halves of a pair see the same machine load

    def make_real():
        return DataLoader(data, batch_size=256, shuffle=True, num_workers=0)

    ratios, bare, bench = pairs(make_real, steps, warmup, args.pairs)
    med = statistics.median(ratios)
    print(
        f"loader_overhead: DataLoader({n} samples of 3x64x64 uint8 images, batch 256, shuffle, 0 workers), "
        f"{steps} measured batches after {warmup} warm-up, {args.pairs} interleaved pairs"
    )
    print(f"  bare          median {statistics.median(bare):12,.0f} samples/s")
    print(f"  bench_loader  median {statistics.median(bench):12,.0f} samples/s")
    print(
        f"  ratio bench_loader/bare: median of pairs {med:.4f}  (min {min(ratios):.4f}, max {max(ratios):.4f})  "
        f"target >= 0.99: {'PASS' if med >= 0.99 else 'FAIL'}"
    )
    print(
        f"  best-of-{args.pairs} rates: bare {max(bare):,.0f}, bench_loader {max(bench):,.0f} samples/s, "
        f"ratio {max(bench) / max(bare):.4f} (interference only slows a run down)"
    )

    aa, _, _ = pairs(make_real, steps, warmup, args.pairs, second=bare_rate)
    print(
        f"  noise floor, bare against bare the same way: median of pairs {statistics.median(aa):.4f}  "
        f"(min {min(aa):.4f}, max {max(aa):.4f})"
    )

    tiny = [(torch.zeros(8, 4), torch.zeros(8)) for _ in range(2000)]
    t_ratios, t_bare, t_bench = pairs(lambda: tiny, 1500, warmup, args.pairs)
    per_step_us = (1 / statistics.median(t_bench) - 1 / statistics.median(t_bare)) * 8 * 1e6
    print(
        f"  worst case, a list of tiny batches (no loading work): ratio median {statistics.median(t_ratios):.3f}, "
        f"fixed cost about {per_step_us:.1f} µs per step"
    )
    return 0 if med >= 0.99 else 1


if __name__ == "__main__":
    sys.exit(main())
