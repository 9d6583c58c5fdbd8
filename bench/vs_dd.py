"""nbbench's builtin dd probe against the literal dd command lines, same directory, same bs/count.

    PYTHONPATH=$PWD .venv/bin/python bench/vs_dd.py [--dir /tmp] [--size 512M] [--pairs 8] [--buffers pages]

The seed article's commands, run as argument lists (never a shell string):

    dd if=/dev/zero of=DIR/<new temp file> bs=1M count=N oflag=direct
    dd if=DIR/<that file> of=/dev/null bs=1M iflag=direct

The temp file is created new (O_EXCL) by this script, written by dd and removed.  Each
round runs three things in a rotating order: nbbench's ``dd`` probe (builtin engine,
direct, the same bs and count: its own temp file, written then read) and the dd pair
twice.  The ratio nbbench/dd of a round is one "pair"; dd/dd between the two dd runs of
the same round is the noise floor — what two identical runs differ by on this machine
at this time.  dd's figure is its own (bytes / seconds of its summary line).  nbbench
writes random data, dd zeros (as the article's command does).

dd's own cost: every literal dd run's user and system CPU time is taken (``wait4``), and
each round also times ``dd if=/dev/zero of=/dev/null bs=1M count=N`` — the /dev/zero copies
alone, which the literal write command does before each block and nbbench's write does not
(it writes from buffers filled once).  The table's last lines say how much of dd's write time
that part is: the measured share of the gap that is dd reading /dev/zero.

Targets: read and write 0.95-1.05 of dd.  A timing, not a test: it never fails the build.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from _common import bimodal, loadavg  # noqa: E402

from nbbench import tempfiles  # noqa: E402
from nbbench.env import cpu_model, usable_cpus  # noqa: E402
from nbbench.probes.storage import disk  # noqa: E402
from nbbench.probes.storage.target import check_free_space, inspect  # noqa: E402
from nbbench.units import format_metric, parse_size  # noqa: E402

TARGET = (0.95, 1.05)
_SUMMARY = re.compile(r"^(\d+) bytes\b.*copied, ([0-9.]+(?:e[-+]?\d+)?) s")


#: (elapsed s, user s, sys s) of every literal dd run, by kind ("write", "read", "zero")
CPU: dict[str, list] = {"write": [], "read": [], "zero": []}


def _dd_rate(argv: list[str], kind: str | None = None) -> float:
    """Run one dd command line; bytes/s from its own summary line; its CPU time (wait4) into CPU[kind]."""
    p = subprocess.Popen(
        argv,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "LC_ALL": "C"},
        stdin=subprocess.DEVNULL,
    )
    err = p.stderr.read()
    p.stderr.close()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {err.strip()[-300:]}")
    for line in reversed(err.splitlines()):
        m = _SUMMARY.match(line.strip())
        if m:
            if kind:
                CPU[kind].append((float(m.group(2)), ru.ru_utime, ru.ru_stime))
            return int(m.group(1)) / float(m.group(2))
    raise SystemExit(f"no summary line from {' '.join(argv)}: {err.strip()[-300:]}")


def zero_only(dd: str, count: int) -> float:
    """``dd if=/dev/zero of=/dev/null``: the /dev/zero copies of the literal write, alone."""
    return _dd_rate([dd, "if=/dev/zero", "of=/dev/null", "bs=1M", f"count={count}"], "zero")


def dd_argv(dd: str, path: str, count: int) -> tuple[list[str], list[str]]:
    """The article's two command lines, as argument lists."""
    return (
        [dd, "if=/dev/zero", f"of={path}", "bs=1M", f"count={count}", "oflag=direct"],
        [dd, f"if={path}", "of=/dev/null", "bs=1M", "iflag=direct"],
    )


def literal_dd(directory: str, count: int, dd: str) -> tuple[float, float]:
    """The article's write then read, on a new temp file: (write B/s, read B/s)."""
    with tempfiles.temp_file(directory, "vsdd") as tf:
        tf.close()  # dd opens it itself (and truncates: it is our new, empty file)
        w, r = dd_argv(dd, tf.path, count)
        return _dd_rate(w, "write"), _dd_rate(r, "read")


def nbbench_dd(directory: str, count: int, buffers: str):
    res = disk.dd(directory, bs="1M", count=count, direct=True, engine="builtin", buffers=buffers)
    if not res.ok:
        raise SystemExit(f"nbbench dd: {res.status} {res.reason}")
    if res.labels.get("cache") != "direct":
        raise SystemExit(
            f"{directory}: O_DIRECT unavailable ({res.labels.get('direct_fallback')}); "
            "dd's oflag=direct would fail too — pick a directory on a real disk"
        )
    return res.metrics["write_bytes_per_s"], res.metrics["read_bytes_per_s"], res


def machine(path: str, dd: str) -> str:
    t = inspect(path, write=True)
    ver = subprocess.run([dd, "--version"], capture_output=True, text=True).stdout.splitlines()[:1]
    cpus = usable_cpus()
    return (
        f"{cpu_model()}, {cpus.get('usable') or os.cpu_count()} usable CPUs, {platform.system()} "
        f"{platform.release()}, Python {platform.python_version()}, {ver[0] if ver else 'dd'}; "
        f"files on {t.filesystem} ({t.device}) in {t.path}"
    )


def _row(name: str, ratios: list[float], floor: list[float], nb: list[float], dd: list[float]) -> str:
    med = statistics.median(ratios)
    ok = TARGET[0] <= med <= TARGET[1]
    return (
        f"{name:<6} {med:8.3f} {min(ratios):6.3f} {max(ratios):6.3f}   {statistics.median(floor):6.3f} "
        f"[{min(floor):.3f}, {max(floor):.3f}]   {TARGET[0]:.2f}-{TARGET[1]:.2f} {'ok' if ok else 'MISSED':<6}  "
        f"{format_metric('write_bytes_per_s', statistics.median(nb)):>11} "
        f"{format_metric('write_bytes_per_s', statistics.median(dd)):>11}"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default="/tmp" if os.path.isdir("/tmp") else ".")
    ap.add_argument("--size", default="512M", help="bytes per run, whole MiB (default 512M)")
    ap.add_argument("--pairs", type=int, default=12, help="rounds (each: nbbench once, dd twice)")
    ap.add_argument(
        "--buffers",
        choices=["pages", "huge"],
        default="pages",
        help="nbbench's buffers (default pages: dd's request shape)",
    )
    a = ap.parse_args()
    dd = shutil.which("dd")
    if not dd:
        raise SystemExit("dd is not on PATH")
    count = max(1, parse_size(a.size) >> 20)
    check_free_space(a.dir, 2 * (count << 20))
    print("machine:", machine(a.dir, dd))
    print(
        f"rounds={a.pairs} size={count} MiB (bs=1M count={count}) nbbench buffers={a.buffers}  "
        f"load average at start: {loadavg()}"
    )
    literal_dd(a.dir, 1, dd)  # warm-up of both, not counted
    nbbench_dd(a.dir, 1, a.buffers)
    for v in CPU.values():
        v.clear()
    print(
        "dd command lines:",
        " ; ".join(" ".join(x) for x in dd_argv("dd", os.path.join(a.dir, "<new temp file>"), count)),
    )
    ratios = {"write": [], "read": []}
    floor = {"write": [], "read": []}
    nb_vals = {"write": [], "read": []}
    dd_vals = {"write": [], "read": []}
    labels = {}
    kinds = ["nbbench", "dd_a", "dd_b"]
    for i in range(a.pairs):
        order = kinds[i % 3 :] + kinds[: i % 3]
        got = {}
        for k in order:
            if k == "nbbench":
                w, r, res = nbbench_dd(a.dir, count, a.buffers)
                labels = res.labels
            else:
                w, r = literal_dd(a.dir, count, dd)
            got[k] = (w, r)
        zero_only(dd, count)
        for j, op in enumerate(("write", "read")):
            ratios[op].append(got["nbbench"][j] / got["dd_a"][j])
            floor[op].append(got["dd_b"][j] / got["dd_a"][j])
            nb_vals[op].append(got["nbbench"][j])
            dd_vals[op].extend([got["dd_a"][j], got["dd_b"][j]])
        print(
            f"  round {i + 1:2d} ({' > '.join(order)}): "
            + "  ".join(
                f"{op} nbbench {format_metric('write_bytes_per_s', got['nbbench'][j])} "
                f"dd {format_metric('write_bytes_per_s', got['dd_a'][j])} "
                f"ratio {ratios[op][-1]:.3f} (dd/dd {floor[op][-1]:.3f})"
                for j, op in enumerate(("write", "read"))
            ),
            flush=True,
        )
    print()
    print(
        f"{'':<6} {'median':>8} {'min':>6} {'max':>6}   {'floor dd/dd [min, max]':<24} {'target':<9} {'':<6}  "
        f"{'nbbench':>11} {'dd':>11}"
    )
    for op in ("write", "read"):
        print(_row(op, ratios[op], floor[op], nb_vals[op], dd_vals[op]))
    print(
        f"nbbench labels: buffers={labels.get('buffers')}  buffer_segments={labels.get('buffer_segments', '?')}  "
        f"device_max_segments={labels.get('device_max_segments')}  "
        f"device_max_sectors_kb={labels.get('device_max_sectors_kb')}  request_split={labels.get('request_split')}"
    )
    med = {k: [statistics.median(x[j] for x in v) for j in range(3)] for k, v in CPU.items() if v}
    for k in ("write", "read"):
        if k in med:
            e, u, sy = med[k]
            print(
                f"dd's own CPU, {k} (median of {len(CPU[k])} runs): user {u:.3f} s, sys {sy:.3f} s of {e:.3f} s elapsed"
            )
    if "zero" in med and "write" in med:
        ze, zu, zs = med["zero"]
        print(
            f"dd if=/dev/zero of=/dev/null bs=1M count={count} (the /dev/zero copies alone, median of "
            f"{len(CPU['zero'])}): {ze:.3f} s = {100 * ze / med['write'][0]:.0f} % of dd's write time "
            f"({med['write'][0]:.3f} s); without them dd's write would take about {med['write'][0] - ze:.3f} s "
            f"-> {format_metric('write_bytes_per_s', (count << 20) / max(1e-9, med['write'][0] - ze))} "
            f"(nbbench: {format_metric('write_bytes_per_s', statistics.median(nb_vals['write']))})"
        )
    for op in ("write", "read"):
        bi = bimodal(dd_vals[op])
        if bi:
            print(
                f"note: dd's own {op} figure is bimodal ({bi[0]} runs near "
                f"{format_metric('write_bytes_per_s', bi[1])}, {bi[2]} near "
                f"{format_metric('write_bytes_per_s', bi[3])})"
                f" — a 1 MiB buffer of scattered 4 KiB pages needs more segments than the device takes "
                f"(max_segments {labels.get('device_max_segments')}) and goes out as two requests, as one when its "
                "pages happen to be physically contiguous"
            )
    print(f"load average at end: {loadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
