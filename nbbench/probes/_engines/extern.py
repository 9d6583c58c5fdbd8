"""The system ``dd`` and ``fio`` as engines: run with argument lists (never a shell
string), outputs parsed onto the same :class:`~.job.JobOutput` as the builtin engine.

* fio: ``--output-format=json --lat_percentiles=1`` with fio's 17 percentiles, and a
  bandwidth log averaged over 500 ms (``--write_bw_log --log_avg_msec=500``) for
  the bandwidth series.  fio's ``lat`` (submission to completion) is what the
  builtin engine measures too.
* dd: GNU dd's summary (``N bytes (…) copied, T s, R MB/s`` on stderr, read in the C
  locale); ``status=progress`` lines give a series at dd's 1 s interval.

Cancel: SIGINT, as Ctrl-C would — both tools then stop and print what they did.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from ...progress import call_progress
from ...results import ProbeError
from ...results.hist import PERCENTILES, percentile_key
from . import uring_setup
from .job import JobOutput

__all__ = ["fio_path", "dd_path", "run_fio", "run_dd", "FIO_INSTALL_HINT", "parse_dd_summary", "parse_fio_json"]

FIO_INSTALL_HINT = (
    "the fio engine needs fio on PATH: install it with `apt-get install fio` "
    "(Debian/Ubuntu), `dnf install fio` (Fedora/RHEL) or `conda install -c conda-forge fio`; "
    "or use --engine builtin"
)


def fio_path() -> str:
    p = shutil.which("fio")
    if not p:
        raise ProbeError(FIO_INSTALL_HINT)
    return p


def dd_path() -> str:
    p = shutil.which("dd")
    if not p:
        raise ProbeError("the dd engine needs dd on PATH (coreutils); or use --engine builtin")
    return p


def _death_signal():
    """A preexec function that asks the kernel to SIGKILL the child when the thread that
    started it dies (``prctl(PR_SET_PDEATHSIG)``), or None where that is not available.

    The tool runs in its own session so that a Ctrl-C meant for the notebook does not reach it
    (we stop it ourselves and read what it did); without this, a probe killed outright (the OOM
    killer, a kernel restart) would leave fio writing into a file nobody removes.  libc and the
    function are looked up here, before the fork, so the child only makes one system call."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    PR_SET_PDEATHSIG = 1

    def _die_with_parent():
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)

    return _die_with_parent


def _run(argv, cancel, on_stderr=None, env=None):
    """Run ``argv``; SIGINT on cancel; returns (rc, stdout, stderr, interrupted).  Waits in the
    calling thread, which therefore outlives the tool (the death signal follows that thread)."""
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
        preexec_fn=_death_signal(),
    )
    out_chunks: list[bytes] = []
    err_chunks: list[bytes] = []

    def pump(stream, sink, cb):
        buf = b""
        while True:
            chunk = stream.read1(4096) if hasattr(stream, "read1") else stream.read(4096)
            if not chunk:
                break
            sink.append(chunk)
            if cb is not None:
                buf += chunk
                parts = re.split(rb"[\r\n]", buf)
                buf = parts.pop()
                for line in parts:
                    if line:
                        try:
                            cb(line.decode(errors="replace"))
                        except Exception:  # noqa: BLE001 - progress must not break the run
                            pass

    t_out = threading.Thread(target=pump, args=(proc.stdout, out_chunks, None), daemon=True)
    t_err = threading.Thread(target=pump, args=(proc.stderr, err_chunks, on_stderr), daemon=True)
    t_out.start()
    t_err.start()
    interrupted = False
    sent = None
    try:
        while proc.poll() is None:
            time.sleep(0.02)
            if cancel is not None and cancel.is_set() and sent is None:
                interrupted = True
                sent = time.monotonic()
                proc.send_signal(signal.SIGINT)
            if sent is not None and time.monotonic() - sent > 3.0:
                proc.kill()
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    t_out.join(2)
    t_err.join(2)
    return (
        proc.returncode,
        b"".join(out_chunks).decode(errors="replace"),
        b"".join(err_chunks).decode(errors="replace"),
        interrupted,
    )


# ---------------------------------------------------------------------- fio
def parse_fio_json(text: str, op: str) -> dict:
    """The job's read or write section of fio's JSON (text may carry notes before the JSON)."""
    start = text.find("{")
    if start < 0:
        raise ProbeError("fio printed no JSON: " + text.strip()[-300:])
    data = json.loads(text[start:])
    job = data["jobs"][0]
    sect = dict(job["read" if op == "read" else "write"])
    sect["_job"] = job
    sect["_version"] = data.get("fio version", "")
    return sect


def run_fio(
    filename: str,
    *,
    op: str,
    pattern: str,
    bs: int,
    qd: int,
    size: int,
    runtime: float | None,
    ramp: float,
    direct: bool,
    invalidate: bool = True,
    fsync_end: bool = False,
    cancel=None,
    progress=None,
    ioengine: str | None = None,
    progress_key: str = "read_bytes_per_s",
    threads: int = 1,
) -> JobOutput:
    fio = fio_path()
    if ioengine is None:
        ioengine = "io_uring" if uring_setup.available()[0] else "libaio"
    rw = {
        ("read", "rand"): "randread",
        ("read", "seq"): "read",
        ("write", "rand"): "randwrite",
        ("write", "seq"): "write",
    }[(op, pattern)]
    logdir = tempfile.mkdtemp(prefix="nbbench-fio-")
    try:
        argv = [
            fio,
            "--name=nbbench",
            f"--filename={filename}",
            f"--rw={rw}",
            f"--bs={bs}",
            f"--iodepth={qd}",
            f"--ioengine={ioengine}",
            f"--direct={1 if direct else 0}",
            f"--size={size}",
            f"--invalidate={1 if invalidate else 0}",
            "--output-format=json",
            "--lat_percentiles=1",
            "--clat_percentiles=0",
            "--percentile_list=" + ":".join(f"{p:g}" for p in PERCENTILES),
            f"--write_bw_log={os.path.join(logdir, 'nb')}",
            "--log_avg_msec=500",
            "--thread",
            f"--numjobs={threads}",
            "--group_reporting",
            "--randrepeat=0",
        ]
        if op == "read":
            argv.append("--readonly")
        if runtime is not None:
            argv += ["--time_based", f"--runtime={runtime:g}s"]
            if ramp:
                argv.append(f"--ramp_time={ramp:g}s")
        if fsync_end:
            argv.append("--end_fsync=1")
        t0 = time.monotonic()
        total = (ramp + runtime) if runtime is not None else None
        stop = threading.Event()

        def ticker():
            while not stop.wait(0.25):
                if total:
                    call_progress(progress, min(1.0, (time.monotonic() - t0) / total), None)
                else:
                    call_progress(progress, None, None)

        tick = threading.Thread(target=ticker, daemon=True)
        tick.start()
        try:
            rc, out, err, interrupted = _run(argv, cancel, env={**os.environ, "LC_ALL": "C"})
        finally:
            stop.set()
        if rc != 0 and not interrupted:
            msg = (err.strip() or out.strip())[-400:]
            raise ProbeError(f"fio failed (exit {rc}): {msg}")
        try:
            sect = parse_fio_json(out, op)
        except (ValueError, KeyError, ProbeError):
            if interrupted:
                return JobOutput(io_path=f"fio {ioengine}", interrupted=True)
            raise
        res = JobOutput(io_path=f"fio {ioengine} ({sect['_version']})", interrupted=interrupted)
        res.bytes = int(sect["io_bytes"])
        res.ios = int(sect.get("total_ios") or round(res.bytes / bs))
        res.elapsed_s = float(sect["runtime"]) / 1e3
        if res.elapsed_s > 0 and sect.get("bw_bytes"):
            # fio's runtime is in whole ms; its bw_bytes is the precise figure
            res.elapsed_s = res.bytes / float(sect["bw_bytes"])
        lat = sect.get("lat_ns", {})
        m = {
            "lat_mean_ns": float(lat.get("mean", "nan")),
            "lat_stddev_ns": float(lat.get("stddev", "nan")),
            "lat_min_ns": float(lat.get("min", "nan")),
            "lat_max_ns": float(lat.get("max", "nan")),
        }
        pct = lat.get("percentile", {})
        for p in PERCENTILES:
            key = f"{p:.6f}"
            m[percentile_key(p)] = float(pct[key]) if key in pct else float("nan")
        res.extra["lat_metrics"] = m
        depth = sect["_job"].get("iodepth_level", {})
        res.qd_max = qd
        res.qd_mean = float(qd)
        res.extra["fio_iodepth_level"] = depth
        res.extra["fio_argv"] = argv
        res.windows = _fio_bw_log(logdir, bs)
        call_progress(progress, None if interrupted else 1.0, {progress_key: res.bytes_per_s})
        return res
    finally:
        shutil.rmtree(logdir, ignore_errors=True)


def _fio_bw_log(logdir: str, bs: int) -> list:
    series: dict[int, float] = {}
    for name in sorted(os.listdir(logdir)):
        if "_bw" not in name:
            continue
        with open(os.path.join(logdir, name)) as f:
            for line in f:
                parts = [p.strip() for p in line.split(",")]
                if len(parts) < 2:
                    continue
                try:
                    t_ms, kib = int(parts[0]), float(parts[1])
                except ValueError:
                    continue
                t = int(round(t_ms / 500.0)) * 500
                series[t] = series.get(t, 0.0) + kib * 1024  # numjobs > 1: sum the jobs
    return [[t / 1e3, v, v / bs] for t, v in sorted(series.items())]


# ----------------------------------------------------------------------- dd
_DD_RE = re.compile(r"^(\d+) bytes\b.*copied, ([0-9.]+(?:e[-+]?\d+)?) s")


def parse_dd_summary(text: str) -> tuple[int, float] | None:
    """(bytes, seconds) of the last ``N bytes (…) copied, T s, …`` line of GNU dd's stderr."""
    last = None
    for line in re.split(r"[\r\n]", text):
        m = _DD_RE.match(line.strip())
        if m:
            last = (int(m.group(1)), float(m.group(2)))
    return last


def run_dd(
    *,
    src: str,
    dst: str,
    bs: int,
    count: int,
    direct: bool,
    op: str,
    fsync_end: bool,
    cancel=None,
    progress=None,
    progress_key: str = "read_bytes_per_s",
) -> JobOutput:
    """One dd pass: ``op='write'`` copies /dev/zero into ``dst`` (our temp file), ``op='read'``
    copies ``src`` to /dev/null."""
    dd = dd_path()
    argv = [dd, f"if={src}", f"of={dst}", f"bs={bs}", f"count={count}", "status=progress"]
    if op == "write":
        conv = ["notrunc"] + (["fdatasync"] if fsync_end else [])
        argv.append("conv=" + ",".join(conv))
        if direct:
            argv.append("oflag=direct")
    elif direct:
        argv.append("iflag=direct")
    total = bs * count
    points: list[tuple[float, int]] = []

    def on_line(line: str):
        m = _DD_RE.match(line.strip())
        if m:
            b, t = int(m.group(1)), float(m.group(2))
            points.append((t, b))
            call_progress(
                progress,
                b / total if total else None,
                {progress_key: b / t if t > 0 else None, "done": b, "total": total or None, "unit": "bytes"},
            )

    rc, _out, err, interrupted = _run(argv, cancel, on_stderr=on_line, env={**os.environ, "LC_ALL": "C"})
    summary = parse_dd_summary(err)
    if rc != 0 and not interrupted:
        raise ProbeError(f"dd failed (exit {rc}): {err.strip()[-300:]}")
    res = JobOutput(io_path="dd (coreutils)", interrupted=interrupted)
    res.extra["dd_argv"] = argv
    if summary is None:
        if interrupted:
            return res
        raise ProbeError(f"cannot read dd's summary: {err.strip()[-300:]}")
    res.bytes, res.elapsed_s = summary
    res.ios = res.bytes // bs
    res.qd_max = 1
    res.qd_mean = 1.0
    prev_t, prev_b = 0.0, 0
    for t, b in points[:-1] if len(points) > 1 else []:
        if t > prev_t:
            res.windows.append([round(t, 3), (b - prev_b) / (t - prev_t), (b - prev_b) / bs / (t - prev_t)])
            prev_t, prev_b = t, b
    res.extra["series_interval"] = "dd status=progress (about 1 s)"
    call_progress(progress, None if interrupted else 1.0, {progress_key: res.bytes_per_s})
    return res
