"""The io_uring kernel interface, through raw syscalls (ctypes; no liburing needed): the
syscall numbers and flags, :class:`Ring` (set up as fio sets it up, its submission and
completion rings and entries mapped into Python as memoryviews), :func:`available`,
:func:`arm` (the submission entries filled once, buffers and file registered),
:class:`BusyWait` (what every submit/reap loop does when the kernel refuses a submission) and
:func:`drain` (the in-flight I/Os reaped after a loop stopped).
The loops that drive a ring are in :mod:`.uring` and the modules it names.

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

from ...units import format_duration_ns

__all__ = ["available", "Ring", "arm", "enter_fn", "BusyWait", "drain", "BUSY"]

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


def enter_fn():
    """``syscall`` with a fixed 7-long prototype: plain ints convert without building
    ctypes objects per call (~0.5 µs saved per io_uring_enter)."""
    global _enter7
    if _enter7 is None:
        _syscall()
        proto = ctypes.CFUNCTYPE(
            ctypes.c_long,
            ctypes.c_long,
            ctypes.c_long,
            ctypes.c_long,
            ctypes.c_long,
            ctypes.c_long,
            ctypes.c_void_p,
            ctypes.c_long,
            use_errno=True,
        )
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
        choices = (
            (
                IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
                IORING_SETUP_COOP_TASKRUN,
                0,
            )
            if not sqpoll
            else (IORING_SETUP_SQPOLL | IORING_SETUP_SINGLE_ISSUER, IORING_SETUP_SQPOLL)
        )
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
        r = self._enter(
            ctypes.c_long(NR_IO_URING_ENTER),
            ctypes.c_long(self.fd),
            ctypes.c_long(to_submit),
            ctypes.c_long(min_complete),
            ctypes.c_long(IORING_ENTER_GETEVENTS),
            ctypes.c_long(0),
            ctypes.c_long(0),
        )
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


def _register(ring: Ring, opcode: int, arg, nr: int) -> bool:
    if os.environ.get("NBBENCH_URING_NO_REGISTER"):
        return False
    r = _syscall()(
        ctypes.c_long(NR_IO_URING_REGISTER),
        ctypes.c_long(ring.fd),
        ctypes.c_long(opcode),
        ctypes.cast(arg, ctypes.c_void_p),
        ctypes.c_long(nr),
    )
    return r >= 0


def arm(ring: Ring, fd: int, write: bool, base: int, bs: int, n: int) -> list[str]:
    """Fill the first ``n`` submission entries once (opcode, file, buffer ``base + slot * bs``, length,
    the slot number as user data): per I/O the loops write only the offset.  Returns what was
    registered ("registered buffers", "registered file")."""
    # Registered buffers and file: the kernel pins the pages and looks the file up once,
    # not per I/O (the largest per-I/O kernel costs of small O_DIRECT reads).  Optional:
    # without them (RLIMIT_MEMLOCK, old kernels) plain READ/WRITE is used.
    fixed_bufs = _register(ring, IORING_REGISTER_BUFFERS, _iovecs(base, bs, n), n)
    fixed_file = _register(ring, IORING_REGISTER_FILES, (ctypes.c_int32 * 1)(fd), 1)
    sqe8, sqe32, sqe64 = ring.sqe8, ring.sqe32, ring.sqe64
    if fixed_bufs:
        opcode = IORING_OP_WRITE_FIXED if write else IORING_OP_READ_FIXED
    else:
        opcode = IORING_OP_WRITE if write else IORING_OP_READ
    for s in range(n):
        sqe8[s * 64 : (s + 1) * 64] = bytes(64)
        sqe8[s * 64] = opcode
        if fixed_file:
            sqe8[s * 64 + 1] = IOSQE_FIXED_FILE
            sqe32[s * 16 + 1] = 0
        else:
            sqe32[s * 16 + 1] = fd
        sqe64[s * 8 + 2] = base + s * bs
        sqe32[s * 16 + 6] = bs
        sqe64[s * 8 + 4] = s
        if fixed_bufs:
            sqe8[s * 64 + 40 : s * 64 + 42] = s.to_bytes(2, "little")  # buf_index
    return [x for x, on in (("registered buffers", fixed_bufs), ("registered file", fixed_file)) if on]


#: the errnos of an ``io_uring_enter`` that could not take the submission now
BUSY = (errno.EAGAIN, errno.EBUSY)
#: refused with nothing of ours in the kernel: back off from this sleep, doubling to the most, and
#: give up after REFUSED_LIMIT_S of refusals with no submission taken between them
BACKOFF_MIN_S, BACKOFF_MAX_S, REFUSED_LIMIT_S = 50e-6, 4e-3, 10.0
#: how long :func:`drain` waits for the kernel to complete what it took
DRAIN_LIMIT_S = 10.0
_sleep, _clock = time.sleep, time.monotonic  # module names: the tests put a fake clock here


def layout(ring) -> tuple[int, ...]:
    """(sq_mask, cq_mask, sq_tail_i, sq_arr_i, cq_head_i, cq_tail_i, cqe64_i, cqe32_i): the ring's masks,
    and its fields as indices into its 32- and 64-bit views, which every loop reads per I/O."""
    r = ring
    sq_mask, cq_mask = r.sq32[r.sq_mask_off // 4], r.cq32[r.cq_mask_off // 4]
    return (
        sq_mask,
        cq_mask,
        r.sq_tail // 4,
        r.sq_array // 4,
        r.cq_head // 4,
        r.cq_tail // 4,
        r.cqes // 8,
        r.cqes // 4 + 2,
    )


class BusyWait:
    """What every submit/reap loop does after ``io_uring_enter`` failed with EAGAIN or EBUSY (no
    memory for requests, or the completion queue full or overflowing): submitting again without
    consuming completions can spin for ever.  Called with ``in_kernel`` (I/Os of ours are in the
    kernel): wait for at least one without submitting (``to_submit=0, min_complete=1``,
    GETEVENTS, which also flushes an overflowed queue and runs deferred completion work); the
    caller then reaps every completion on the ring and submits again, as the C loop does
    (``_ioloop.c``).  Its result is not checked: a lasting error comes back from the next
    submission.  Without (nothing to wait for: the kernel is short of memory): sleep, 50 µs
    doubling to 4 ms, and raise OSError once the kernel has refused for ``REFUSED_LIMIT_S`` with
    no submission taken (``progress``, the loop's count of submitted entries, unchanged)."""

    def __init__(self, raw, rfd: int, flags: int = IORING_ENTER_GETEVENTS):
        self.raw, self.rfd, self.flags = raw, rfd, flags
        self.mark, self.t0, self.delay = None, 0.0, BACKOFF_MIN_S

    def failed(self, in_kernel: bool, progress: int) -> bool:
        """After ``io_uring_enter`` returned < 0: True for EINTR (enter again); EAGAIN / EBUSY: wait as
        :meth:`__call__` does and False (reap what completed, then submit again); any other error raises."""
        e = ctypes.get_errno()
        if e == errno.EINTR:
            return True
        if e not in BUSY:
            raise OSError(e, os.strerror(e))
        self(in_kernel, progress)
        return False

    def __call__(self, in_kernel: bool, progress: int) -> None:
        if in_kernel:
            self.raw(NR_IO_URING_ENTER, self.rfd, 0, 1, self.flags, None, 0)
            return
        now = _clock()
        if progress != self.mark:  # a submission was taken since the last refusal: start again
            self.mark, self.t0, self.delay = progress, now, BACKOFF_MIN_S
        elif now - self.t0 >= REFUSED_LIMIT_S:
            took = format_duration_ns((now - self.t0) * 1e9)
            raise OSError(errno.EAGAIN, f"the kernel refused io_uring submissions for {took} (EAGAIN): memory short?")
        else:
            self.delay = min(2 * self.delay, BACKOFF_MAX_S)
        _sleep(self.delay)


def drain(ring, raw, sqpoll: bool) -> bool:
    """After a loop stopped (an exception) with I/Os in flight: reap until every entry the kernel
    took has completed, or ``DRAIN_LIMIT_S`` passed (False: some are still in the kernel).

    The count comes from the ring, not from the loop's variables (an exception mid-pass leaves
    those stale): every entry the kernel took from the submission ring (its head; with SQPOLL,
    every entry published, the kernel thread takes them all) posts exactly one completion (no
    links, multishot or skipped completions here), so ``taken - cq_tail`` are still in the
    kernel once the completions on the ring are consumed.  Armed entries never submitted are
    withdrawn (the tail set back to the kernel's head) and nothing is submitted: no stale entry
    can reach the kernel.  The wait polls (``to_submit=0, min_complete=0``, GETEVENTS: posts
    deferred completions) with the busy back-off's sleeps, so a failing ``io_uring_enter`` or a
    device that never answers cannot hang the probe."""
    sq32, cq32 = ring.sq32, ring.cq32
    tail_i, cq_head_i, cq_tail_i = ring.sq_tail // 4, ring.cq_head // 4, ring.cq_tail // 4
    if sqpoll:
        taken = sq32[tail_i]
    else:
        taken = sq32[ring.sq_head // 4]
        sq32[tail_i] = taken
    flags = IORING_ENTER_GETEVENTS | (IORING_ENTER_SQ_WAKEUP if sqpoll else 0)
    delay, t0 = BACKOFF_MIN_S, _clock()
    while True:
        ctail = cq32[cq_tail_i]
        cq32[cq_head_i] = ctail
        if taken == ctail:
            return True
        if _clock() - t0 >= DRAIN_LIMIT_S:
            return False
        raw(NR_IO_URING_ENTER, ring.fd, 0, 0, flags, None, 0)  # an error: poll the ring until the deadline
        if cq32[cq_tail_i] == ctail:
            _sleep(delay)
            delay = min(2 * delay, BACKOFF_MAX_S)
