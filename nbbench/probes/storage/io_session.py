"""The plumbing shared by the storage probes: argument checks, the open target
(:class:`Session` over a :class:`~nbbench.probes.storage.target.StorageTarget`: temp file or
read-only fd, O_DIRECT as the target decided, cache preparation and the honesty
warnings) and running one job on it (:func:`run_job`, :func:`fill_job_result`,
:func:`short_transfer`: a job that moved less than a block).

In a directory the Session first removes the temp files killed runs of this host left
there (:func:`nbbench.tempsweep.sweep_stale`, said in the result), creates its own, and
— for the builtin engine, which needs only descriptors — opens every descriptor it
needs and unlinks the name at once, so not even a SIGKILL can leave the file behind.
"""

from __future__ import annotations

import os
from typing import Any

from ...results import ProbeError, Result
from ...units import format_bytes, parse_duration, parse_size
from .._engines.builtin import run_builtin, run_threads_of
from .._engines.job import JobOutput, JobSpec
from .io_cpu import CPU_BOUND_PCT, cpu_bound_warning  # noqa: F401  (re-exported)
from .target import StorageTarget, open_read

ENGINES = ("builtin", "dd", "fio")
#: the file a read probe writes first in a directory, unless a size is given
DEFAULT_READ_FILE = 1 << 30


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
    """An open target: the fd(s) to use, cache mode and labels.  Removes its temp file.

    Whether O_DIRECT is used is the target's decision (:meth:`StorageTarget.decide_direct`),
    taken on the fd opened here: :attr:`direct`, :attr:`direct_fallback`.
    """

    def __init__(self, target: StorageTarget, direct_req, what: str, fill: int = 0, write: bool = False,
                 cancel=None, progress=None, engine: str = "builtin", keep_name: bool = False):
        self.target = target
        self.labels: dict[str, Any] = {}
        self.warnings: list[str] = []
        self.tmp = None
        self.path = target.path
        target.direct, target.direct_fallback = False, None
        self.fd = -1  # for reads (O_DIRECT when direct)
        self.wfd = -1  # writable fd of our temp file
        self.dwfd = -1  # its O_DIRECT write fd, when direct
        # descriptors only: the name goes as soon as they are open — unless others open it by name
        # (``keep_name``: the one file every rank reads; rank 0 removes it at the end)
        self.unlink = engine == "builtin" and not keep_name
        self.region = target.size
        self._direct_req = direct_req
        self._what = what
        self._fill = fill
        self._write = write
        self._cancel = cancel
        self._progress = progress
        self.interrupted = False
        if target.memory:
            self.warnings.append(target.memory_warning())

    @property
    def direct(self) -> bool:
        return self.target.direct

    @property
    def direct_fallback(self) -> str | None:
        return self.target.direct_fallback

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
        warning = self.target.decide_direct(fd, write, self._direct_req)
        if warning:
            self.warnings.append(warning)

    def _open(self) -> None:
        t = self.target
        if t.kind == "dir":
            from ... import tempfiles

            self._sweep(t.path)
            self.tmp = tempfiles.create(t.path, self._what)
            self.path = self.tmp.path
            self.wfd = self.tmp.fd
            self._decide_direct(self.wfd, write=True)
            cloexec = getattr(os, "O_CLOEXEC", 0)
            self.fd = os.open(self.path, os.O_RDONLY | cloexec | (os.O_DIRECT if self.direct else 0))
            if self.direct:
                self.dwfd = os.open(self.path, os.O_WRONLY | cloexec | os.O_DIRECT)
            if self.unlink:
                self.tmp.unlink()
            if self._fill:
                self._fill_file(self._fill)
            self.region = self._fill
        else:
            self.fd = open_read(t.path)
            self._decide_direct(self.fd, write=False)
            if self.direct:
                os.close(self.fd)
                self.fd = open_read(t.path, direct=True)

    def _sweep(self, directory: str) -> None:
        from ... import tempsweep

        n, nbytes = tempsweep.sweep_stale(directory)
        if n:
            files = "file" if n == 1 else "files"
            self.labels["stale_temp_removed"] = f"{n} {files}, {format_bytes(nbytes, binary=True)}"
            self.warnings.append(
                f"removed {n} stale nbbench temporary {files} ({format_bytes(nbytes, binary=True)}) from "
                f"{directory}: left by runs on this host whose process was killed")

    def _fill_file(self, size: int) -> None:
        """Write ``size`` bytes of random data (not timed) so reads have real data to read."""
        from .._engines.sync import run_sync

        fd = self._write_fd()
        outer = self._progress

        def prog(frac, metrics):
            outer(None if frac is None else 0.15 * frac, None)

        import math as _m

        bs = _m.gcd(size, 1 << 20)
        spec = JobSpec(fd=fd, op="write", pattern="seq", bs=bs, qd=1, region=size, total=size, cancel=self._cancel,
                       progress=prog if outer is not None else None, fsync_end=True, progress_key="write_bytes_per_s")
        out = run_sync(spec)
        if out.interrupted:
            self.interrupted = True

    def _write_fd(self) -> int:
        """The write fd on our temp file (the Session's; it closes it): O_DIRECT when direct."""
        return self.dwfd if self.direct and self.dwfd >= 0 else self.wfd

    def close(self) -> None:
        for name in ("fd", "dwfd"):
            fd = getattr(self, name)
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
                setattr(self, name, -1)
        if self.tmp is not None:
            self.tmp.remove()
            self.tmp = None

    # ------------------------------------------------------------- caches
    def prepare_read(self, region: int, warm: bool = False) -> str:
        """Set up the cache before a timed read; returns the cache label."""
        from .._engines import cache

        if self.target.memory:
            self.labels["cache_drop"] = "none (the data live in RAM)"
            return "memory"
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
        from .._engines import cache

        if cache_mode in ("direct", "memory") or self.target.memory:
            return
        ram = cache.memory_bytes()
        if ram and region < 2 * ram:
            self.warnings.append(
                f"the region ({format_bytes(region, binary=True)}) is smaller than twice the RAM "
                f"({format_bytes(ram, binary=True)}): the page cache will serve it — use --direct "
                "for the disk's own speed")

    def data_warnings(self, region: int, bs: int) -> None:
        from .._engines import cache

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
        lab = {"engine": engine, "cache": "memory" if self.target.memory else cache_mode}
        lab.update(self.labels)
        if self.direct_fallback:
            lab["direct_fallback"] = self.direct_fallback
        lab.update(self.target.labels())
        return lab


# ---------------------------------------------------------------- jobs
def check_jobs(jobs, threads=1) -> tuple[int, str | None]:
    """``(jobs, warning)``: ``jobs`` (1-256), or the deprecated ``threads`` where only that was given
    (the warning says so)."""
    from .. import limits

    jobs, threads = limits.check("jobs", jobs, limits.JOBS), limits.check("threads", threads, limits.JOBS)
    if threads > 1:
        return max(jobs, threads), (f"threads={threads} is deprecated: an alias of jobs now (independent "
                                    "processes, as fio's numjobs; threads of one interpreter share its lock)")
    return jobs, None


def run_job(s: Session, engine: str, *, op: str, pattern: str, bs: int, qd: int, threads: int, region: int,
            runtime: float, ramp: float, cache_mode: str, cancel, progress, seed: int = 0,
            builtin_path: str | None = None, buffers: str = "pages", jobs: int = 1) -> JobOutput:
    """One job on the session's file with ``engine`` (builtin or fio; dd runs sequential transfers only);
    ``jobs`` > 1: that many independent copies in as many processes (:mod:`._engines.multijob`)."""
    key = f"{op}_bytes_per_s"
    if engine == "builtin":
        fd = s.fd if op == "read" else s._write_fd()
        if not s.direct and hasattr(os, "posix_fadvise"):
            # as fio's fadvise_hint: no readahead for random I/O, more for sequential
            advice = os.POSIX_FADV_RANDOM if pattern == "rand" else os.POSIX_FADV_SEQUENTIAL
            try:
                os.posix_fadvise(fd, 0, 0, advice)
            except OSError:
                pass
        spec = JobSpec(fd=fd, op=op, pattern=pattern, bs=bs, qd=qd, region=region, runtime=runtime,
                       ramp=ramp, cancel=cancel, progress=progress, progress_key=key, seed=seed,
                       threads=threads, force=builtin_path, buffers=buffers)
        if jobs > 1:
            from .._engines.multijob import run_jobs

            return run_jobs(spec, jobs)
        return run_threads_of(spec, threads, run_builtin)
    if engine == "dd":
        raise ProbeError("the dd engine does sequential dd transfers only; use --engine builtin or fio here")
    from .._engines.extern import run_fio

    return run_fio(s.path, op=op, pattern=pattern, bs=bs, qd=qd, size=region, runtime=runtime, ramp=ramp,
                   direct=s.direct, invalidate=(cache_mode == "buffered-cold"), cancel=cancel,
                   progress=progress, progress_key=key, threads=threads * jobs)


def fill_job_result(res: Result, s: Session, out: JobOutput, engine: str, cache_mode: str, op: str,
                    region: int, bs: int) -> str | None:
    """A job's figures, labels, series and warnings into ``res``; the reason to fail it when not one
    full block was transferred (:func:`short_transfer`)."""
    reason, warning = short_transfer(out, bs, s.path, op)
    if op == "read":
        if reason is None:  # nothing read: no data to judge
            s.data_warnings(region, bs)
        s.buffered_warnings(region, cache_mode)
    res.labels = s.base_labels(engine, cache_mode)
    res.labels["io_path"] = out.io_path
    res.labels["rw"] = ("rand" if res.params.get("pattern") == "rand" else "seq") + op
    if "uring_unavailable" in out.extra:
        res.labels["uring_unavailable"] = out.extra["uring_unavailable"]
    if "io_loop" in out.extra:
        res.labels["io_loop"] = out.extra["io_loop"]
    if "jobs" in out.extra:   # --jobs N: one row per process (the metrics are their sums)
        res.samples["jobs"] = out.extra["jobs"]
    res.metrics.update(_job_metrics(out, op))
    res.samples["bw"] = _series(out, op)
    if "t0_unix" in out.extra:   # the job's t = 0 on the wall clock (many-rank runs line series up)
        res.extra.setdefault("t0_unix", {})[op] = out.extra["t0_unix"]
    if out.hist.n:
        res.samples["lat_hist"] = out.hist.to_dict()
    if out.extra.get("fio_iodepth_level"):
        res.samples["fio_iodepth_level"] = out.extra["fio_iodepth_level"]
    from .._engines import devlimits

    devlimits.annotate(res, s.target.path, bs, res.params.get("buffers", "pages"), engine, s.direct, (out,),
                       target=s.target)
    # the builtin engine's merged output sums its jobs' depths; fio's reached depth is per job
    per = res.params.get("threads", 1) * res.params.get("jobs", 1) if engine == "builtin" else 1
    qd_asked = res.params.get("qd", 1) * per
    if out.qd_mean and out.qd_mean < 0.9 * qd_asked and out.ios > 100:
        res.warn(f"the queue depth reached (mean {out.qd_mean:.1f}) stayed below the {qd_asked} asked for: "
                 "the CPU, not the storage, may be the limit")
    cpu_bound_warning(res, out, engine)
    for w in s.warnings:
        res.warn(w)
    if warning:
        res.warn(warning)
    return reason


def short_transfer(out: JobOutput, bs: int, path: str, op: str, expected: int | None = None):
    """``(reason to fail, warning)`` for a job that moved less than asked: a short I/O (the file gave
    fewer bytes than a block) or, size based (``expected`` bytes), an early end; ``(None, None)`` else.
    It fails when not one full block was transferred."""
    if out.interrupted:
        return None, None
    info = out.extra.get("short_io")
    if isinstance(info, dict):
        got, at = max(0, int(info.get("bytes", 0))), info.get("offset")
    elif expected is not None and out.bytes < expected:
        got, at = out.bytes % bs, out.bytes - out.bytes % bs
    else:
        return None, None
    full = out.bytes // bs
    where = f" at offset {at}" if at is not None else ""
    gave = f"{path} gave {got} bytes{where} where a block of {format_bytes(bs, binary=True)} was asked"
    if full == 0:
        verb = "read" if op == "read" else "written"
        return (f"not one full block was {verb}: {gave} — a pseudo file, or a file shorter than its size "
                "says"), None
    return None, (f"the {op} stopped early: {gave} (the file shrank, or is shorter than its size says); the "
                  f"figures cover the {full} full blocks before it")


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


def _stage_progress(progress, lo: float, hi: float):
    if progress is None:
        return None

    def p(frac, metrics):
        progress(None if frac is None else lo + (hi - lo) * frac, metrics)

    return p


def _os_error(exc: OSError, path: str, direct: bool, *, op: str | None = None, done: int | None = None,
              total: int | None = None) -> ProbeError:
    """An OSError met during a probe's I/O as one sentence: what happened, where, how far it got
    (``done`` of ``total`` bytes, when known) and what to do."""
    import errno as _e

    name = _e.errorcode.get(exc.errno, str(exc.errno))
    where = os.path.dirname(path) if os.path.basename(path).startswith(".nbbench-") else path
    doing = f" while {op}" if op else ""
    if done is not None and total:
        doing += f": {format_bytes(done, binary=True)} written of {format_bytes(total, binary=True)}"
    if exc.errno == _e.ENOSPC:
        try:
            st = os.statvfs(where if os.path.isdir(where) else os.path.dirname(where) or ".")
            free = f"; free space {format_bytes(st.f_bavail * st.f_frsize, binary=True)}"
        except OSError:
            free = ""
        return ProbeError(f"no space left on {where}{doing}{free} (the filesystem filled up: free some space there, "
                          f"or use a smaller --size or another directory)")
    if exc.errno == _e.EROFS:
        return ProbeError(f"the filesystem holding {where} became read-only{doing} (the kernel does this after a "
                          f"disk error: look at dmesg, then remount it read-write or use another directory)")
    if exc.errno == _e.EIO:
        return ProbeError(f"an I/O error on {where}{doing} (EIO: the device or its connection failed; look at "
                          f"dmesg and the disk's health before trusting it)")
    hint = ""
    if exc.errno == _e.EINVAL and direct:
        hint = " — O_DIRECT needs a block size that is a multiple of the device's sector (try --bs 4k or --buffered)"
    return ProbeError(f"I/O on {path} failed{doing}: {exc.strerror} ({name}){hint}")
