"""DataLoader throughput versus accelerator utilisation.

:func:`bench_loader` iterates any iterable of batches (a ``torch.utils.data.DataLoader``
or anything else) and times, per step, the wait inside ``next()`` (data) and the step
(compute).  One loop fetches, steps and times every batch; a phase switch sends the
first batch (worker start-up) and ``warmup`` more steps to ``samples["warmup"]`` and
the rest, the measured window, to ``samples["steps"]``, never mixing the two.

The figures (throughput, data-wait share and percentiles, AU, the input-bound band,
what an accelerator needs) are derived from the measured steps once, at the end, by
:meth:`~nbbench.results.pipeline.loader.LoaderResult.derive`.  AU (accelerator utilisation)
follows MLPerf Storage: compute time / wall time over the measured window; an
accelerator counts as fed at AU >= 90 % (see :mod:`nbbench.accelerators` for the
bands and the arithmetic).
"""

from __future__ import annotations

import math
import time

from ...accelerators import AU_TARGET_PCT, Accelerator, get_accelerator, input_bound_band, predicted_au_pct
from ...progress import call_progress
from ...results import ProbeError
from ...results.pipeline.loader import LoaderResult
from .batches import batch_info, leaves
from .dataloader import check_worker_tempdir, close_loader, describe_loader, worker_exit_note, worker_failure_reason
from .loadermon import gpu_util_mean, start_monitor, stop_monitor
from .stallwindow import StallWindow
from .steps import CudaStep, EmulatedStep, resolve_step

__all__ = ["bench_loader", "LoaderResult", "input_bound_band", "predicted_au_pct", "worker_failure_reason"]


def bench_loader(
    loader,
    steps: int | None = None,
    duration: float | None = None,
    warmup: int = 2,
    step=None,
    device=None,
    progress=None,
    cancel=None,
    monitor="auto",
    accelerator: str | Accelerator | None = None,
    batch_size: int | None = None,
    target_step_s: float = 0.05,
    window_s: float = 1.0,
    on_window=None,
    au_target_pct: float = AU_TARGET_PCT,
    close: bool = True,
    epochs: int | None = 1,
) -> LoaderResult:
    """Benchmark ``loader`` (any iterable of batches) with a compute ``step``.

    steps / duration: the measured window ends after ``steps`` steps or ``duration``
        seconds (whichever first) or when the loader runs out; neither given: 10 s.
    warmup: steps after the first batch that are run but not measured.
    step: None (the loader alone: the input pipeline's ceiling), a callable
        ``step(batch)``, ``"gpu"`` (a real CUDA step of about ``target_step_s``: the batch
        copied with non_blocking=True, then matmuls, timed with CUDA events read a few
        steps late) or ``"emulate:h100-resnet50"`` (sleep like MLPerf Storage, scaled to
        the batch size; see :mod:`nbbench.accelerators`).
    monitor: "auto" (a GPU monitor when NVML works), True, False, or a running
        ``nbbench.monitor.Monitor``; gives mean GPU utilisation over the window.
    accelerator: for a loader-alone run, whose need to compare against (defaults to
        the emulated one).
    batch_size: when batches carry no arrays to read it from.  Not given, a first batch
        with no tensor, array or bytes in it (a str, an int) is a ProbeError naming it.
    on_window: called with each 1 s window's figures (live plots).
    progress: called as the window goes; its last call carries the result's own figures.
    close: shut down non-persistent DataLoader workers at the end (always on error).
    epochs: passes over the loader at most (None: as many as steps / duration need); the
        time a new pass takes to deliver its first batch counts as data wait, as in training.

    Returns a :class:`LoaderResult`; a worker crash gives status "failed" with the reason.
    """
    if steps is not None and steps < 1:
        raise ProbeError(f"steps must be 1 or more, not {steps}")
    if duration is not None and duration <= 0:
        raise ProbeError(f"duration must be positive, not {duration}")
    if warmup < 0:
        raise ProbeError(f"warmup must be 0 or more, not {warmup}")
    if epochs is not None and epochs < 1:
        raise ProbeError(f"epochs must be 1 or more (or None: as many as needed), not {epochs}")
    if steps is None and duration is None:
        duration = 10.0
    stepper = resolve_step(step, cancel=cancel, device=device, target_step_s=target_step_s)
    acc = stepper.accelerator if isinstance(stepper, EmulatedStep) else None
    if accelerator is not None:
        try:
            acc = get_accelerator(accelerator)
        except ValueError as exc:
            raise ProbeError(str(exc)) from None

    params = {
        "steps": steps,
        "duration_s": duration,
        "warmup": warmup,
        "au_target_pct": au_target_pct,
        "window_s": window_s,
        "epochs": epochs,
        "step": step if isinstance(step, str) or step is None else "callable",
    }
    res = LoaderResult(params=params)
    res.labels.update(describe_loader(loader))
    res.labels["step"] = "none" if stepper is None else stepper.label
    if acc is not None:
        res.labels["accelerator"] = acc.name
    if stepper is not None and hasattr(stepper, "setup"):
        stepper.setup()
        res.labels["step"] = stepper.label
    if isinstance(stepper, CudaStep):
        res.labels["device"] = str(stepper.device)
        res.extra["matmuls_per_step"] = stepper.reps

    mon, mon_started, mon_reason = start_monitor(monitor)
    stalls = StallWindow()  # the container's throttling / memory-limit counters over the run
    run = _Run()
    try:
        _loop(run, loader, stepper, batch_size, warmup, steps, duration, epochs, window_s, on_window, progress, cancel)
    except RuntimeError as exc:
        why = worker_failure_reason(exc)
        if why is not None and "out-of-memory" not in why and "bus error" not in why:
            why += worker_exit_note(run.it)
        if why is None:
            close_loader(loader, run.it, force=True)
            stop_monitor(mon, mon_started)
            raise
        run.status, run.reason = "failed", why
        close_loader(loader, run.it, force=True)
        run.it = None
    except BaseException:
        close_loader(loader, run.it, force=True)
        stop_monitor(mon, mon_started)
        raise
    finally:
        if run.it is not None and close:
            close_loader(loader, run.it)
    if run.warmup_s is not None:
        res.metrics["startup_s"] = run.startup_s
        res.metrics["warmup_s"] = run.warmup_s

    # device timings (CUDA events, read late): per step call, so the measured ones start at run.first_call
    device_t = stepper.finish() if stepper is not None and hasattr(stepper, "finish") else {}
    n_measured = len(run.steps["wait_s"])
    if device_t.get("gpu_busy_s") and n_measured:
        res.samples["gpu"] = _device_window(device_t, run.first_call, n_measured)
    res.samples["steps"] = run.steps
    res.samples["windows"] = run.windows
    res.samples["epoch_starts"] = run.epoch_starts
    res.samples["warmup"] = run.warm
    res.derive(acc)

    if run.mono0 is not None:
        # a GPU step computes on one GPU: its utilisation, not the mean of every GPU the monitor samples
        gpus = getattr(stepper, "nvml_gpus", None)
        util, why = gpu_util_mean(mon, run.mono0, run.mono1 or time.monotonic(), gpus)
        res.metrics["gpu_util_mean_pct"] = util
        if gpus is not None:
            res.labels["gpu_util_of"] = f"NVML GPU {', '.join(str(i) for i in gpus)}: the one the step computes on"
        if util is None:
            res.labels["gpu_util"] = f"N/A: {why if mon is not None else mon_reason}"
    else:
        res.metrics["gpu_util_mean_pct"] = None
    stop_monitor(mon, mon_started)
    stalls.apply(res, res.labels.get("num_workers"))
    _warn(res, run, steps, duration, stepper is not None)
    # the bar ends on the result's own figures, not on the last window's
    final = {k: res.metrics.get(k) for k in ("samples_per_s", "au_pct", "data_wait_pct")}
    call_progress(progress, None, {k: v for k, v in final.items() if v is not None})
    res.finish(run.status, run.reason)
    return res


class _Run:
    """What the loop leaves behind: the kept samples, how it ended, the window on the clocks."""

    def __init__(self):
        self.warm = {"wait_s": [], "compute_s": [], "samples": []}  # the first batch and the warm-up steps
        self.steps = {"t_s": [], "wait_s": [], "compute_s": [], "samples": [], "bytes": []}  # measured steps
        self.windows = {"t_s": [], "samples_per_s": [], "au_pct": [], "data_wait_pct": []}
        self.epoch_starts: list[int] = []  # the measured step at which each further pass began
        self.status, self.reason, self.exhausted = "ok", None, False
        self.it = None  # the loader's current iterator
        self.startup_s = self.warmup_s = None
        self.first_call = 0  # step calls before the first measured one
        self.mono0 = self.mono1 = None  # the measured window on the monotonic clock (the monitor's)


def _never() -> bool:
    return False


def _loop(
    run: _Run, loader, stepper, batch_size, warmup, steps, duration, epochs, window_s, on_window, progress, cancel
) -> None:
    """Fetch, step and time every batch: ``warmup + 1`` into ``run.warm``, then the measured window."""
    perf = time.perf_counter
    is_set = cancel.is_set if cancel is not None else _never
    has_step = stepper is not None
    warm, meas, windows = run.warm, run.steps, run.windows
    # the phase's lists: the warm-up's until the switch, then the measured window's
    waits, computes, sizes = warm["wait_s"], warm["compute_s"], warm["samples"]
    t_end, nbytes = meas["t_s"], meas["bytes"]
    n_warm = warmup + 1
    max_steps = steps if steps is not None else math.inf
    measuring = False
    calls = 0  # step calls made (warm-up included): device timings are per call
    t0 = deadline = w_next = last_progress = math.inf
    w_i0 = 0

    check_worker_tempdir(getattr(loader, "num_workers", 0) or 0)  # a user's DataLoader too
    t_start = perf()
    run.it = iter(loader)
    batches = run.it if epochs == 1 else _passes(run, loader, epochs)
    if is_set():
        run.status, run.reason = "interrupted", "cancelled during warm-up"
        batches, a = (), 0.0
    else:
        a = perf()
    for batch in batches:  # the wait: next(), a new pass's start-up included
        b = perf()
        n, nb = batch_info(batch)
        if n is None:
            if batch_size is None and not sizes and not measuring:
                _refuse_no_arrays(loader, batch)  # the first batch only
            n = batch_size
        if has_step:
            stepper(batch, n)
            calls += 1
        c = perf()
        del batch
        waits.append(b - a)
        computes.append(c - b)
        sizes.append(n)
        if measuring:
            nbytes.append(nb)
            t_end.append(c - t0)
            if c >= w_next:
                _close_window(windows, t0, c, w_i0, waits, computes, sizes, t_end, has_step)
                w_i0 = len(waits)
                w_next = c + window_s
                _tell(on_window, windows)
            if progress is not None and c - last_progress >= 0.25:
                last_progress = c
                _progress(progress, steps, duration, c - t0, windows, waits, computes, sizes, has_step)
            if c >= deadline:
                break
            if is_set():
                run.status, run.reason = "interrupted", "cancelled"
                break
            a = perf()
            if len(waits) >= max_steps:
                break
        elif len(waits) == n_warm:
            # start-up and warm-up done: the measured window starts now
            run.startup_s, run.warmup_s = waits[0], perf() - t_start
            run.first_call = calls
            waits, computes, sizes = meas["wait_s"], meas["compute_s"], meas["samples"]
            measuring = True
            t0 = a = perf()
            run.mono0 = time.monotonic()
            deadline = t0 + duration if duration is not None else math.inf
            w_next = t0 + window_s
            last_progress = t0
        elif is_set():
            run.status, run.reason = "interrupted", "cancelled during warm-up"
            break
        else:
            a = perf()
    else:
        run.exhausted = run.status == "ok"  # the loader ran out (not: cancelled before the first batch)

    if not measuring:
        run.startup_s = waits[0] if waits else perf() - t_start
        run.warmup_s = perf() - t_start
        return
    run.mono1 = time.monotonic()
    if len(waits) > w_i0:  # the last, partial window
        _close_window(windows, t0, perf(), w_i0, waits, computes, sizes, t_end, has_step)
        if windows["t_s"]:
            _tell(on_window, windows)


def _refuse_no_arrays(loader, batch) -> None:
    """A ProbeError when ``batch`` (the first) holds no tensor, array or bytes: not a loader of batches."""
    if next(leaves(batch), None) is not None:
        return
    r = repr(batch)
    r = r if len(r) <= 40 else r[:37] + "..."
    raise ProbeError(
        f"the first item of the {type(loader).__name__} given is a {type(batch).__name__} ({r}), not a "
        "batch of tensors or arrays: give a DataLoader, or any iterable of batches of tensors, NumPy "
        "arrays or bytes (with batch_size=N, batches holding none are timed as N samples each)"
    )


def _passes(run: _Run, loader, epochs):
    """Batches over up to ``epochs`` passes of ``loader`` (None: no limit; a pass with no batch ends it).

    Each further pass closes the last one's iterator, starts its own (``run.it``) and
    notes the measured step it begins at (``run.epoch_starts``).
    """
    n = 1
    while True:
        empty = True
        for batch in run.it:
            empty = False
            yield batch
            del batch  # freed before the next one is made, as in the loop
        if empty or (epochs is not None and n >= epochs):
            return
        close_loader(loader, run.it)
        n += 1
        run.epoch_starts.append(len(run.steps["wait_s"]))
        run.it = iter(loader)


def _device_window(device_t: dict, i0: int, n: int) -> dict:
    """The measured steps' device timings: step calls ``i0 … i0 + n - 1`` of the run."""
    i1 = i0 + n
    gpu = {"busy_s": device_t["gpu_busy_s"][i0:i1], "gap_s": device_t["gpu_gap_s"][i0:i1]}
    ends, starts = device_t.get("gpu_end_s"), device_t.get("gpu_start_s")
    if ends and starts and len(ends) >= i1:
        gpu["start_s"], gpu["end_s"] = starts[i0:i1], ends[i0:i1]
        # the device's own window: from the end of the last warm-up step to the end of the last
        # measured one, so the steps' busy time and the gaps before them add up to it
        gpu["window_s"] = ends[i1 - 1] - (ends[i0 - 1] if i0 > 0 else starts[0])
    return gpu


def _close_window(windows, t0, now, i0, waits, computes, sizes, t_end, has_step) -> None:
    """Append the figures of the window of measured steps ``i0`` … now."""
    i1 = len(waits)
    span_start = t_end[i0 - 1] if i0 > 0 else 0.0
    span = (now - t0) - span_start
    if span <= 0:
        return
    n = sum(s or 0 for s in sizes[i0:i1])
    windows["t_s"].append(now - t0)
    windows["samples_per_s"].append(n / span)
    windows["data_wait_pct"].append(100.0 * sum(waits[i0:i1]) / span)
    windows["au_pct"].append(100.0 * sum(computes[i0:i1]) / span if has_step else None)


def _tell(on_window, windows) -> None:
    if on_window is not None:
        try:
            on_window({k: v[-1] for k, v in windows.items()})
        except Exception:  # noqa: BLE001 - a plot problem never stops measuring
            pass


def _progress(progress, steps, duration, elapsed, windows, waits, computes, sizes, has_step) -> None:
    frac = 0.0
    if steps is not None:
        frac = len(waits) / steps
    if duration is not None:
        frac = max(frac, elapsed / duration)
    m = {}
    if windows["samples_per_s"]:
        m["samples_per_s"] = windows["samples_per_s"][-1]
    elif elapsed > 0:
        m["samples_per_s"] = sum(s or 0 for s in sizes) / elapsed
    if has_step and elapsed > 0:
        m["au_pct"] = 100.0 * sum(computes) / elapsed
    if elapsed > 0:
        m["data_wait_pct"] = 100.0 * sum(waits) / elapsed
    if steps is not None:  # a step-bound run: how far, in steps
        m.update(done=len(waits), total=steps, unit="steps")
    call_progress(progress, min(frac, 1.0), m)


def _warn(res: LoaderResult, run: _Run, steps, duration, has_step: bool) -> None:
    """The warnings a finished run deserves; a window with no step fails the run."""
    m, n = res.metrics, len(run.steps["wait_s"])
    ok = run.status == "ok"
    if run.exhausted and steps is not None and n < steps and ok:
        res.warn(
            f"the loader ran out after {n} measured steps (of {steps}): use a longer loader "
            "or fewer steps for a steadier figure"
        )
    elif run.exhausted and steps is None and duration is not None and ok and n:
        e = m["epochs_count"]
        res.warn(
            f"the loader ran out after {m['measured_s']:.2f} s of the {duration:g} s asked "
            f"({e} epoch{'s' if e > 1 else ''}): pass epochs=None (--epochs 0) to go "
            "round again, or use a longer loader, for a steadier figure"
        )
    if ok and n < 3:
        if n == 0:
            run.status, run.reason = (
                "failed",
                (
                    "the loader yielded no batch after the warm-up: it has "
                    f"{len(run.warm['wait_s'])} batch(es); lower warmup or use a "
                    "longer loader"
                ),
            )
        else:
            res.warn(f"only {n} steps were measured: the figures are rough; run longer")
    if m.get("startup_s", 0) > 5 and run.status == "ok":
        res.warn(
            f"the first batch took {m['startup_s']:.1f} s (worker start-up): use "
            "persistent_workers=True so each epoch does not pay it again"
        )
    if res.labels.get("input_bound") == "highly input-bound" and has_step:
        nw = res.labels.get("num_workers")
        res.warn(
            (
                "the GPU sat idle between steps most of the time: "
                if m.get("gpu_starvation_pct") is not None
                else "the step waited for data most of the time: "
            )
            + (
                "raise num_workers or make each sample cheaper to load"
                if nw is not None
                else "make the input pipeline faster (more workers, cheaper decoding)"
            )
        )
        if nw is not None:  # the front end words the command (%iobench sweep / nbbench sweep / a tab)
            res.advise("find the num_workers that keeps up", "sweep", "DATASET")
