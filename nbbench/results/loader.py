"""Result classes of the input-pipeline probes: ``loader``, ``sweep`` and ``feed``."""

from __future__ import annotations

import math

from ..accelerators import AU_TARGET_PCT, get_accelerator
from ..units import format_metric
from .base import Result, register

__all__ = ["LoaderResult", "SweepResult", "FeedResult"]

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

    def verdict(self) -> str:
        """One sentence for people."""
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
        return super().text_table() + "\n  " + self.verdict()

    def _repr_html_(self) -> str:
        import html

        return super()._repr_html_() + f"<div>{html.escape(self.verdict())}</div>"


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
