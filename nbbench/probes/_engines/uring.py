"""io_uring driven from Python through raw syscalls (ctypes), no liburing needed.

Why: a thread pool of ``os.preadv`` pays a thread switch and the GIL per I/O and
reaches ~0.86 of fio at QD32.  Here one thread keeps the queue full with fio's own
pattern (``NBBENCH_URING_MODE=each``, the default with O_DIRECT): each re-armed entry is submitted
with its own ``io_uring_enter(1, 0, 0)`` — no GETEVENTS, so the kernel does not run
completion work on every call — then one ``io_uring_enter(0, 1, GETEVENTS)`` waits for
at least one completion and every completion on the ring is reaped in one pass.  The
ring is set up as fio sets it up (COOP_TASKRUN | SINGLE_ISSUER | DEFER_TASKRUN where
the kernel has them).  The submission entries are filled once (opcode, fd, buffer,
length, slot number); per I/O only the offset is written and the slot index put on
the ring — a handful of memoryview stores.  An I/O's latency runs from re-arming its
slot to reaping it (a few µs before the submit call: overstated, never understated).

What was measured (RND4K QD32 direct, builtin ÷ fio, 8 interleaved pairs, quiet
machine): the earlier loop that flushed completions on every submit 0.87 (11.8 µs of
kernel time per I/O against fio's 4.1); submitting each reaped batch in one call
(``batch``) 0.79–0.86 — this virtio disk serves bursts worse than a steady stream;
SQPOLL (``sqpoll``) 0.84, its kernel thread burning a core of two; this loop 0.96 on
one ring of 32 and 0.98 over two rings of 16; two later full bench runs gave one ring
0.97 both times and two rings 0.93-0.94, so one ring serves QD32 and only deeper queues
are split over rings of 32 (``nbbench.probes._engines.builtin.ring_count``).  Other loops stay selectable through
``NBBENCH_URING_MODE=batch|sqpoll|single|vector``; ``io_path`` names the one that ran.
Where ``pip install`` built the C extension, ``each`` and ``batch`` run in C
(:func:`.uring_vec.loop_compiled`, ``_ioloop.ring_loop``: the same ring, no Python per I/O);
without it, buffered I/O defaults to ``vector`` (:mod:`.uring_vec`: reaping and re-arming
with numpy over the ring's shared arrays), as the page cache completes a whole pass at once.
Registered buffers and file (``io_uring_register``) spare the kernel the page pinning
and file lookup per I/O.
Where io_uring is missing or blocked (old kernels, seccomp in some container
runtimes: ENOSYS / EPERM), :func:`available` says so and the caller falls back
to threads.  x86-64 and arm64 use the same syscall numbers (425, 426).
"""

from __future__ import annotations

import ctypes
import errno
import mmap
import os
import time

from .job import JobOutput, JobSpec, Meter, Offsets
from .sync import _is_direct, aligned_buffers

__all__ = ["available", "run_uring", "Ring"]

NR_IO_URING_SETUP = 425
NR_IO_URING_ENTER = 426
IORING_ENTER_GETEVENTS = 1
IORING_FEAT_SINGLE_MMAP = 1
IORING_OFF_SQ_RING = 0
IORING_OFF_CQ_RING = 0x8000000
IORING_OFF_SQES = 0x10000000
IORING_SETUP_COOP_TASKRUN = 1 << 8
IORING_SETUP_SINGLE_ISSUER = 1 << 12
IORING_SETUP_DEFER_TASKRUN = 1 << 13
IORING_OP_READ_FIXED = 4
IORING_OP_WRITE_FIXED = 5
IOSQE_FIXED_FILE = 1
NR_IO_URING_REGISTER = 427
IORING_REGISTER_BUFFERS = 0
IORING_REGISTER_FILES = 2
IORING_OP_READ = 22
IORING_OP_WRITE = 23
IORING_SETUP_SQPOLL = 1 << 1
IORING_ENTER_SQ_WAKEUP = 2
IORING_SQ_NEED_WAKEUP = 1

_libc = None
_status: tuple[bool, str] | None = None


_enter7 = None


def _syscall():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
    return _libc.syscall


def _enter_fn():
    """``syscall`` with a fixed 7-long prototype: plain ints convert without building
    ctypes objects per call (~0.5 µs saved per io_uring_enter)."""
    global _enter7
    if _enter7 is None:
        _syscall()
        proto = ctypes.CFUNCTYPE(ctypes.c_long, ctypes.c_long, ctypes.c_long, ctypes.c_long, ctypes.c_long,
                                 ctypes.c_long, ctypes.c_void_p, ctypes.c_long, use_errno=True)
        _enter7 = proto(("syscall", _libc))
    return _enter7


class Ring:
    """A submission/completion ring pair of ``entries`` slots, mapped into Python."""

    def __init__(self, entries: int, sqpoll: bool = False):
        sc = _syscall()
        self._enter = sc
        # like fio: no IPIs for completions, task work deferred until we reap
        # (COOP_TASKRUN | SINGLE_ISSUER | DEFER_TASKRUN, kernel 6.1+); plain on older kernels.
        # sqpoll: a kernel thread submits (DEFER_TASKRUN does not combine with it).
        choices = ((IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
                    IORING_SETUP_COOP_TASKRUN, 0) if not sqpoll else
                   (IORING_SETUP_SQPOLL | IORING_SETUP_SINGLE_ISSUER, IORING_SETUP_SQPOLL))
        for setup_flags in choices:
            params = (ctypes.c_uint32 * 30)()
            params[2] = setup_flags
            if sqpoll:
                params[4] = 50  # sq_thread_idle, ms
            fd = sc(ctypes.c_long(NR_IO_URING_SETUP), ctypes.c_long(entries), ctypes.byref(params))
            if fd >= 0:
                break
            e = ctypes.get_errno()
            if e != errno.EINVAL:
                raise OSError(e, os.strerror(e))
        else:
            raise OSError(e, os.strerror(e))
        self.setup_flags = setup_flags
        self.fd = int(fd)
        p = list(params)
        self.sq_entries, self.cq_entries, _, _, _, features = p[0:6]
        sq_off = p[10:20]
        cq_off = p[20:30]
        self.sq_head, self.sq_tail, self.sq_mask_off, _, self.sq_flags, _, self.sq_array = sq_off[:7]
        self.cq_head, self.cq_tail, self.cq_mask_off, _, _, self.cqes = cq_off[:6]
        page = mmap.PAGESIZE
        sq_size = -(-(self.sq_array + self.sq_entries * 4) // page) * page
        cq_size = -(-(self.cqes + self.cq_entries * 16) // page) * page
        flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
        prot = mmap.PROT_READ | mmap.PROT_WRITE
        try:
            if features & IORING_FEAT_SINGLE_MMAP:
                self.sq_mm = mmap.mmap(self.fd, max(sq_size, cq_size), flags, prot, offset=IORING_OFF_SQ_RING)
                self.cq_mm = self.sq_mm
            else:
                self.sq_mm = mmap.mmap(self.fd, sq_size, flags, prot, offset=IORING_OFF_SQ_RING)
                self.cq_mm = mmap.mmap(self.fd, cq_size, flags, prot, offset=IORING_OFF_CQ_RING)
            self.sqe_mm = mmap.mmap(self.fd, self.sq_entries * 64, flags, prot, offset=IORING_OFF_SQES)
        except BaseException:
            os.close(self.fd)
            raise
        self.sq32 = memoryview(self.sq_mm).cast("I")
        self.cq32 = memoryview(self.cq_mm).cast("I")
        self.cqi32 = memoryview(self.cq_mm).cast("i")
        self.cq64 = memoryview(self.cq_mm).cast("Q")
        self.sqe8 = memoryview(self.sqe_mm)
        self.sqe32 = self.sqe8.cast("I")
        self.sqe64 = self.sqe8.cast("Q")

    def enter(self, to_submit: int, min_complete: int) -> int:
        r = self._enter(ctypes.c_long(NR_IO_URING_ENTER), ctypes.c_long(self.fd), ctypes.c_long(to_submit),
                        ctypes.c_long(min_complete), ctypes.c_long(IORING_ENTER_GETEVENTS),
                        ctypes.c_long(0), ctypes.c_long(0))
        if r < 0:
            e = ctypes.get_errno()
            raise OSError(e, os.strerror(e))
        return int(r)

    def close(self) -> None:
        for v in (self.sq32, self.cq32, self.cqi32, self.cq64, self.sqe32, self.sqe64, self.sqe8):
            v.release()
        for m in {id(x): x for x in (self.sq_mm, self.cq_mm, self.sqe_mm)}.values():
            m.close()
        os.close(self.fd)


def available() -> tuple[bool, str]:
    """(True, '') when io_uring works here, else (False, why)."""
    global _status
    if _status is None:
        if not hasattr(os, "preadv") or os.uname().sysname != "Linux":
            _status = (False, "io_uring needs Linux")
        else:
            try:
                Ring(4).close()
                _status = (True, "")
            except OSError as exc:
                why = {errno.ENOSYS: "not in this kernel", errno.EPERM: "blocked (seccomp or io_uring_disabled)"}
                _status = (False, f"io_uring unavailable: {why.get(exc.errno, exc.strerror)}")
            except Exception as exc:  # noqa: BLE001 - ctypes oddities: fall back
                _status = (False, f"io_uring unavailable: {exc}")
    return _status


class _IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


def _iovecs(base: int, bs: int, n: int):
    arr = (_IoVec * n)()
    for i in range(n):
        arr[i].base = base + i * bs
        arr[i].len = bs
    return arr


def _register(ring: "Ring", opcode: int, arg, nr: int) -> bool:
    if os.environ.get("NBBENCH_URING_NO_REGISTER"):
        return False
    r = _syscall()(ctypes.c_long(NR_IO_URING_REGISTER), ctypes.c_long(ring.fd), ctypes.c_long(opcode),
                   ctypes.cast(arg, ctypes.c_void_p), ctypes.c_long(nr))
    return r >= 0


def run_uring(spec: JobSpec) -> JobOutput:
    """Keep ``spec.qd`` I/Os in flight with batched submission and completion reaping."""
    qd = max(1, spec.qd)
    entries = 1
    while entries < qd:
        entries <<= 1
    # "each" (default): fio's pattern, one io_uring_enter per re-armed entry, one wait per reaped batch;
    # "batch": re-armed entries submitted together with the wait; "sqpoll": a kernel thread submits;
    # "single": the previous loop (one entry per enter, completions flushed on every call)
    # default: "each" (fio's pattern, measured best against fio on a real device), in C where the extension
    # was built (uring_vec.loop_compiled: 5.5 µs of CPU per O_DIRECT I/O against 7.8 in Python, 1.7 against
    # 3.7 on the page cache); without it, buffered I/O takes "vector", where the page cache completes a pass's
    # I/Os at once (1.7 µs against 3.7 for the Python "each")
    from .uring_vec import compiled_ring

    ring_c = compiled_ring()
    mode = os.environ.get("NBBENCH_URING_MODE", "") or ("each" if ring_c or _is_direct(spec.fd) else "vector")
    if mode not in ("each", "batch", "sqpoll", "single", "vector"):
        raise ValueError(f"NBBENCH_URING_MODE={mode!r}: use each, batch, sqpoll, single or vector")
    compiled = ring_c if mode in ("each", "batch") else None
    ring = None
    if mode == "sqpoll":
        try:
            ring = Ring(entries, sqpoll=True)
        except OSError:
            mode = "batch"  # SQPOLL not permitted here: the batched loop instead
    if ring is None:
        ring = Ring(entries)
    write = spec.op == "write"
    bs = spec.bs
    pool = aligned_buffers(qd, bs, fill_random=write, buffers=spec.buffers)
    views = pool.views
    anchor = ctypes.c_char.from_buffer(views[0])
    base = ctypes.addressof(anchor)  # the slots are contiguous from here
    # Registered buffers and file: the kernel pins the pages and looks the file up once,
    # not per I/O (the largest per-I/O kernel costs of small O_DIRECT reads).  Optional:
    # without them (RLIMIT_MEMLOCK, old kernels) plain READ/WRITE is used.
    fixed_bufs = _register(ring, IORING_REGISTER_BUFFERS, _iovecs(base, bs, qd), qd)
    fixed_file = _register(ring, IORING_REGISTER_FILES, (ctypes.c_int32 * 1)(spec.fd), 1)
    extras = [x for x, on in (("registered buffers", fixed_bufs), ("registered file", fixed_file)) if on]
    how = {"each": ", one submit per I/O, completions reaped in batches",
           "single": ", one submit per I/O, completions flushed per submit",
           "batch": ", re-armed I/Os submitted in batches",
           "sqpoll": ", SQPOLL kernel submission thread",
           "vector": ", completions reaped and slots re-armed with numpy, re-armed I/Os submitted in batches"}[mode]
    out = JobOutput(io_path=f"io_uring ({'compiled loop' if compiled is not None else 'ctypes syscalls'}{how}, "
                    f"{qd} in flight"
                    + (", " + ", ".join(extras) if extras else "") + ")")
    pool.record(out.extra)
    sq32, cq32, cqi32, cq64 = ring.sq32, ring.cq32, ring.cqi32, ring.cq64
    sqe8, sqe32, sqe64 = ring.sqe8, ring.sqe32, ring.sqe64
    if fixed_bufs:
        opcode = IORING_OP_WRITE_FIXED if write else IORING_OP_READ_FIXED
    else:
        opcode = IORING_OP_WRITE if write else IORING_OP_READ
    for s in range(qd):
        sqe8[s * 64:(s + 1) * 64] = bytes(64)
        sqe8[s * 64] = opcode
        if fixed_file:
            sqe8[s * 64 + 1] = IOSQE_FIXED_FILE
            sqe32[s * 16 + 1] = 0
        else:
            sqe32[s * 16 + 1] = spec.fd
        sqe64[s * 8 + 2] = base + s * bs
        sqe32[s * 16 + 6] = bs
        sqe64[s * 8 + 4] = s
        if fixed_bufs:
            sqe8[s * 64 + 40:s * 64 + 42] = s.to_bytes(2, "little")  # buf_index
    sq_mask = sq32[ring.sq_mask_off // 4]
    cq_mask = cq32[ring.cq_mask_off // 4]
    sq_tail_i = ring.sq_tail // 4
    sq_arr_i = ring.sq_array // 4
    cq_head_i = ring.cq_head // 4
    cq_tail_i = ring.cq_tail // 4
    cqe64_i = ring.cqes // 8
    cqe32_i = ring.cqes // 4 + 2
    raw = _enter_fn()
    rfd = ring.fd

    def enter(n: int, wait: int) -> int:
        r = raw(NR_IO_URING_ENTER, rfd, n, wait, IORING_ENTER_GETEVENTS, None, 0)
        if r < 0:
            e = ctypes.get_errno()
            if e == errno.EINTR:
                raise InterruptedError(e, os.strerror(e))
            raise OSError(e, os.strerror(e))
        return r
    pc = time.perf_counter_ns
    vector = mode == "vector"
    offs = Offsets(spec, arrays=vector or compiled is not None)
    if vector or compiled is not None:   # the first qd offsets prime the ring; the loop goes on from the same chunk
        first = offs.next_array()
        first = first if first is not None else []
        it = iter(first[:qd].tolist())
        vstate = [first, min(qd, len(first))]
    else:
        it = offs.iter
    meter = Meter(spec, out, offs)
    app = meter.lats.append
    sub_t = [0] * qd
    tail = sq32[sq_tail_i]
    submitted = tail
    inflight = 0
    done = 0
    error = None
    go = True
    now = pc()
    for s in range(qd):
        off = next(it, None)
        if off is None:
            break
        sqe64[s * 8 + 1] = off
        sq32[sq_arr_i + (tail & sq_mask)] = s
        tail += 1
        sub_t[s] = now
        inflight += 1
    qd_max = inflight
    nev = meter.next_event
    batch = int(os.environ.get("NBBENCH_URING_BATCH", "1"))
    qsum = 0
    qn = 0
    try:
        if compiled is not None:
            from .uring_vec import loop_compiled

            st = [tail, submitted, inflight]
            try:
                done, error, qsum, qn, now = loop_compiled(compiled, ring, pc, offs, vstate, meter, sub_t, bs, st,
                                                           sq_mask, cq_mask, mode == "each")
            finally:
                tail, submitted, inflight = st
        elif vector:
            from .uring_vec import loop_vector

            st = [tail, submitted, inflight]
            try:
                done, error, qsum, qn, now = loop_vector(
                    ring, raw, pc, offs, vstate, meter, sub_t, bs, st, sq_mask, cq_mask, sq_tail_i, cq_head_i,
                    cq_tail_i, NR_IO_URING_ENTER, IORING_ENTER_GETEVENTS)
            finally:
                tail, submitted, inflight = st
        elif mode != "single":
            st = [tail, submitted, inflight]
            try:
                done, error, qsum, qn, now = _loop_batched(
                    ring, mode, raw, pc, it, meter, sub_t, bs, st, sq_mask, cq_mask,
                    sq_tail_i, sq_arr_i, cq_head_i, cq_tail_i, cqe64_i, cqe32_i)
            finally:
                tail, submitted, inflight = st  # what the drain below must wait for
        while mode == "single" and inflight:
            qsum += inflight
            qn += 1
            # Submit one entry per call and reap after each, like fio: a batch submitted in
            # one call keeps the completions that arrive meanwhile waiting to be re-armed
            # (measured here: 11 per call gave 0.8 of fio at QD32, 1 per call 0.98).
            # min_complete=0 flushes completions without sleeping; sleep only when all
            # re-armed entries are in the kernel.
            pend = tail - submitted
            if pend > batch:
                sq32[sq_tail_i] = (submitted + batch) & 0xFFFFFFFF
                r = raw(NR_IO_URING_ENTER, rfd, batch, 0, IORING_ENTER_GETEVENTS, None, 0)
            else:
                sq32[sq_tail_i] = tail & 0xFFFFFFFF
                r = raw(NR_IO_URING_ENTER, rfd, pend, 1, IORING_ENTER_GETEVENTS, None, 0)
            if r < 0:
                e = ctypes.get_errno()
                if e in (errno.EINTR, errno.EAGAIN, errno.EBUSY):
                    continue
                raise OSError(e, os.strerror(e))
            submitted += r
            now = pc()
            head = cq32[cq_head_i]
            ctail = cq32[cq_tail_i]
            while head != ctail:
                i = head & cq_mask
                s = cq64[cqe64_i + 2 * i]
                res = cqi32[cqe32_i + 4 * i]
                head += 1
                app(now - sub_t[s])
                if res != bs:
                    if error is None:
                        error = res
                    go = False
                else:
                    done += 1
                if go:
                    off = next(it, None)
                    if off is not None:
                        sqe64[s * 8 + 1] = off
                        sq32[sq_arr_i + (tail & sq_mask)] = s
                        tail += 1
                        sub_t[s] = now
                        continue
                inflight -= 1
            cq32[cq_head_i] = head & 0xFFFFFFFF
            if now >= nev:
                go = meter.event(now, done, inflight) and go
                nev = meter.next_event
        meter.finish(now, done)
        if write and spec.fsync_end and not out.interrupted:
            os.fdatasync(spec.fd)
            meter.out.elapsed_s = (pc() - meter.m0) / 1e9
        out.qd_max = qd_max
        out.qd_mean = qsum / qn if qn else float(qd_max)
    finally:
        # nothing is in flight here unless an exception escaped; wait for the rest then
        while inflight > 0:
            try:
                sq32[sq_tail_i] = tail & 0xFFFFFFFF
                if mode == "sqpoll":
                    raw(NR_IO_URING_ENTER, rfd, 0, 1, IORING_ENTER_GETEVENTS | IORING_ENTER_SQ_WAKEUP, None, 0)
                else:
                    submitted += enter(tail - submitted, 1)
                head = cq32[cq_head_i]
                ctail = cq32[cq_tail_i]
                inflight -= (ctail - head) & 0xFFFFFFFF
                cq32[cq_head_i] = ctail
            except InterruptedError:
                continue
            except OSError:
                break
        del anchor
        pool.release()
        ring.close()
    if error is not None:
        if error < 0:
            raise OSError(-error, os.strerror(-error))
        out.extra["short_io"] = {"bytes": error}
    return out


def _loop_batched(ring, mode, raw, pc, it, meter, sub_t, bs, st, sq_mask, cq_mask,
                  sq_tail_i, sq_arr_i, cq_head_i, cq_tail_i, cqe64_i, cqe32_i):
    """One ``io_uring_enter(to_submit=re-armed, min_complete=1)`` per pass; every completion
    found on the ring is reaped and its slot re-armed; the SQ tail is advanced once."""
    sq32, cq32, cqi32, cq64, sqe64 = ring.sq32, ring.cq32, ring.cqi32, ring.cq64, ring.sqe64
    rfd = ring.fd
    flags_i = ring.sq_flags // 4
    tail, submitted, inflight = st
    sqpoll = mode == "sqpoll"
    each = mode == "each"
    app = meter.lats.append
    nx = it.__next__
    nev = meter.next_event
    done = 0
    error = None
    go = True
    qsum = 0
    qn = 0
    now = pc()
    ENTER = NR_IO_URING_ENTER
    GETEV = IORING_ENTER_GETEVENTS
    WAKE = IORING_ENTER_GETEVENTS | IORING_ENTER_SQ_WAKEUP
    while inflight:
        qsum += inflight
        qn += 1
        sq32[sq_tail_i] = tail & 0xFFFFFFFF
        if sqpoll:
            submitted = tail
            if cq32[cq_head_i] == cq32[cq_tail_i]:
                r = raw(ENTER, rfd, 0, 1, WAKE if sq32[flags_i] & IORING_SQ_NEED_WAKEUP else GETEV, None, 0)
            elif sq32[flags_i] & IORING_SQ_NEED_WAKEUP:
                r = raw(ENTER, rfd, 0, 0, WAKE, None, 0)
            else:
                r = 0
        else:
            r = raw(ENTER, rfd, tail - submitted, 1, GETEV, None, 0)
        if r < 0:
            e = ctypes.get_errno()
            if e in (errno.EINTR, errno.EAGAIN, errno.EBUSY):
                continue
            raise OSError(e, os.strerror(e))
        if not sqpoll:
            submitted += r
        now = pc()
        head = cq32[cq_head_i]
        ctail = cq32[cq_tail_i]
        while head != ctail:
            i = head & cq_mask
            s = cq64[cqe64_i + 2 * i]
            res = cqi32[cqe32_i + 4 * i]
            head += 1
            app(now - sub_t[s])
            if res != bs:
                if error is None:
                    error = res
                go = False
                inflight -= 1
                continue
            done += 1
            if go:
                try:
                    off = nx()
                except StopIteration:
                    go = False
                    inflight -= 1
                    continue
                sqe64[s * 8 + 1] = off
                sq32[sq_arr_i + (tail & sq_mask)] = s
                tail += 1
                sub_t[s] = now
                if each:
                    sq32[sq_tail_i] = tail & 0xFFFFFFFF
                    r = raw(ENTER, rfd, 1, 0, 0, None, 0)
                    if r > 0:
                        submitted += r
            else:
                inflight -= 1
        cq32[cq_head_i] = head & 0xFFFFFFFF
        st[0] = tail
        st[1] = submitted
        st[2] = inflight
        if now >= nev:
            go = meter.event(now, done, inflight) and go
            nev = meter.next_event
    return done, error, qsum, qn, now
