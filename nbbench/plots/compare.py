"""A comparison's bar chart: one subplot per headline metric, a bar per reference, value and change.

A reference with several runs draws its median with a whisker from the slowest to the
fastest run.  A change beyond the noise is written with its 95 % interval and coloured
green or red; one within the noise says "no significant change" in grey, and one that
cannot be decided (one run each) "inconclusive" in grey — never green or red.

The caveats that make a delta unlike for like (cache mode, a memory-backed directory,
different parameters, a partial run) are drawn in the image, under the title, so a
picture that travels alone still carries them.  A metric without a better/worse
direction (:func:`~nbbench.compare.better` is None: a monitor's wall time, its disk
reads) gets grey bars and uncoloured deltas, and so does the delta of a run measured unlike
the baseline (marked ⚠)."""

from __future__ import annotations

from collections.abc import Sequence

from ..compare import ComparisonGroup, better, caveats, chart_metrics
from ..compare.model import _name
from ..units import format_metric, unit_of
from .style import FONT, NEUTRAL, display_unit, wrap

__all__ = ["bar_chart", "caveats"]  # caveats: nbbench.compare.likeness.caveats

# a colour per run; no green or red, which say "better" and "worse" here
_COLOURS = ["#607d8b", "#1e88e5", "#fb8c00", "#8e24aa", "#6d4c41", "#3949ab", "#00acc1", "#f06292"]
_WIDTH_IN, _DPI = 8.0, 100


def bar_chart(g: ComparisonGroup, max_metrics: int = 6, metrics: Sequence[str] | None = None):
    """One horizontal bar subplot per metric, a bar per reference, labelled with value and change
    (or "no significant change");
    the caveats (:func:`caveats`) under the title.  None when no metric has a value.

    ``metrics``: which (default :func:`~nbbench.compare.chart_metrics`: the headline figures)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    metrics = list(metrics) if metrics is not None else chart_metrics(g, max_metrics)
    metrics = [m for m in metrics if any(g.value(m, i) is not None for i in range(len(g.runs)))]
    if not metrics:
        return None
    width_px = _WIDTH_IN * _DPI - 30
    notes = "\n".join(wrap("⚠ " + c, width_px, FONT["note"]) for c in caveats(g))
    note_h = 0.2 * (notes.count("\n") + 1) + 0.1 if notes else 0.0
    per = 0.6 * len(g.runs) + 0.85
    heights = ([note_h] if notes else []) + [per] * len(metrics)
    fig = Figure(figsize=(_WIDTH_IN, 0.55 + sum(heights)), dpi=_DPI, layout="constrained")
    FigureCanvasAgg(fig)
    fig.suptitle(
        wrap(f"{g.kind}: " + " vs ".join(g.names), width_px, FONT["suptitle"], bold=True),
        fontsize=FONT["suptitle"],
        fontweight="bold",
        x=0.01,
        ha="left",
    )
    axes = list(fig.subplots(len(heights), 1, squeeze=False, height_ratios=heights)[:, 0])
    if notes:  # the caveats, under the title, in an axes of their own height
        ax = axes.pop(0)
        ax.set_axis_off()
        ax.text(
            0.0,
            1.0,
            notes,
            transform=ax.transAxes,
            va="top",
            ha="left",
            fontsize=FONT["note"],
            color="#b45309",
            linespacing=1.3,
        )
    for ax, m in zip(axes, metrics):
        vals = [g.value(m, i) for i in range(len(g.runs))]
        way = better(m, g.kind)
        top = max([v for v in vals if v is not None] + [0]) or 1
        factor, unit = display_unit(unit_of(m), top)
        ys = list(range(len(vals)))[::-1]
        colours = [_COLOURS[i % len(_COLOURS)] if way else NEUTRAL for i in range(len(vals))]
        ax.barh(ys, [(v or 0) * factor for v in vals], color=colours, height=0.7)
        for y, i in zip(ys, range(len(vals))):  # each reference's runs: min…max whisker
            figs = g.figures(m, i)
            if len(figs) > 1 and vals[i] is not None:
                ax.errorbar(
                    [vals[i] * factor],
                    [y],
                    xerr=[[(vals[i] - min(figs)) * factor], [(max(figs) - vals[i]) * factor]],
                    fmt="none",
                    ecolor="#222",
                    elinewidth=1.2,
                    capsize=4,
                )
                top = max(top, max(figs))
        ax.set_yticks(ys, labels=g.names, fontsize=FONT["tick"])
        arrow = {"higher": "  (higher is better)", "lower": "  (lower is better)"}.get(way or "", "  (no better/worse)")
        ax.set_title(_name(m) + (f" [{unit}]" if unit else "") + arrow, fontsize=FONT["title"], loc="left")
        ax.set_xlim(0, top * factor * 1.55)
        ax.tick_params(axis="x", labelsize=FONT["tick"])
        for i, (y, v) in enumerate(zip(ys, vals)):
            figs = g.figures(m, i)
            txt = format_metric(m, v) + (f" ({len(figs)} runs)" if len(figs) > 1 else "")
            colour = "#333"
            if i and g.interval(m, i) is not None:  # unlike the baseline: shown, never as a gain or loss
                txt += f"\n{g.delta_cell(m, i)}"
                colour = g.delta_paint(m, i, "#333")
            x = max([v or 0] + (figs if len(figs) > 1 else []))
            ax.text(
                x * factor + top * factor * 0.02,
                y,
                txt,
                va="center",
                fontsize=FONT["value"],
                color=colour,
                linespacing=1.1,
            )
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    return fig
