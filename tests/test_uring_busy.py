"""The Python io_uring loops when ``io_uring_enter`` refuses a submission (EBUSY / EAGAIN: the
completion queue full): they reap before submitting again, as the C loop does, instead of
retrying for ever.  No kernel ring is needed: a fake ring (anonymous mappings with the kernel's
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
    ``min_complete`` needs at its end).  While the ring holds completions not yet reaped, a
    submission is refused (EBUSY, then EAGAIN, in turn) as a full completion queue refuses it, in
    the first ``episodes`` runs of refusals: a loop that retries without reaping is refused for
    ever (``spun`` after 1,000 refusals with no completion reaped between them, then let go)."""

    def __init__(self, episodes: int = 6, raise_at: int = 0):
        self.calls, self.raise_at, self.refusals, self.refusals_before_raise = 0, raise_at, 0, -1
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
        if self.calls == self.raise_at:  # the loop stops here with I/Os in flight: the caller's drain takes over
            self.refusals_before_raise = self.refusals
            raise RuntimeError("stopped")
        self._post()
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


@pytest.mark.parametrize("mode", ["each", "batch", "single", "vector"])
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


def test_the_drain_after_an_error_waits_and_reaps_when_refused(tmp_path, monkeypatch):
    """An exception with I/Os in flight: the drain waits for them even when the kernel refuses
    its submission (it used to give up, releasing buffers the kernel still had)."""
    kernel = FakeKernel(raise_at=3)
    with pytest.raises(RuntimeError, match="stopped"):
        _run(tmp_path, monkeypatch, "batch", kernel)
    assert kernel.refusals > kernel.refusals_before_raise > 0  # the loop was refused, then the drain too
    n = len(kernel.offsets)
    assert n > 0 and kernel.ring.cq_at_close == (n, n) and not kernel.pending and not kernel.spun
