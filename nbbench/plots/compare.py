"""A comparison's bar chart: one panel per headline metric, a bar per run, value and Δ%."""

from __future__ import annotations

from typing import Sequence

from ..compare import ComparisonGroup, _name, better, chart_metrics, delta_colour
from ..units import format_metric, unit_of
from .png import metric_formatter

__all__ = ["bar_chart"]

_COLOURS = ["#607d8b", "#1e88e5", "#43a047", "#fb8c00", "#8e24aa", "#e53935", "#00897b", "#6d4c41"]


def bar_chart(g: ComparisonGroup, max_metrics: int = 6, metrics: Sequence[str] | None = None):
    """One horizontal bar panel per metric, a bar per reference, labelled with value and Δ%.

    ``metrics``: which (default :func:`~nbbench.compare.chart_metrics`: the headline figures)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    metrics = list(metrics) if metrics is not None else chart_metrics(g, max_metrics)
    n = max(1, len(metrics))
    per = 0.38 * len(g.runs) + 0.75
    fig = Figure(figsize=(8.0, 0.6 + per * n), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(n, 1, squeeze=False)[:, 0]
    fig.suptitle(f"{g.kind}: " + " vs ".join(g.names), fontsize=11, fontweight="bold")
    for ax, m in zip(axes, metrics):
        vals = [g.value(m, i) for i in range(len(g.runs))]
        ys = list(range(len(vals)))[::-1]
        ax.barh(ys, [v or 0 for v in vals], color=[_COLOURS[i % len(_COLOURS)] for i in range(len(vals))],
                height=0.7)
        ax.set_yticks(ys, labels=g.names, fontsize=9)
        arrow = {"higher": "  (higher is better)", "lower": "  (lower is better)"}.get(better(m) or "", "")
        ax.set_title(_name(m) + (f" [{unit_of(m)}]" if unit_of(m) else "") + arrow, fontsize=9, loc="left")
        top = max([v for v in vals if v is not None] + [0]) or 1
        ax.set_xlim(0, top * 1.45)
        ax.tick_params(axis="x", labelsize=8)
        ax.xaxis.set_major_formatter(metric_formatter(m))
        for i, (y, v) in enumerate(zip(ys, vals)):
            txt = format_metric(m, v)
            d = None if i == 0 else g.delta_pct(m, i)
            if d is not None:
                txt += f"  ({d:+.1f} %)"
            ax.text((v or 0) + top * 0.02, y, txt, va="center", fontsize=8.5, color=delta_colour(m, d, "#333"))
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    if not metrics:
        axes[0].text(0.5, 0.5, "no numeric metrics", ha="center", va="center", transform=axes[0].transAxes)
        axes[0].set_axis_off()
    return fig
