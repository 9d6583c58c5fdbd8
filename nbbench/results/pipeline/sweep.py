"""The result class of the ``sweep`` probe: a DataLoader settings sweep, one row per configuration."""

from __future__ import annotations

import math

from ...units import format_metric, metric_label
from .. import drawing
from ..base import Result, register
from ..present.rule import SEP, Section

__all__ = ["SweepResult"]


@register("sweep")
class SweepResult(Result):
    """A DataLoader settings sweep: one row per configuration, and a recommendation."""

    SUMMARY = ("best_samples_per_s", "recommended_samples_per_s", "configs_count", "failed_count")
    INLINE_SPREAD = False

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

        cols = [
            "num_workers",
            "batch_size",
            "pin_memory",
            "prefetch_factor",
            "status",
            "samples_per_s",
            "bytes_per_s",
            "au_pct",
            "data_wait_pct",
            "gpu_util_mean_pct",
            "startup_s",
            "reason",
        ]
        rows = [{k: c.get(k) for k in cols} for c in self.configs]
        return pd.DataFrame(rows, columns=cols)

    def plot(self, ax=None):
        """Throughput against num_workers, one line per batch size (the "sweep" drawer:
        :mod:`nbbench.results.drawing`)."""
        return drawing.draw("sweep", self, ax)

    def plot_png(self) -> bytes:
        """:meth:`plot` as PNG bytes."""
        return drawing.draw("sweep_png", self)

    def display_table(self):
        """The table for people: figures with their units, empty columns left out (strings)."""
        t = self.table.copy()
        if t.empty:
            return t

        def fmt(key):
            return [
                format_metric(key, v) if v is not None and not (isinstance(v, float) and math.isnan(v)) else ""
                for v in t[key]
            ]

        for k in ("samples_per_s", "bytes_per_s", "au_pct", "data_wait_pct", "gpu_util_mean_pct", "startup_s"):
            t[k] = fmt(k)
        t["prefetch_factor"] = [
            "" if v is None or (isinstance(v, float) and math.isnan(v)) else int(v) for v in t["prefetch_factor"]
        ]
        t["reason"] = [r if isinstance(r, str) else "" for r in t["reason"]]
        keep = [c for c in t.columns if c in ("num_workers", "batch_size", "status") or any(str(v) for v in t[c])]
        t = t[keep]
        return t.rename(
            columns={
                "samples_per_s": "samples/s",
                "bytes_per_s": "bytes/s",
                "au_pct": "AU",
                "data_wait_pct": "data wait",
                "gpu_util_mean_pct": "GPU util",
                "startup_s": "start-up",
                "prefetch_factor": "prefetch",
            }
        )

    def answer_line(self) -> str:
        """The recommendation's settings and rate: 'num_workers=4, batch_size=64 · 1.65 ksamples/s'."""
        rec = self.recommended
        if not rec:
            return "no configuration ran" if not self.configs else "no recommendation"
        settings = ", ".join(
            f"{k}={rec[k]}"
            for k in ("num_workers", "batch_size", "pin_memory", "prefetch_factor")
            if rec.get(k) is not None
        )
        figs = [
            format_metric(k, rec[k]) + ("" if k == "samples_per_s" else f" {metric_label(k)}")
            for k in ("samples_per_s", "au_pct")
            if rec.get(k) is not None
        ]
        return SEP.join([f"use {settings}"] + figs)

    def story(self) -> list[str]:
        """Why this configuration (the answer line names it and its rate), and a note."""
        first = self.extra.get("why") or self.recommendation
        return [x for x in (first, f"note: {self.note}" if self.note else "") if x]

    def sections(self) -> list[Section]:
        """Every configuration (open) with the throughput plot under it in HTML, then every
        figure and how it was measured (folded)."""
        t = self.display_table()
        out = []
        if not t.empty:
            rows = [["" if v is None else str(v) for v in row] for row in t.itertuples(index=False)]
            out.append(
                Section(
                    f"{len(rows)} configurations",
                    rows,
                    head=[str(c) for c in t.columns],
                    folded=False,
                    align="r" * (len(t.columns) - 1) + "l",
                    css="nbbench-sweep",
                    html_extra=self._plot_html,
                )
            )
        return out + super().sections()

    def _plot_html(self) -> str:
        import base64

        try:
            png = base64.b64encode(self.plot_png()).decode()
        except Exception:  # noqa: BLE001 - no matplotlib: the table is enough
            return ""
        return f"<img src='data:image/png;base64,{png}' alt='throughput by num_workers'/>"
