"""Storage probes: ``dd`` (sequential write then read), ``randread`` (random reads at a
block size and queue depth, IOPS and fio's latency percentiles) and ``preset``
(CrystalDiskMark's set, MLPerf-like sample reads) — plain functions returning
results; no IPython, no widgets.

PATH semantics (:mod:`nbbench.probes.pathcheck`): a directory gets a new
``.nbbench-*`` temporary file that is always removed; an existing regular file or
block device is only ever read; anything else is refused within a second.

Engines (one result schema, labelled ``engine`` and ``io_path``):

* ``builtin`` (default, nothing to install): QD1 is a plain ``os.preadv`` /
  ``os.pwritev`` loop; deeper queues use io_uring through raw syscalls
  (:mod:`._engines.uring`), or a thread pool where io_uring is unavailable.
* ``dd``: the system dd (sequential only), ``iflag=direct`` / ``oflag=direct``,
  ``conv=fdatasync`` for buffered writes.
* ``fio``: fio with ``ioengine=io_uring`` (libaio where io_uring is blocked).

Cache honesty: every result says ``cache`` = ``direct`` | ``buffered-cold`` |
``buffered-warm``, how the cache was dropped (``cache_drop``), and when O_DIRECT
was refused (``direct_fallback``: tmpfs, overlayfs, some FUSE/NFS) — then buffered
I/O with posix_fadvise(DONTNEED) is used, and said so.  Caches are dropped outside
the timed window.
"""

from __future__ import annotations

import math
import os
from typing import Any

from ..results import ProbeError, Result, register
from ..units import format_bytes, format_metric, metric_label, parse_duration, parse_size
from ._engines.hist import PERCENTILES, LatencyHistogram, percentile_key
from ._engines.job import JobOutput, JobSpec
from .pathcheck import Target, check_free_space, direct_io_supported, inspect, open_read

__all__ = ["dd", "randread", "preset", "DiskResult", "IoJobResult", "RandreadResult", "DiskPresetResult",
           "PRESETS", "ENGINES"]

ENGINES = ("builtin", "dd", "fio")
DEFAULT_READ_FILE = 1 << 30


# =========================================================================== results
class _StorageMixin:
    def headline(self) -> str:
        return f"{self.kind} {self.params.get('path', '')}".strip()


@register("dd")
class DiskResult(_StorageMixin, Result):
    """dd-style sequential write then read.  ``samples['write_bw']`` / ``['read_bw']``
    hold the bandwidth in 500 ms windows (``t_s``, ``*_bytes_per_s``)."""

    SUMMARY = ("write_bytes_per_s", "read_bytes_per_s")

    @property
    def write_bytes_per_s(self) -> float | None:
        return self.metrics.get("write_bytes_per_s")

    @property
    def read_bytes_per_s(self) -> float | None:
        return self.metrics.get("read_bytes_per_s")


@register("io")
class IoJobResult(_StorageMixin, Result):
    """One stream of I/O (a row of a preset, a randread): bandwidth, IOPS, latency."""

    SUMMARY = ("iops", "read_bytes_per_s", "write_bytes_per_s", "lat_mean_ns", "lat_p99_ns")

    @property
    def percentiles(self) -> dict[float, float]:
        return {p: self.metrics.get(percentile_key(p)) for p in PERCENTILES}

    def histogram(self) -> LatencyHistogram | None:
        d = self.samples.get("lat_hist")
        return LatencyHistogram.from_dict(d) if d else None

    def text_table(self) -> str:
        """Headline, labels, the main figures, then the 17 latency percentiles in rows of six."""
        from ._format import text_table

        return text_table(self)


@register("randread")
class RandreadResult(IoJobResult):
    """Random reads: ``iops``, ``read_bytes_per_s``, ``lat_mean_ns``/``lat_stddev_ns`` and fio's
    17 percentiles (``lat_p1_ns`` … ``lat_p99_99_ns``), ``qd_reached``."""

    SUMMARY = ("iops", "read_bytes_per_s", "lat_mean_ns", "lat_p99_ns")


@register("disk")
class DiskPresetResult(_StorageMixin, Result):
    """A preset table (CrystalDiskMark-like).  ``rows`` are the sub-results."""

    SUMMARY = None

    def summary_metrics(self) -> list[str]:
        keys = [k for k in self.metrics if k.endswith("_bytes_per_s")][:2]
        rnd = [k for k in self.metrics if k.startswith("rnd") and k.endswith("_read_iops")][:1]
        return keys + rnd

    def headline(self) -> str:
        return f"disk {self.params.get('preset', '')} {self.params.get('path', '')}".strip()

    @property
    def rows(self) -> list[Result]:
        return [Result.from_dict(d) for d in self.samples.get("rows", [])]

    def table(self) -> list[dict[str, Any]]:
        """[{test, read_bytes_per_s, write_bytes_per_s, read_iops, write_iops, ...}] in preset order."""
        out: dict[str, dict[str, Any]] = {}
        for r in self.samples.get("rows", []):
            name = r["params"]["test"]
            row = out.setdefault(name, {"test": name})
            op = r["params"]["op"]
            row[f"{op}_bytes_per_s"] = r["metrics"].get(f"{op}_bytes_per_s")
            row[f"{op}_iops"] = r["metrics"].get("iops")
            row[f"{op}_lat_mean_ns"] = r["metrics"].get("lat_mean_ns")
            if "samples_per_s" in r["metrics"]:
                row[f"{op}_samples_per_s"] = r["metrics"]["samples_per_s"]
        return list(out.values())

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame(self.table())

    def text_table(self) -> str:
        rows = self.table()
        has_w = any("write_bytes_per_s" in r for r in rows)
        lines = [str(self)]
        if self.labels:
            lines.append("  " + "  ".join(f"{k}={v}" for k, v in self.labels.items()))
        head = f"  {'':<16}{'Read [MB/s]':>13}" + (f"{'Write [MB/s]':>14}" if has_w else "") + f"{'Read IOPS':>12}"
        lines.append(head)
        for r in rows:
            rd = r.get("read_bytes_per_s")
            wr = r.get("write_bytes_per_s")
            line = f"  {r['test']:<16}{_mbs(rd):>13}"
            if has_w:
                line += f"{_mbs(wr):>14}"
            line += f"{_num(r.get('read_iops')):>12}"
            lines.append(line)
        for w in self.warnings:
            lines.append(f"  warning: {w}")
        return "\n".join(lines)

    def _repr_pretty_(self, p, cycle):
        p.text(self.text_table())

    def _repr_html_(self) -> str:
        import html

        rows = self.table()
        has_w = any("write_bytes_per_s" in r for r in rows)
        esc = html.escape
        colour = {"ok": "#2e7d32", "interrupted": "#ef6c00", "failed": "#c62828"}[self.status]
        out = [f"<div class='nbbench-result'><b>{esc(self.headline())}</b> "
               f"<span style='color:{colour};font-weight:bold'>{esc(self.status)}</span>"]
        if self.reason:
            out.append(f" — {esc(self.reason)}")
        out.append("<div style='font-size:90%'>" + " · ".join(
            f"{esc(str(k))}: <code>{esc(str(v))}</code>" for k, v in self.labels.items()) + "</div>")
        th = "<th style='text-align:right'>"
        out.append("<table class='nbbench-metrics'><tr><th></th>" + th + "Read [MB/s]</th>"
                   + (th + "Write [MB/s]</th>" if has_w else "") + th + "Read IOPS</th>"
                   + (th + "Write IOPS</th>" if has_w else "") + "</tr>")
        for r in rows:
            out.append(f"<tr><td style='text-align:left;font-weight:bold'>{esc(r['test'])}</td>"
                       f"<td style='text-align:right'>{_mbs(r.get('read_bytes_per_s'))}</td>"
                       + (f"<td style='text-align:right'>{_mbs(r.get('write_bytes_per_s'))}</td>" if has_w else "")
                       + f"<td style='text-align:right'>{_num(r.get('read_iops'))}</td>"
                       + (f"<td style='text-align:right'>{_num(r.get('write_iops'))}</td>" if has_w else "")
                       + "</tr>")
        out.append("</table>")
        if self.warnings:
            out.append("<ul style='color:#ef6c00'>" + "".join(f"<li>{esc(w)}</li>" for w in self.warnings) + "</ul>")
        out.append("</div>")
        return "".join(out)


def _mbs(v) -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v / 1e6:.2f}"


def _num(v) -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:,.0f}"


# =========================================================================== helpers
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


class _Session:
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
            # the queue split over rings of 8, one thread each: the device still sees spec.qd in
            # flight, but one thread's Python work overlaps another's time in the kernel, so the
            # ~2 µs ctypes cost per io_uring_enter does not cap the IOPS (see bench/vs_fio.py)
            import dataclasses

            sub = dataclasses.replace(spec, qd=spec.qd // rings)
            out = _run_threads_of(sub, rings, uring.run_uring)
            extras = out.io_path.split("in flight", 1)[-1]
            out.io_path = (f"io_uring (ctypes syscalls, {rings} rings x {spec.qd // rings} in flight = {spec.qd}, "
                           f"a thread each{extras}")
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
        n = min(4, qd // 8) if qd >= 16 else 1
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


# =========================================================================== dd
def dd(path, bs="1M", size="1G", count=None, direct=None, engine="builtin", progress=None, cancel=None,
       mode=None) -> DiskResult:
    """Sequential write then read, like ``dd``.

    Parameters
    ----------
    path : directory, regular file or block device
        A directory: write a new ``.nbbench-dd-*`` temp file there, read it back, remove
        it.  A file or block device: read only (``dd if=PATH of=/dev/null``).
    bs : int or str
        Block size per I/O (``"1M"`` = 1 MiB; K/M/G are powers of 1024 as in dd).
    size : int or str
        Bytes to write/read (``"1G"``, ``"512M"``, ``"4GiB"``, ``"1.5G"``); on a file or device
        capped at its size.  ``count`` (blocks) overrides it, as dd's count.
    direct : bool or None
        None: O_DIRECT where the filesystem accepts it, else buffered (labelled
        ``direct_fallback``).  False: buffered; writes end with fdatasync inside the timed
        window (``conv=fdatasync``), reads start with the file's cache dropped.
    engine : "builtin" | "dd" | "fio"
    progress : callable ``(fraction, metrics)``, optional
    cancel : threading.Event, optional — set it to stop within 0.5 s; the result is then
        ``interrupted`` with what was measured.
    mode : None | "both" | "write" | "read"
        None: both in a directory, read on a file or device.  "write"/"both" on a file or
        device is refused (nbbench never writes to them).
    """
    engine = _check_engine(engine)
    bs_b = _size(bs, "bs")
    _check_bs(bs_b)
    if count is not None:
        total = int(count) * bs_b
    else:
        total = _size(size, "size")
    if mode not in (None, "both", "write", "read"):
        raise ProbeError(f"mode must be both, write or read, not {mode!r}")
    target = inspect(path, write=mode in ("both", "write"))
    if mode is None:
        mode = "both" if target.kind == "dir" else "read"
    if target.kind == "dir" and mode == "read":
        mode = "both"  # reading in a directory needs our own file written first
    if target.kind != "dir":
        total = min(total, target.size)
    total = (total // bs_b) * bs_b
    if total < bs_b:
        raise ProbeError(f"size must be at least one block of {format_bytes(bs_b, binary=True)}")
    if target.kind == "dir":
        check_free_space(target.path, total)
    params = {"path": target.path, "bs": bs_b, "size": total, "count": total // bs_b, "direct": direct,
              "engine": engine, "mode": mode}
    res = DiskResult(params=params)
    wrote = mode in ("both", "write")
    with _Session(target, direct, "dd", cancel=cancel, progress=progress) as s:
        w_out = r_out = None
        try:
            if wrote:
                w_out = _dd_write(s, engine, bs_b, total, cancel, _stage_progress(progress, 0.0, 0.5))
            if mode in ("both", "read") and not (w_out and w_out.interrupted):
                cache_mode = s.prepare_read(total)
                r_out = _dd_read(s, engine, bs_b, total, cancel,
                                 _stage_progress(progress, 0.5 if wrote else 0.0, 1.0))
            else:
                cache_mode = "direct" if s.direct else "buffered-cold"
        except OSError as exc:
            raise _os_error(exc, s.path, s.direct) from None
        if r_out is not None and engine != "dd":
            s.data_warnings(total, bs_b)
        s.buffered_warnings(total, cache_mode)
        res.labels = s.base_labels(engine, cache_mode)
        if wrote:
            res.labels["write_cache"] = "direct" if s.direct else "buffered + fdatasync"
            res.labels["write_data"] = "zeros (/dev/zero)" if engine == "dd" else "random"
        for out, op in ((w_out, "write"), (r_out, "read")):
            if out is None:
                continue
            res.labels[f"{op}_io_path"] = out.io_path
            res.metrics[f"{op}_bytes_per_s"] = out.bytes_per_s
            res.metrics[f"{op}_elapsed_s"] = out.elapsed_s
            res.metrics[f"{op}_total_bytes"] = out.bytes
            if out.hist.n:
                res.metrics[f"{op}_lat_mean_ns"] = out.hist.mean
                res.metrics[f"{op}_lat_p99_ns"] = out.hist.percentiles((99.0,))[99.0]
            res.samples[f"{op}_bw"] = {"t_s": [w[0] for w in out.windows],
                                       f"{op}_bytes_per_s": [w[1] for w in out.windows]}
            if "series_interval" in out.extra:
                res.labels["series"] = out.extra["series_interval"]
        for w in s.warnings:
            res.warn(w)
        interrupted = (w_out and w_out.interrupted) or (r_out and r_out.interrupted)
    if interrupted:
        return res.finish("interrupted", "cancelled; the figures cover what was done before")
    return res.finish()


def _dd_write(s: _Session, engine: str, bs: int, total: int, cancel, progress) -> JobOutput:
    fsync = not s.direct
    if engine == "builtin":
        from ._engines.sync import run_sync

        fd = s._write_fd()
        try:
            return run_sync(JobSpec(fd=fd, op="write", pattern="seq", bs=bs, qd=1, region=total, total=total,
                                    fsync_end=fsync, cancel=cancel, progress=progress,
                                    progress_key="write_bytes_per_s"))
        finally:
            if fd != s.wfd:
                os.close(fd)
    if engine == "dd":
        from ._engines.extern import run_dd

        return run_dd(src="/dev/zero", dst=s.path, bs=bs, count=total // bs, direct=s.direct, op="write",
                      fsync_end=fsync, cancel=cancel, progress=progress, progress_key="write_bytes_per_s")
    from ._engines.extern import run_fio

    return run_fio(s.path, op="write", pattern="seq", bs=bs, qd=1, size=total, runtime=None, ramp=0,
                   direct=s.direct, fsync_end=fsync, cancel=cancel, progress=progress,
                   progress_key="write_bytes_per_s")


def _dd_read(s: _Session, engine: str, bs: int, total: int, cancel, progress) -> JobOutput:
    if engine == "builtin":
        from ._engines.sync import run_sync

        return run_sync(JobSpec(fd=s.fd, op="read", pattern="seq", bs=bs, qd=1, region=total, total=total,
                                cancel=cancel, progress=progress))
    if engine == "dd":
        from ._engines.extern import run_dd

        return run_dd(src=s.path, dst="/dev/null", bs=bs, count=total // bs, direct=s.direct, op="read",
                      fsync_end=False, cancel=cancel, progress=progress)
    from ._engines.extern import run_fio

    return run_fio(s.path, op="read", pattern="seq", bs=bs, qd=1, size=total, runtime=None, ramp=0,
                   direct=s.direct, invalidate=not s.direct, cancel=cancel, progress=progress)


# =========================================================================== jobs
def _run_job(s: _Session, engine: str, *, op: str, pattern: str, bs: int, qd: int, threads: int, region: int,
             runtime: float, ramp: float, cache_mode: str, cancel, progress, seed: int = 0,
             builtin_path: str | None = None) -> JobOutput:
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
        try:
            spec = JobSpec(fd=fd, op=op, pattern=pattern, bs=bs, qd=qd, region=region, runtime=runtime,
                           ramp=ramp, cancel=cancel, progress=progress, progress_key=key, seed=seed,
                           threads=threads, force=builtin_path)
            return _run_threads_of(spec, threads, _builtin_job)
        finally:
            if op == "write" and fd != s.wfd:
                os.close(fd)
    if engine == "dd":
        raise ProbeError("the dd engine does sequential dd transfers only; use --engine builtin or fio here")
    from ._engines.extern import run_fio

    return run_fio(s.path, op=op, pattern=pattern, bs=bs, qd=qd, size=region, runtime=runtime, ramp=ramp,
                   direct=s.direct, invalidate=(cache_mode == "buffered-cold"), cancel=cancel,
                   progress=progress, progress_key=key, threads=threads)


def _fill_size(target: Target, size) -> int:
    if size is None:
        return DEFAULT_READ_FILE if target.kind == "dir" else target.size
    return _size(size, "size")


def randread(path, bs="4k", qd=1, runtime=10, ramp=1, size=None, direct=None, engine="builtin", threads=1,
             progress=None, cancel=None, warm=False, seed=0, builtin_path=None) -> RandreadResult:
    """Random reads, time based: IOPS, bytes/s, latency mean/stddev and fio's 17 percentiles.

    Parameters
    ----------
    path : directory, regular file or block device
        A directory: a ``size`` temp file (default 1 GiB) is written first (not timed) and
        removed afterwards.  A file or device: read only, over its first ``size`` bytes
        (default all of it).
    bs : block size (``"4k"``); qd : I/Os in flight per thread; threads : T in QnTm.
    runtime, ramp : seconds (or ``"500ms"``); the ramp is not counted.
    direct : None (O_DIRECT where accepted) | True | False (buffered; the file's cache is
        dropped first, unless ``warm=True``: the region is read once first — page cache speed).
    engine : "builtin" | "fio" (dd has no random reads).
    progress, cancel : as :func:`dd`.
    builtin_path : None | "sync" | "uring" | "threads" — force the builtin engine's I/O path
        (for comparisons; default: sync at QD1, io_uring deeper, threads without io_uring).
    """
    engine = _check_engine(engine)
    bs_b = _size(bs, "bs")
    _check_bs(bs_b)
    qd = int(qd)
    threads = int(threads)
    if qd < 1 or qd > 4096:
        raise ProbeError(f"qd must be between 1 and 4096, not {qd}")
    if threads < 1 or threads > 256:
        raise ProbeError(f"threads must be between 1 and 256, not {threads}")
    runtime_s = _duration(runtime, "runtime")
    ramp_s = _duration(ramp, "ramp")
    if runtime_s <= 0:
        raise ProbeError("runtime must be more than 0 s")
    if engine == "dd":
        raise ProbeError("the dd engine does sequential transfers only; use --engine builtin or fio for randread")
    target = inspect(path, write=False)
    region = _fill_size(target, size)
    if target.kind != "dir":
        region = min(region, target.size)
    region = (region // bs_b) * bs_b
    if region < bs_b:
        raise ProbeError(f"the region must hold at least one block of {format_bytes(bs_b, binary=True)}")
    if target.kind == "dir":
        check_free_space(target.path, region)
    params = {"path": target.path, "bs": bs_b, "qd": qd, "threads": threads, "runtime": runtime_s,
              "ramp": ramp_s, "size": region, "direct": direct, "engine": engine, "warm": bool(warm),
              "op": "read", "pattern": "rand"}
    res = RandreadResult(params=params)
    fill = region if target.kind == "dir" else 0
    with _Session(target, direct, "randread", fill=fill, cancel=cancel, progress=progress) as s:
        if s.interrupted:
            res.labels = s.base_labels(engine, "direct" if s.direct else "buffered-cold")
            return res.finish("interrupted", "cancelled while writing the file to read")
        try:
            cache_mode = s.prepare_read(region, warm=warm)
            out = _run_job(s, engine, op="read", pattern="rand", bs=bs_b, qd=qd, threads=threads, region=region,
                           runtime=runtime_s, ramp=ramp_s, cache_mode=cache_mode, cancel=cancel,
                           progress=_stage_progress(progress, 0.15 if fill else 0.0, 1.0), seed=seed,
                           builtin_path=builtin_path)
        except OSError as exc:
            raise _os_error(exc, s.path, s.direct) from None
        _fill_job_result(res, s, out, engine, cache_mode, "read", region, bs_b)
    if out.interrupted:
        return res.finish("interrupted", "cancelled; the figures cover the time measured before")
    return res.finish()


def _fill_job_result(res: Result, s: _Session, out: JobOutput, engine: str, cache_mode: str, op: str,
                     region: int, bs: int) -> None:
    if op == "read":
        s.data_warnings(region, bs)
        s.buffered_warnings(region, cache_mode)
    res.labels = s.base_labels(engine, cache_mode)
    res.labels["io_path"] = out.io_path
    res.labels["rw"] = ("rand" if res.params.get("pattern") == "rand" else "seq") + op
    if "uring_unavailable" in out.extra:
        res.labels["uring_unavailable"] = out.extra["uring_unavailable"]
    res.metrics.update(_job_metrics(out, op))
    res.samples["bw"] = _series(out, op)
    if out.hist.n:
        res.samples["lat_hist"] = out.hist.to_dict()
    if out.extra.get("fio_iodepth_level"):
        res.samples["fio_iodepth_level"] = out.extra["fio_iodepth_level"]
    qd_asked = res.params.get("qd", 1) * res.params.get("threads", 1)
    if out.qd_mean and out.qd_mean < 0.9 * qd_asked and out.ios > 100:
        res.warn(f"the queue depth reached (mean {out.qd_mean:.1f}) stayed below the {qd_asked} asked for: "
                 "the CPU, not the storage, may be the limit")
    for w in s.warnings:
        res.warn(w)


# =========================================================================== presets
# (test name, op pattern, block size, queue depth, threads)
PRESETS: dict[str, dict[str, Any]] = {
    "cdm": {
        "title": "CrystalDiskMark default set",
        "tests": [("SEQ1M Q8T1", "seq", 1 << 20, 8, 1), ("SEQ1M Q1T1", "seq", 1 << 20, 1, 1),
                  ("RND4K Q32T1", "rand", 4096, 32, 1), ("RND4K Q1T1", "rand", 4096, 1, 1)],
    },
    "mlperf-resnet50": {
        "title": "MLPerf Storage ResNet-50-like: random reads of ~115 KB samples (112 KiB, 4 KiB aligned)",
        "tests": [("RND112K Q1T1", "rand", 112 << 10, 1, 1), ("RND112K Q8T1", "rand", 112 << 10, 8, 1),
                  ("RND112K Q32T1", "rand", 112 << 10, 32, 1)],
        "sample_bytes": 115 * 1000,
        "reads_only": True,
    },
    "mlperf-unet3d": {
        "title": "MLPerf Storage UNet3D-like: ~147 MB samples read whole, as 1 MiB sequential reads",
        "tests": [("SEQ1M Q1T1", "seq", 1 << 20, 1, 1), ("SEQ1M Q8T1", "seq", 1 << 20, 8, 1)],
        "sample_bytes": 146_600_000,
        "min_size": 256 << 20,
        "reads_only": True,
    },
}


def preset(path, name="cdm", size="1G", runtime=5, ramp=1, direct=None, engine="builtin", progress=None,
           cancel=None, write=None) -> DiskPresetResult:
    """A preset set of tests as one table: ``cdm`` (CrystalDiskMark's SEQ1M Q8T1, SEQ1M Q1T1,
    RND4K Q32T1, RND4K Q1T1, read and — in a directory — write), ``mlperf-resnet50`` (random
    reads of ~115 KB samples) or ``mlperf-unet3d`` (~147 MB samples).

    ``size``: the test file (a new temp file in a directory; the first ``size`` bytes of a file
    or device, read only).  ``runtime``/``ramp`` per test (seconds).  ``write``: None = write
    tests where the preset has them and PATH is a directory; True on a file/device is refused.
    Other parameters as :func:`randread`.
    """
    if name not in PRESETS:
        raise ProbeError(f"unknown preset {name!r}: choose from {', '.join(PRESETS)}")
    p = PRESETS[name]
    engine = _check_engine(engine)
    if engine == "dd":
        raise ProbeError("presets need queue depths; use --engine builtin or fio")
    runtime_s = _duration(runtime, "runtime")
    ramp_s = _duration(ramp, "ramp")
    target = inspect(path, write=bool(write))
    region = _fill_size(target, size)
    region = max(region, p.get("min_size", 0)) if target.kind == "dir" else min(region, target.size)
    region = (region // (1 << 20)) * (1 << 20) or region
    do_write = target.kind == "dir" and not p.get("reads_only") and write is not False
    if target.kind == "dir":
        check_free_space(target.path, region)
    tests = p["tests"]
    params = {"path": target.path, "preset": name, "size": region, "runtime": runtime_s, "ramp": ramp_s,
              "direct": direct, "engine": engine, "write": do_write}
    res = DiskPresetResult(params=params)
    ops = ["read", "write"] if do_write else ["read"]
    n_jobs = len(tests) * len(ops)
    fill = region if target.kind == "dir" else 0
    rows: list[dict] = []
    interrupted = False
    with _Session(target, direct, "disk", fill=fill, cancel=cancel, progress=progress) as s:
        if s.interrupted:
            res.labels = s.base_labels(engine, "direct" if s.direct else "buffered-cold")
            return res.finish("interrupted", "cancelled while writing the test file")
        k = 0
        cache_mode = "direct"
        for test, pattern, bs, qd, threads in tests:
            for op in ops:
                if cancel is not None and cancel.is_set():
                    interrupted = True
                    break
                lo = 0.15 + 0.85 * k / n_jobs if fill else k / n_jobs
                hi = 0.15 + 0.85 * (k + 1) / n_jobs if fill else (k + 1) / n_jobs
                k += 1
                sub = IoJobResult(params={"path": target.path, "test": test, "op": op, "pattern": pattern,
                                          "bs": bs, "qd": qd, "threads": threads, "runtime": runtime_s,
                                          "ramp": ramp_s, "size": region, "engine": engine})
                try:
                    cache_mode = s.prepare_read(region) if op == "read" else ("direct" if s.direct else "buffered")
                    out = _run_job(s, engine, op=op, pattern=pattern, bs=bs, qd=qd, threads=threads, region=region,
                                   runtime=runtime_s, ramp=ramp_s, cache_mode=cache_mode, cancel=cancel,
                                   progress=_stage_progress(progress, lo, hi))
                except OSError as exc:
                    raise _os_error(exc, s.path, s.direct) from None
                _fill_job_result(sub, s, out, engine, cache_mode, op, region, bs)
                if "sample_bytes" in p:
                    sub.metrics["samples_per_s"] = sub.metrics[f"{op}_bytes_per_s"] / p["sample_bytes"]
                sub.finish("interrupted" if out.interrupted else "ok")
                rows.append(sub.to_dict())
                pre = test.lower().replace(" ", "_")
                res.metrics[f"{pre}_{op}_bytes_per_s"] = sub.metrics[f"{op}_bytes_per_s"]
                res.metrics[f"{pre}_{op}_iops"] = sub.metrics["iops"]
                res.metrics[f"{pre}_{op}_lat_mean_ns"] = sub.metrics.get("lat_mean_ns")
                if out.interrupted:
                    interrupted = True
                    break
            if interrupted:
                break
        res.samples["rows"] = rows
        res.labels = s.base_labels(engine, "direct" if s.direct else "buffered-cold")
        res.labels["preset"] = p["title"]
        for w in s.warnings:
            res.warn(w)
        if target.kind != "dir" and not p.get("reads_only"):
            res.warn("write tests need a directory (nbbench never writes to an existing file or device): "
                     "only reads were measured")
    if interrupted:
        return res.finish("interrupted", "cancelled; the table holds the tests done before")
    return res.finish()


def describe(res: Result) -> str:  # pragma: no cover - convenience for notebooks
    return ", ".join(f"{k} {format_metric(k, v)}" for k, v in res.metrics.items())
