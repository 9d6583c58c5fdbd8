"""The compute side of a loader benchmark: what runs on each batch.

* :class:`EmulatedStep` sleeps for the time an accelerator would compute on the batch,
  as MLPerf Storage does (``step="emulate:h100-resnet50"``), scaled to the batch size.
* :class:`CallableStep` wraps a user's ``step(batch)``.
* :class:`CudaStep` is a real GPU step: the batch is copied with ``non_blocking=True``,
  then a matmul workload sized to a target step time runs.  It is timed with CUDA
  events that are read a few steps late (:class:`EventTimeline`), so measuring never
  synchronises the device every step; the gap between one step's end event and the
  next one's start event is time the GPU sat idle waiting for the host (starvation).

A step object may have ``setup()`` (called before the loader is started),
``__call__(batch, samples)`` and ``finish()`` returning per-step device timings.
Only :class:`CudaStep` imports torch, and only when it is set up.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from typing import Any

from ...accelerators import Accelerator, get_accelerator
from ...nvml import get_nvml
from ...results import ProbeError, advice
from ..gpudevices import nvml_index

__all__ = ["EmulatedStep", "CallableStep", "CudaStep", "EventTimeline", "resolve_step", "nvml_gpus"]


class EmulatedStep:
    """Sleep ``accelerator.step_s(samples)`` per batch (cancellable in 50 ms slices)."""

    kind = "emulate"

    def __init__(self, accelerator: Accelerator, cancel=None):
        self.accelerator = accelerator
        self.cancel = cancel
        self.label = f"emulate:{accelerator.name}"

    def __call__(self, batch, samples: int | None = None) -> None:
        t = self.accelerator.step_s(samples or self.accelerator.ref_batch)
        if t <= 0.05 or self.cancel is None:
            time.sleep(t)
            return
        end = time.perf_counter() + t
        while True:
            left = end - time.perf_counter()
            if left <= 0 or self.cancel.is_set():
                return
            time.sleep(min(left, 0.05))


class CallableStep:
    """A user's ``step(batch)``, timed on the host."""

    kind = "callable"

    def __init__(self, fn: Callable[[Any], Any]):
        self.fn = fn
        self.label = "callable:" + getattr(fn, "__qualname__", getattr(fn, "__name__", type(fn).__name__))

    def __call__(self, batch, samples: int | None = None) -> None:
        self.fn(batch)


class EventTimeline:
    """Timed device events, read a few steps late.

    ``event_factory()`` returns an object with ``record()``, ``query()`` (complete?),
    ``synchronize()`` and ``elapsed_time(other)`` in milliseconds — a
    ``torch.cuda.Event(enable_timing=True)``.  Per step: :meth:`begin` before the
    step's work is queued, :meth:`end` after.  Events are read once they are
    ``lookahead`` steps old and complete; a step is waited for (``synchronize`` on its
    end event) only when the device is more than ``2 × lookahead`` steps behind, which
    bounds the queue the way a real training loop's memory does.  :meth:`finish`
    synchronises once and reads the rest.
    """

    def __init__(self, event_factory: Callable[[], Any], lookahead: int = 3):
        self.event_factory = event_factory
        self.lookahead = max(1, int(lookahead))
        self._pending: deque = deque()
        self._open = None
        self._prev_end = None
        self._first = None
        self.busy_s: list[float] = []  # device time of each step (start -> end event)
        self.gap_s: list[float] = []  # idle time before each step (previous end -> this start)
        self.start_s: list[float] = []  # each step's start event, seconds after the first one
        self.end_s: list[float] = []  # each step's end event, seconds after the first start
        self.waits = 0  # times the host had to wait for the device

    def begin(self) -> None:
        ev = self.event_factory()
        ev.record()
        self._open = ev

    def end(self) -> None:
        ev = self.event_factory()
        ev.record()
        self._pending.append((self._open, ev))
        self._open = None
        self._poll()

    def _read_one(self) -> None:
        start, end = self._pending.popleft()
        if self._first is None:
            self._first = start
        self.busy_s.append(max(0.0, start.elapsed_time(end) / 1e3))
        self.start_s.append(self._first.elapsed_time(start) / 1e3)
        self.end_s.append(self._first.elapsed_time(end) / 1e3)
        if self._prev_end is None:
            self.gap_s.append(0.0)
        else:
            self.gap_s.append(max(0.0, self._prev_end.elapsed_time(start) / 1e3))
        self._prev_end = end

    def _poll(self) -> None:
        while len(self._pending) > self.lookahead:
            _, end = self._pending[0]
            if not end.query():
                if len(self._pending) <= 2 * self.lookahead:
                    return  # not done yet: read it a step later
                end.synchronize()  # the device is far behind: bound the queue
                self.waits += 1
            self._read_one()

    def finish(self) -> dict[str, list[float]]:
        if self._pending:
            self._pending[-1][1].synchronize()
        while self._pending:
            self._read_one()
        return {
            "gpu_busy_s": list(self.busy_s),
            "gpu_gap_s": list(self.gap_s),
            "gpu_start_s": list(self.start_s),
            "gpu_end_s": list(self.end_s),
        }


def _to_device(batch, device, non_blocking: bool = True):
    to = getattr(batch, "to", None)
    if callable(to) and hasattr(batch, "is_pinned"):
        return to(device, non_blocking=non_blocking)
    if isinstance(batch, dict):
        return {k: _to_device(v, device, non_blocking) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return (
            type(batch)(_to_device(v, device, non_blocking) for v in batch)
            if not hasattr(batch, "_fields")
            else type(batch)(*(_to_device(v, device, non_blocking) for v in batch))
        )
    return batch


def nvml_gpus(torch, nv, index: int) -> list[int] | None:
    """``[NVML index]`` of torch's CUDA device ``index`` (None when it cannot be told, or no NVML):
    the GPU whose utilisation a run of the step reads from a monitor, which samples by NVML index."""
    k = nvml_index(torch, nv, index)
    return None if k is None else [k]


class CudaStep:
    """A real GPU step: non-blocking copy of the batch, then matmuls for about ``target_step_s``.

    ``nvml_gpus`` (after :meth:`setup`): NVML's index of its device, or None when unknown."""

    kind = "gpu"

    def __init__(
        self, target_step_s: float = 0.05, device=None, lookahead: int = 3, size: int = 4096, dtype: str = "float16"
    ):
        self.target_step_s = float(target_step_s)
        self.device = device
        self.lookahead = lookahead
        self.size = int(size)
        self.dtype = dtype
        self.reps = 1
        self.timeline: EventTimeline | None = None
        self.label = "gpu"
        self.nvml_gpus: list[int] | None = None
        self._ready = False

    def setup(self) -> None:
        if self._ready:
            return
        try:
            import torch
        except ImportError:
            raise ProbeError("step='gpu' needs torch: pip install torch") from None
        if not torch.cuda.is_available():
            raise ProbeError(
                "step='gpu' needs CUDA, but torch.cuda.is_available() is False here "
                f"(torch {torch.__version__}, CUDA build {torch.version.cuda}): "
                "use step='emulate:h100-resnet50'",
                advice=[advice.entry("run {command} to see why", "gpu")],
            )
        dev = torch.device(self.device if self.device is not None else "cuda")
        self.device = dev
        dt = getattr(torch, self.dtype)
        self._a = torch.randn(self.size, self.size, device=dev, dtype=dt)
        self._b = torch.randn(self.size, self.size, device=dev, dtype=dt)
        self._c = torch.empty_like(self._a)
        # calibrate once, before measuring: the only synchronising here
        torch.mm(self._a, self._b, out=self._c)
        torch.cuda.synchronize(dev)
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(5):
            torch.mm(self._a, self._b, out=self._c)
        e.record()
        e.synchronize()
        per_mm = max(1e-6, s.elapsed_time(e) / 1e3 / 5)
        self.reps = max(1, int(round(self.target_step_s / per_mm)))
        self.per_matmul_s = per_mm
        self.timeline = EventTimeline(lambda: torch.cuda.Event(enable_timing=True), self.lookahead)
        self._torch = torch
        self.label = f"gpu:{torch.cuda.get_device_name(dev)}"

        index = dev.index if dev.index is not None else torch.cuda.current_device()
        self.nvml_gpus = nvml_gpus(torch, get_nvml(), index)
        self._ready = True

    def __call__(self, batch, samples: int | None = None) -> None:
        if not self._ready:
            self.setup()
        self.timeline.begin()
        moved = _to_device(batch, self.device, non_blocking=True)
        for _ in range(self.reps):
            self._torch.mm(self._a, self._b, out=self._c)
        self.timeline.end()
        del moved

    def finish(self) -> dict[str, list[float]]:
        return self.timeline.finish() if self.timeline is not None else {}


def resolve_step(step, cancel=None, device=None, target_step_s: float = 0.05):
    """A step object for ``step`` (None, callable, "gpu", "emulate:NAME"); None for loader-alone."""
    if step is None or step == "none":
        return None
    if isinstance(step, (EmulatedStep, CallableStep, CudaStep)):
        return step
    if isinstance(step, Accelerator):
        return EmulatedStep(step, cancel)
    if isinstance(step, str):
        s = step.strip().lower()
        if s.startswith("emulate:"):
            try:
                return EmulatedStep(get_accelerator(s), cancel)
            except ValueError as exc:
                raise ProbeError(str(exc)) from None
        if s in ("gpu", "cuda"):
            return CudaStep(target_step_s=target_step_s, device=device)
        raise ProbeError(
            f"unknown step {step!r}: use None, a function step(batch), 'gpu' or "
            "'emulate:h100-resnet50' (see nbbench.accelerators.names())"
        )
    if callable(step):
        if hasattr(step, "setup") and hasattr(step, "finish"):
            return step  # a step object following this protocol
        return CallableStep(step)
    raise ProbeError(f"step must be None, a callable, 'gpu' or 'emulate:NAME', not {type(step).__name__}")
