"""A result's raw samples as a figure (matplotlib object API, Agg, no pyplot): what reports
and notebooks show.

A series over time is plotted only when it spans two measuring windows or more (dd and
randread measure in 500 ms windows, the loader in 1 s windows): a 30 ms dd has one
partial window, a dot, not a plot.  :func:`sample_plot` then gives the sentence that says
so instead of a figure."""

from __future__ import annotations

import math
from typing import Any

from ..units import metric_label, unit_of
from .loader import need_label
from .style import FONT, display_unit, draw_measured, draw_target, duration_text, figsize, too_short, wrap

__all__ = ["sample_series", "result_figure", "sample_plot", "window_of"]

_TIME_KEYS = ("t_s", "time_s", "elapsed_s", "t", "time", "ts")
_WINDOW_S = 0.5  # the storage probes' bandwidth windows (dd, randread, files, disk presets)
_WIDTH_IN, _DPI = 10.0, 100


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


def window_of(result) -> float:
    """The length of the result's measuring windows (s): its ``window_s`` parameter, else 500 ms."""
    w = (result.params or {}).get("window_s")
    return float(w) if _is_num(w) and w > 0 else _WINDOW_S


def _time_span(data: Any) -> float | None:
    """How long a samples entry over time lasted (its last time stamp), None when it is not over time."""
    if isinstance(data, dict):
        t = next((data[k] for k in _TIME_KEYS if isinstance(data.get(k), list)), None)
    elif isinstance(data, list) and data and all(isinstance(r, dict) for r in data):
        key = next((k for k in _TIME_KEYS if k in data[0]), None)
        t = [r.get(key) for r in data] if key else None
    else:
        t = None
    if not t:
        return None
    t = [v for v in t if _is_num(v)]
    return max(t) if t else None


def _name(entry: str) -> str:
    """'write_bw' -> 'write'; 'bw' / 'windows' -> 'the run'."""
    base = entry[:-3] if entry.endswith("_bw") else entry
    return "the run" if base in ("bw", "windows", "") else base


def _windowed(entry: str) -> bool:
    return entry in ("bw", "windows") or entry.endswith("_bw")


def _subplots(result, window: float) -> tuple[list, list]:
    """The subplots worth drawing (windowed series first), and each over-time entry too short to
    plot with its length."""
    subplots, short = [], []  # subplots: (entry, x, {col: y}, xlabel)
    for name, data in (result.samples or {}).items():
        span = _time_span(data)
        if span is not None and too_short(span, window):
            short.append((name, span))
            continue
        s = sample_series(name, data)
        if s is None:
            continue
        x, cols, xlabel = s
        by_unit: dict[str, dict[str, list]] = {}
        for k, v in cols.items():
            by_unit.setdefault(unit_of(k), {})[k] = v
        for unit, group in by_unit.items():
            if unit or len(by_unit) == 1:  # unitless columns beside real ones (per-step counts): left out
                subplots.append((name, x, group, xlabel))
    subplots.sort(key=lambda p: not _windowed(p[0]))
    return subplots, short


def _short_text(short: list, window: float) -> str:
    if len(short) == 1:
        return too_short(short[0][1], window, _name(short[0][0]))
    parts = [f"{_name(n)} {duration_text(s)}" for n, s in short]
    return (
        f"{parts[0].replace(' ', ' lasted ', 1)} and {', '.join(parts[1:])}, each shorter than two "
        f"{duration_text(window)} windows: no plot"
    )


def sample_plot(result, max_subplots: int = 3) -> tuple[Any, str | None]:
    """``(figure, None)``, or ``(None, sentence)`` when there is nothing worth a plot: "the run
    lasted 30 ms, shorter than two 500 ms windows: no plot".  The sentence is None too when
    the result has no series at all (a histogram, a table)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    window = window_of(result)
    subplots, short = _subplots(result, window)
    subplots = subplots[:max_subplots]
    if not subplots:
        return None, (_short_text(short, window) if short else None)
    # two subplots a row: a report stays scannable and each subplot readable
    cols = min(2, len(subplots))
    rows = -(-len(subplots) // cols)
    fig = Figure(figsize=figsize(_WIDTH_IN, 0.7 + 3.0 * rows, _DPI), dpi=_DPI, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    title = f"{result.headline()} — over time"
    if short:
        title += f" ({_short_text(short, window)})"
    fig.suptitle(
        wrap(title, _WIDTH_IN * _DPI - 20, FONT["suptitle"], bold=True), fontsize=FONT["suptitle"], fontweight="bold"
    )
    m = result.metrics or {}
    targets = {
        "samples/s": (m.get("needed_samples_per_s"), "need"),
        "%": ((result.params or {}).get("au_target_pct"), "AU"),
    }
    for ax, (name, x, group, xlabel) in zip(axes, subplots):
        _draw_subplot(
            ax,
            name,
            x,
            group,
            xlabel,
            window if _windowed(name) else None,
            targets,
            result.labels.get("accelerator"),
            cols,
        )
    for ax in axes[len(subplots) :]:
        ax.set_axis_off()
    return fig, None


def _draw_subplot(ax, name, x, group, xlabel, window, targets, accelerator, n_cols) -> None:
    key = next(iter(group))
    unit = unit_of(key)
    ymax = max(max(y) for y in group.values())
    target, what = targets.get(unit, (None, ""))
    if what == "AU" and "au_pct" not in group:
        target = None
    factor, shown = display_unit(unit, max(ymax, target or 0))
    for k, y in list(group.items())[:4]:  # a line through 5 or more points, else marked values
        draw_measured(
            ax,
            x,
            [v * factor for v in y],
            label=metric_label(k),
            **({"marker": "o", "markersize": 4} if len(x) < 30 else {}),
        )
    if target:  # the line the run has to clear: what the accelerator needs, the AU target
        label = need_label(accelerator, need=target) if what == "need" else f"AU target {target:g} %"
        draw_target(ax, target * factor, label)
        ax.set_ylim(0, max(ymax, target) * factor * 1.25)
    else:
        ax.set_ylim(0, max(ymax * factor * 1.1, 1e-9))
    names = [metric_label(k) for k in list(group)[:4]]
    title = ", ".join(names) + (
        f" ({duration_text(window)} windows)"
        if window
        else " (per step)"
        if name == "steps"
        else f" ({name})"
        if names != [name]
        else ""
    )
    ax.set_title(wrap(title, _WIDTH_IN * _DPI / n_cols - 20, FONT["title"]), fontsize=FONT["title"], loc="left")
    if shown:
        ax.set_ylabel(shown, fontsize=FONT["label"])
    ax.set_xlabel(xlabel, fontsize=FONT["label"])
    ax.tick_params(labelsize=FONT["tick"])
    ax.grid(alpha=0.3)
    if len(group) > 1 or target:
        ax.legend(fontsize=FONT["legend"], frameon=False, loc="lower left")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def result_figure(result, max_subplots: int = 3):
    """Line plots of the result's numeric sample series, grouped by unit; None when it has
    none worth a plot (see :func:`sample_plot` for the sentence saying why)."""
    return sample_plot(result, max_subplots)[0]
