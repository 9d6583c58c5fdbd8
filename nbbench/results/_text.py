"""Plain-text tables shared by the storage results: the main figures, then fio's 17
latency percentiles in rows of six (instead of 17 lines)."""

from __future__ import annotations

from ..units import format_metric, metric_label
from .hist import PERCENTILES, percentile_key

__all__ = ["text_table"]


def text_table(res) -> str:
    lines = [str(res)]
    if res.labels:
        lines.append("  " + "  ".join(f"{k}={v}" for k, v in res.labels.items()))
    pkeys = {percentile_key(p) for p in PERCENTILES}
    main = [(k, v) for k, v in res.metrics.items() if k not in pkeys]
    width = max((len(metric_label(k)) for k, _ in main), default=0)
    for k, v in main:
        lines.append(f"  {metric_label(k):<{width}}  {format_metric(k, v)}")
    cells = [f"p{p:g}={format_metric('x_ns', res.metrics[percentile_key(p)])}" for p in PERCENTILES
             if percentile_key(p) in res.metrics]
    if cells:
        lines.append("  latency percentiles:")
        for i in range(0, len(cells), 6):
            lines.append("    " + "  ".join(f"{c:<16}" for c in cells[i:i + 6]).rstrip())
    for w in res.warnings:
        lines.append(f"  warning: {w}")
    for a in res.advice_lines():
        lines.append(f"  advice: {a}")
    return "\n".join(lines)
