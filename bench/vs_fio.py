"""Builtin engine vs fio, same file, same parameters, interleaved rounds with a noise floor.

    PYTHONPATH=$PWD .venv/bin/python bench/vs_fio.py [--plain] [--dir /tmp] [--pairs 10] [--runtime 3] [--size 1G]

Each round runs three things in a rotating order: the builtin engine once and fio twice.
builtin/fio (first fio run) is the round's ratio — the table gives the median over the
rounds, its min and max — and fio/fio between the two fio runs of the round is the
bare-vs-bare noise floor: what two identical runs differ by on this machine, now.

Two ways to run fio:

* default (wrapper): through the same probe function as the builtin engine
  (``nbbench.probes.storage.disk``, only ``engine="fio"`` differs: ioengine=io_uring, or libaio
  where io_uring is blocked), so file, cache handling and parsing are shared.
* ``--plain``: the plain fio command line, run directly as an argument list and read
  from fio's own JSON — a mistake in nbbench's fio wrapper cannot hide a gap.  QD1 is
  ``--ioengine=psync``, QD32 ``--ioengine=io_uring --iodepth=32``, sequential
  ``--rw=read --bs=1M`` (psync, one pass), cold buffered ``--invalidate=1``.

CPU per I/O (``--plain``): the builtin engine's own figure (its I/O threads' CPU time,
``thread_time``, over the I/Os: Python and the kernel) beside fio's (``usr_cpu + sys_cpu``
of its JSON, times the job's runtime, over its I/Os), medians over the rounds.  Less
sensitive to a loaded machine than the throughput: a busy neighbour delays an I/O, it does
not make it cost more CPU.

The jobs row: ``--jobs 2`` on the page cache against ``fio --numjobs=2``; its note also
gives two jobs ÷ one job of the builtin engine (the QD1 page cache row's median).

Targets: sequential 0.95-1.05 (the engines agree), RND4K QD1 direct >= 0.98, RND4K QD32
direct >= 0.98, RND4K page cache >= 0.95, --jobs 2 page cache >= 0.95 of fio and >= 1.8x
one job.  A timing, not a test: it never fails the build.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
from collections import Counter

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from _common import bimodal, loadavg  # noqa: E402

from nbbench import tempfiles  # noqa: E402
from nbbench.env import cpu_model, usable_cpus  # noqa: E402
from nbbench.probes.storage import disk  # noqa: E402
from nbbench.probes.storage.target import check_free_space, inspect  # noqa: E402
from nbbench.units import format_metric, parse_size  # noqa: E402


def _builtin_seq(direct):
    def run(f, a):
        r = disk.dd(f, bs="1M", size=a.size, direct=direct, mode="read", engine=a.engine)
        return r.metrics["read_bytes_per_s"], r

    return run


def _builtin_rand(qd, direct=True, warm=False, path=None, jobs=1):
    def run(f, a):
        r = disk.randread(
            f,
            bs="4k",
            qd=qd,
            runtime=a.runtime,
            ramp=a.ramp,
            direct=direct,
            warm=warm,
            engine=a.engine,
            builtin_path=path if a.engine == "builtin" else None,
            jobs=jobs,
        )
        return r.metrics["iops"], r

    return run


def _plain_argv(f, a, rw, bs, engine, direct, qd=1, time_based=True, invalidate=1, extra=()):
    argv = [
        "fio",
        "--name=x",
        f"--filename={f}",
        f"--rw={rw}",
        f"--bs={bs}",
        f"--ioengine={engine}",
        f"--direct={direct}",
        f"--iodepth={qd}",
        f"--invalidate={invalidate}",
        "--readonly",
        "--output-format=json",
    ]
    if time_based:
        argv += [f"--runtime={a.runtime:g}", f"--ramp_time={a.ramp:g}", "--time_based"]
    else:
        argv.append(f"--size={parse_size(a.size)}")
    return argv + list(extra)


def _warm(f):
    with open(f, "rb", buffering=0) as fh:
        while fh.read(1 << 20):
            pass


JOBS_ROW = "RND4K QD1 page cache, --jobs 2"
# name, target (lo, hi or None), metric, builtin(f, a) -> (value, result), plain fio argv(f, a), warm first
TESTS = [
    (
        "SEQ1M QD1 direct",
        (0.95, 1.05),
        "read_bytes_per_s",
        _builtin_seq(True),
        lambda f, a: _plain_argv(f, a, "read", "1M", "psync", 1, time_based=False),
        False,
    ),
    (
        "SEQ1M QD1 buffered cold",
        (0.95, 1.05),
        "read_bytes_per_s",
        _builtin_seq(False),
        # fadvise_hint=0: no POSIX_FADV_SEQUENTIAL, as dd (and the dd probe) reads
        lambda f, a: _plain_argv(f, a, "read", "1M", "psync", 0, time_based=False, extra=["--fadvise_hint=0"]),
        False,
    ),
    (
        "RND4K QD1 direct",
        (0.98, None),
        "iops",
        _builtin_rand(1),
        lambda f, a: _plain_argv(f, a, "randread", "4k", "psync", 1),
        False,
    ),
    (
        "RND4K QD32 direct",
        (0.98, None),
        "iops",
        _builtin_rand(32),
        lambda f, a: _plain_argv(f, a, "randread", "4k", "io_uring", 1, qd=32),
        False,
    ),
    (
        "RND4K QD1 page cache",
        (0.95, None),
        "iops",
        _builtin_rand(1, direct=False, warm=True),
        lambda f, a: _plain_argv(f, a, "randread", "4k", "psync", 0, invalidate=0),
        True,
    ),
    (
        JOBS_ROW,
        (0.95, None),
        "iops",
        _builtin_rand(1, direct=False, warm=True, jobs=2),
        lambda f, a: _plain_argv(f, a, "randread", "4k", "psync", 0, invalidate=0, extra=["--numjobs=2"]),
        True,
    ),
]
EXTRA_ROWS = [
    (
        "RND4K QD32 direct, thread pool",
        None,
        "iops",
        _builtin_rand(32, path="threads"),
        lambda f, a: _plain_argv(f, a, "randread", "4k", "io_uring", 1, qd=32),
        False,
    ),
]


def plain_fio(argv, metric, warm_file=None) -> tuple[float, float | None]:
    """(the metric summed over fio's jobs, fio's CPU ns per I/O: (usr + sys) % x runtime / I/Os)."""
    if warm_file:
        _warm(warm_file)
    p = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {(p.stderr or p.stdout).strip()[-300:]}")
    jobs = json.loads(p.stdout[p.stdout.find("{") :])["jobs"]
    value = sum(float(j["read"]["iops"] if metric == "iops" else j["read"]["bw_bytes"]) for j in jobs)
    ios = sum(j["read"]["total_ios"] for j in jobs)
    cpu_s = sum((j["usr_cpu"] + j["sys_cpu"]) / 100 * j["job_runtime"] / 1e3 for j in jobs)
    return value, (cpu_s * 1e9 / ios if ios else None)


def machine(path: str) -> str:
    t = inspect(path, write=True)
    fio = subprocess.run(["fio", "--version"], capture_output=True, text=True).stdout.strip()
    cpus = usable_cpus()
    return (
        f"{cpu_model()}, {cpus.get('usable') or os.cpu_count()} usable CPUs, "
        f"{platform.system()} {platform.release()}, Python {platform.python_version()}, {fio}; "
        f"file on {t.filesystem} ({t.device}) at {t.path}"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--plain", action="store_true", help="run the plain fio command line (argv), not the fio engine")
    ap.add_argument("--dir", default="/tmp")
    ap.add_argument("--pairs", type=int, default=10, help="rounds per test (each: builtin once, fio twice)")
    ap.add_argument("--runtime", type=float, default=3.0)
    ap.add_argument("--ramp", type=float, default=0.5)
    ap.add_argument("--size", default="1G")
    ap.add_argument("--only", default="", help="comma-separated test names (prefixes) to run")
    ap.add_argument("--no-extra-rows", action="store_true", help="skip the thread-pool comparison row")
    a = ap.parse_args()
    size = parse_size(a.size)
    check_free_space(a.dir, size)
    print("machine:", machine(a.dir))
    from nbbench.probes._engines.sync import compiled_loop

    print(
        "builtin engine loops:",
        "compiled (the C extension is built)"
        if compiled_loop()
        else "Python (the C extension is not built here: pip install . or python setup.py build_ext --inplace)",
    )
    mode = "plain fio command lines (argv)" if a.plain else "fio through nbbench's fio engine"
    print(
        f"{mode}; rounds={a.pairs} runtime={a.runtime:g}s ramp={a.ramp:g}s file={a.size}  "
        f"load average at start: {loadavg()}"
    )
    tests = TESTS + ([] if a.no_extra_rows else EXTRA_ROWS)
    if a.only:
        tests = [t for t in tests if any(t[0].startswith(p.strip()) for p in a.only.split(","))]
    rows, notes = [], []
    with tempfiles.temp_file(a.dir, "bench") as tf:
        buf = os.urandom(1 << 20)
        for off in range(0, size, 1 << 20):
            os.pwrite(tf.fd, buf[:8] + off.to_bytes(8, "little") + buf[16:], off)
        os.fsync(tf.fd)
        os.posix_fadvise(tf.fd, 0, 0, os.POSIX_FADV_DONTNEED)
        for name, target, metric, builtin, plain, warm in tests:

            def fio(eng_args, name=name, builtin=builtin, plain=plain, metric=metric, warm=warm):
                if a.plain and plain is not None:
                    return plain_fio(plain(tf.path, eng_args), metric, tf.path if warm else None)
                return builtin(tf.path, argparse.Namespace(**{**vars(eng_args), "engine": "fio"}))[0], None

            def ours(eng_args, builtin=builtin):
                return builtin(tf.path, argparse.Namespace(**{**vars(eng_args), "engine": "builtin"}))

            short = argparse.Namespace(**{**vars(a), "runtime": 0.5, "ramp": 0.1})
            ours(short)  # one warm-up each, not counted
            fio(short)
            ratios, floor, b_vals, f_vals, paths, segs = [], [], [], [], set(), Counter()
            b_cpu, f_cpu = [], []
            maxseg = None
            kinds = ["builtin", "fio_a", "fio_b"]
            for i in range(a.pairs):
                order = kinds[i % 3 :] + kinds[: i % 3]
                got = {}
                for k in order:
                    v, r = ours(a) if k == "builtin" else fio(a)
                    got[k] = v
                    if k != "builtin" and r is not None:
                        f_cpu.append(r)
                    if k == "builtin":
                        c = r.metrics.get("engine_cpu_per_io_ns") or r.metrics.get("read_engine_cpu_per_io_ns")
                        if c:
                            b_cpu.append(c)
                        paths.add(r.labels.get("io_path") or r.labels.get("read_io_path"))
                        maxseg = r.labels.get("device_max_segments", maxseg)
                        if "buffer_segments" in r.labels:
                            segs[r.labels["buffer_segments"]] += 1
                ratios.append(got["builtin"] / got["fio_a"])
                floor.append(got["fio_b"] / got["fio_a"])
                b_vals.append(got["builtin"])
                f_vals += [got["fio_a"], got["fio_b"]]
                print(
                    f"  {name:<30} round {i + 1:2d}: builtin {format_metric(metric, got['builtin']):>12}  "
                    f"fio {format_metric(metric, got['fio_a']):>12}  ratio {ratios[-1]:.3f}  "
                    f"(fio/fio {floor[-1]:.3f})",
                    flush=True,
                )
            rows.append(
                (
                    name,
                    target,
                    metric,
                    ratios,
                    floor,
                    statistics.median(b_vals),
                    statistics.median(f_vals),
                    ", ".join(sorted(p for p in paths if p)),
                    statistics.median(b_cpu) if b_cpu else None,
                    statistics.median(f_cpu) if f_cpu else None,
                )
            )
            if name.startswith("SEQ"):
                bi = bimodal(f_vals)
                if bi:
                    why = (
                        f" — where a request takes at most {maxseg} segments (here) a 1 MiB I/O from a buffer of"
                        " scattered 4 KiB pages (256) goes out as two requests, and as one when its pages happen to"
                        " be physically contiguous"
                        if "direct" in name
                        else " — buffered, the page cache's readahead forms the device's requests, and their size"
                        " varies from run to run"
                    )
                    notes.append(
                        f"{name}: fio's own figure is bimodal ({bi[0]} runs near "
                        f"{format_metric(metric, bi[1])}, {bi[2]} near {format_metric(metric, bi[3])}){why}"
                    )
                if segs:
                    notes.append(
                        f"{name}: the builtin engine's buffer, in physically contiguous pieces per run: "
                        + ", ".join(f"{k} x{n}" for k, n in sorted(segs.items()))
                    )
    print()
    print(
        f"{'test':<30} {'median':>7} {'min':>6} {'max':>6}  {'floor fio/fio [min, max]':<25} {'target':<10}"
        f"{'':<7} {'builtin':>12} {'fio':>12}  {'CPU/IO builtin':>14} {'fio':>9}  builtin I/O path"
    )
    one_job = {r[0]: r[5] for r in rows}.get("RND4K QD1 page cache")

    def us(ns):
        return f"{ns / 1e3:.2f} µs" if ns else "—"

    for name, target, metric, ratios, floor, b, f, path, bc, fc in rows:
        med = statistics.median(ratios)
        if target is None:
            tgt, flag = "—", ""
        elif target[1] is None:
            tgt, flag = f">={target[0]:.2f}", "ok" if med >= target[0] else "BELOW"
        else:
            tgt, flag = f"{target[0]:.2f}-{target[1]:.2f}", "ok" if target[0] <= med <= target[1] else "MISSED"
        print(
            f"{name:<30} {med:7.3f} {min(ratios):6.3f} {max(ratios):6.3f}  {statistics.median(floor):6.3f} "
            f"[{min(floor):.3f}, {max(floor):.3f}]{'':<3} {tgt:<10}{flag:<7} {format_metric(metric, b):>12} "
            f"{format_metric(metric, f):>12}  {us(bc):>14} {us(fc):>9}  {path}"
        )
        if name == JOBS_ROW and one_job:
            scale = b / one_job
            notes.append(
                f"{JOBS_ROW}: two jobs / one job (builtin medians) = {scale:.2f} (target >= 1.80"
                f"{'' if scale >= 1.8 else ', MISSED'}); this machine has {os.cpu_count()} CPUs"
            )
    for n in notes:
        print("note:", n)
    print(f"load average at end: {loadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
