"""One subplot of a timeline (:class:`Subplot`: which series, in which unit, how scaled),
and the "nice" axis limits that move in 1-2-2.5-5 steps (:func:`nice_ceil`)."""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from .style import TARGET

__all__ = ["Subplot", "as_subplot", "nice_ceil", "draw_targets", "fold_quiet"]


@dataclass
class Subplot:
    """One subplot: series names or fnmatch patterns (``"gpu*.util_pct"``) in one unit.

    ``scale`` multiplies stored values for display (bytes/s -> MB/s: ``1e-6``);
    ``ylim`` fixes the y range (default: 0 .. 1.1 x the largest value shown);
    ``labels`` maps a series name to its legend text (default: the name);
    ``styles`` maps a series name or pattern to Line2D keyword arguments;
    ``targets`` maps a label to a value (stored units, like the series): a dashed target
    line, e.g. ``{"needed by h100-resnet50 at AU 90 %": 1790.0}``.
    Names without wildcards get their line and legend entry up front, so the
    legend (and the cached background) does not change when data starts arriving.
    """

    title: str
    series: list[str]
    unit: str = ""
    scale: float = 1.0
    ylim: tuple[float, float] | None = None
    labels: dict[str, str] = field(default_factory=dict)
    styles: dict[str, dict] = field(default_factory=dict)
    note: str = ""  # shown inside the axes when the subplot has no data (e.g. "N/A: no GPU")
    ymax_min: float = 1.0  # autoscaled top never below this (in display units)
    targets: dict[str, float] = field(default_factory=dict)
    #: a subplot whose series all stay below this (stored units) is left out of the final frame,
    #: said in a few words instead (``quiet_text``: "no network traffic"): no empty plot
    quiet_below: float | None = None
    quiet_text: str = ""

    def matches(self, name: str) -> bool:
        return any(name == p or fnmatch.fnmatchcase(name, p) for p in self.series)

    def style_for(self, name: str) -> dict:
        for pat, st in self.styles.items():
            if name == pat or fnmatch.fnmatchcase(name, pat):
                return st
        return {}


def as_subplot(p) -> Subplot:
    """A :class:`Subplot` from a Subplot or a dict of its fields."""
    if isinstance(p, Subplot):
        return p
    if isinstance(p, Mapping):
        return Subplot(**p)
    raise TypeError(f"a subplot is a Subplot or a dict of its fields, not {type(p).__name__}")


def nice_ceil(x: float) -> float:
    """The smallest of 1, 2, 2.5, 5 x 10^k that is >= x (axis limits that move in steps)."""
    if x <= 0 or not math.isfinite(x):
        return 1.0
    exp = math.floor(math.log10(x))
    for m in (1.0, 2.0, 2.5, 5.0, 10.0):
        v = m * 10.0**exp
        if v >= x * (1 - 1e-12):
            return v
    return 10.0 ** (exp + 1)


def draw_targets(ax, subplot: Subplot) -> list:
    """The subplot's target lines on ``ax`` (dashed, green), each labelled in the legend (wrapped
    to the legend's column); returns the artists drawn."""
    import textwrap

    out = []
    for label, value in subplot.targets.items():
        if value is None or not math.isfinite(value):
            continue
        text = "\n".join(textwrap.wrap(label, 19, break_long_words=False)) or label
        out.append(ax.axhline(value * subplot.scale, color=TARGET, linestyle="--", linewidth=1.4, zorder=1, label=text))
    return out


def fold_quiet(timeline) -> list[str]:
    """Leave out of ``timeline`` (a :class:`~nbbench.plots.timeline.Timeline`, before its final
    frame) the subplots whose series all stayed below their ``quiet_below``, saying them in its
    subtitle instead ("no network traffic"); returns those words.  The figure is rebuilt with
    the subplots left."""
    keep, said = [], []
    for p in timeline.subplots:
        if p.quiet_below is not None:
            values = [v for name in timeline.names() if p.matches(name) for v in timeline.series(name)[1]]
            if not values or max(values) < p.quiet_below:
                said.append(p.quiet_text or f"{p.title}: nothing")
                continue
        keep.append(p)
    if not said or not keep:
        return []
    w, h = timeline.figsize
    timeline.figsize = (w, max(2.5, h - 1.9 * (len(timeline.subplots) - len(keep))))
    timeline.subplots = keep
    with timeline._lock:  # series -> subplot indices: the indices moved
        timeline._match.clear()
        timeline._match.update({k: tuple(i for i, p in enumerate(keep) if p.matches(k)) for k in timeline._series})
    timeline._fig, timeline._axes, timeline._lines, timeline._legend_n = None, [], {}, {}
    timeline._target_key, timeline._target_artists, timeline._ytop = {}, {}, {}
    timeline._mark_artists, timeline._extra, timeline._status_text = [], [], None
    timeline._bg = timeline._bg_key = None
    timeline._n_marks = -1
    timeline.subtitle = "; ".join(x for x in (timeline.subtitle, ", ".join(said)) if x)
    timeline.dirty = True
    return said
