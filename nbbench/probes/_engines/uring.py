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
``NBBENCH_URING_MODE=batch|sqpoll|vector``; ``io_path`` names the one that ran.
Where ``pip install`` built the C extension, ``each`` and ``batch`` run in C
(:func:`.uring_vec.loop_compiled`, ``_ioloop.ring_loop``: the same ring, no Python per I/O);
without it, buffered I/O defaults to ``vector`` (:mod:`.uring_vec`: reaping and re-arming
with numpy over the ring's shared arrays), as the page cache completes a whole pass at once.
Registered buffers and file (``io_uring_register``) spare the kernel the page pinning
and file lookup per I/O.

Here: :func:`run_uring` (the loop chosen, the ring primed and drained); the ring itself, its
syscalls and :func:`.uring_setup.available` in :mod:`.uring_setup`; the Python per-I/O loops in
:mod:`.uring_loop`.
"""

from __future__ import annotations

import ctypes
import os
import time

from . import uring_setup
from .job import JobOutput, JobSpec, Meter, Offsets
from .sync import _is_direct, aligned_buffers
from .uring_loop import loop_batched
from .uring_setup import Ring, layout
from .uring_vec import compiled_ring, loop_compiled, loop_vector

__all__ = ["run_uring"]

#: buffer pools of rings closed with I/Os still in the kernel: kept mapped, see :func:`run_uring`
_KEPT: list = []


def run_uring(spec: JobSpec) -> JobOutput:
    """Keep ``spec.qd`` I/Os in flight with batched submission and completion reaping."""
    qd = max(1, spec.qd)
    entries = 1
    while entries < qd:
        entries <<= 1
    # "each" (default): fio's pattern, one io_uring_enter per re-armed entry, one wait per reaped batch;
    # "batch": re-armed entries submitted together with the wait; "sqpoll": a kernel thread submits;
    # default: "each" (fio's pattern, measured best against fio on a real device), in C where the extension
    # was built (uring_vec.loop_compiled: 5.5 µs of CPU per O_DIRECT I/O against 7.8 in Python, 1.7 against
    # 3.7 on the page cache); without it, buffered I/O takes "vector", where the page cache completes a pass's
    # I/Os at once (1.7 µs against 3.7 for the Python "each")
    ring_c = compiled_ring()
    mode = os.environ.get("NBBENCH_URING_MODE", "") or ("each" if ring_c or _is_direct(spec.fd) else "vector")
    if mode not in ("each", "batch", "sqpoll", "vector"):
        raise ValueError(f"NBBENCH_URING_MODE={mode!r}: use each, batch, sqpoll or vector")
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
    extras = uring_setup.arm(ring, spec.fd, write, base, bs, qd)
    how = {
        "each": ", one submit per I/O, completions reaped in batches",
        "batch": ", re-armed I/Os submitted in batches",
        "sqpoll": ", SQPOLL kernel submission thread",
        "vector": ", completions reaped and slots re-armed with numpy, re-armed I/Os submitted in batches",
    }[mode]
    out = JobOutput(
        io_path=f"io_uring ({'compiled loop' if compiled is not None else 'ctypes syscalls'}{how}, "
        f"{qd} in flight" + (", " + ", ".join(extras) if extras else "") + ")"
    )
    pool.record(out.extra)
    sq32, sqe64 = ring.sq32, ring.sqe64
    sq_mask, _, sq_tail_i, sq_arr_i, *_ = layout(ring)
    raw = uring_setup.enter_fn()
    pc = time.perf_counter_ns
    vector = mode == "vector"
    offs = Offsets(spec, arrays=vector or compiled is not None)
    if vector or compiled is not None:  # the first qd offsets prime the ring; the loop goes on from the same chunk
        first = offs.next_array()
        first = first if first is not None else []
        it = iter(first[:qd].tolist())
        vstate = [first, min(qd, len(first))]
    else:
        it = offs.iter
    meter = Meter(spec, out, offs)
    sub_t = [0] * qd
    tail = sq32[sq_tail_i]
    submitted = tail
    inflight = 0
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
    st = [tail, submitted, inflight]
    drained = False
    try:
        if compiled is not None:
            done, error, qsum, qn, now = loop_compiled(
                compiled, ring, pc, offs, vstate, meter, sub_t, bs, st, mode == "each"
            )
        elif vector:
            done, error, qsum, qn, now = loop_vector(ring, raw, pc, offs, vstate, meter, sub_t, bs, st)
        else:
            done, error, qsum, qn, now = loop_batched(ring, raw, pc, it, meter, sub_t, bs, st, mode)
        drained = True  # the loops return with nothing in flight
        meter.finish(now, done)
        if write and spec.fsync_end and not out.interrupted:
            os.fdatasync(spec.fd)
            meter.out.elapsed_s = (pc() - meter.m0) / 1e9
        out.qd_max = qd_max
        out.qd_mean = qsum / qn if qn else float(qd_max)
    finally:
        # an exception escaped a loop: wait (bounded) for what the kernel took from the ring
        drained = drained or uring_setup.drain(ring, raw, mode == "sqpoll")
        del anchor
        # The ring before the buffers: closing it has the kernel cancel what it still holds and drop
        # the registered buffers (their pages stay pinned until then, whatever happens to the mapping).
        # Closing does not wait, though (the kernel's teardown runs in a worker), and an I/O not on
        # registered buffers — a buffered read punted to an io-wq thread — copies into the process's
        # mapping: where some I/Os did not complete, the buffers are kept (mapped, never reused) rather
        # than unmapped under them.
        ring.close()
        if drained:
            pool.release()
        else:
            _KEPT.append(pool)
    if error is not None:
        if error < 0:
            raise OSError(-error, os.strerror(-error))
        out.extra["short_io"] = {"bytes": error}
    return out
