"""The Python io_uring loops when ``io_uring_enter`` refuses a submission (EBUSY / EAGAIN: the
completion queue full): they reap before submitting again, as the C loop does, instead of
retrying for ever; with nothing in flight (memory short) they back off, then fail.  The drain
after an exception reaps what the kernel took, submits nothing, and keeps the buffers where it
cannot.  No kernel ring is needed: a fake ring (anonymous mappings with the kernel's
layout) and a fake ``io_uring_enter`` stand in for the kernel."""

from __future__ import annotations

import ctypes
import errno
import mmap
import os

import pytest

from nbbench.probes._engines import uring, uring_setup
from nbbench.probes._engines.job import JobSpec

BS = 4096
REGION = 1 << 20


class FakeRing:
    """A ring of ``entries`` slots laid out as the kernel lays its rings out."""

    def __init__(self, entries: int, sqpoll: bool = False):
        self.fd = 1000 + entries
        self.sq_entries, self.cq_entries = entries, 2 * entries
        self.sq_head, self.sq_tail, self.sq_mask_off, self.sq_flags, self.sq_array = 0, 4, 8, 16, 64
        self.cq_head, self.cq_tail, self.cq_mask_off, self.cqes = 0, 4, 8, 64
        self.sq_mm = mmap.mmap(-1, 64 + 4 * entries)
        self.cq_mm = mmap.mmap(-1, 64 + 16 * self.cq_entries)
        self.sqe_mm = mmap.mmap(-1, 64 * entries)
        self.sq32 = memoryview(self.sq_mm).cast("I")
        self.cq32 = memoryview(self.cq_mm).cast("I")
        self.cqi32 = memoryview(self.cq_mm).cast("i")
        self.cq64 = memoryview(self.cq_mm).cast("Q")
        self.sqe8 = memoryview(self.sqe_mm)
        self.sqe32 = self.sqe8.cast("I")
        self.sqe64 = self.sqe8.cast("Q")
        self.sq32[2], self.cq32[2] = entries - 1, self.cq_entries - 1

    def close(self) -> None:
        self.cq_at_close = (self.cq32[self.cq_head // 4], self.cq32[self.cq_tail // 4])
        for v in (self.sq32, self.cq32, self.cqi32, self.cq64, self.sqe32, self.sqe64, self.sqe8):
            v.release()
        for m in (self.sq_mm, self.cq_mm, self.sqe_mm):
            m.close()


class FakeKernel:
    """``io_uring_enter`` on a :class:`FakeRing`: every I/O completes with ``BS`` bytes, its
    completion posted at the start of the next call (a GETEVENTS call posts as many as its
    ``min_complete`` needs at its end; after an error, one per call).  While the ring holds completions not yet
    reaped, a
    submission is refused (EBUSY, then EAGAIN, in turn) as a full completion queue refuses it, in
    the first ``episodes`` runs of refusals: a loop that retries without reaping is refused for
    ever (``spun`` after 1,000 refusals with no completion reaped between them, then let go)."""

    def __init__(
        self,
        episodes: int = 6,
        raise_at: int = 0,
        raise_on=None,
        short: int = 0,
        fail_at: int = 0,
        hang: bool = False,
        slow: bool = False,
    ):
        self.calls, self.raise_at, self.refusals, self.refusals_before_raise = 0, raise_at, 0, -1
        self.raise_on = raise_on  # (flags, n): raise at the n-th call with these flags
        self.short = short  # the first ``short`` submissions refused with EAGAIN (memory short, nothing in flight)
        self.fail_at, self.hang = fail_at, hang  # from call fail_at: EINVAL; hang: no completion after the error
        self.slow = slow  # one completion posted per call (a GETEVENTS wait still posts what it waits for)
        self.flag_calls: dict[int, int] = {}
        self.after: list[tuple[int, int]] = []  # (to_submit, min_complete) of the calls after the raise
        self.ring: FakeRing | None = None
        self.sq_head = 0  # the kernel's: the next submission entry it takes
        self.pending: list[int] = []
        self.offsets: list[int] = []
        self.episodes, self.refused, self.in_a_row, self.spun = episodes, 0, 0, False
        self.head_at_refusal = -1

    def _post(self, k: int | None = None) -> None:
        r = self.ring
        tail = r.cq32[r.cq_tail // 4]
        k = len(self.pending) if k is None else k
        for ud in self.pending[:k]:
            i = tail & (r.cq_entries - 1)
            r.cq64[r.cqes // 8 + 2 * i] = ud
            r.cqi32[r.cqes // 4 + 4 * i + 2] = BS
            tail += 1
        r.cq32[r.cq_tail // 4] = tail & 0xFFFFFFFF
        del self.pending[:k]

    def __call__(self, nr, fd, to_submit, min_complete, flags, sig, size):
        r = self.ring
        assert nr == uring_setup.NR_IO_URING_ENTER and fd == r.fd
        self.calls += 1
        self.flag_calls[flags] = self.flag_calls.get(flags, 0) + 1
        if self.refusals_before_raise >= 0:
            self.after.append((to_submit, min_complete))
        if self.calls == self.raise_at or (flags, self.flag_calls[flags]) == self.raise_on:
            self.refusals_before_raise = self.refusals  # the loop stops here with I/Os in flight: the drain takes over
            raise RuntimeError("stopped")
        if self.fail_at and self.calls >= self.fail_at:
            if self.calls == self.fail_at:
                self.refusals_before_raise = self.refusals
            if not self.hang:
                self._post(1)
            ctypes.set_errno(errno.EINVAL)
            return -1
        if to_submit and self.short:
            self.short -= 1
            self.refusals += 1
            ctypes.set_errno(errno.EAGAIN)
            return -1
        self._post(1 if self.slow or self.refusals_before_raise >= 0 else None)  # after the raise: one per call
        head = r.cq32[r.cq_head // 4]
        if head != self.head_at_refusal:  # the loop reaped since the last refusal
            self.in_a_row = 0
        unreaped = head != r.cq32[r.cq_tail // 4]
        if to_submit and unreaped and not self.spun and (self.in_a_row or self.refused < self.episodes):
            self.refused += self.in_a_row == 0
            self.refusals += 1
            self.in_a_row += 1
            self.head_at_refusal = head
            self.spun = self.in_a_row >= 1000
            ctypes.set_errno(errno.EBUSY if self.refused % 2 else errno.EAGAIN)
            return -1
        n = 0
        while n < to_submit and self.sq_head != r.sq32[r.sq_tail // 4]:
            slot = r.sq32[r.sq_array // 4 + (self.sq_head & (r.sq_entries - 1))]
            self.offsets.append(r.sqe64[slot * 8 + 1])
            self.pending.append(r.sqe64[slot * 8 + 4])
            self.sq_head += 1
            n += 1
        r.sq32[r.sq_head // 4] = self.sq_head & 0xFFFFFFFF  # the kernel publishes what it took
        if flags & uring_setup.IORING_ENTER_GETEVENTS:  # the wait ends at min_complete: the rest come later
            self._post(max(0, min_complete - ((r.cq32[r.cq_tail // 4] - r.cq32[r.cq_head // 4]) & 0xFFFFFFFF)))
        return n


def _run(tmp_path, monkeypatch, mode: str, kernel: FakeKernel):
    def ring(entries, sqpoll=False):
        kernel.ring = FakeRing(entries, sqpoll)
        return kernel.ring

    monkeypatch.setenv("NBBENCH_URING_MODE", mode)
    monkeypatch.setenv("NBBENCH_IO_LOOP", "python")
    monkeypatch.setenv("NBBENCH_URING_NO_REGISTER", "1")
    monkeypatch.setattr(uring, "Ring", ring)
    monkeypatch.setattr(uring_setup, "enter_fn", lambda: kernel)
    path = tmp_path / "data.bin"
    path.write_bytes(bytes(REGION))
    fd = os.open(path, os.O_RDONLY)
    try:
        return uring.run_uring(JobSpec(fd=fd, op="read", pattern="seq", bs=BS, qd=8, region=REGION, total=REGION))
    finally:
        os.close(fd)


@pytest.fixture
def clock(monkeypatch):
    """A fake clock for the back-off: each sleep advances it; ``slept`` lists the sleeps."""
    t = [0.0]
    slept: list[float] = []

    def sleep(s):
        slept.append(s)
        t[0] += s

    monkeypatch.setattr(uring_setup, "_sleep", sleep)
    monkeypatch.setattr(uring_setup, "_clock", lambda: t[0])
    return slept


@pytest.mark.parametrize("mode", ["each", "batch", "vector"])
def test_a_refused_submission_is_followed_by_reaping_not_a_spin(tmp_path, monkeypatch, mode):
    pytest.importorskip("numpy")
    kernel = FakeKernel()
    out = _run(tmp_path, monkeypatch, mode, kernel)
    assert not kernel.spun, "the loop retried a refused submission without reaping"
    assert kernel.refused == kernel.episodes  # the refusals did happen
    n = REGION // BS
    assert out.ios == n and out.bytes == REGION and out.hist.n == n and out.qd_max == 8
    assert sorted(kernel.offsets) == list(range(0, REGION, BS))  # each block read once
    assert kernel.ring.cq_at_close == (n, n) and not kernel.pending  # every completion reaped, none left


def _drained(kernel: FakeKernel) -> int:
    """Every entry the kernel took was reaped before the ring closed, none taken twice, and the
    drain submitted nothing; returns how many were taken."""
    n = len(kernel.offsets)
    assert n > 0 and kernel.ring.cq_at_close == (n, n) and not kernel.pending and not kernel.spun
    assert len(set(kernel.offsets)) == n  # no stale entry resubmitted
    assert all(k == 0 for k, _ in kernel.after)  # the drain only waits
    return n


def test_the_drain_after_an_error_reaps_what_the_kernel_took(tmp_path, monkeypatch):
    """An exception with I/Os in flight, after refused submissions: the drain waits for every
    I/O the kernel took (it used to give up when refused, releasing buffers the kernel still had)."""
    kernel = FakeKernel(raise_at=5)
    with pytest.raises(RuntimeError, match="stopped"):
        _run(tmp_path, monkeypatch, "batch", kernel)
    assert kernel.refusals_before_raise > 0
    _drained(kernel)
    assert kernel.after  # completions were still to come: the drain waited for them


@pytest.mark.parametrize("nth", [5, 17, 40])
def test_an_exception_mid_pass_in_each_mode_leaves_nothing_stale(tmp_path, monkeypatch, nth):
    """ "each" submits entry by entry inside a pass: stopped at its ``nth`` such submit (the pass's
    completions partly reaped and re-armed), the drain reaps exactly what was submitted."""
    kernel = FakeKernel(episodes=0, raise_on=(0, nth), slow=True)
    with pytest.raises(RuntimeError, match="stopped"):
        _run(tmp_path, monkeypatch, "each", kernel)
    assert _drained(kernel) == 8 + nth - 1  # the primed entries and every re-armed one submitted
    assert kernel.after  # completions were still to come: the drain waited for them


@pytest.mark.parametrize("mode", ["each", "batch", "vector"])
def test_refused_with_nothing_in_flight_backs_off(tmp_path, monkeypatch, clock, mode):
    """EAGAIN with none of ours in the kernel (memory short): the loop sleeps, longer each time,
    instead of resubmitting at once, and goes on once the kernel takes submissions again."""
    pytest.importorskip("numpy")
    kernel = FakeKernel(episodes=0, short=5)
    out = _run(tmp_path, monkeypatch, mode, kernel)
    assert out.ios == REGION // BS and kernel.refusals == 5
    assert len(clock) == 5 and clock == sorted(clock) and clock[-1] > clock[0] == uring_setup.BACKOFF_MIN_S


def test_refused_for_too_long_fails_in_one_line(tmp_path, monkeypatch, clock):
    kernel = FakeKernel(episodes=0, short=10**9)
    with pytest.raises(OSError, match=r"refused io_uring submissions for \d.* s \(EAGAIN\): memory short\?"):
        _run(tmp_path, monkeypatch, "batch", kernel)
    assert sum(clock) >= uring_setup.REFUSED_LIMIT_S and max(clock) == uring_setup.BACKOFF_MAX_S
    assert kernel.ring.cq_at_close == (0, 0) and kernel.offsets == []  # nothing was ever submitted


def test_the_drain_after_an_enter_error_polls_until_all_are_reaped(tmp_path, monkeypatch, clock):
    """io_uring_enter failing with another error (EINVAL) with I/Os in flight: the probe fails with it
    and the drain, its own calls failing too, polls the ring until every I/O completed; the buffers
    are released after the ring is closed."""
    released = []
    monkeypatch.setattr(uring, "_KEPT", [])
    kernel = FakeKernel(episodes=0, fail_at=6)
    real = uring.aligned_buffers

    def pool(*a, **k):
        p = real(*a, **k)
        rel = p.release
        p.release = lambda: (released.append(hasattr(kernel.ring, "cq_at_close")), rel())
        return p

    monkeypatch.setattr(uring, "aligned_buffers", pool)
    with pytest.raises(OSError, match="Invalid argument"):
        _run(tmp_path, monkeypatch, "batch", kernel)
    _drained(kernel)
    assert released == [True] and uring._KEPT == []


def test_a_drain_that_cannot_reap_closes_the_ring_and_keeps_the_buffers(tmp_path, monkeypatch, clock):
    """The kernel never completes what it took (and every io_uring_enter fails): the drain gives up
    after ``DRAIN_LIMIT_S``; the ring is closed and the buffers are kept, not unmapped under the I/Os."""
    monkeypatch.setattr(uring, "_KEPT", [])
    kernel = FakeKernel(episodes=0, fail_at=6, hang=True)
    with pytest.raises(OSError, match="Invalid argument"):
        _run(tmp_path, monkeypatch, "batch", kernel)
    head, tail = kernel.ring.cq_at_close
    assert head == tail and len(kernel.offsets) > tail  # closed with I/Os in the kernel
    assert sum(clock) >= uring_setup.DRAIN_LIMIT_S and max(clock) == uring_setup.BACKOFF_MAX_S
    assert len(uring._KEPT) == 1 and not uring._KEPT[0].mm.closed
    uring._KEPT[0].release()
