"""Result classes of the input-pipeline probes: ``loader``, ``sweep`` and ``feed``.

A :class:`LoaderResult` keeps what was measured per step (``samples["steps"]``:
t_s, wait_s, compute_s, samples, bytes; ``samples["gpu"]``: device timings from CUDA
events) and derives its figures from them with :func:`loader_figures`, the way
IPython's ``TimeitResult`` derives its statistics from its runs:
:meth:`LoaderResult.derive` (re)computes ``metrics`` and the derived labels.

AU (accelerator utilisation) follows MLPerf Storage: compute time / wall time over
the measured window; the input-bound band and its thresholds are in
:mod:`nbbench.accelerators`.
"""

from __future__ import annotations

import math
import statistics

from ..accelerators import AU_TARGET_PCT, get_accelerator, input_bound_band
from ..units import format_metric
from .base import Result, register

__all__ = ["LoaderResult", "SweepResult", "FeedResult", "loader_figures"]

#: what :func:`loader_figures` derives; a recomputation replaces all of them
DERIVED_METRICS = ("epochs_count", "measured_s", "steps_count", "samples_count", "samples_per_s", "batches_per_s",
                   "bytes_per_s", "batch_size", "batch_bytes", "data_wait_pct", "data_wait_p50_s", "data_wait_p99_s",
                   "au_pct", "compute_s", "gpu_window_s", "gpu_starvation_s", "gpu_starvation_pct",
                   "accelerator_samples_per_s", "needed_samples_per_s", "accelerators_fed_count")
DERIVED_LABELS = ("input_bound", "input_bound_basis", "au_target")


def _pct(values, q):
    if not values:
        return None
    s = sorted(values)
    k = (len(s) - 1) * q
    lo, hi = int(math.floor(k)), int(math.ceil(k))
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def loader_figures(steps: dict, gpu: dict | None = None, has_step: bool = True,
                   au_target_pct: float = AU_TARGET_PCT, accelerator=None,
                   epoch_starts: list | None = None) -> tuple[dict, dict]:
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

    def headline(self) -> str:
        lb = self.labels
        parts = [lb.get("loader", "loader")]
        if lb.get("num_workers") is not None:
            parts.append(f"workers={lb['num_workers']}")
        if lb.get("batch_size") is not None:
            parts.append(f"batch={lb['batch_size']}")
        return f"loader {' '.join(str(p) for p in parts)} · step {lb.get('step', 'none')}"

    def derive(self, accelerator=None) -> "LoaderResult":
        """(Re)compute the figures from the kept samples (:func:`loader_figures`); returns self.

        The step (none or some) and AU target come from ``params``, the accelerator from
        ``labels["accelerator"]`` unless given.  Measured directly, not derived:
        startup_s, warmup_s and gpu_util_mean_pct.
        """
        name = self.labels.get("accelerator")
        acc = accelerator if accelerator is not None else (get_accelerator(name) if name else None)
        metrics, labels = loader_figures(self.samples.get("steps") or {}, self.samples.get("gpu"),
                                         has_step=self.params.get("step") not in (None, "none"),
                                         au_target_pct=self.params.get("au_target_pct", AU_TARGET_PCT),
                                         accelerator=acc, epoch_starts=self.samples.get("epoch_starts"))
        for store, derived, keys in ((self.metrics, metrics, DERIVED_METRICS), (self.labels, labels, DERIVED_LABELS)):
            for k in keys:
                if k not in derived:
                    store.pop(k, None)
            store.update(derived)
        return self

    @property
    def au_pct(self) -> float | None:
        return self.metrics.get("au_pct")

    @property
    def input_bound(self) -> str | None:
        return self.labels.get("input_bound")

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
        s = f"The loader delivered {format_metric('samples_per_s', rate)}"
        au = m.get("au_pct")
        if au is not None:
            line = self.params.get("au_target_pct", AU_TARGET_PCT)
            s += (f" at AU {au:.1f} % ({'meets' if au >= line else 'below'} the {line:.0f} % line); "
                  f"{m.get('data_wait_pct', float('nan')):.1f} % of the time went to waiting for data: "
                  f"{self.labels.get('input_bound')}")
        else:
            s += " with no compute step (the input pipeline's ceiling)"
        need = m.get("needed_samples_per_s")
        if need:
            acc = self.labels.get("accelerator")
            if au is None and rate:
                n = get_accelerator(acc).how_many(rate)
                s += f"; {acc} needs {format_metric('samples_per_s', need)} at AU 90 %: this feeds {n}"
            else:
                s += f"; {acc} needs {format_metric('samples_per_s', need)} at AU 90 %"
        return s + "."

    def text_table(self) -> str:
        return super().text_table() + "\n  " + self.sentence()

    def _repr_html_(self) -> str:
        import html

        return super()._repr_html_() + f"<div>{html.escape(self.sentence())}</div>"


@register("sweep")
class SweepResult(Result):
    """A DataLoader settings sweep: one row per configuration, and a recommendation."""

    SUMMARY = ("best_samples_per_s", "recommended_samples_per_s", "configs_count", "failed_count")

    def headline(self) -> str:
        return f"sweep {self.labels.get('dataset', '')}".strip()

    @property
    def configs(self) -> list[dict]:
        return list(self.samples.get("configs", []))

    @property
    def recommendation(self) -> str:
        return self.extra.get("recommendation") or self.labels.get("recommendation", "")

    @property
    def note(self) -> str:
        """What a sweep over a DataLoader kept of it and what it replaced ('' for a dataset)."""
        return self.extra.get("note") or ""

    @property
    def recommended(self) -> dict | None:
        return self.extra.get("recommended")

    @property
    def table(self):
        """One row per configuration (a pandas DataFrame)."""
        import pandas as pd

        cols = ["num_workers", "batch_size", "pin_memory", "prefetch_factor", "status", "samples_per_s",
                "bytes_per_s", "au_pct", "data_wait_pct", "gpu_util_mean_pct", "startup_s", "reason"]
        rows = [{k: c.get(k) for k in cols} for c in self.configs]
        return pd.DataFrame(rows, columns=cols)

    def plot(self, ax=None):
        """Throughput against num_workers, one line per batch size (:func:`nbbench.plots.sweep.sweep_figure`)."""
        from ..plots.sweep import sweep_figure

        return sweep_figure(self, ax)

    def plot_png(self) -> bytes:
        """:meth:`plot` as PNG bytes."""
        from ..plots.sweep import sweep_png

        return sweep_png(self)

    def display_table(self):
        """The table for people: figures with their units, empty columns left out (strings)."""
        t = self.table.copy()
        if t.empty:
            return t

        def fmt(key):
            return [format_metric(key, v) if v is not None and not (isinstance(v, float) and math.isnan(v)) else ""
                    for v in t[key]]

        for k in ("samples_per_s", "bytes_per_s", "au_pct", "data_wait_pct", "gpu_util_mean_pct", "startup_s"):
            t[k] = fmt(k)
        t["prefetch_factor"] = ["" if v is None or (isinstance(v, float) and math.isnan(v)) else int(v)
                                for v in t["prefetch_factor"]]
        t["reason"] = [r if isinstance(r, str) else "" for r in t["reason"]]
        keep = [c for c in t.columns if c in ("num_workers", "batch_size", "status") or any(str(v) for v in t[c])]
        t = t[keep]
        return t.rename(columns={"samples_per_s": "samples/s", "bytes_per_s": "bytes/s", "au_pct": "AU",
                                 "data_wait_pct": "data wait", "gpu_util_mean_pct": "GPU util",
                                 "startup_s": "start-up", "prefetch_factor": "prefetch"})

    def text_table(self) -> str:
        lines = [str(self)]
        t = self.display_table()
        if not t.empty:
            if "reason" in t.columns:
                t["reason"] = [r[:70] for r in t["reason"]]
            lines.append(t.to_string(index=False))
        lines.append(self.recommendation)
        if self.note:
            lines.append(f"  note: {self.note}")
        for w in self.warnings:
            lines.append(f"  warning: {w}")
        for a in self.advice_lines():
            lines.append(f"  advice: {a}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        import base64
        import html

        head = super()._repr_html_()
        out = head + f"<p><b>{html.escape(self.recommendation)}</b></p>"
        if self.note:
            out += f"<p>{html.escape(self.note)}</p>"
        try:
            out += self.display_table().to_html(index=False, na_rep="")
        except Exception:  # noqa: BLE001
            pass
        try:
            png = base64.b64encode(self.plot_png()).decode()
            out += f"<img src='data:image/png;base64,{png}' alt='throughput by num_workers'/>"
        except Exception:  # noqa: BLE001 - no matplotlib: the table is enough
            pass
        return out


@register("feed")
class FeedResult(Result):
    """Storage + CPU against accelerators' appetite: how many can be fed at AU >= 90 %."""

    SUMMARY = ("accelerators_fed_count", "cold_samples_per_s", "warm_samples_per_s", "needed_samples_per_s")

    def headline(self) -> str:
        return f"feed {self.params.get('path', '')} → {self.labels.get('accelerator', '')}".strip()

    @property
    def accelerators_fed(self) -> int | None:
        return self.metrics.get("accelerators_fed_count")

    @property
    def limiter(self) -> str | None:
        return self.labels.get("limiter")

    @property
    def answer(self) -> str:
        return self.extra.get("answer") or self.labels.get("answer", "")

    def accelerators_frame(self):
        """Every emulated accelerator of the same workload: need and how many are fed."""
        return self.samples_frame("accelerators")

    def text_table(self) -> str:
        return super().text_table() + "\n  " + self.answer

    def _repr_html_(self) -> str:
        import html

        return super()._repr_html_() + f"<p><b>{html.escape(self.answer)}</b></p>"
