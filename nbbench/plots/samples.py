"""A result's raw samples as a figure (matplotlib object API, Agg, no pyplot): what reports show."""

from __future__ import annotations

import math
from typing import Any

from ..units import metric_label, unit_of
from .png import metric_formatter

__all__ = ["sample_series", "result_figure"]

_TIME_KEYS = ("t_s", "time_s", "elapsed_s", "t", "time", "ts")


def _is_num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def sample_series(name: str, data: Any) -> tuple[list, dict[str, list], str] | None:
    """(x, {column: y}, x-label) for a samples entry that is a time series, else None."""
    if isinstance(data, list) and len(data) > 1 and all(_is_num(v) for v in data):
        return list(range(len(data))), {name: data}, "sample"
    # columns (dict of lists) or records (list of dicts) are plotted only against time: a
    # histogram or a table of rows is not a series
    if isinstance(data, dict) and data and all(isinstance(v, list) for v in data.values()):
        cols: dict[str, list] = dict(data)
    elif isinstance(data, list) and data and all(isinstance(r, dict) for r in data):
        keys = [k for k in data[0] if all(_is_num(r.get(k)) for r in data)]
        cols = {k: [r.get(k) for r in data] for k in keys}
    else:
        return None
    if not any(k in cols for k in _TIME_KEYS):
        return None
    n = max((len(v) for v in cols.values()), default=0)
    cols = {k: v for k, v in cols.items() if len(v) == n and n > 1 and all(_is_num(x) for x in v)}
    if not cols:
        return None
    xkey = next((k for k in _TIME_KEYS if k in cols), None)
    if xkey is None:
        return None
    x, xlabel = cols.pop(xkey), metric_label(xkey) + (f" [{unit_of(xkey)}]" if unit_of(xkey) else "")
    return (x, cols, xlabel) if cols else None


def result_figure(result, max_panels: int = 3):
    """Line plots of the result's numeric sample series, grouped by unit; None when it has none."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    panels = []  # (title, x, {col: y}, xlabel, unit-key)
    for name, data in (result.samples or {}).items():
        s = sample_series(name, data)
        if s is None:
            continue
        x, cols, xlabel = s
        by_unit: dict[str, dict[str, list]] = {}
        for k, v in cols.items():
            by_unit.setdefault(unit_of(k), {})[k] = v
        for unit, group in by_unit.items():
            panels.append((name, x, group, xlabel))
    panels = panels[:max_panels]
    if not panels:
        return None
    # side by side: a row of small panels keeps a report scannable
    fig = Figure(figsize=(min(10.0, 4.2 * len(panels)), 2.7), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(panels), squeeze=False)[0, :]
    fig.suptitle(f"{result.headline()} — samples", fontsize=10, fontweight="bold")
    for ax, (name, x, group, xlabel) in zip(axes, panels):
        for k, y in list(group.items())[:4]:
            ax.plot(x, y, label=metric_label(k), linewidth=1.4, marker="o" if len(x) < 30 else None, markersize=3)
        key = next(iter(group))
        ax.yaxis.set_major_formatter(metric_formatter(key))
        names = [metric_label(k) for k in list(group)[:4]]
        title = name if names == [name] or name.startswith(tuple(names)) else f"{name}: {', '.join(names)}"
        ax.set_title(title, fontsize=9, loc="left")
        ax.set_xlabel(xlabel, fontsize=8)
        ax.tick_params(labelsize=8)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        if len(group) > 1:
            ax.legend(fontsize=8, frameon=False)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    return fig
