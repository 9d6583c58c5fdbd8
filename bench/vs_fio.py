"""Builtin engine vs fio, same file, same parameters, interleaved pairs.

    .venv/bin/python bench/vs_fio.py [--dir /tmp] [--pairs 10] [--runtime 3] [--size 1G]

For each test it runs the builtin engine and fio back to back (alternating which goes
first), ``--pairs`` times, and prints the median of the per-pair ratios builtin/fio
(so slow drifts of a shared machine cancel).  Both go through the same probe
function (``nbbench.probes.disk``), only ``engine=`` differs, so file, block size,
queue depth, runtime, ramp and cache handling are the same.  fio runs with
ioengine=io_uring (libaio where io_uring is blocked).

Targets: SEQ1M QD1 direct >= 0.98, RND4K QD1 direct >= 0.98, RND4K QD32 direct >= 0.95,
RND4K page cache >= 0.90.  A timing, not a test: it never fails the build.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from nbbench import tempfiles  # noqa: E402
from nbbench.env import cpu_model, usable_cpus  # noqa: E402
from nbbench.probes import disk  # noqa: E402
from nbbench.probes.target import check_free_space, inspect  # noqa: E402
from nbbench.units import format_metric, parse_size  # noqa: E402

TESTS = [
    # name, target ratio, metric, function(engine) -> result
    ("SEQ1M QD1 direct", 0.98, "read_bytes_per_s",
     lambda f, eng, a: disk.dd(f, bs="1M", size=a.size, direct=True, engine=eng, mode="read")),
    ("RND4K QD1 direct", 0.98, "iops",
     lambda f, eng, a: disk.randread(f, bs="4k", qd=1, runtime=a.runtime, ramp=a.ramp, direct=True, engine=eng)),
    ("RND4K QD32 direct", 0.95, "iops",
     lambda f, eng, a: disk.randread(f, bs="4k", qd=32, runtime=a.runtime, ramp=a.ramp, direct=True, engine=eng)),
    ("RND4K QD1 page cache", 0.90, "iops",
     lambda f, eng, a: disk.randread(f, bs="4k", qd=1, runtime=a.runtime, ramp=a.ramp, direct=False, warm=True,
                                     engine=eng)),
]
ONE_RING_ROW = ("RND4K QD32 direct, one ring", None, "iops",
                lambda f, eng, a: disk.randread(f, bs="4k", qd=32, runtime=a.runtime, ramp=a.ramp, direct=True,
                                                engine=eng, builtin_path="uring" if eng == "builtin" else None))
THREADS_ROW = ("RND4K QD32 direct, thread pool", None, "iops",
               lambda f, eng, a: disk.randread(f, bs="4k", qd=32, runtime=a.runtime, ramp=a.ramp, direct=True,
                                               engine=eng, builtin_path="threads" if eng == "builtin" else None))


def machine(path: str) -> str:
    t = inspect(path, write=True)
    fio = subprocess.run(["fio", "--version"], capture_output=True, text=True).stdout.strip()
    cpus = usable_cpus()
    return (f"{cpu_model()}, {cpus.get('usable') or os.cpu_count()} usable CPUs, "
            f"{platform.system()} {platform.release()}, Python {platform.python_version()}, {fio}; "
            f"file on {t.filesystem} ({t.device}) at {t.path}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default="/tmp")
    ap.add_argument("--pairs", type=int, default=10)
    ap.add_argument("--runtime", type=float, default=3.0)
    ap.add_argument("--ramp", type=float, default=0.5)
    ap.add_argument("--size", default="1G")
    ap.add_argument("--no-extra-rows", action="store_true",
                    help="skip the one-ring and thread-pool comparison rows")
    a = ap.parse_args()
    size = parse_size(a.size)
    check_free_space(a.dir, size)
    print("machine:", machine(a.dir))
    print(f"pairs={a.pairs} runtime={a.runtime:g}s ramp={a.ramp:g}s file={a.size}")
    tests = TESTS + ([] if a.no_extra_rows else [ONE_RING_ROW, THREADS_ROW])
    with tempfiles.temp_file(a.dir, "bench") as tf:
        buf = os.urandom(1 << 20)
        for off in range(0, size, 1 << 20):
            os.pwrite(tf.fd, buf[:8] + off.to_bytes(8, "little") + buf[16:], off)
        os.fsync(tf.fd)
        os.posix_fadvise(tf.fd, 0, 0, os.POSIX_FADV_DONTNEED)
        rows = []
        for name, target, metric, fn in tests:
            ratios, b_vals, f_vals, paths = [], [], [], set()
            for eng in ("builtin", "fio"):  # one warm-up each, not counted
                fn(tf.path, eng, argparse.Namespace(**{**vars(a), "runtime": 0.5, "ramp": 0.1}))
            for i in range(a.pairs):
                order = ("builtin", "fio") if i % 2 == 0 else ("fio", "builtin")
                got = {}
                for eng in order:
                    r = fn(tf.path, eng, a)
                    got[eng] = r.metrics[metric]
                    if eng == "builtin":
                        paths.add(r.labels.get("io_path") or r.labels.get("read_io_path"))
                ratios.append(got["builtin"] / got["fio"])
                b_vals.append(got["builtin"])
                f_vals.append(got["fio"])
                print(f"  {name:<32} pair {i + 1:2d}: builtin {format_metric(metric, got['builtin']):>12}  "
                      f"fio {format_metric(metric, got['fio']):>12}  ratio {ratios[-1]:.3f}", flush=True)
            rows.append((name, target, metric, statistics.median(ratios), min(ratios), max(ratios),
                         statistics.median(b_vals), statistics.median(f_vals), ", ".join(sorted(paths))))
    print()
    print(f"{'test':<32} {'median ratio':>12} {'min':>6} {'max':>6} {'target':>7}  {'builtin':>12} {'fio':>12}  builtin I/O path")
    for name, target, metric, med, lo, hi, b, f, path in rows:
        tgt = f">={target:.2f}" if target else "  —  "
        flag = "" if target is None else (" ok" if med >= target else " BELOW")
        print(f"{name:<32} {med:12.3f} {lo:6.3f} {hi:6.3f} {tgt:>7}{flag:<6} {format_metric(metric, b):>12} "
              f"{format_metric(metric, f):>12}  {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
