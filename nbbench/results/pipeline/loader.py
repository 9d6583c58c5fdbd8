"""The result class of the ``loader`` probe, and how its figures are derived.

A :class:`LoaderResult` keeps what was measured per step (``samples["steps"]``:
t_s, wait_s, compute_s, samples, bytes; ``samples["gpu"]``: device timings from CUDA
events) and derives its figures from them with :func:`loader_figures`, the way
IPython's ``TimeitResult`` derives its statistics from its runs:
:meth:`LoaderResult.derive` (re)computes ``metrics`` and the derived labels.

AU (accelerator utilisation) follows MLPerf Storage: compute time / wall time over
the measured window; the input-bound band and its thresholds are in
:mod:`nbbench.accelerators`.  The other input-pipeline results: ``sweep`` in
:mod:`nbbench.results.pipeline.sweep`, ``feed`` in :mod:`nbbench.results.pipeline.feed`.
"""

from __future__ import annotations

import math
import statistics

from ...accelerators import AU_TARGET_PCT, get_accelerator, input_bound_band
from ...units import format_many, format_metric
from ..base import Result, label, metric, register
from ..present.rule import SEP

__all__ = ["LoaderResult", "loader_figures", "feeds_phrase"]

#: what :func:`loader_figures` derives; a recomputation replaces all of them
DERIVED_METRICS = (
    "epochs_count",
    "measured_s",
    "steps_count",
    "samples_count",
    "samples_per_s",
    "batches_per_s",
    "bytes_per_s",
    "batch_size",
    "batch_bytes",
    "data_wait_pct",
    "data_wait_p50_s",
    "data_wait_p99_s",
    "au_pct",
    "compute_s",
    "gpu_window_s",
    "gpu_starvation_s",
    "gpu_starvation_pct",
    "accelerator_samples_per_s",
    "needed_samples_per_s",
    "accelerators_fed_count",
)
DERIVED_LABELS = ("input_bound", "input_bound_basis", "au_target")


def _pct(values, q):
    if not values:
        return None
    s = sorted(values)
    k = (len(s) - 1) * q
    lo, hi = int(math.floor(k)), int(math.ceil(k))
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def loader_figures(
    steps: dict,
    gpu: dict | None = None,
    has_step: bool = True,
    au_target_pct: float = AU_TARGET_PCT,
    accelerator=None,
    epoch_starts: list | None = None,
) -> tuple[dict, dict]:
    """(metrics, labels) of a loader benchmark, from its per-step samples alone.

    steps: the measured steps' lists ``t_s`` (end of each step from the window's
        start), ``wait_s`` (inside ``next()``), ``compute_s`` (the step), ``samples``
        and ``bytes`` (per batch).  The window's wall time is the last ``t_s``.
    gpu: device timings per measured step (``busy_s``, ``gap_s``, optionally
        ``window_s``): AU and starvation then come from the device, not the host.
    has_step: False for the loader alone (no AU).  accelerator: an
        :class:`~nbbench.accelerators.Accelerator` whose need to compare against.
    epoch_starts: the measured step index where each further pass began.
    """
    waits, computes = steps.get("wait_s") or [], steps.get("compute_s") or []
    sizes, nbytes, t_end = steps.get("samples") or [], steps.get("bytes") or [], steps.get("t_s") or []
    m: dict = {"epochs_count": len(epoch_starts or ()) + 1}
    labels: dict = {}
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
    if not has_step:
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
        labels["input_bound"] = input_bound_band(m["gpu_starvation_pct"])
        labels["input_bound_basis"] = "GPU idle between steps (CUDA events)"
    else:
        labels["input_bound"] = input_bound_band(m["data_wait_pct"])
    labels["au_target"] = f"{au_target_pct:g}%"
    if accelerator is not None:
        m["accelerator_samples_per_s"] = accelerator.samples_per_s
        m["needed_samples_per_s"] = accelerator.needed_samples_per_s(au_target_pct)
        if not has_step and m["samples_per_s"]:
            m["accelerators_fed_count"] = accelerator.how_many(m["samples_per_s"], au_target_pct)
    return m, labels


@register("loader")
class LoaderResult(Result):
    """One loader benchmark: per-step data wait and compute, AU, throughput."""

    SUMMARY = ("samples_per_s", "au_pct", "data_wait_pct", "gpu_util_mean_pct")
    INLINE_SPREAD = False

    def headline(self) -> str:
        lb = self.labels
        parts = [lb.get("loader", "loader")]
        if lb.get("num_workers") is not None:
            parts.append(f"workers={lb['num_workers']}")
        if lb.get("batch_size") is not None:
            parts.append(f"batch={lb['batch_size']}")
        return f"loader {' '.join(str(p) for p in parts)} · step {lb.get('step', 'none')}"

    def derive(self, accelerator=None) -> LoaderResult:
        """(Re)compute the figures from the kept samples (:func:`loader_figures`); returns self.

        The step (none or some) and AU target come from ``params``, the accelerator from
        ``labels["accelerator"]`` unless given.  Measured directly, not derived:
        startup_s, warmup_s and gpu_util_mean_pct.
        """
        name = self.labels.get("accelerator")
        acc = accelerator if accelerator is not None else (get_accelerator(name) if name else None)
        metrics, labels = loader_figures(
            self.samples.get("steps") or {},
            self.samples.get("gpu"),
            has_step=self.params.get("step") not in (None, "none"),
            au_target_pct=self.params.get("au_target_pct", AU_TARGET_PCT),
            accelerator=acc,
            epoch_starts=self.samples.get("epoch_starts"),
        )
        for store, derived, keys in ((self.metrics, metrics, DERIVED_METRICS), (self.labels, labels, DERIVED_LABELS)):
            for k in keys:
                if k not in derived:
                    store.pop(k, None)
            store.update(derived)
        return self

    au_pct = metric()

    input_bound = label()

    @property
    def meets_au_target(self) -> bool | None:
        au = self.au_pct
        return None if au is None else au >= self.params.get("au_target_pct", AU_TARGET_PCT)

    def steps_frame(self):
        """Per measured step: t_s (end, from window start), wait_s, compute_s, samples, bytes."""
        return self.samples_frame("steps")

    def windows_frame(self):
        """Throughput over 1 s windows: t_s (window end), samples_per_s, au_pct, data_wait_pct."""
        return self.samples_frame("windows")

    def sentence(self) -> str:
        """The answer in one sentence for people (its ``verdict`` field is what checks found: None here)."""
        m = self.metrics
        if self.status == "failed":
            return f"The loader benchmark failed: {self.reason}"
        rate = m.get("samples_per_s")
        need = m.get("needed_samples_per_s")
        # one prefix in one sentence: "0.494 ksamples/s … needs 1.61 ksamples/s", never "494 samples/s … 1.61 k"
        rate_text, need_text = (
            format_many([rate, need], "samples/s") if need else (format_metric("samples_per_s", rate), "")
        )
        s = f"The loader delivered {rate_text}"
        au = m.get("au_pct")
        if au is not None:
            line = self.params.get("au_target_pct", AU_TARGET_PCT)
            s += (
                f" at AU {au:.1f} % ({'meets' if au >= line else 'below'} the {line:.0f} % line); "
                f"{m.get('data_wait_pct', float('nan')):.1f} % of the time went to waiting for data: "
                f"{self.labels.get('input_bound')}"
            )
        else:
            s += " with no compute step (the input pipeline's ceiling)"
        if need:
            acc = self.labels.get("accelerator")
            if au is None and rate:
                n = get_accelerator(acc).how_many(rate)
                s += f"; {acc} needs {need_text} at AU 90 %: this feeds {n or 'none'}"
            else:
                s += f"; {acc} needs {need_text} at AU 90 %"
        return s + "."

    def metric_name(self, key: str) -> str:
        """Names that say which accelerator ("h100-resnet50 consumes")."""
        return _accelerator_names(self).get(key) or super().metric_name(key)

    def answer_line(self) -> str:
        """'1.65 ksamples/s at AU 42.1 % (below 90 %) · 57.0 % data wait: highly input-bound',
        or without a step: '208 samples/s, the input pipeline's ceiling (no compute step) · feeds no h100-resnet50'."""
        m = self.metrics
        rate = format_metric("samples_per_s", m.get("samples_per_s"))
        au = m.get("au_pct")
        if au is not None:
            line = self.params.get("au_target_pct", AU_TARGET_PCT)
            out = [f"{rate} at AU {format_metric('au_pct', au)} ({'meets' if au >= line else 'below'} {line:g} %)"]
            wait = m.get("data_wait_pct")
            if wait is not None:
                out.append(f"{format_metric('data_wait_pct', wait)} data wait: {self.labels.get('input_bound')}")
            return SEP.join(out)
        out = [f"{rate}, the input pipeline's ceiling (no compute step)"]
        acc, need = self.labels.get("accelerator"), m.get("needed_samples_per_s")
        if acc and need and m.get("samples_per_s"):
            out.append(feeds_phrase(get_accelerator(acc).how_many(m["samples_per_s"]), acc))
        return SEP.join(out)

    def story(self) -> list[str]:
        """What the answer line does not say: the rate the accelerator needs (the answer has the
        rate, the AU and the wait; :meth:`sentence` says it all in one sentence)."""
        if self.status == "failed":
            return [self.sentence()]
        need, acc = self.metrics.get("needed_samples_per_s"), self.labels.get("accelerator")
        if not need or not acc:
            return []
        line = self.params.get("au_target_pct", AU_TARGET_PCT)
        if self.metrics.get("au_pct") is not None:
            return [f"One {acc} needs {format_metric('samples_per_s', need)} to stay above that line."]
        return [f"One {acc} needs {format_metric('samples_per_s', need)} for AU ≥ {line:g} %."]


def feeds_phrase(n: int | None, acc: str) -> str:
    """'feeds 3 × h100-resnet50', 'feeds no h100-resnet50' (never 'feeds 0 ×')."""
    if n is None:
        return f"feeds ? × {acc}"
    return f"feeds no {acc}" if n == 0 else f"feeds {n} × {acc}"


def _accelerator_names(r: Result) -> dict[str, str]:
    """Metric names that say which accelerator: "h100-resnet50 consumes", "one h100-resnet50's AU at this rate"."""
    acc = r.labels.get("accelerator") or "accelerator"
    target = r.params.get("au_target_pct", AU_TARGET_PCT)
    return {
        "au_one_accelerator_pct": f"one {acc}'s AU at this rate",
        "accelerator_samples_per_s": f"{acc} consumes",
        "needed_samples_per_s": f"one {acc} needs (AU ≥ {target:g} %)",
        "accelerators_fed_count": f"{acc}s fed (AU ≥ {target:g} %)",
        "accelerators_fed_warm_count": f"{acc}s fed from memory (warm cache)",
    }
