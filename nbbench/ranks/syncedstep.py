"""The loader's per-step meeting of the ranks: the compute step, then one tiny all_reduce (DDP's gradient
all-reduce) carrying each rank's votes; a rank out of batches meets the others' steps until all are out.

Used by :class:`~nbbench.ranks.loaderjobs.LoaderJob`.  torch is imported in :meth:`SyncedStep.setup`.
"""

from __future__ import annotations

import time

__all__ = ["SyncedStep"]


class SyncedStep:
    """The compute step, then one tiny all_reduce every rank meets (DDP's gradient all-reduce).

    The reduced tensor carries three votes, MAX over ranks: "asked to stop" (Stop, Ctrl-C, a
    dead peer, a failed rank), "my window is over" (``duration`` seconds measured or ``steps``
    steps) and "I still have data".  The first two set ``stop`` — the loader benchmark's cancel
    event — on every rank after the same step.  A rank whose loader ran out (``--epochs N`` over
    unequal shares) calls :meth:`join`: as DDP's ``Join``, it keeps meeting the others' steps,
    with no batch of its own, until every rank is out (or one votes to stop); its figures stay
    its own, the samples it really read.  ``sync_s`` is each call's time in the all_reduce;
    ``anchor`` the wall-clock time the measured window began (after ``warmup + 1`` calls).
    """

    kind = "synced"

    def __init__(self, inner, warmup: int, duration: float | None, steps: int | None, cancel, stop):
        self.inner = inner
        self.n_warm = warmup + 1
        self.duration = duration
        self.steps = steps
        self.cancel = cancel
        self.stop = stop
        self.sync_s: list[float] = []
        self.calls = 0
        self.t_meas = None
        self.anchor = None
        self.cause: str | None = None
        self.joined = 0  # the others' steps met after this rank's loader ran out
        self.in_reduce = False  # an error there means a peer is gone: no more collectives
        self.label = (inner.label if inner is not None else "none") + " + all_reduce per step"
        self._torch = None

    def setup(self) -> None:
        import torch
        import torch.distributed as td

        self._torch = (torch, td)
        if self.inner is not None and hasattr(self.inner, "setup"):
            self.inner.setup()

    def finish(self) -> dict:
        return self.inner.finish() if self.inner is not None and hasattr(self.inner, "finish") else {}

    def __call__(self, batch, samples=None) -> None:
        torch, td = self._torch
        if self.inner is not None:
            self.inner(batch, samples)
        t1 = time.perf_counter()
        self.calls += 1
        done = 0.0
        if self.t_meas is not None:
            measured = self.calls - self.n_warm
            if (self.duration is not None and t1 - self.t_meas >= self.duration) or (
                self.steps is not None and measured >= self.steps
            ):
                done = 1.0
        votes = self._reduce(1.0 if self.cancel.is_set() else 0.0, done, 1.0)
        t2 = time.perf_counter()
        self.sync_s.append(t2 - t1)
        if votes[0] > 0 or votes[1] > 0:
            self.cause = self.cause or ("stop" if votes[0] > 0 else "done")
            self.stop.set()
        if self.calls == self.n_warm:  # the measured window starts when this call returns
            self.t_meas = time.perf_counter()
            self.anchor = time.time()

    def _reduce(self, stop: float, done: float, busy: float):
        torch, td = self._torch
        votes = torch.tensor([stop, done, busy])
        self.in_reduce = True
        td.all_reduce(votes, op=td.ReduceOp.MAX)
        self.in_reduce = False
        return votes

    def join(self, failed: bool = False) -> None:
        """This rank has no more batches (or, ``failed``, its loop raised): meet the others' steps, voting "out
        of data" (or "stop"), until no rank has data left or one votes to stop or ends its window."""
        if self._torch is None or self.stop.is_set() or self.in_reduce:
            return  # every rank saw the same stop vote, or a peer is gone: nothing to meet
        while True:
            votes = self._reduce(1.0 if failed or self.cancel.is_set() else 0.0, 0.0, 0.0)
            if votes[0] > 0 or votes[1] > 0 or votes[2] == 0:
                return
            self.joined += 1
