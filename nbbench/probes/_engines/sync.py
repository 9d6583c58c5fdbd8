"""Synchronous engines: one I/O in flight in the calling thread (``os.preadv`` /
``os.pwritev``, the fewest Python operations per I/O), and a thread pool for
queue depths > 1 where io_uring is unavailable (each thread keeps one in flight).
"""

from __future__ import annotations

import mmap
import os
import threading
import time
from array import array

from .job import JobOutput, JobSpec, Meter, offsets

__all__ = ["run_sync", "run_threads", "aligned_buffers"]


HUGE = 2 << 20


def aligned_buffers(n: int, bs: int, fill_random: bool = False) -> tuple[mmap.mmap, list[memoryview]]:
    """``n`` buffers of ``bs`` bytes in one page-aligned anonymous mapping (O_DIRECT-safe).

    Private anonymous memory, like malloc (O_DIRECT pins it cheaper than the shmem-backed
    mapping ``mmap.mmap(-1, n)`` gives).  Pools of 256 KiB and more sit on 2 MiB
    transparent huge pages where the kernel allows (``MADV_HUGEPAGE``): physically
    contiguous buffers keep a 1 MiB I/O in one request — scattered 4 KiB pages need 256
    segments, more than e.g. virtio-blk's 254, and the I/O is split in two.
    """
    import ctypes

    size = max(n * bs, mmap.PAGESIZE)
    flags = getattr(mmap, "MAP_PRIVATE", 0) | getattr(mmap, "MAP_ANONYMOUS", 0)
    huge = size >= (256 << 10) and hasattr(mmap, "MADV_HUGEPAGE") and flags
    if huge:
        span = -(-size // HUGE) * HUGE
        mm = mmap.mmap(-1, span + HUGE, flags=flags)
        anchor = ctypes.c_char.from_buffer(mm)
        start = (-ctypes.addressof(anchor)) % HUGE
        del anchor
        try:
            mm.madvise(mmap.MADV_HUGEPAGE, start, span)
        except OSError:
            pass
    else:
        mm = mmap.mmap(-1, size, flags=flags) if flags else mmap.mmap(-1, size)
        start = 0
    mv = memoryview(mm)
    step = 1 << 20
    for off in range(0, n * bs, step):  # touch every page now, not in the timed loop
        chunk = min(step, n * bs - off)
        mv[start + off:start + off + chunk] = os.urandom(chunk) if fill_random else bytes(chunk)
    views = [mv[start + i * bs:start + (i + 1) * bs] for i in range(n)]
    mv.release()
    return mm, views


def _release(mm, views) -> None:
    for v in views:
        v.release()
    try:
        mm.close()
    except BufferError:  # pragma: no cover - a view still exported
        pass


def run_sync(spec: JobSpec) -> JobOutput:
    """QD1 in this thread.  Writes cycle through a pool of random buffers (no two
    neighbouring blocks alike, so deduplicating storage cannot shortcut them)."""
    out = JobOutput(io_path="sync (os.preadv/pwritev, 1 in flight)")
    write = spec.op == "write"
    nbuf = max(1, min(64, (16 << 20) // spec.bs)) if write else 1
    mm, views = aligned_buffers(nbuf, spec.bs, fill_random=write)
    bufs = [[v] for v in views]
    fd = spec.fd
    io = os.pwritev if write else os.preadv
    bs = spec.bs
    pc = time.perf_counter_ns
    meter = Meter(spec, out)
    lats = meter.lats
    app = lats.append
    it = offsets(spec)
    done = 0
    k = 0
    short = None
    try:
        nev = meter.next_event
        prev = pc()
        for off in it:
            n = io(fd, bufs[k], off)
            now = pc()
            app(now - prev)
            prev = now
            done += 1
            if n != bs:
                short = (off, n)
                break
            if write:
                k = (k + 1) % nbuf
            if now >= nev:
                if not meter.event(now, done, 1):
                    break
                nev = meter.next_event
        if write and spec.fsync_end and not out.interrupted:
            os.fdatasync(fd)
        now = pc()
        out.qd_max = 1
        meter.finish(now, done, None if short is None else short[1])
        out.qd_mean = 1.0
    finally:
        del bufs
        _release(mm, views)
    if short is not None:
        out.extra["short_io"] = {"offset": short[0], "bytes": short[1]}
    return out


def run_threads(spec: JobSpec) -> JobOutput:
    """``spec.qd`` threads, each with one I/O in flight; latencies merged."""
    qd = max(1, spec.qd)
    out = JobOutput(io_path=f"threads ({qd} x os.preadv/pwritev)")
    write = spec.op == "write"
    mm, views = aligned_buffers(qd, spec.bs, fill_random=write)
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

    threads = [threading.Thread(target=worker, args=(i,), daemon=True, name=f"nbbench-io-{i}")
               for i in range(qd)]
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
        _release(mm, views)
    if state["error"] is not None:
        err = state["error"]
        if isinstance(err, OSError):
            raise err
        out.extra["short_io"] = err
    return out
