"""What every nbbench figure shares: its smallest width, its font sizes, wrapped titles,
axis units that match the ticks, and the rule that a series too short for a plot gets a
sentence instead.

No global ``rcParams``: builders pass these sizes to matplotlib explicitly, so
importing nbbench never changes how a user's own plots look.
"""

from __future__ import annotations

import math
import textwrap

from ..units import format_sig

__all__ = [
    "MIN_WIDTH_PX",
    "FONT",
    "NEUTRAL",
    "GOOD",
    "BAD",
    "TARGET",
    "figsize",
    "wrap",
    "display_unit",
    "too_short",
    "duration_text",
    "value_text",
    "legend_right",
    "finite",
    "MIN_LINE_POINTS",
    "draw_measured",
    "draw_target",
]

MIN_WIDTH_PX = 800  # saved PNGs are at least this wide
# points; every text a figure draws is at least 10 pt
FONT = {"suptitle": 13, "title": 11, "label": 10, "tick": 10, "legend": 10, "note": 10, "value": 10}
NEUTRAL = "#9e9e9e"  # bars of a metric with no better/worse direction
GOOD, BAD = "#2e7d32", "#c62828"
TARGET = "#2e7d32"  # a target line (what an accelerator needs, AU 90 %)


def figsize(width_in: float, height_in: float, dpi: float) -> tuple[float, float]:
    """``(width, height)`` in inches, the width raised so the figure is >= :data:`MIN_WIDTH_PX` at ``dpi``."""
    return max(float(width_in), MIN_WIDTH_PX / float(dpi)), float(height_in)


def wrap(text: str, width_px: float, font_pt: float, dpi: float = 100.0, bold: bool = False) -> str:
    """``text`` wrapped at word boundaries to fit about ``width_px`` pixels (never cut mid-word)."""
    if not text:
        return ""
    char_px = (0.62 if bold else 0.55) * font_pt * dpi / 72.0  # a DejaVu Sans (Bold) character's mean width
    chars = max(20, int(width_px / char_px))
    return "\n".join(textwrap.wrap(text, chars, break_long_words=False, break_on_hyphens=False)) or text


# (unit of the key) -> ((threshold, factor, shown unit), ...) largest first
_SCALES = {
    "bytes/s": ((1e12, 1e-12, "TB/s"), (1e9, 1e-9, "GB/s"), (1e6, 1e-6, "MB/s"), (1e3, 1e-3, "kB/s"), (0, 1.0, "B/s")),
    "bytes": ((1e12, 1e-12, "TB"), (1e9, 1e-9, "GB"), (1e6, 1e-6, "MB"), (1e3, 1e-3, "kB"), (0, 1.0, "B")),
    "iops": ((1e6, 1e-6, "MIOPS"), (1e3, 1e-3, "kIOPS"), (0, 1.0, "IOPS")),
    "flop/s": ((1e15, 1e-15, "PFLOP/s"), (1e12, 1e-12, "TFLOP/s"), (1e9, 1e-9, "GFLOP/s"), (0, 1.0, "FLOP/s")),
    "ns": ((1e9, 1e-9, "s"), (1e6, 1e-6, "ms"), (1e3, 1e-3, "µs"), (0, 1.0, "ns")),
    "us": ((1e6, 1e-6, "s"), (1e3, 1e-3, "ms"), (0, 1.0, "µs")),
    "ms": ((1e3, 1e-3, "s"), (0, 1.0, "ms")),
    "s": ((1.0, 1.0, "s"), (1e-3, 1e3, "ms"), (0, 1e6, "µs")),
}
for _u in ("samples/s", "files/s", "batches/s"):
    _SCALES[_u] = ((1e6, 1e-6, "M" + _u), (1e3, 1e-3, "k" + _u), (0, 1.0, _u))


def display_unit(unit: str, vmax: float | None) -> tuple[float, str]:
    """``(factor, unit text)`` for an axis showing values up to ``vmax`` in ``unit`` (a key's
    unit as :func:`~nbbench.units.unit_of` gives it): bytes/s up to 2.9e9 -> (1e-9, "GB/s"),
    so the axis title says the unit its tick numbers are in."""
    steps = _SCALES.get(unit)
    if steps is None:
        return 1.0, {"1/s": "/s", "count": ""}.get(unit, unit)
    v = abs(vmax or 0.0)
    for threshold, factor, text in steps:
        if v >= threshold:
            return factor, text
    return steps[-1][1], steps[-1][2]


def duration_text(seconds: float) -> str:
    """'30 ms', '2.4 s', '3 min 5 s'."""
    if seconds < 1.0:
        return f"{seconds * 1e3:.0f} ms"
    if seconds < 100.0:
        return f"{seconds:.2g} s" if seconds < 10 else f"{seconds:.0f} s"
    m, s = divmod(int(round(seconds)), 60)
    return f"{m} min {s} s" if s else f"{m} min"


def too_short(span_s: float | None, window_s: float | None, what: str = "the run") -> str | None:
    """The sentence shown instead of a time-series plot for a run shorter than two
    windows (None: long enough to plot)."""
    if span_s is None or not math.isfinite(span_s):
        return None
    if window_s and span_s < 2 * window_s * 0.999:
        return f"{what} lasted {duration_text(span_s)}, shorter than two {duration_text(window_s)} windows: no plot"
    return None


def value_text(v: float) -> str:
    """A value for a status line, 7 characters wide."""
    a = abs(v)
    if a >= 100:
        return f"{v:7.0f}"
    if a >= 10:
        return f"{v:7.1f}"
    return f"{v:7.2f}"


def legend_right(ax) -> None:
    """The legend outside the axes, on the right (never over the data)."""
    ax.legend(
        loc="upper left",
        bbox_to_anchor=(1.005, 1.0),
        fontsize=FONT["legend"],
        frameon=False,
        borderaxespad=0.0,
        handlelength=1.5,
    )


def finite(vs) -> list:
    return [v for v in vs if v == v]  # NaN (a gap between segments) is not a value


#: a measured series is drawn as a line only through at least this many points; fewer are
#: markers, each with its value written beside it (two or three points are not a trend)
MIN_LINE_POINTS = 5


def draw_measured(ax, x, y, label: str | None = None, fmt=None, **style):
    """A measured series: a solid line through ``MIN_LINE_POINTS`` or more points, else
    markers with their values (``fmt(value)``, default 3 significant figures) and no line.
    Measured series are solid; targets are dashed (:func:`draw_target`)."""
    x, y = list(x), list(y)
    style = {k: v for k, v in style.items() if k != "linestyle"}
    if len(x) >= MIN_LINE_POINTS:
        style.setdefault("linewidth", 1.6)
        return ax.plot(x, y, label=label, linestyle="-", **style)
    style.pop("linewidth", None)
    style.setdefault("marker", "o")
    style.setdefault("markersize", 6)
    out = ax.plot(x, y, label=label, linestyle="none", **style)
    fmt = fmt or format_sig
    for xi, yi in zip(x, y):
        if yi == yi:
            ax.annotate(
                fmt(yi), (xi, yi), textcoords="offset points", xytext=(0, 6), ha="center", fontsize=FONT["value"]
            )
    return out


def draw_target(ax, value: float, label: str | None = None, colour: str = TARGET):
    """A target (what an accelerator needs, the AU line): dashed, never solid like a measurement."""
    return ax.axhline(value, color=colour, linestyle="--", linewidth=1.4, label=label, zorder=1)
