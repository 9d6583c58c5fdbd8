"""``--jobs N``: N independent I/O loops in N processes, as fio's ``numjobs``.

One Python thread submits and reaps at about 1-2 µs of CPU per I/O; a device that serves
millions of IOPS needs several cores, and threads of one interpreter share one GIL.  So
each job is a small worker process (``python -m nbbench.probes._engines.multijob``: the
standard library, numpy and the engine, never torch) that gets the already open file
descriptor (``pass_fds``; a read job reopens it through ``/proc/self/fd`` for an open file
description of its own, as each of fio's jobs opens the file), its own ring or QD1 loop and buffers,
and its own part of the file for a size-based (sequential) job, or the shared region with
its own seed for a time-based random one, as fio's jobs on one file.

Each worker runs in a session of its own, as fio's job processes do (fio calls ``setsid``):
where the kernel groups the CPU by session (``sched_autogroup``, on by default on many
distributions) every job then has its own CPU share, as fio's have — in the same session
two jobs would share one job's share on a busy machine (measured here under load: 0.5 of
``fio --numjobs=2``).  A terminal's Ctrl-C reaches the parent, which stops them.

The parent starts every worker, waits until each has said it is ready, says "go" to all,
and forwards job 0's progress (times N).  Cancel: "stop" to every worker; a worker that
ends without its result (killed) makes the parent stop the others and fail the run with a
sentence.  Workers die with their parent (``PR_SET_PDEATHSIG``); the builtin engine's temp
file has no name left by then (the Session unlinks it once its descriptors are open), so
a killed job or parent leaves nothing behind.

The merged output sums I/Os and bytes over the jobs, merges their histograms exactly,
keeps one row per job (``extra["jobs"]``) and the CPU time of every job's I/O thread.
"""

from __future__ import annotations

import dataclasses
import json
import os
import queue
import subprocess
import sys
import threading

from ...results import ProbeError
from ...results.hist import LatencyHistogram
from .builtin import run_builtin, run_threads_of
from .job import JobOutput, JobSpec

__all__ = ["run_jobs", "merge_outputs", "JOBS_MAX"]

JOBS_MAX = 256
_WIRE = [f.name for f in dataclasses.fields(JobSpec) if f.name not in ("cancel", "progress")]


def job_specs(spec: JobSpec, jobs: int) -> list[JobSpec]:
    """The ``jobs`` specs: size based or sequential, each its own contiguous part of the region
    (whole blocks; the last takes the rest); time-based random, all the region, seeds apart."""
    out = []
    bs = spec.bs
    split = spec.total is not None or spec.pattern == "seq"
    blocks = (spec.total if spec.total is not None else spec.region) // bs
    per = blocks // jobs
    for i in range(jobs):
        if split:
            n = per if i < jobs - 1 else blocks - per * (jobs - 1)
            part = {"base": spec.base + i * per * bs, "region": n * bs}
            if spec.total is not None:
                part["total"] = n * bs
        else:
            part = {}
        out.append(dataclasses.replace(spec, seed=spec.seed + i, **part))
    return out


def _encode(out: JobOutput) -> dict:
    return {
        "ios": out.ios,
        "bytes": out.bytes,
        "elapsed_s": out.elapsed_s,
        "hist": out.hist.to_state(),
        "windows": out.windows,
        "qd_max": out.qd_max,
        "qd_mean": out.qd_mean,
        "io_path": out.io_path,
        "interrupted": out.interrupted,
        "extra": out.extra,
    }


def _decode(d: dict) -> JobOutput:

    return JobOutput(
        ios=d["ios"],
        bytes=d["bytes"],
        elapsed_s=d["elapsed_s"],
        hist=LatencyHistogram.from_state(d["hist"]),
        windows=d["windows"],
        qd_max=d["qd_max"],
        qd_mean=d["qd_mean"],
        io_path=d["io_path"],
        interrupted=d["interrupted"],
        extra=d["extra"],
    )


def merge_outputs(outs: list[JobOutput], io_path: str) -> JobOutput:
    """One output for all jobs: sums, the merged histogram, the per-job rows, the CPU."""
    m = JobOutput(io_path=io_path)
    rows = []
    cpu_ns = 0.0
    for i, o in enumerate(outs):
        m.ios += o.ios
        m.bytes += o.bytes
        m.hist.merge(o.hist)
        m.interrupted |= o.interrupted
        m.qd_max += o.qd_max
        m.qd_mean += o.qd_mean
        per = o.extra.get("engine_cpu_ns_per_io")
        cpu_ns += (per or 0.0) * o.ios
        rows.append(
            {
                "job": i,
                "ios": o.ios,
                "bytes": o.bytes,
                "elapsed_s": o.elapsed_s,
                "iops": o.iops,
                "bytes_per_s": o.bytes_per_s,
                "lat_mean_ns": o.hist.mean,
                "lat_p99_ns": o.hist.percentiles((99.0,))[99.0] if o.hist.n else None,
                "engine_cpu_pct": o.extra.get("engine_cpu_pct"),
                "engine_cpu_ns_per_io": per,
            }
        )
    m.elapsed_s = max(o.elapsed_s for o in outs)
    m.extra["jobs"] = rows
    busy = [r["engine_cpu_pct"] for r in rows if r["engine_cpu_pct"] is not None]
    if busy and m.ios:
        m.extra.update(engine_cpu_pct=max(busy), engine_cpu_ns_per_io=cpu_ns / m.ios, engine_cpu_pct_sum=sum(busy))
    for k in ("io_loop", "uring_unavailable", "huge_fraction", "buffer_segments", "buffers_used"):
        if k in outs[0].extra:
            m.extra[k] = outs[0].extra[k]
    shorts = [o.extra["short_io"] for o in outs if "short_io" in o.extra]
    if shorts:
        m.extra["short_io"] = shorts[0]
    m.add_timeline(outs)
    return m


def _env() -> dict:
    """The workers import this very nbbench (also one run from a source tree)."""
    env = dict(os.environ)
    # one thread per job: a BLAS pool's spinning threads would take the CPU the I/O loop needs
    for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(k, "1")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def run_jobs(spec: JobSpec, jobs: int) -> JobOutput:
    """``jobs`` worker processes, each running ``spec`` (its part, see :func:`job_specs`) with the
    builtin engine (``spec.threads`` threads each); outputs merged (:func:`merge_outputs`)."""

    specs = job_specs(spec, jobs)
    procs: list[subprocess.Popen] = []
    msgs: queue.Queue = queue.Queue()
    outs: list = [None] * jobs
    env = _env()

    def send(p, line: str) -> None:
        try:
            p.stdin.write(line + "\n")
            p.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass

    def reader(i: int, p) -> None:
        for line in p.stdout:
            try:
                msgs.put((i, json.loads(line)))
            except ValueError:
                continue
        msgs.put((i, None))

    try:
        for i, s in enumerate(specs):
            p = subprocess.Popen(
                [sys.executable, "-m", "nbbench.probes._engines.multijob"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                pass_fds=(spec.fd,),
                env=env,
                text=True,
                bufsize=1,
                start_new_session=True,
            )
            procs.append(p)
            wire = {k: getattr(s, k) for k in _WIRE}
            wire["report"] = i == 0 and spec.progress is not None
            send(p, json.dumps(wire))
            threading.Thread(target=reader, args=(i, p), daemon=True, name=f"nbbench-job-{i}").start()
        ready = eof = 0
        failure = None
        stopped = False
        while True:
            try:
                i, msg = msgs.get(timeout=0.05)
            except queue.Empty:
                if spec.cancel is not None and spec.cancel.is_set() and not stopped:
                    stopped = True
                    for p in procs:
                        send(p, "stop")
                continue
            if msg is None:
                eof += 1
                rc = procs[i].wait()
                if outs[i] is None and failure is None and not (stopped and rc == 0):
                    why = f"killed by signal {-rc}" if rc < 0 else f"exit status {rc}"
                    failure = ProbeError(
                        f"job {i + 1} of {jobs} ended without its result ({why}); the other jobs were stopped"
                    )
                    for p in procs:
                        send(p, "stop")
                if eof == jobs:
                    break
                continue
            if "ready" in msg:
                ready += 1
                if ready == jobs:  # every job set up: start them together
                    for p in procs:
                        send(p, "stop" if stopped else "go")
            elif "p" in msg and spec.progress is not None:
                frac, metrics = msg["p"]
                if metrics:  # one job's progress stands for all: its rates and counts times the jobs
                    metrics = {
                        k: (v * jobs if isinstance(v, (int, float)) and not isinstance(v, bool) else v)
                        for k, v in metrics.items()
                    }
                spec.progress(frac, metrics)
            elif "out" in msg:
                outs[i] = _decode(msg["out"])
            elif "error" in msg and failure is None:
                e = msg["error"]
                failure = (
                    OSError(e["errno"], e["message"])
                    if e.get("errno")
                    else ProbeError(f"job {i + 1} of {jobs} failed: {e['message']}")
                )
                for p in procs:
                    send(p, "stop")
        if failure is not None:
            raise failure
    finally:
        for p in procs:
            send(p, "stop")
            try:
                p.stdin.close()
            except OSError:
                pass
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    got = [o for o in outs if o is not None]
    if not got:  # cancelled before the jobs started
        return JobOutput(io_path=f"{jobs} processes", interrupted=True)
    merged = merge_outputs(got, f"{jobs} processes x {got[0].io_path}")
    merged.interrupted |= len(got) < jobs
    return merged


# ------------------------------------------------------------------ the worker
def _die_with_parent() -> None:
    try:
        import ctypes
        import signal

        ctypes.CDLL(None).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _own_description(fd: int, pattern: str) -> int:
    """A read job's own open file description of the file behind ``fd`` (as each of fio's jobs
    opens the file itself: no shared file position, readahead state or flags), through
    ``/proc/self/fd`` — which also reaches a temp file whose name is already gone; ``fd`` itself
    where that fails."""
    import fcntl

    try:
        direct = fcntl.fcntl(fd, fcntl.F_GETFL) & getattr(os, "O_DIRECT", 0)
        own = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | direct)
    except OSError:
        return fd
    if not direct and hasattr(os, "posix_fadvise"):  # the parent's advice was for its own description
        try:
            os.posix_fadvise(own, 0, 0, os.POSIX_FADV_RANDOM if pattern == "rand" else os.POSIX_FADV_SEQUENTIAL)
        except OSError:
            pass
    return own


def _worker() -> int:
    _die_with_parent()
    ppid = os.getppid()
    lock = threading.Lock()

    def put(obj) -> None:
        with lock:
            sys.stdout.write(json.dumps(obj) + "\n")
            sys.stdout.flush()

    wire = json.loads(sys.stdin.readline() or "null")
    if wire is None or os.getppid() != ppid:
        return 1
    report = wire.pop("report", False)
    spec = JobSpec(**wire)
    if spec.op == "read":
        spec.fd = _own_description(spec.fd, spec.pattern)
    spec.cancel = threading.Event()
    if report:
        spec.progress = lambda frac, metrics: put({"p": [frac, metrics]})

    put({"ready": os.getpid()})
    if (sys.stdin.readline() or "stop").strip() != "go":
        return 0

    def watch():  # "stop", or the parent gone (EOF): stop within the meter's 20 ms
        for line in sys.stdin:
            if line.strip() == "stop":
                break
        spec.cancel.set()

    threading.Thread(target=watch, daemon=True).start()
    try:
        out = run_threads_of(spec, spec.threads, run_builtin)
    except OSError as exc:
        put({"error": {"errno": exc.errno, "message": exc.strerror or str(exc)}})
        return 1
    except Exception as exc:  # noqa: BLE001 - said to the parent, which fails the run with it
        put({"error": {"errno": None, "message": f"{type(exc).__name__}: {exc}"}})
        return 1
    put({"out": _encode(out)})
    return 0


if __name__ == "__main__":
    sys.exit(_worker())
