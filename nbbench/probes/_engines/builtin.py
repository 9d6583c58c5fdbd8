"""The builtin engine: one I/O in flight in the calling thread at QD1 (:mod:`.sync`); deeper
queues on io_uring (:mod:`.uring`, split over rings of 32 beyond QD32), else a thread pool;
``T`` threads of a QnTm test run the job ``T`` times in parallel, outputs merged.
"""

from __future__ import annotations

import os

from . import sync, uring, uring_setup
from .job import JobOutput, JobSpec

__all__ = ["run_builtin", "ring_count", "run_threads_of"]


def run_builtin(spec: JobSpec, path: str | None = None) -> JobOutput:
    """The builtin engine: QD1 sync loop; deeper queues io_uring, else threads."""

    forced = spec.force
    if forced == "threads":
        return sync.run_threads(spec)
    if forced == "uring":
        return uring.run_uring(spec)
    if forced == "sync" or (spec.qd <= 1 and spec.threads <= 1):
        return sync.run_sync(spec)
    ok, why = uring_setup.available()
    if ok:
        rings = ring_count(spec.qd)
        if rings > 1:
            # queues deeper than 32 are split over rings of 32, one thread each: the device still
            # sees spec.qd in flight, and one thread's Python work overlaps another's time in the
            # kernel.  At QD32 one ring measured best and steadiest (0.97 of fio in two full
            # bench/vs_fio.py runs, against 0.93-0.94 for 2 x 16; see the README's Performance section)
            import dataclasses

            sub = dataclasses.replace(spec, qd=spec.qd // rings)
            out = run_threads_of(sub, rings, uring.run_uring)
            # "io_uring (ctypes syscalls, <loop>, 8 in flight, <extras>)"
            #   -> "... 4 rings x 8 in flight = 32, a thread each, ..."
            lead, _, extras = out.io_path.partition(f", {spec.qd // rings} in flight")
            lead = lead.split(" x ", 1)[-1] if lead.startswith(f"{rings} threads x ") else lead
            out.io_path = f"{lead}, {rings} rings x {spec.qd // rings} in flight = {spec.qd}, a thread each{extras}"
            return out
        return uring.run_uring(spec)
    out = sync.run_threads(spec)
    out.extra["uring_unavailable"] = why
    return out


def ring_count(qd: int) -> int:
    env = os.environ.get("NBBENCH_URING_RINGS")
    if env:
        n = max(1, int(env))
    else:
        n = min(4, qd // 32) if qd >= 64 else 1
    while n > 1 and qd % n:
        n -= 1
    return max(1, n)


def run_threads_of(spec: JobSpec, nthreads: int, runner) -> JobOutput:
    """``nthreads`` workers each running ``runner(spec)`` (T in QnTm); outputs merged."""
    if nthreads <= 1:
        return runner(spec)
    import dataclasses
    import threading

    outs: list = [None] * nthreads
    errs: list = []
    outer = spec.progress

    def prog(frac, metrics):  # worker 0 reports for all: its rates times the workers
        if metrics:
            metrics = {k: (v * nthreads if isinstance(v, (int, float)) else v) for k, v in metrics.items()}
        outer(frac, metrics)

    def work(i):
        try:
            mine = prog if i == 0 and outer is not None else None
            outs[i] = runner(dataclasses.replace(spec, seed=spec.seed + i, progress=mine))
        except BaseException as exc:  # noqa: BLE001
            errs.append(exc)

    ts = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(nthreads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errs:
        raise errs[0]
    merged = JobOutput(io_path=f"{nthreads} threads x {outs[0].io_path}")
    for o in outs:
        merged.ios += o.ios
        merged.bytes += o.bytes
        merged.hist.merge(o.hist)
        merged.interrupted |= o.interrupted
        merged.qd_max += o.qd_max
        merged.qd_mean += o.qd_mean
    merged.elapsed_s = max(o.elapsed_s for o in outs)
    busy = [o for o in outs if "engine_cpu_pct" in o.extra]
    if busy:  # the busiest thread decides whether the CPU was the limit
        top = max(busy, key=lambda o: o.extra["engine_cpu_pct"])
        merged.extra.update(
            engine_cpu_pct=top.extra["engine_cpu_pct"], engine_cpu_ns_per_io=top.extra["engine_cpu_ns_per_io"]
        )
    merged.add_timeline(outs)
    return merged
