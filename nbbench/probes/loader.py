"""DataLoader throughput versus accelerator utilisation.

:func:`bench_loader` iterates any iterable of batches (a ``torch.utils.data.DataLoader``
or anything else) and times, per step, the wait inside ``next()`` (data) and the step
(compute).  The first batch (worker start-up) and ``warmup`` more steps are timed and
reported separately, never mixed into the measured window.

AU (accelerator utilisation) follows MLPerf Storage: compute time / wall time over
the measured window.  An accelerator counts as fed at AU >= 90 %.  The input-bound
band reads the share of wall time spent waiting for data: under 5 % not input-bound,
5–20 % moderately, 20 % or more highly input-bound.

"""

from __future__ import annotations

import math
import statistics
import time
from typing import Any

from ..accelerators import AU_TARGET_PCT, Accelerator, get_accelerator
from ..progress import call_progress
from ..results import ProbeError
from ..results.loader import LoaderResult
from .batches import batch_info
from .steps import CudaStep, EmulatedStep, resolve_step

__all__ = ["bench_loader", "LoaderResult", "input_bound_band", "predicted_au_pct", "describe_loader",
           "worker_failure_reason", "close_loader"]

#: data-wait share (% of wall time) at which a pipeline is moderately / highly input-bound
BAND_MODERATE_PCT = 5.0
BAND_HIGH_PCT = 20.0


def input_bound_band(data_wait_pct: float | None) -> str | None:
    """'not input-bound' (< 5 %), 'moderately input-bound' (5–20 %), 'highly input-bound' (>= 20 %)."""
    if data_wait_pct is None or (isinstance(data_wait_pct, float) and math.isnan(data_wait_pct)):
        return None
    if data_wait_pct < BAND_MODERATE_PCT:
        return "not input-bound"
    if data_wait_pct < BAND_HIGH_PCT:
        return "moderately input-bound"
    return "highly input-bound"


def predicted_au_pct(data_s: float, compute_s: float, num_workers: int = 0) -> float:
    """AU the arithmetic predicts for a loader whose batches cost ``data_s`` to prepare
    and a step of ``compute_s``.

    Without workers preparation and compute alternate: AU = compute / (data + compute).
    With ``n`` workers preparing in parallel (prefetching), a batch is ready every
    ``data / n`` seconds and the step overlaps it: AU = compute / max(compute, data / n).
    """
    if compute_s <= 0:
        return 0.0
    if num_workers <= 0:
        return 100.0 * compute_s / (compute_s + data_s)
    return 100.0 * compute_s / max(compute_s, data_s / num_workers)


def describe_loader(loader) -> dict[str, Any]:
    """Labels for a loader: its type and, for a DataLoader, the settings that matter."""
    out: dict[str, Any] = {"loader": type(loader).__name__}
    ds = getattr(loader, "dataset", None)
    if ds is not None:
        out["dataset"] = type(ds).__name__
    for attr in ("batch_size", "num_workers", "pin_memory", "prefetch_factor", "persistent_workers",
                 "drop_last"):
        if hasattr(loader, attr):
            v = getattr(loader, attr)
            if isinstance(v, (int, float, bool, str)) or v is None:
                out[attr] = v
    return out


def worker_failure_reason(exc: BaseException) -> str | None:
    """A sentence for a DataLoader worker crash (bus error, killed worker, open files); None otherwise."""
    msg = str(exc)
    low = msg.lower()
    if not isinstance(exc, RuntimeError):
        return None
    if "bus error" in low or "shared memory" in low or "shm" in low:
        return (f"a DataLoader worker crashed with a bus error ({msg.splitlines()[0]}): /dev/shm is too small "
                "for the batches in flight; give the container more (docker run --shm-size=16g, or a bigger "
                "emptyDir medium: Memory in Kubernetes) or lower num_workers × prefetch_factor × batch size")
    if "too many open files" in low or "ancdata" in low:
        return (f"DataLoader workers ran out of file descriptors ({msg.splitlines()[0]}): raise the limit "
                "(ulimit -n 65536, docker run --ulimit nofile=65536) or call "
                "torch.multiprocessing.set_sharing_strategy('file_system')")
    if "killed by signal" in low or "exited unexpectedly" in low or "dataloader worker" in low:
        hint = ""
        if "killed by signal: killed" in low:
            hint = " (SIGKILL is often the out-of-memory killer: check dmesg and the container's memory limit)"
        return f"a DataLoader worker died: {msg.splitlines()[0]}{hint}"
    return None


def _worker_exit_note(it) -> str:
    """' (worker 0 killed by SIGKILL …)' from a DataLoader iterator's dead workers, else ''."""
    import signal

    notes = []
    for i, w in enumerate(getattr(it, "_workers", None) or []):
        code = getattr(w, "exitcode", None)
        if code is None or code == 0:
            continue
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            note = f"worker {i} killed by {name}"
            if name == "SIGKILL":
                note += " (often the out-of-memory killer: check dmesg and the container's memory limit)"
            elif name == "SIGBUS":
                note += " (a bus error: /dev/shm is too small)"
        else:
            note = f"worker {i} exited with code {code}"
        notes.append(note)
    return f"; {'; '.join(notes)}" if notes else ""


def close_loader(loader, it=None, force: bool = False) -> None:
    """Shut down a DataLoader iterator's workers deterministically.

    A non-persistent iterator is always closed; a persistent one (kept on the loader
    for the next epoch) only when ``force`` — after a worker died it is unusable, so
    the loader is told to start fresh workers next time.
    """
    persistent = bool(getattr(loader, "persistent_workers", False))
    targets = []
    if it is not None and (force or not persistent):
        targets.append(it)
    if force and getattr(loader, "_iterator", None) is not None:
        targets.append(loader._iterator)
    for t in targets:
        shutdown = getattr(t, "_shutdown_workers", None)
        if callable(shutdown):
            try:
                shutdown()
            except Exception:  # noqa: BLE001 - already dead workers may complain
                pass
    if force and hasattr(loader, "_iterator"):
        try:
            loader._iterator = None
        except Exception:  # noqa: BLE001
            pass


# --------------------------------------------------------------------- result


# -------------------------------------------------------------------- monitor
def _nvml_reason() -> str | None:
    """Why there is no GPU utilisation to read here (None when NVML works)."""
    try:
        from ..nvml import get_nvml

        ok = get_nvml().init()
    except Exception as exc:  # noqa: BLE001
        return f"NVML unavailable: {exc}"
    if ok is True:
        return None
    hint = getattr(ok, "hint", "")
    return f"{getattr(ok, 'reason', 'NVML unavailable')}" + (f" ({hint})" if hint else "")


def _start_monitor(monitor):
    """(monitor, started_here, reason): a running monitor for GPU utilisation, or None and why."""
    if monitor is False or monitor == "off":
        return None, False, "no monitor (monitor=False)"
    if monitor is None or monitor is True or monitor == "auto":
        reason = _nvml_reason()
        if reason is not None and monitor != True:  # noqa: E712 - True forces one (host figures)
            return None, False, reason
        try:
            from .. import monitor as monmod
            m = monmod.Monitor(interval=0.2)
            m.start()
            return m, True, reason
        except Exception as exc:  # noqa: BLE001 - a monitor problem must not stop the benchmark
            return None, False, f"the monitor could not start: {exc}"
    return monitor, False, None


def _gpu_util_mean(monitor, t0: float, t1: float) -> tuple[float | None, str | None]:
    """Mean GPU utilisation (%) over monotonic [t0, t1] from the monitor's samples."""
    if monitor is None:
        return None, "no monitor"
    try:
        from .loadermon import gpu_util_over

        util, why = gpu_util_over(monitor, t0, t1)
        if util is None:
            nv = _nvml_reason()
            if nv is not None:
                why = nv
        return util, why
    except Exception as exc:  # noqa: BLE001
        return None, f"could not read GPU utilisation from the monitor: {exc}"


# ------------------------------------------------------------------ benchmark
def bench_loader(loader, steps: int | None = None, duration: float | None = None, warmup: int = 2,
                 step=None, device=None, progress=None, cancel=None, monitor="auto",
                 accelerator: str | Accelerator | None = None, batch_size: int | None = None,
                 target_step_s: float = 0.05, window_s: float = 1.0, on_window=None,
                 au_target_pct: float = AU_TARGET_PCT, close: bool = True, epochs: int | None = 1) -> LoaderResult:
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
    batch_size: when batches carry no arrays to read it from.
    on_window: called with each 1 s window's figures (live plots).
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
    acc = None
    if isinstance(stepper, EmulatedStep):
        acc = stepper.accelerator
    if accelerator is not None:
        try:
            acc = get_accelerator(accelerator)
        except ValueError as exc:
            raise ProbeError(str(exc)) from None

    params = {"steps": steps, "duration_s": duration, "warmup": warmup, "au_target_pct": au_target_pct,
              "window_s": window_s, "epochs": epochs, "step": step if isinstance(step, str) or step is None else "callable"}
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

    mon, mon_started, mon_reason = _start_monitor(monitor)
    perf = time.perf_counter
    is_set = cancel.is_set if cancel is not None else (lambda: False)

    # per measured step
    t_end: list[float] = []
    waits: list[float] = []
    computes: list[float] = []
    sizes: list[int | None] = []
    nbytes: list[int] = []
    # warm-up (first batch and `warmup` more)
    warm = {"wait_s": [], "compute_s": [], "samples": []}
    windows = {"t_s": [], "samples_per_s": [], "au_pct": [], "data_wait_pct": []}

    status, reason = "ok", None
    it = None
    exhausted = False
    t_win0 = None
    t_win0_mono = t_win1_mono = None
    calls = 0  # step calls made (warm-up included): device timings are per call
    epoch = {"n": 1, "batches": 0, "starts": []}

    def fetch():
        # next batch; a new pass over the loader when one ends and more are allowed
        nonlocal it
        while True:
            try:
                batch = next(it)
                epoch["batches"] += 1
                return batch
            except StopIteration:
                if (epochs is not None and epoch["n"] >= epochs) or epoch["batches"] == 0:
                    raise
                close_loader(loader, it)
                epoch["n"] += 1
                epoch["batches"] = 0
                epoch["starts"].append(len(waits))
                it = iter(loader)

    try:
        t_start = perf()
        it = iter(loader)
        n_warm = warmup + 1
        # ---------------- warm-up: first batch (start-up) and `warmup` steps
        while len(warm["wait_s"]) < n_warm:
            if is_set():
                status, reason = "interrupted", "cancelled during warm-up"
                break
            a = perf()
            try:
                batch = fetch()
            except StopIteration:
                exhausted = True
                break
            b = perf()
            n, _nb = batch_info(batch)
            n = n if n is not None else batch_size
            if stepper is not None:
                stepper(batch, n)
                calls += 1
            c = perf()
            warm["wait_s"].append(b - a)
            warm["compute_s"].append(c - b)
            warm["samples"].append(n)
            del batch
        startup_s = warm["wait_s"][0] if warm["wait_s"] else perf() - t_start
        res.metrics["startup_s"] = startup_s
        res.metrics["warmup_s"] = perf() - t_start
        first_call_measured = calls

        # ---------------- measured window
        if status == "ok" and not exhausted:
            t_win0 = perf()
            t_win0_mono = time.monotonic()
            deadline = t_win0 + duration if duration is not None else math.inf
            max_steps = steps if steps is not None else math.inf
            w_next = t_win0 + window_s
            w_i0 = 0
            last_progress = t_win0
            a = t_win0
            while len(waits) < max_steps:
                try:
                    batch = fetch()
                except StopIteration:
                    exhausted = True
                    break
                b = perf()
                n, nb = batch_info(batch)
                if n is None:
                    n = batch_size
                if stepper is not None:
                    stepper(batch, n)
                    calls += 1
                c = perf()
                del batch
                waits.append(b - a)
                computes.append(c - b)
                sizes.append(n)
                nbytes.append(nb)
                t_end.append(c - t_win0)
                if c >= w_next:
                    _close_window(windows, t_win0, c, w_i0, len(waits), waits, computes, sizes, t_end,
                                  stepper is not None)
                    w_i0 = len(waits)
                    w_next = c + window_s
                    if on_window is not None:
                        try:
                            on_window({k: v[-1] for k, v in windows.items()})
                        except Exception:  # noqa: BLE001 - a plot problem never stops measuring
                            pass
                if c - last_progress >= 0.25:
                    last_progress = c
                    frac = 0.0
                    if steps is not None:
                        frac = len(waits) / steps
                    if duration is not None:
                        frac = max(frac, (c - t_win0) / duration)
                    call_progress(progress, min(frac, 1.0), _live_metrics(windows, waits, computes, sizes,
                                                                          c - t_win0, stepper is not None))
                if c >= deadline:
                    break
                if is_set():
                    status, reason = "interrupted", "cancelled"
                    break
                a = perf()
            t_win1_mono = time.monotonic()
            if len(waits) > w_i0:
                _close_window(windows, t_win0, perf(), w_i0, len(waits), waits, computes, sizes, t_end,
                              stepper is not None, partial=True)
                if on_window is not None and windows["t_s"]:
                    try:
                        on_window({k: v[-1] for k, v in windows.items()})
                    except Exception:  # noqa: BLE001
                        pass
    except RuntimeError as exc:
        why = worker_failure_reason(exc)
        if why is not None and "out-of-memory" not in why and "bus error" not in why:
            why += _worker_exit_note(it)
        if why is None:
            close_loader(loader, it, force=True)
            _stop_monitor(mon, mon_started)
            raise
        status, reason = "failed", why
        close_loader(loader, it, force=True)
        it = None
    except BaseException:
        close_loader(loader, it, force=True)
        _stop_monitor(mon, mon_started)
        raise
    finally:
        if it is not None and close:
            close_loader(loader, it)

    # ---------------- device timings (CUDA events read late)
    device_t = stepper.finish() if stepper is not None and hasattr(stepper, "finish") else {}
    if device_t.get("gpu_busy_s") and waits:
        i0, i1 = first_call_measured, first_call_measured + len(waits)
        gpu = {"busy_s": device_t["gpu_busy_s"][i0:i1], "gap_s": device_t["gpu_gap_s"][i0:i1]}
        ends, starts = device_t.get("gpu_end_s"), device_t.get("gpu_start_s")
        if ends and starts and len(ends) >= i1:
            gpu["start_s"], gpu["end_s"] = starts[i0:i1], ends[i0:i1]
            # the device's own window: from the end of the last warm-up step to the end of the last
            # measured one, so the steps' busy time and the gaps before them add up to it
            gpu["window_s"] = ends[i1 - 1] - (ends[i0 - 1] if i0 > 0 else starts[0])
        res.samples["gpu"] = gpu

    # ---------------- figures
    res.samples["steps"] = {"t_s": t_end, "wait_s": waits, "compute_s": computes, "samples": sizes,
                            "bytes": nbytes}
    res.samples["windows"] = windows
    res.samples["epoch_starts"] = epoch["starts"]
    res.metrics["epochs_count"] = epoch["n"]
    res.samples["warmup"] = warm
    _fill_metrics(res, waits, computes, sizes, nbytes, t_end, stepper, acc, au_target_pct)
    if t_win0_mono is not None:
        util, why = _gpu_util_mean(mon, t_win0_mono, t_win1_mono or time.monotonic())
        res.metrics["gpu_util_mean_pct"] = util
        if util is None:
            res.labels["gpu_util"] = f"N/A: {why if mon is not None else mon_reason}"
    else:
        res.metrics["gpu_util_mean_pct"] = None
    _stop_monitor(mon, mon_started)

    if exhausted and steps is not None and len(waits) < steps and status == "ok":
        res.warn(f"the loader ran out after {len(waits)} measured steps (of {steps}): use a longer loader "
                 "or fewer steps for a steadier figure")
    elif exhausted and steps is None and duration is not None and status == "ok" and waits:
        res.warn(f"the loader ran out after {res.metrics['measured_s']:.2f} s of the {duration:g} s asked "
                 f"({epoch['n']} epoch{'s' if epoch['n'] > 1 else ''}): pass epochs=None (--epochs 0) to go "
                 "round again, or use a longer loader, for a steadier figure")
    if status == "ok" and len(waits) < 3:
        if len(waits) == 0:
            status, reason = "failed", ("the loader yielded no batch after the warm-up: it has "
                                        f"{len(warm['wait_s'])} batch(es); lower warmup or use a longer loader")
        else:
            res.warn(f"only {len(waits)} steps were measured: the figures are rough; run longer")
    if res.metrics.get("startup_s", 0) > 5 and status == "ok":
        res.warn(f"the first batch took {res.metrics['startup_s']:.1f} s (worker start-up): use "
                 "persistent_workers=True so each epoch does not pay it again")
    band = res.labels.get("input_bound")
    if band == "highly input-bound" and stepper is not None:
        nw = res.labels.get("num_workers")
        idle = res.metrics.get("gpu_starvation_pct")
        idle = res.metrics["data_wait_pct"] if idle is None else idle
        res.warn(("the GPU sat idle between steps " if res.metrics.get("gpu_starvation_pct") is not None
                  else "the step waited for data ") + f"{idle:.0f} % of the time: "
                 + ("raise num_workers or make each sample cheaper to load"
                    if nw is not None else "make the input pipeline faster (more workers, cheaper decoding)"))
        if nw is not None:   # the front end words the command (%iobench sweep / nbbench sweep / a tab)
            res.advise("find the num_workers that keeps up", "sweep", "DATASET")
    res.finish(status, reason)
    return res


def _stop_monitor(mon, started: bool) -> None:
    if mon is not None and started:
        try:
            mon.stop()
        except Exception:  # noqa: BLE001
            pass


def _close_window(windows, t0, now, i0, i1, waits, computes, sizes, t_end, has_step, partial=False):
    span_start = t_end[i0 - 1] if i0 > 0 else 0.0
    span = (now - t0) - span_start
    if span <= 0:
        return
    n = sum(s or 0 for s in sizes[i0:i1])
    windows["t_s"].append(now - t0)
    windows["samples_per_s"].append(n / span)
    w = sum(waits[i0:i1])
    cpt = sum(computes[i0:i1])
    windows["data_wait_pct"].append(100.0 * w / span)
    windows["au_pct"].append(100.0 * cpt / span if has_step else None)


def _live_metrics(windows, waits, computes, sizes, elapsed, has_step) -> dict:
    m = {}
    if windows["samples_per_s"]:
        m["samples_per_s"] = windows["samples_per_s"][-1]
    elif elapsed > 0:
        m["samples_per_s"] = sum(s or 0 for s in sizes) / elapsed
    if has_step and elapsed > 0:
        m["au_pct"] = 100.0 * sum(computes) / elapsed
    if elapsed > 0:
        m["data_wait_pct"] = 100.0 * sum(waits) / elapsed
    return m


def _pct(values, q):
    if not values:
        return None
    s = sorted(values)
    k = (len(s) - 1) * q
    lo, hi = int(math.floor(k)), int(math.ceil(k))
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def _fill_metrics(res, waits, computes, sizes, nbytes, t_end, stepper, acc, au_target_pct):
    m = res.metrics
    wall = t_end[-1] if t_end else 0.0
    n_steps = len(waits)
    n_samples = sum(s or 0 for s in sizes) if sizes else 0
    known_sizes = [s for s in sizes if s]
    m["measured_s"] = wall
    m["steps_count"] = n_steps
    m["samples_count"] = n_samples
    m["samples_per_s"] = n_samples / wall if wall > 0 and known_sizes else None
    m["batches_per_s"] = n_steps / wall if wall > 0 else None
    m["bytes_per_s"] = sum(nbytes) / wall if wall > 0 else None
    m["batch_size"] = int(statistics.median(known_sizes)) if known_sizes else None
    m["batch_bytes"] = int(statistics.mean(nbytes)) if nbytes else None
    m["data_wait_pct"] = 100.0 * sum(waits) / wall if wall > 0 else None
    m["data_wait_p50_s"] = _pct(waits, 0.5)
    m["data_wait_p99_s"] = _pct(waits, 0.99)
    gpu = res.samples.get("gpu")
    if stepper is None:
        m["au_pct"] = None
    elif gpu and gpu.get("busy_s"):
        # device time from CUDA events: what the GPU spent on the steps, over the device's own window
        # (its queue runs behind the host); the gaps between steps are starvation
        busy, gaps = sum(gpu["busy_s"]), sum(gpu["gap_s"])
        span = gpu.get("window_s") or wall
        m["au_pct"] = 100.0 * busy / span if span > 0 else None
        m["compute_s"] = busy
        m["gpu_window_s"] = span
        m["gpu_starvation_s"] = gaps
        m["gpu_starvation_pct"] = 100.0 * gaps / span if span > 0 else None
    else:
        m["au_pct"] = 100.0 * sum(computes) / wall if wall > 0 else None
        m["compute_s"] = sum(computes)
    if m["au_pct"] is not None:
        m["au_pct"] = min(m["au_pct"], 100.0)
    if m.get("gpu_starvation_pct") is not None:
        # a GPU step: the host's wait overlaps queued device work; what counts is the device sitting idle
        res.labels["input_bound"] = input_bound_band(m["gpu_starvation_pct"])
        res.labels["input_bound_basis"] = "GPU idle between steps (CUDA events)"
    else:
        res.labels["input_bound"] = input_bound_band(m["data_wait_pct"])
    res.labels["au_target"] = f"{au_target_pct:g}%"
    if acc is not None:
        m["accelerator_samples_per_s"] = acc.samples_per_s
        m["needed_samples_per_s"] = acc.needed_samples_per_s(au_target_pct)
        if stepper is None and m["samples_per_s"]:
            m["accelerators_fed_count"] = acc.how_many(m["samples_per_s"], au_target_pct)
