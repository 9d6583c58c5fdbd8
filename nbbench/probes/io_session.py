"""The plumbing shared by the storage probes: argument checks, the open target
(:class:`Session`: temp file or read-only fd, O_DIRECT decision and fallback, cache
preparation and the honesty warnings) and running a job on the builtin engine.
"""

from __future__ import annotations

import os
from typing import Any

from ..results import ProbeError
from ..units import format_bytes, parse_duration, parse_size
from ._engines.job import JobOutput, JobSpec
from .pathcheck import Target, direct_io_supported, open_read

ENGINES = ("builtin", "dd", "fio")


def _size(value, name: str) -> int:
    try:
        return parse_size(value)
    except ValueError as exc:
        raise ProbeError(f"{name}: {exc}") from None


def _duration(value, name: str) -> float:
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise ProbeError(f"{name}: {exc}") from None


def _check_engine(engine: str) -> str:
    engine = (engine or "builtin").lower()
    if engine not in ENGINES:
        raise ProbeError(f"unknown engine {engine!r}: choose from {', '.join(ENGINES)}")
    return engine


def _check_bs(bs: int) -> None:
    if bs < 512 or bs % 512:
        raise ProbeError(f"block size must be a multiple of 512 bytes, not {bs} (try 4k or 1M)")


class Session:
    """An open target: the fd(s) to use, cache mode and labels.  Removes its temp file."""

    def __init__(self, target: Target, direct_req, what: str, fill: int = 0, write: bool = False,
                 cancel=None, progress=None):
        self.target = target
        self.labels: dict[str, Any] = {}
        self.warnings: list[str] = []
        self.tmp = None
        self.path = target.path
        self.direct = False
        self.direct_fallback = None
        self.fd = -1  # for reads (O_DIRECT when direct)
        self.wfd = -1  # writable fd of our temp file
        self.region = target.size
        self._direct_req = direct_req
        self._what = what
        self._fill = fill
        self._write = write
        self._cancel = cancel
        self._progress = progress
        self.interrupted = False

    # ------------------------------------------------------------- opening
    def __enter__(self):
        try:
            self._open()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def _decide_direct(self, fd: int, write: bool) -> None:
        if self._direct_req is False:
            self.direct = False
            return
        ok, why = direct_io_supported(fd, write=write)
        if ok:
            self.direct = True
            return
        self.direct = False
        self.direct_fallback = why
        self.warnings.append(
            f"O_DIRECT is not available on {self.target.filesystem or 'this filesystem'} ({why}): measured "
            "buffered, with the page cache dropped by posix_fadvise(DONTNEED) before reads — numbers may "
            "include cache effects")

    def _open(self) -> None:
        t = self.target
        if t.kind == "dir":
            from .. import tempfiles

            self.tmp = tempfiles.create(t.path, self._what)
            self.path = self.tmp.path
            self.wfd = self.tmp.fd
            self._decide_direct(self.wfd, write=True)
            if self._fill:
                self._fill_file(self._fill)
            flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)
            self.fd = os.open(self.path, flags | (os.O_DIRECT if self.direct else 0))
            self.region = self._fill
        else:
            self.fd = open_read(t.path)
            self._decide_direct(self.fd, write=False)
            if self.direct:
                os.close(self.fd)
                self.fd = open_read(t.path, direct=True)

    def _fill_file(self, size: int) -> None:
        """Write ``size`` bytes of random data (not timed) so reads have real data to read."""
        from ._engines.sync import run_sync

        fd = self._write_fd()
        prog = None
        if self._progress is not None:
            outer = self._progress

            def prog(frac, metrics):
                outer(None if frac is None else 0.15 * frac, None)

        import math as _m

        bs = _m.gcd(size, 1 << 20)
        spec = JobSpec(fd=fd, op="write", pattern="seq", bs=bs, qd=1, region=size, total=size,
                       cancel=self._cancel, progress=prog, fsync_end=True, progress_key="write_bytes_per_s")
        try:
            out = run_sync(spec)
        finally:
            if fd != self.wfd:
                os.close(fd)
        if out.interrupted:
            self.interrupted = True

    def _write_fd(self) -> int:
        """A write fd on our temp file: O_DIRECT when direct, else the plain one."""
        if self.direct:
            return os.open(self.path, os.O_WRONLY | getattr(os, "O_CLOEXEC", 0) | os.O_DIRECT)
        return self.wfd

    def close(self) -> None:
        if self.fd >= 0:
            try:
                os.close(self.fd)
            except OSError:
                pass
            self.fd = -1
        if self.tmp is not None:
            self.tmp.remove()
            self.tmp = None

    # ------------------------------------------------------------- caches
    def prepare_read(self, region: int, warm: bool = False) -> str:
        """Set up the cache before a timed read; returns the cache label."""
        from ._engines import cache

        if self.direct:
            self.labels["cache_drop"] = "not needed (O_DIRECT)"
            return "direct"
        if warm:
            cache.preload(self.fd, region)
            self.labels["cache_drop"] = "none (preloaded: --warm)"
            frac = cache.resident_fraction(self.fd, region)
            if frac is not None and frac < 0.9:
                self.warnings.append(
                    f"only {frac * 100:.0f} % of the region stayed in the page cache; the run mixes cache and disk")
            return "buffered-warm"
        if self.wfd >= 0:
            os.fdatasync(self.wfd)
        ok, method = cache.drop_file(self.fd, 0, writable=False)
        frac = cache.resident_fraction(self.fd, region)
        if not ok or (frac is not None and frac > 0.5):
            self.labels["cache_drop"] = f"{method} (failed: {frac * 100:.0f} % still cached)" if frac is not None \
                else method
            self.warnings.append(
                "the page cache could not be emptied for this file (tmpfs or a similar memory filesystem): "
                "the reads came from memory")
            return "buffered-warm"
        self.labels["cache_drop"] = method + (" (mincore: 0 % cached)" if frac == 0 else "")
        return "buffered-cold"

    def buffered_warnings(self, region: int, cache_mode: str) -> None:
        from ._engines import cache

        if cache_mode == "direct":
            return
        ram = cache.memory_bytes()
        if ram and region < 2 * ram:
            self.warnings.append(
                f"the region ({format_bytes(region, binary=True)}) is smaller than twice the RAM "
                f"({format_bytes(ram, binary=True)}): the page cache will serve it — use --direct "
                "for the disk's own speed")

    def data_warnings(self, region: int, bs: int) -> None:
        from ._engines import cache

        if self.target.kind == "file":
            try:
                sp = cache.sparse_fraction(os.stat(self.target.path))
            except OSError:
                sp = 0.0
            if sp > 0.1:
                self.warnings.append(
                    f"{self.target.path} is sparse ({sp * 100:.0f} % holes): holes read as zeros without "
                    "touching the disk, so reads look faster than real data — test a file with real data")
                return
        if cache.looks_zero(self.fd, region, bs if bs % 4096 == 0 else 4096 * max(1, bs // 4096)):
            self.warnings.append(
                "the data read are all zeros: sparse or never-written blocks can be served without touching "
                "the disk, and some storage compresses zeros — test real data")

    def base_labels(self, engine: str, cache_mode: str) -> dict[str, Any]:
        lab = {"engine": engine, "cache": cache_mode}
        lab.update(self.labels)
        if self.direct_fallback:
            lab["direct_fallback"] = self.direct_fallback
        lab.update(self.target.labels())
        return lab


def _job_metrics(out: JobOutput, op: str) -> dict[str, Any]:
    m: dict[str, Any] = {f"{op}_bytes_per_s": out.bytes_per_s, "iops": out.iops}
    if out.hist.n:
        m.update(out.hist.metrics("lat"))
    elif "lat_metrics" in out.extra:
        m.update(out.extra["lat_metrics"])
    m["qd_reached"] = out.qd_max
    m["qd_mean"] = round(out.qd_mean, 2)
    m["runtime_s"] = out.elapsed_s
    m[f"{op}_total_bytes"] = out.bytes
    m["ios_count"] = out.ios
    return m


def _series(out: JobOutput, op: str) -> dict[str, list]:
    return {"t_s": [w[0] for w in out.windows], f"{op}_bytes_per_s": [w[1] for w in out.windows],
            "iops": [w[2] for w in out.windows]}


def _builtin_job(spec: JobSpec, path: str | None = None) -> JobOutput:
    """The builtin engine: QD1 sync loop; deeper queues io_uring, else threads."""
    from ._engines import sync, uring

    forced = spec.force
    if forced == "threads":
        return sync.run_threads(spec)
    if forced == "uring":
        return uring.run_uring(spec)
    if forced == "sync" or (spec.qd <= 1 and spec.threads <= 1):
        return sync.run_sync(spec)
    ok, why = uring.available()
    if ok:
        rings = _ring_count(spec.qd)
        if rings > 1:
            # queues deeper than 32 are split over rings of 32, one thread each: the device still
            # sees spec.qd in flight, and one thread's Python work overlaps another's time in the
            # kernel.  At QD32 one ring measured best and steadiest (0.97 of fio in two full
            # bench/vs_fio.py runs, against 0.93-0.94 for 2 x 16; see the README's Performance section)
            import dataclasses

            sub = dataclasses.replace(spec, qd=spec.qd // rings)
            out = _run_threads_of(sub, rings, uring.run_uring)
            # "io_uring (ctypes syscalls, <loop>, 8 in flight, <extras>)" -> "... 4 rings x 8 in flight = 32, a thread each, ..."
            lead, _, extras = out.io_path.partition(f", {spec.qd // rings} in flight")
            lead = lead.split(" x ", 1)[-1] if lead.startswith(f"{rings} threads x ") else lead
            out.io_path = f"{lead}, {rings} rings x {spec.qd // rings} in flight = {spec.qd}, a thread each{extras}"
            return out
        return uring.run_uring(spec)
    out = sync.run_threads(spec)
    out.extra["uring_unavailable"] = why
    return out


def _ring_count(qd: int) -> int:
    env = os.environ.get("NBBENCH_URING_RINGS")
    if env:
        n = max(1, int(env))
    else:
        n = min(4, qd // 32) if qd >= 64 else 1
    while n > 1 and qd % n:
        n -= 1
    return max(1, n)


def _run_threads_of(spec: JobSpec, nthreads: int, runner) -> JobOutput:
    """``nthreads`` workers each running ``runner(spec)`` (T in QnTm); outputs merged."""
    if nthreads <= 1:
        return runner(spec)
    import dataclasses
    import threading

    outs: list = [None] * nthreads
    errs: list = []
    prog = None
    if spec.progress is not None:
        outer = spec.progress

        def prog(frac, metrics):  # worker 0 reports for all: its rates times the workers
            if metrics:
                metrics = {k: (v * nthreads if isinstance(v, (int, float)) else v) for k, v in metrics.items()}
            outer(frac, metrics)

    def work(i):
        try:
            outs[i] = runner(dataclasses.replace(spec, seed=spec.seed + i, progress=prog if i == 0 else None))
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
    n = min(len(o.windows) for o in outs)
    merged.windows = [[outs[0].windows[i][0], sum(o.windows[i][1] for o in outs), sum(o.windows[i][2] for o in outs)]
                      for i in range(n)]
    return merged


def _stage_progress(progress, lo: float, hi: float):
    if progress is None:
        return None

    def p(frac, metrics):
        progress(None if frac is None else lo + (hi - lo) * frac, metrics)

    return p


def _os_error(exc: OSError, path: str, direct: bool) -> ProbeError:
    import errno as _e

    name = _e.errorcode.get(exc.errno, str(exc.errno))
    hint = ""
    if exc.errno == _e.EINVAL and direct:
        hint = " — O_DIRECT needs a block size that is a multiple of the device's sector (try --bs 4k or --buffered)"
    elif exc.errno == _e.ENOSPC:
        hint = " — the disk filled up"
    return ProbeError(f"I/O on {path} failed: {exc.strerror} ({name}){hint}")
