"""What does running as a rank cost?

1. **Throughput**: the same probe run plainly (in this process) and as one rank through the
   launcher (``--ranks 1``: nbbench's own spawner starts it as a child process; it joins a gloo
   group, meets the start barrier, beats its heartbeat and publishes its progress while it
   measures), in interleaved pairs (the order alternates); the figure is the median of the
   per-pair ratios rank / plain.  Target: >= 0.98.
2. **Start-up**: how long 1, 2 and 4 local ranks take from the launch to the start barrier
   (the probe's common zero), and the whole run, from a process that has already imported
   torch (as a notebook kernel that trains has).

Run: .venv/bin/python bench/ranks_overhead.py [--dir DIR] [--pairs 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

TESTS = {
    # name: (probe kind, params, argv options, metric)
    "randread 4k QD1 direct": (
        "randread",
        {"bs": "4k", "qd": 1, "runtime": 3.0, "ramp": 0.5, "size": "64M"},
        ["--bs", "4k", "--qd", "1", "--runtime", "3", "--ramp", "0.5", "--size", "64M"],
        "iops",
    ),
    # time based, so the figure is over 3 s, not the ~0.1 s a small dd read lasts here
    "randread 1M QD1 direct": (
        "randread",
        {"bs": "1M", "qd": 1, "runtime": 3.0, "ramp": 0.5, "size": "256M"},
        ["--bs", "1M", "--qd", "1", "--runtime", "3", "--ramp", "0.5", "--size", "256M"],
        "read_bytes_per_s",
    ),
}


def plain(kind, params, path):
    from nbbench.probes.storage import disk

    fn = disk.randread if kind == "randread" else disk.dd
    return fn(path, **params)  # the same probe function the rank runs, in this process


def ranked(kind, params, argv, path, n=1):
    from nbbench.ranks.jobs import job_for
    from nbbench.ranks.launch import launch

    job = job_for(kind, dict(params, path=path))
    return launch([kind, path, *argv, "--no-save", "-q"], n, job)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default=tempfile.gettempdir(), help="a directory for the test files")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--startup-runs", type=int, default=2)
    args = ap.parse_args()
    import torch  # noqa: F401 - the launching process has torch already, as a training notebook does

    from nbbench.units import format_metric

    print(
        f"machine: {os.cpu_count()} CPUs, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} at start; "
        f"torch {torch.__version__}; files in {args.dir}"
    )
    print(f"{'test':<26}{'median ratio':>13}{'min':>7}{'max':>7}  target      plain (median)  one rank (median)")
    for name, (kind, params, argv, metric) in TESTS.items():
        ratios, a, b = [], [], []
        for i in range(args.pairs + 1):
            got = {}
            for which in ("plain", "rank") if i % 2 == 0 else ("rank", "plain"):
                res = plain(kind, params, args.dir) if which == "plain" else ranked(kind, params, argv, args.dir)
                assert res.status == "ok", (which, res.status, res.reason)
                got[which] = res.metrics[metric]
            if i == 0:
                continue  # one uncounted warm-up pair
            a.append(got["plain"])
            b.append(got["rank"])
            ratios.append(got["rank"] / got["plain"])
        med = statistics.median(ratios)
        print(
            f"{name:<26}{med:>13.3f}{min(ratios):>7.3f}{max(ratios):>7.3f}"
            f"  >=0.98 {'ok   ' if med >= 0.98 else 'BELOW'}"
            f"  {format_metric(metric, statistics.median(a)):>14}  {format_metric(metric, statistics.median(b)):>17}"
        )

    print()
    print(
        f"{'local ranks':<12}{'to the start barrier':>22}{'whole run (dd 16M)':>20}   (median of "
        f"{args.startup_runs}; load average {os.getloadavg()[0]:.2f} now)"
    )
    for n in (1, 2, 4):
        ups, totals = [], []
        for _ in range(args.startup_runs):
            t0 = time.time()
            res = ranked("dd", {"bs": "1M", "size": "16M"}, ["--size", "16M"], args.dir, n)
            totals.append(time.time() - t0)
            assert res.status == "ok" and res.labels["ranks"] == n, (res.status, res.reason)
            ups.append(res.extra["start_unix"] - t0)
        print(f"{n:<12}{statistics.median(ups):>20.2f} s{statistics.median(totals):>18.2f} s")
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
