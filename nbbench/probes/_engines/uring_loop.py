"""The io_uring submit/reap loop in Python, one I/O at a time (:mod:`.uring` sets the ring up and
picks the loop): :func:`loop_batched` (``each``, ``batch``, ``sqpoll``).  The per-I/O work is inlined on
purpose: a function call per completion costs a measurable share of the ~4 µs of Python per I/O.  It
returns ``(done, error, qsum, qn, now)``; ``st`` = [tail, submitted, inflight] is the primed ring's state
it starts from (after an exception the caller's drain counts from the ring itself:
:func:`.uring_setup.drain`).
"""

from __future__ import annotations

from .uring_setup import (
    IORING_ENTER_GETEVENTS,
    IORING_ENTER_SQ_WAKEUP,
    IORING_SQ_NEED_WAKEUP,
    NR_IO_URING_ENTER,
    BusyWait,
    layout,
)

__all__ = ["loop_batched"]


def loop_batched(ring, raw, pc, it, meter, sub_t, bs, st, mode):
    """One ``io_uring_enter(to_submit=re-armed, min_complete=1)`` per pass; every completion
    found on the ring is reaped and its slot re-armed; the SQ tail is advanced once."""
    sq32, cq32, cqi32, cq64, sqe64 = ring.sq32, ring.cq32, ring.cqi32, ring.cq64, ring.sqe64
    sq_mask, cq_mask, sq_tail_i, sq_arr_i, cq_head_i, cq_tail_i, cqe64_i, cqe32_i = layout(ring)
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
    busy = BusyWait(raw, rfd, WAKE if sqpoll else GETEV)
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
            if busy.failed(inflight > tail - submitted, submitted):
                continue
            r = 0  # reap what completed, then submit again
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
        if now >= nev:
            go = meter.event(now, done, inflight) and go
            nev = meter.next_event
    return done, error, qsum, qn, now
