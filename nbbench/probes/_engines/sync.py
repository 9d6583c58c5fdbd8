"""Synchronous engines: one I/O in flight in the calling thread (``os.preadv`` /
``os.pwritev``, the fewest Python operations per I/O), and a thread pool for
queue depths > 1 where io_uring is unavailable (each thread keeps one in flight).

Buffers (:func:`aligned_buffers`): by default ordinary page-aligned memory — what dd
and fio use, so an O_DIRECT I/O reaches the device in the same request shape as
theirs (see :mod:`.devlimits`); ``buffers="huge"`` puts them on 2 MiB transparent
huge pages, which keeps e.g. a 1 MiB I/O in one segment where 4 KiB pages need 256.
"""

from __future__ import annotations

import mmap
import os
import threading
import time
from array import array
from itertools import cycle, repeat

from .job import JobOutput, JobSpec, Meter, Offsets, offsets

__all__ = ["run_sync", "run_threads", "aligned_buffers", "BufferPool", "huge_fraction"]


HUGE = 2 << 20
BUFFER_KINDS = ("pages", "huge")


class BufferPool:
    """``views``: ``n`` buffers of ``bs`` bytes, contiguous in one anonymous mapping ``mm``;
    ``huge_fraction``: the share the kernel put on huge pages (``buffers="huge"`` only);
    ``segments``: the most physically contiguous pieces one buffer is made of — what an
    O_DIRECT I/O from it carries to the device — or None where the kernel hides physical
    addresses (not root)."""

    def __init__(
        self,
        mm: mmap.mmap,
        views: list,
        kind: str,
        huge_fraction: float | None = None,
        segments: int | None = None,
        span: memoryview | None = None,
    ):
        self.mm = mm
        self.views = views
        self.span = span  # all ``views`` as one contiguous view (the compiled loop takes it)
        self.kind = kind
        self.huge_fraction = huge_fraction
        self.segments = segments

    def record(self, extra: dict) -> None:
        """Put what is known of the buffers into a job output's ``extra``."""
        if self.huge_fraction is not None:
            extra["huge_fraction"] = self.huge_fraction
        if self.segments is not None:
            extra["buffer_segments"] = self.segments
        extra["buffer_pool_bytes"] = sum(v.nbytes for v in self.views)  # the memory the I/Os cycle through

    def release(self) -> None:
        for v in self.views + ([self.span] if self.span is not None else []):
            v.release()
        try:
            self.mm.close()
        except BufferError:  # pragma: no cover - a view still exported
            pass


def huge_fraction(addr: int, length: int, smaps: str = "/proc/self/smaps") -> float | None:
    """Share of ``[addr, addr + length)`` on transparent huge pages (``AnonHugePages`` of the
    mappings it spans in ``smaps``); None where smaps cannot be read."""
    end = addr + length
    huge = 0
    inside = False
    try:
        with open(smaps) as f:
            for line in f:
                head = line.split(None, 1)[0]
                if "-" in head and not head.endswith(":"):
                    lo, hi = (int(x, 16) for x in head.split("-"))
                    inside = lo < end and hi > addr
                elif inside and head == "AnonHugePages:":
                    huge += int(line.split()[1]) << 10
    except (OSError, ValueError):
        return None
    return min(1.0, huge / length) if length else None


def physical_segments(addr: int, length: int, pagemap: str = "/proc/self/pagemap") -> int | None:
    """Physically contiguous runs of pages in ``[addr, addr + length)`` (touched memory), from
    ``pagemap``; None where page frame numbers read as 0 (hidden without CAP_SYS_ADMIN) or
    the file cannot be read."""
    page = mmap.PAGESIZE
    first, last = addr // page, (addr + length - 1) // page
    try:
        with open(pagemap, "rb") as f:
            f.seek(first * 8)
            raw = f.read((last - first + 1) * 8)
    except (OSError, ValueError):
        return None
    pfns = [e & ((1 << 55) - 1) for e in array("Q", raw)]
    if not pfns or not all(pfns):
        return None
    return 1 + sum(1 for a, b in zip(pfns, pfns[1:]) if b != a + 1)


def aligned_buffers(n: int, bs: int, fill_random: bool = False, buffers: str = "pages") -> BufferPool:
    """``n`` buffers of ``bs`` bytes in one page-aligned anonymous mapping (O_DIRECT-safe).

    Private anonymous memory, like malloc (O_DIRECT pins it cheaper than the shmem-backed
    mapping ``mmap.mmap(-1, n)`` gives).  ``buffers="pages"`` (default): ordinary 4 KiB
    pages, marked ``MADV_NOHUGEPAGE`` so that also where transparent huge pages are
    "always" the request shape is dd's and fio's (a 1 MiB buffer of theirs is never on a
    huge page).  ``buffers="huge"``: aligned to 2 MiB and marked ``MADV_HUGEPAGE`` — a
    1 MiB I/O is then one physically contiguous segment; the kernel may grant fewer huge
    pages than asked (``huge_fraction`` says how many).
    """
    if buffers not in BUFFER_KINDS:
        raise ValueError(f"buffers must be one of {', '.join(BUFFER_KINDS)}, not {buffers!r}")
    import ctypes

    size = max(n * bs, mmap.PAGESIZE)
    flags = getattr(mmap, "MAP_PRIVATE", 0) | getattr(mmap, "MAP_ANONYMOUS", 0)
    huge = buffers == "huge" and hasattr(mmap, "MADV_HUGEPAGE") and flags
    if huge:
        span = -(-size // HUGE) * HUGE
        mm = mmap.mmap(-1, span + HUGE, flags=flags)
        anchor = ctypes.c_char.from_buffer(mm)
        start = (-ctypes.addressof(anchor)) % HUGE
        try:
            mm.madvise(mmap.MADV_HUGEPAGE, start, span)
        except OSError:
            pass
    else:
        mm = mmap.mmap(-1, size, flags=flags) if flags else mmap.mmap(-1, size)
        anchor = ctypes.c_char.from_buffer(mm)
        start = 0
        span = size
        if hasattr(mmap, "MADV_NOHUGEPAGE"):
            try:
                mm.madvise(mmap.MADV_NOHUGEPAGE)
            except OSError:
                pass
    base = ctypes.addressof(anchor) + start
    del anchor
    mv = memoryview(mm)
    step = 1 << 20
    for off in range(0, n * bs, step):  # touch every page now, not in the timed loop
        chunk = min(step, n * bs - off)
        mv[start + off : start + off + chunk] = os.urandom(chunk) if fill_random else bytes(chunk)
    views = [mv[start + i * bs : start + (i + 1) * bs] for i in range(n)]
    whole = mv[start : start + n * bs]
    mv.release()
    frac = huge_fraction(base, span) if buffers == "huge" else None
    segs = [physical_segments(base + i * bs, bs) for i in range(n)]
    return BufferPool(
        mm, views, buffers, 0.0 if buffers == "huge" and not huge else frac, None if None in segs else max(segs), whole
    )


PREAD_MAX = 128 << 10  # buffered reads up to this size use os.pread (below malloc's mmap threshold)


def _is_direct(fd: int) -> bool:
    try:
        import fcntl

        return bool(fcntl.fcntl(fd, fcntl.F_GETFL) & getattr(os, "O_DIRECT", 0))
    except (OSError, ImportError):
        return True  # unknown: keep to the aligned buffer


def compiled_loop():
    """The compiled QD1 loop (:mod:`._ioloop`, built from ``_ioloop.c`` by ``pip install``
    where a C compiler exists), or None: not built here, or ``NBBENCH_IO_LOOP=python``."""
    if os.environ.get("NBBENCH_IO_LOOP", "").lower() == "python":
        return None
    try:
        # the C extension, where pip built it
        from . import _ioloop
    except ImportError:
        return None
    return _ioloop.io_loop


COMPILED = "compiled pread loop"
PYTHON = "python pread loop"


def run_sync(spec: JobSpec) -> JobOutput:
    """QD1 in this thread: the compiled loop where it was built (:func:`compiled_loop`),
    else the Python one (:func:`run_sync_python`); ``extra["io_loop"]`` says which ran."""
    loop = compiled_loop()
    out = run_sync_python(spec) if loop is None else _run_sync_compiled(spec, loop)
    out.extra["io_loop"] = PYTHON if loop is None else COMPILED
    return out


def _run_sync_compiled(spec: JobSpec, loop) -> JobOutput:
    """QD1 with the C loop: ``pread64`` / ``pwrite64`` into / from the pool's page-aligned
    buffers (as fio's psync engine), a monotonic stamp after each I/O, no Python object per
    I/O; Python runs only at the meter's events (at most every 20 ms) and per chunk of offsets."""
    import numpy as np

    write = spec.op == "write"
    fd, bs = spec.fd, spec.bs
    out = JobOutput(io_path=f"sync ({COMPILED}: {'pwrite64' if write else 'pread64'}, 1 in flight)")
    nbuf = max(1, min(64, (16 << 20) // bs)) if write else 1
    pool = aligned_buffers(nbuf, bs, fill_random=write, buffers=spec.buffers)
    pool.record(out.extra)
    pc = time.perf_counter_ns
    offs = Offsets(spec, arrays=True)
    meter = Meter(spec, out, offs)
    stamps = meter.stamps
    scratch = np.empty(len(offs.ready[0]) if offs.ready else 1 << 16, dtype=np.int64)
    short = None
    now = pc()
    done_total = 0
    try:
        meter.stamp0 = pc()
        go = True
        while go:
            chunk = offs.next_array()
            if chunk is None:
                break
            pos, n_chunk = 0, len(chunk)
            while pos < n_chunk:
                if len(scratch) < n_chunk - pos:
                    scratch = np.empty(n_chunk - pos, dtype=np.int64)
                done, last = loop(fd, pool.span, bs, nbuf, chunk, pos, n_chunk - pos, scratch, meter.next_event, write)
                if done:
                    stamps.frombytes(scratch[:done].tobytes())
                    now = int(scratch[done - 1])
                    done_total += done
                    pos += done
                if last < 0:
                    raise OSError(-last, os.strerror(-last))
                if last != bs:
                    short = last
                    go = False
                    break
                if now >= meter.next_event and not meter.event(now, done_total, 1):
                    go = False
                    break
        if write and spec.fsync_end and not out.interrupted:
            os.fdatasync(fd)
            now = pc()
        out.qd_max = 1
        meter.finish(now, done_total, short)
        out.qd_mean = 1.0
    finally:
        pool.release()
    if short is not None:
        out.extra["short_io"] = {"bytes": short}
        k = out.ios - 1 + meter.done0
        nblocks = max(1, spec.region // bs)
        if spec.pattern == "seq" or nblocks == 1:
            out.extra["short_io"]["offset"] = spec.base + (k % nblocks) * bs
    return out


def run_sync_python(spec: JobSpec) -> JobOutput:
    """QD1 in this thread, in Python.  Writes cycle through a pool of random buffers (16 MiB at most:
    no two neighbouring blocks alike, and a source that is not one cache-hot buffer — a
    deduplicating store still sees the pool repeat; bench/dd_write_vs_dd.py measures what the
    pool's size costs against dd's one rewritten buffer).

    The system calls are fio's psync ones where Python allows: ``pwrite64`` (``os.pwrite``
    from the pool) for writes, ``pread64`` (``os.pread``, into the bytes object it returns)
    for buffered reads up to 128 KiB; an O_DIRECT read needs the aligned buffer, which only
    ``os.preadv`` (``preadv2``) reads into.  ``map`` calls them with the next offset (a
    C-level iterator, see :class:`~.job.Offsets`) and the next buffer, and the loop body
    only takes the completion time, appends it and compares — the latencies (time since
    the previous completion) and all bookkeeping are done at the meter's events.
    """
    write = spec.op == "write"
    fd = spec.fd
    bs = spec.bs
    pread = not write and bs <= PREAD_MAX and not _is_direct(fd)
    call = "os.pwrite" if write else ("os.pread" if pread else "os.preadv")
    out = JobOutput(io_path=f"sync ({PYTHON}: {call}, 1 in flight)")
    nbuf = max(1, min(64, (16 << 20) // bs)) if write else 1
    pool = aligned_buffers(nbuf, bs, fill_random=write, buffers=spec.buffers)
    if pread:
        out.extra["buffers_used"] = "os.pread's bytes objects (buffered: the page cache copies into them)"
    else:
        pool.record(out.extra)
    bufs = [[v] for v in pool.views]
    pc = time.perf_counter_ns
    offs = Offsets(spec)
    meter = Meter(spec, out, offs)
    stamps = meter.stamps
    app = stamps.append
    if write:
        ios = map(os.pwrite, repeat(fd), cycle(pool.views), offs.iter)
    elif pread:
        ios = map(len, map(os.pread, repeat(fd), repeat(bs), offs.iter))
    else:
        ios = map(os.preadv, repeat(fd), repeat(bufs[0]), offs.iter)
    short = None
    n = bs
    now = pc()
    try:
        nev = meter.next_event
        meter.stamp0 = pc()
        while True:
            for n in ios:
                now = pc()
                app(now)
                if n != bs or now >= nev:
                    break
            else:
                break  # size based: every offset done
            if n != bs:
                short = n
                break
            if not meter.event(now, meter.flushed + len(stamps), 1):
                break
            nev = meter.next_event
        if write and spec.fsync_end and not out.interrupted:
            os.fdatasync(fd)
            now = pc()
        out.qd_max = 1
        meter.finish(now, meter.flushed + len(stamps), short)
        out.qd_mean = 1.0
    finally:
        del ios, bufs
        pool.release()
    if short is not None:
        out.extra["short_io"] = {"bytes": short}
        k = out.ios - 1 + meter.done0  # the short I/O's index among all issued (ramp included)
        nblocks = max(1, spec.region // bs)
        if spec.pattern == "seq" or nblocks == 1:
            out.extra["short_io"]["offset"] = spec.base + (k % nblocks) * bs
    return out


def run_threads(spec: JobSpec) -> JobOutput:
    """``spec.qd`` threads, each with one I/O in flight; latencies merged."""
    qd = max(1, spec.qd)
    out = JobOutput(io_path=f"threads ({qd} x os.preadv/pwritev)")
    write = spec.op == "write"
    pool = aligned_buffers(qd, spec.bs, fill_random=write, buffers=spec.buffers)
    views = pool.views
    pool.record(out.extra)
    meter = Meter(spec, out)
    it = offsets(spec)
    lock = threading.Lock()
    state = {"done": 0, "stop": False, "error": None}
    per_thread = [array("q") for _ in range(qd)]
    io = os.pwritev if write else os.preadv
    fd, bs = spec.fd, spec.bs
    pc = time.perf_counter_ns

    def worker(i: int):
        buf = [views[i]]
        mine = per_thread[i]
        try:
            while not state["stop"]:
                with lock:
                    off = next(it, None)
                if off is None:
                    return
                t = pc()
                n = io(fd, buf, off)
                mine.append(pc() - t)
                if n != bs:
                    state["error"] = {"offset": off, "bytes": n}
                    return
                with lock:
                    state["done"] += 1
        except OSError as exc:
            state["error"] = exc

    threads = [threading.Thread(target=worker, args=(i,), daemon=True, name=f"nbbench-io-{i}") for i in range(qd)]
    for t in threads:
        t.start()
    measuring = False
    try:
        while any(t.is_alive() for t in threads):
            time.sleep(0.005)
            now = pc()
            if not measuring and meter.m0 is not None:
                measuring = True
                for a in per_thread:
                    del a[:]
            if now >= meter.next_event and not meter.event(now, state["done"], qd):
                break
    finally:
        state["stop"] = True
        for t in threads:
            t.join()
        now = pc()
        if not measuring:
            for a in per_thread:
                del a[:]
        for a in per_thread:
            meter.lats.extend(a)
        if write and spec.fsync_end and not out.interrupted:
            os.fdatasync(fd)
        meter.finish(now, state["done"])
        if isinstance(state["error"], dict):  # the short I/O's real bytes (not in "done")
            out.bytes += max(0, state["error"]["bytes"])
        out.qd_max = qd
        out.qd_mean = float(qd)
        # the meter ran in this (waiting) thread, not in the I/O threads: its CPU time says nothing
        out.extra.pop("engine_cpu_pct", None)
        out.extra.pop("engine_cpu_ns_per_io", None)
        pool.release()
    if state["error"] is not None:
        err = state["error"]
        if isinstance(err, OSError):
            raise err
        out.extra["short_io"] = err
    return out
