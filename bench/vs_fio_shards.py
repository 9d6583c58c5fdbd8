"""shards vs fio: the same shard files read the same way, interleaved rounds with a noise floor.

    PYTHONPATH=$PWD .venv/bin/python bench/vs_fio_shards.py [--dir DIR] [--shards 8] [--shard-size 64M]
                                                            [--streams N] [--pairs 8] [--warm]

Without ``--dir`` a set of WebDataset-like tar shards (``make-dataset --shards``) is made in a
new temporary directory under ``--tmp`` (default /tmp) and removed at the end; with it, the
shards already there are read (read only).

Each round draws one plan — the shards shuffled with the round's seed and dealt out to
``--streams`` streams (:func:`nbbench.probes.shards.probe.plan_streams`, what ``nbbench shards``
does) — and runs, in a rotating order, ``nbbench.probes.shards.probe.shards`` once (cold pass only:
each shard's pages dropped with posix_fadvise, checked with mincore, then the timed reads)
and the plain fio command line twice: one job per stream over that stream's files in the
same order::

    fio --readonly --output-format=json
        --name=s0 --filename=A:B:… --rw=read --bs=1M --ioengine=psync --direct=0 --invalidate=1
                  --file_service_type=sequential
        --name=s1 --filename=…

(``--invalidate=1``: fio drops each file's pages when it opens them; ``file_service_type
=sequential``: a job reads its files whole, one after another.)  The aggregate rate of each
is all bytes over the time to the last stream's end (fio: the jobs' bytes over the longest
job runtime; fio reads whole blocks only, so each file's last partial 1 MiB block is not in
its bytes, nor its time).  shards/fio (first fio run) is the round's ratio — the table gives the median
over the rounds, its min and max — and fio/fio between the two fio runs is the noise floor.
``--warm`` adds a row read from the page cache (shards' warm pass against fio with
``--invalidate=0`` after one read of every file).  Target: >= 0.95.  A timing, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from _common import loadavg  # noqa: E402

from nbbench import tempfiles  # noqa: E402
from nbbench.datasets import make_tar_shards  # noqa: E402
from nbbench.env import cpu_model, usable_cpus  # noqa: E402
from nbbench.probes.shards.probe import _read_once, find_shards, plan_streams, shards  # noqa: E402
from nbbench.probes.storage.target import inspect  # noqa: E402
from nbbench.units import format_metric, parse_size  # noqa: E402


def fio_argv(plan, bs: int, invalidate: int) -> list[str]:
    argv = ["fio", "--readonly", "--output-format=json"]
    for i, files in enumerate(plan):
        names = ":".join(p.replace(":", "\\:") for p, _ in files)
        argv += [
            f"--name=s{i}",
            f"--filename={names}",
            "--rw=read",
            f"--bs={bs}",
            "--ioengine=psync",
            "--direct=0",
            f"--invalidate={invalidate}",
            "--file_service_type=sequential",
        ]
    return argv


def run_fio(plan, bs: int, invalidate: int) -> float:
    argv = fio_argv(plan, bs, invalidate)
    p = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if p.returncode != 0:
        raise SystemExit(f"fio failed: {(p.stderr or p.stdout).strip()[-400:]}")
    jobs = json.loads(p.stdout[p.stdout.find("{") :])["jobs"]
    total = sum(j["read"]["io_bytes"] for j in jobs)
    # fio reads whole blocks only: each file's last partial block (under --bs) is left out
    want = sum(s // bs * bs for files in plan for _, s in files)
    if total != want:
        raise SystemExit(f"fio read {total} bytes, not the {want} of the shards' whole blocks: {' '.join(argv[:12])} …")
    longest = max(j["read"]["runtime"] for j in jobs) / 1e3  # ms
    return total / longest


def run_ours(d: str, streams: int, bs: int, seed: int, warm: bool) -> float:
    r = shards(d, streams=streams, bs=bs, seed=seed, cold=not warm, warm=warm, max_bytes=0)
    if not r.ok:
        raise SystemExit(f"shards: {r.status}: {r.reason}")
    return r.metrics["read_warm_bytes_per_s" if warm else "read_bytes_per_s"]


def machine(path: str) -> str:
    t = inspect(path, write=False, read=False)
    fio = subprocess.run(["fio", "--version"], capture_output=True, text=True).stdout.strip()
    cpus = usable_cpus()
    return (
        f"{cpu_model()}, {cpus.get('usable') or os.cpu_count()} usable CPUs, {platform.system()} "
        f"{platform.release()}, Python {platform.python_version()}, {fio}; shards on {t.filesystem} "
        f"({t.device}) at {t.path}"
    )


def bench(d: str, a) -> int:
    files, fmt = find_shards(d)
    streams = a.streams or usable_cpus()["usable_int"]
    bs = parse_size(a.bs)
    total = sum(s for _, s in files)
    print("machine:", machine(d))
    print(
        f"{len(files)} {fmt} shards, {total / 2**20:.0f} MiB; streams={streams} bs={a.bs} rounds={a.pairs}  "
        f"load average at start: {loadavg()}",
        flush=True,
    )
    rows = []
    for name, warm in [("cold (fadvise / --invalidate=1)", False)] + ([("warm (page cache)", True)] if a.warm else []):
        if warm:
            _read_once(files, bs, None)
        run_ours(d, streams, bs, 0, warm)  # one warm-up each, not counted
        run_fio(plan_streams(files, streams, 0), bs, 0 if warm else 1)
        ratios, floor, ours_v, fio_v = [], [], [], []
        kinds = ["shards", "fio_a", "fio_b"]
        for i in range(a.pairs):
            seed = 1000 + i
            plan = plan_streams(files, streams, seed)
            got = {}
            for k in kinds[i % 3 :] + kinds[: i % 3]:
                got[k] = run_ours(d, streams, bs, seed, warm) if k == "shards" else run_fio(plan, bs, 0 if warm else 1)
            ratios.append(got["shards"] / got["fio_a"])
            floor.append(got["fio_b"] / got["fio_a"])
            ours_v.append(got["shards"])
            fio_v += [got["fio_a"], got["fio_b"]]
            print(
                f"  {name:<32} round {i + 1:2d}: shards {format_metric('read_bytes_per_s', got['shards']):>10}  "
                f"fio {format_metric('read_bytes_per_s', got['fio_a']):>10}  ratio {ratios[-1]:.3f}  "
                f"(fio/fio {floor[-1]:.3f})",
                flush=True,
            )
        rows.append((name, ratios, floor, statistics.median(ours_v), statistics.median(fio_v)))
    print()
    print(
        f"{'test':<32} {'median':>7} {'min':>6} {'max':>6}  {'floor fio/fio [min, max]':<25} {'target':<8}"
        f"{'':<6} {'shards':>10} {'fio':>10}"
    )
    for name, ratios, floor, o, f in rows:
        med = statistics.median(ratios)
        print(
            f"{name:<32} {med:7.3f} {min(ratios):6.3f} {max(ratios):6.3f}  {statistics.median(floor):6.3f} "
            f"[{min(floor):.3f}, {max(floor):.3f}]{'':<3} {'>=0.95':<8}{'ok' if med >= 0.95 else 'BELOW':<6} "
            f"{format_metric('read_bytes_per_s', o):>10} {format_metric('read_bytes_per_s', f):>10}"
        )
    print(f"load average at end: {loadavg()}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default=None, help="a folder of shards to read (default: make a set, removed after)")
    ap.add_argument("--tmp", default="/tmp", help="where the made set goes (a new temporary directory)")
    ap.add_argument("--shards", type=int, default=8)
    ap.add_argument("--shard-size", default="64M")
    ap.add_argument("--streams", type=int, default=None, help="default: the usable CPUs")
    ap.add_argument("--bs", default="1M")
    ap.add_argument("--pairs", type=int, default=8, help="rounds (each: shards once, fio twice)")
    ap.add_argument("--warm", action="store_true", help="add a row read from the page cache")
    a = ap.parse_args()
    if a.dir:
        return bench(a.dir, a)
    with tempfiles.temp_dir(a.tmp, "benchshards") as td:
        print(f"making {a.shards} tar shards of {a.shard_size} in {td.path} …", flush=True)
        make_tar_shards(os.path.join(td.path, "ds"), shards=a.shards, shard_size=a.shard_size)
        return bench(os.path.join(td.path, "ds"), a)


if __name__ == "__main__":
    sys.exit(main())
