"""Where the direct-write gap between nbbench's dd probe and the literal ``dd`` comes from.

    PYTHONPATH=$PWD .venv/bin/python bench/dd_write_vs_dd.py [--dir /tmp] [--size 512M] [--pairs 8]

Every round writes ``--size`` (bs 1 MiB, O_DIRECT, a new file each time, removed after) once
with each variant, in an order that rotates from round to round:

* ``nbbench``          the dd probe, builtin engine, ``mode="write"``: its pool of 16 buffers of random data
* ``nbbench-zeros``    the same with the pool filled with zeros (the pool patched in this process)
* ``nbbench-huge``     the same with ``buffers="huge"`` (2 MiB huge pages: a 1 MiB write is one segment)
* ``nbbench-loop``     the builtin's compiled QD1 loop alone on a new O_DIRECT file (no probe, no Session)
* ``dd-zero``          the literal ``dd if=/dev/zero of=NEW bs=1M count=N oflag=direct`` (the reference)
* ``dd-zero-b``        the same command again: ``dd-zero-b / dd-zero`` is the noise floor
* ``dd-zero-sync``     ``… conv=fdatasync``: a flush at the end, timed
* ``dd-zero-falloc``   the literal command into a file given its blocks first (``posix_fallocate``)
* ``dd-random``        ``dd if=/dev/shm/<random file> …``: random data held in RAM, no /dev/zero
* ``py-rand-16``       a plain Python ``os.pwrite`` loop from the builtin's own pool (16 random buffers)
  — against ``nbbench``: the compiled loop's per-block cost
* ``py-rand-1`` / ``py-zero-1`` / ``py-zero-16``  the plain loop from 1 or 16 pool buffers of random data or zeros
* ``py-rand-2`` / ``py-rand-4`` / ``py-rand-64``  random data cycling through 2, 4, 64 buffers (2-64 MiB)
* ``py-devzero-1``     dd's literal loop in Python: read 1 MiB of /dev/zero into one buffer, write it
* ``py-rand-1-huge`` / ``py-zero-1-huge``  one buffer on a 2 MiB huge page (one segment): data alone

Each line is ``variant / dd-zero`` of the same round (median, min, max) beside the noise floor
(``--base py-rand-1``: against one rewritten buffer of random data instead).
``split`` is, for the variants whose buffers this process holds, the median share of the writes
whose buffer is made of more physically contiguous pieces than the device takes in one request
(``max_segments``): those go to the device as two requests.  A timing, not a test: it never
fails the build.  The disk is shared: keep runs short.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from _common import loadavg  # noqa: E402

from nbbench.probes._engines import devlimits, sync  # noqa: E402
from nbbench.probes.storage import disk  # noqa: E402
from nbbench.probes.storage.target import check_free_space  # noqa: E402
from nbbench.units import format_metric, parse_size  # noqa: E402

_SUMMARY = re.compile(r"^(\d+) bytes\b.*copied, ([0-9.]+(?:e[-+]?\d+)?) s")
MIB = 1 << 20
MAX_SEGMENTS = [None]  # the device's max_segments, looked up once
SPLIT: dict[str, list[float]] = {}  # variant -> share of its writes from a buffer the device splits


def _new_path(directory: str, tag: str) -> str:
    return os.path.join(directory, f".nbbench-bench-{tag}-{os.getpid()}-{time.monotonic_ns()}.tmp")


def _split_share(views) -> float | None:
    """Share of ``views`` (1 MiB buffers, cycled in turn) with more physically contiguous pieces than
    the device takes in one request."""
    if MAX_SEGMENTS[0] is None:
        return None
    over = 0
    for v in views:
        anchor = ctypes.c_char.from_buffer(v)
        segs = sync.physical_segments(ctypes.addressof(anchor), len(v))
        del anchor
        if segs is None:
            return None
        over += segs > MAX_SEGMENTS[0]
    return over / len(views)


def dd_rate(dd: str, directory: str, count: int, src: str = "/dev/zero", conv="notrunc", falloc=False) -> float:
    path = _new_path(directory, "dd")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        if falloc:
            os.posix_fallocate(fd, 0, count * MIB)
        os.close(fd)
        argv = [dd, f"if={src}", f"of={path}", "bs=1M", f"count={count}", "oflag=direct", f"conv={conv}"]
        p = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, "LC_ALL": "C"})
        if p.returncode:
            raise SystemExit(f"{' '.join(argv)} failed: {p.stderr.strip()[-300:]}")
        for line in reversed(p.stderr.splitlines()):
            m = _SUMMARY.match(line.strip())
            if m:
                return int(m.group(1)) / float(m.group(2))
        raise SystemExit(f"no summary from {' '.join(argv)}")
    finally:
        os.unlink(path)


def py_rate(
    name: str, directory: str, count: int, nbuf: int, random: bool, buffers: str = "pages", devzero: bool = False
) -> float:
    """A plain os.pwrite loop, O_DIRECT, cycling through ``nbuf`` buffers of the builtin's own pool;
    ``devzero``: each block first read from /dev/zero into the buffer, as the literal dd command does."""
    path = _new_path(directory, "py")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_DIRECT, 0o600)
    pool = sync.aligned_buffers(nbuf, MIB, fill_random=random, buffers=buffers)
    try:
        SPLIT.setdefault(name, []).append(_split_share(pool.views))
        bufs = pool.views
        zero = open("/dev/zero", "rb", buffering=0) if devzero else None
        t0 = time.perf_counter()
        for k in range(count):
            if zero is not None:
                zero.readinto(bufs[k % nbuf])
            os.pwrite(fd, bufs[k % nbuf], k * MIB)
        rate = count * MIB / (time.perf_counter() - t0)
        if zero is not None:
            zero.close()
        return rate
    finally:
        pool.release()
        os.close(fd)
        os.unlink(path)


def nb_rate(name: str, directory: str, count: int, buffers: str = "pages", zeros: bool = False) -> float:
    real = sync.aligned_buffers

    def watched(n, bs, fill_random=False, buffers="pages"):
        pool = real(n, bs, fill_random and not zeros, buffers)
        SPLIT.setdefault(name, []).append(_split_share(pool.views))
        return pool

    sync.aligned_buffers = watched
    try:
        res = disk.dd(directory, bs="1M", count=count, direct=True, mode="write", buffers=buffers)
    finally:
        sync.aligned_buffers = real
    if not res.ok or res.labels.get("cache") != "direct":
        raise SystemExit(f"nbbench dd: {res.status} {res.reason} cache={res.labels.get('cache')}")
    return res.metrics["write_bytes_per_s"]


def loop_rate(name: str, directory: str, count: int) -> float:
    """The builtin's compiled QD1 loop alone (:func:`sync.run_sync`) on a new O_DIRECT file: no Session."""
    from nbbench.probes._engines.job import JobSpec

    path = _new_path(directory, "loop")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_DIRECT, 0o600)
    real = sync.aligned_buffers

    def watched(n, bs, fill_random=False, buffers="pages"):
        pool = real(n, bs, fill_random, buffers)
        SPLIT.setdefault(name, []).append(_split_share(pool.views))
        return pool

    sync.aligned_buffers = watched
    try:
        total = count * MIB
        out = sync.run_sync(JobSpec(fd=fd, op="write", pattern="seq", bs=MIB, region=total, total=total))
        return out.bytes_per_s
    finally:
        sync.aligned_buffers = real
        os.close(fd)
        os.unlink(path)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default="/tmp")
    ap.add_argument("--size", default="512M", help="bytes per run, whole MiB (default 512M)")
    ap.add_argument("--pairs", type=int, default=8, help="rounds (default 8)")
    ap.add_argument("--only", default="", help="comma-separated variants to run (default all)")
    ap.add_argument("--base", default="dd-zero", help="the variant every ratio is taken against (default dd-zero)")
    a = ap.parse_args()
    dd = shutil.which("dd")
    if not dd:
        raise SystemExit("dd is not on PATH")
    count = max(1, parse_size(a.size) // MIB)
    check_free_space(a.dir, 2 * count * MIB)
    lim, why = devlimits.limits_for_path(a.dir)
    MAX_SEGMENTS[0] = lim.max_segments if lim is not None else None
    rnd = _new_path("/dev/shm", "random")
    with open(rnd, "wb") as f:
        for _ in range(count):
            f.write(os.urandom(MIB))
    d = a.dir
    variants = {
        "nbbench": lambda: nb_rate("nbbench", d, count),
        "nbbench-zeros": lambda: nb_rate("nbbench-zeros", d, count, zeros=True),
        "nbbench-huge": lambda: nb_rate("nbbench-huge", d, count, buffers="huge"),
        "nbbench-loop": lambda: loop_rate("nbbench-loop", d, count),
        "dd-zero": lambda: dd_rate(dd, d, count),
        "dd-zero-b": lambda: dd_rate(dd, d, count),
        "dd-zero-sync": lambda: dd_rate(dd, d, count, conv="notrunc,fdatasync"),
        "dd-zero-falloc": lambda: dd_rate(dd, d, count, falloc=True),
        "dd-random": lambda: dd_rate(dd, d, count, src=rnd),
        "py-rand-16": lambda: py_rate("py-rand-16", d, count, 16, True),
        "py-zero-16": lambda: py_rate("py-zero-16", d, count, 16, False),
        "py-rand-1": lambda: py_rate("py-rand-1", d, count, 1, True),
        "py-rand-2": lambda: py_rate("py-rand-2", d, count, 2, True),
        "py-rand-4": lambda: py_rate("py-rand-4", d, count, 4, True),
        "py-rand-64": lambda: py_rate("py-rand-64", d, count, 64, True),
        "py-zero-1": lambda: py_rate("py-zero-1", d, count, 1, False),
        "py-devzero-1": lambda: py_rate("py-devzero-1", d, count, 1, False, devzero=True),
        "py-rand-1-huge": lambda: py_rate("py-rand-1-huge", d, count, 1, True, "huge"),
        "py-zero-1-huge": lambda: py_rate("py-zero-1-huge", d, count, 1, False, "huge"),
    }
    if a.only:
        keep = set(a.only.split(",")) | {"dd-zero", "dd-zero-b", a.base}
        variants = {k: v for k, v in variants.items() if k in keep}
    names = list(variants)
    dev = f"{lim.disk}, max_segments {lim.max_segments}" if lim is not None else f"device limits unknown: {why}"
    print(f"size={count} MiB bs=1M O_DIRECT, {a.pairs} rounds in {d} ({dev}); load average at start: {loadavg()}")
    try:
        nb_rate("warm-up", d, 8)  # not counted
        dd_rate(dd, d, 8)
        got: dict[str, list[float]] = {k: [] for k in names}
        for i in range(a.pairs):
            order = names[i % len(names) :] + names[: i % len(names)]
            for k in order:
                got[k].append(variants[k]())
            print(
                f"  round {i + 1}: dd-zero {format_metric('write_bytes_per_s', got['dd-zero'][-1])}"
                + "".join(f", {k} {got[k][-1] / got['dd-zero'][-1]:.2f}" for k in names if k != "dd-zero"),
                flush=True,
            )
    finally:
        os.unlink(rnd)
    floor = [b / z for b, z in zip(got["dd-zero-b"], got["dd-zero"])]
    base = a.base
    print(f"\n{'variant / ' + base:<20} {'median':>7} {'min':>6} {'max':>6}  {'median figure':>13}  split")
    for k in names:
        if k == base:
            continue
        r = [v / z for v, z in zip(got[k], got[base])]
        med = format_metric("write_bytes_per_s", statistics.median(got[k]))
        sp = [x for x in SPLIT.get(k, []) if x is not None]
        split = f"{statistics.median(sp):.2f}" if sp else "-"
        print(f"{k:<20} {statistics.median(r):7.3f} {min(r):6.3f} {max(r):6.3f}  {med:>13}  {split}")
    print("\nby split (variants holding one buffer: every write split, or none), median figure [runs]:")
    for k in names:
        sp = SPLIT.get(k, [])
        if len(sp) != len(got[k]) or any(x is None for x in sp):
            continue
        parts = []
        for label, keep in (
            ("no split", lambda x: x == 0),
            ("some split", lambda x: 0 < x < 1),
            ("all split", lambda x: x == 1),
        ):
            vals = [v for v, x in zip(got[k], sp) if keep(x)]
            if vals:
                parts.append(f"{label} {format_metric('write_bytes_per_s', statistics.median(vals))} [{len(vals)}]")
        print(f"  {k:<18} " + ", ".join(parts))
    ref = format_metric("write_bytes_per_s", statistics.median(got[base]))
    print(f"{base + ' (reference)':<20} {'':>7} {'':>6} {'':>6}  {ref:>13}")
    print(
        f"noise floor (dd-zero-b / dd-zero): median {statistics.median(floor):.3f}, "
        f"[{min(floor):.3f}, {max(floor):.3f}]; load average at end: {loadavg()}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
