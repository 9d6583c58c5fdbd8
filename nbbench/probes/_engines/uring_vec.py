"""The io_uring loop vectorised (``NBBENCH_URING_MODE=vector``): each pass reaps every
completion on the ring and re-arms their slots with numpy over the ring's shared arrays —
the completion entries, the submission entries' offset field and the submission index
array are numpy views of the mapped memory — offsets taken in bulk from int64 chunks,
latencies appended to the meter in bulk; no Python object per I/O.  The re-armed entries
go to the kernel together with the wait for the next completion (one ``io_uring_enter``
per pass).

Its cost is per pass (about ten numpy calls), not per I/O: it pays where a pass reaps many
completions (fast devices, deep queues, the page cache) and loses where it reaps one or
two (a slow device at a modest depth) — see docs/guide/engines.md for what was measured.
"""

from __future__ import annotations

import os

from .uring_setup import IORING_ENTER_GETEVENTS, NR_IO_URING_ENTER, BusyWait, layout

__all__ = ["loop_vector", "loop_compiled", "compiled_ring"]


def compiled_ring():
    """The compiled ring loop (``_ioloop.ring_loop``), or None: not built, or ``NBBENCH_IO_LOOP=python``."""
    if os.environ.get("NBBENCH_IO_LOOP", "").lower() == "python":
        return None
    try:
        # the C extension, where pip built it
        from ._ioloop import ring_loop
    except ImportError:
        return None
    return ring_loop


def loop_compiled(ring_loop, ring, pc, offs, vstate, meter, sub_list, bs, st, each: bool):
    """The "each" / "batch" loop in C (``_ioloop.c``): Python runs only at the meter's events, when
    the offsets chunk runs low and to take the latencies — no Python per I/O."""
    import numpy as np

    sub = np.array(sub_list, dtype=np.int64)
    lats = np.empty(max(8192, 4 * ring.cq_entries), dtype=np.int64)
    sq_mask, cq_mask = layout(ring)[:2]
    fields = (ring.sq_tail, ring.sq_array, sq_mask, ring.cq_head, ring.cq_tail, cq_mask, ring.cqes)
    chunk, pos = vstate
    chunk = np.ascontiguousarray(chunk, dtype=np.int64)
    final = False
    state = [st[0], st[1], st[2], 1, 0]
    qsum = qn = 0
    error = None
    now = pc()
    busy = BusyWait(None, ring.fd)  # only its back-off: the C loop waits for completions itself
    while state[2] > 0:
        while not final and state[3] and len(chunk) - pos < state[2]:
            nxt = offs.next_array()
            if nxt is None:
                final = True
            else:
                chunk, pos = np.concatenate([chunk[pos:], nxt]), 0
        qsum += state[2]
        qn += 1
        pos, nlat, err, now, refused = ring_loop(
            ring.fd,
            ring.sq_mm,
            ring.cq_mm,
            ring.sqe_mm,
            fields,
            chunk,
            pos,
            final,
            sub,
            lats,
            meter.next_event,
            bs,
            state,
            each,
        )
        if nlat:
            meter.lats.frombytes(lats[:nlat].tobytes())
        if err is not None and error is None:
            error = err
        if refused:
            busy(False, state[1])
        if now >= meter.next_event and not meter.event(now, state[4], state[2]):
            state[3] = 0
    return state[4], error, qsum, qn, now


def loop_vector(ring, raw, pc, offs, vstate, meter, sub_list, bs, st):
    """Run until nothing is in flight from ``st`` = [tail, submitted, inflight], the primed ring's
    state; ``vstate`` = [the current offsets chunk, the position in it]."""
    import numpy as np

    sq32, cq32, rfd = ring.sq32, ring.cq32, ring.fd
    sq_mask, cq_mask, sq_tail_i, _, cq_head_i, cq_tail_i, _, _ = layout(ring)
    enter_nr, getevents = NR_IO_URING_ENTER, IORING_ENTER_GETEVENTS
    cqe_dt = np.dtype([("ud", "<u8"), ("res", "<i4"), ("flags", "<u4")])
    cqes = np.frombuffer(ring.cq_mm, dtype=cqe_dt, count=ring.cq_entries, offset=ring.cqes)
    sq_arr = np.frombuffer(ring.sq_mm, dtype=np.uint32, count=ring.sq_entries, offset=ring.sq_array)
    sqes = np.frombuffer(ring.sqe_mm, dtype=np.uint64, count=ring.sq_entries * 8).reshape(-1, 8)
    sqe_off = sqes[:, 1]
    ar = np.arange(max(ring.cq_entries, ring.sq_entries), dtype=np.int64)
    sub = np.array(sub_list, dtype=np.int64)
    lats = meter.lats
    chunk, pos = vstate
    empty = np.empty(0, dtype=np.int64)

    def take(k: int):
        nonlocal chunk, pos
        parts = []
        while k > 0:
            if pos >= len(chunk):
                nxt = offs.next_array()
                if nxt is None:
                    break
                chunk, pos = nxt, 0
            m = min(k, len(chunk) - pos)
            parts.append(chunk[pos : pos + m])
            pos += m
            k -= m
        return parts[0] if len(parts) == 1 else (np.concatenate(parts) if parts else empty)

    tail, submitted, inflight = st
    done = qsum = qn = 0
    error = None
    go = True
    now = pc()
    nev = meter.next_event
    busy = BusyWait(raw, rfd, getevents)
    try:
        while inflight:
            qsum += inflight
            qn += 1
            sq32[sq_tail_i] = tail & 0xFFFFFFFF
            r = raw(enter_nr, rfd, tail - submitted, 1, getevents, None, 0)
            if r < 0:
                if busy.failed(inflight > tail - submitted, submitted):
                    continue
                r = 0  # reap what completed, then submit again
            submitted += r
            now = pc()
            head = cq32[cq_head_i]
            ctail = cq32[cq_tail_i]
            n = (ctail - head) & 0xFFFFFFFF
            if n:
                ent = cqes[(ar[:n] + (head & cq_mask)) & cq_mask]
                cq32[cq_head_i] = ctail
                slots = ent["ud"].astype(np.intp)
                res = ent["res"]
                lats.frombytes((now - sub[slots]).tobytes())
                ok = res == bs
                if ok.all():
                    done += n
                else:
                    bad = res[~ok]
                    if error is None:
                        error = int(bad[0])
                    go = False
                    done += n - len(bad)
                    inflight -= len(bad)
                    slots = slots[ok]
                if go:
                    o = take(len(slots))
                    m = len(o)
                    if m < len(slots):  # the offsets ran out: those slots retire
                        go = False
                        inflight -= len(slots) - m
                        slots = slots[:m]
                    if m:
                        sqe_off[slots] = o
                        sq_arr[(ar[:m] + tail) & sq_mask] = slots
                        tail += m
                        sub[slots] = now
                else:
                    inflight -= len(slots)
            if now >= nev:
                go = meter.event(now, done, inflight) and go
                nev = meter.next_event
    finally:
        del cqes, sq_arr, sqes, sqe_off  # the ring's memory is unmapped after this: no view may stay
    return done, error, qsum, qn, now
