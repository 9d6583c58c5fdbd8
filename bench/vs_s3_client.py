"""nbbench bench: the s3 probe's GET loop against a plain boto3 client loop, same server, same streams.

Both read the same objects from a local S3 server (moto on 127.0.0.1, started here) with N
threads sharing one boto3 client, whole-object GETs round robin, for the same time; pairs are
interleaved (probe, plain, probe, plain …) so drift hits both.  Printed per streams level: the
median of probe/plain over the pairs, its min and max, and the noise floor — the median of
plain/plain pairs run the same way.  Target: >= 0.95 (the probe's TTFB/latency bookkeeping
and windowing add little).  The server is one Python process: the absolute MB/s say nothing
about a real store; only the ratios matter.

    PYTHONPATH=. python3 bench/vs_s3_client.py --pairs 8 --streams 1,4 --seconds 2
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from _common import loadavg  # noqa: E402


def plain_loop(cli, bucket: str, keys: list, streams: int, seconds: float) -> float:
    """N threads: get_object + read the whole body, round robin, for ``seconds``; bytes/s."""
    stop = threading.Event()
    counts = [0] * streams
    nxt = [0]
    lock = threading.Lock()

    def worker(i):
        while not stop.is_set():
            with lock:
                k = keys[nxt[0] % len(keys)]
                nxt[0] += 1
            body = cli.get_object(Bucket=bucket, Key=k)["Body"]
            while not stop.is_set():
                chunk = body.read(1 << 20)
                if not chunk:
                    break
                counts[i] += len(chunk)
            body.close()

    ts = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(streams)]
    t0 = time.perf_counter()
    for t in ts:
        t.start()
    time.sleep(seconds)
    total = sum(counts)
    dt = time.perf_counter() - t0
    stop.set()
    for t in ts:
        t.join(15)
    return total / dt


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=8)
    ap.add_argument("--streams", default="1,4", help="comma-separated stream counts (default 1,4)")
    ap.add_argument("--seconds", type=float, default=2.0, help="each run's length (default 2 s)")
    ap.add_argument("--objects", type=int, default=32)
    ap.add_argument("--size", default="1M")
    args = ap.parse_args(argv)

    from nbbench.probes.objects.client import make_client
    from nbbench.probes.objects.getters import get_phase
    from nbbench.testing import local_s3

    levels = [int(x) for x in args.streams.split(",") if x.strip()]
    with local_s3() as srv:
        keys = srv.fill("s3://bench/objs/", count=args.objects, size=args.size)
        items = [(k, 0) for k in keys]
        import boto3

        print(
            f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python "
            f"{platform.python_version()}, boto3 {boto3.__version__}; local S3 server (moto) on 127.0.0.1"
        )
        print(
            f"pairs={args.pairs} seconds={args.seconds} objects={args.objects} x {args.size}; load average at "
            f"start {loadavg()}"
        )
        print(
            f"{'streams':>7}  {'median':>6} {'min':>6} {'max':>6}  {'floor plain/plain':>17}  target        "
            f"{'probe':>10} {'plain':>10}"
        )
        for n in levels:
            cli = make_client(srv.endpoint_url, pool=n)
            ratios, floor, pr, pl = [], [], [], []
            for _ in range(args.pairs):
                a = get_phase(cli, "bench", items, n, args.seconds).bytes_per_s or 0.0
                b = plain_loop(cli, "bench", keys, n, args.seconds)
                c = plain_loop(cli, "bench", keys, n, args.seconds)
                pr.append(a)
                pl.append(b)
                if b:
                    ratios.append(a / b)
                    floor.append(c / b)
            med = statistics.median(ratios)
            ok = "ok" if med >= 0.95 else "BELOW"
            print(
                f"{n:>7}  {med:6.3f} {min(ratios):6.3f} {max(ratios):6.3f}  {statistics.median(floor):17.3f}  "
                f">=0.95 {ok:5}  {statistics.median(pr) / 1e6:7.1f} MB/s {statistics.median(pl) / 1e6:6.1f} MB/s"
            )
        print(f"load average at end: {loadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
