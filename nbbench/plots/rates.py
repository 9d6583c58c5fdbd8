"""Subplots for the rates a probe reports with its progress (dd's write then read
bandwidth, randread's IOPS, files/s, samples/s…), chosen from the metric keys' units
(``read_bytes_per_s`` → MB/s, ``iops`` → kIOPS); :func:`tag_styles` draws a tagged
series (one figure per sweep configuration) as markers."""

from __future__ import annotations

from ..units import unit_of
from .subplot import Subplot

__all__ = ["rate_subplots", "tag_styles"]

# unit -> (subplot title, axis unit, scale, the key patterns it shows)
_GROUPS = {
    "bytes/s": ("bandwidth", "MB/s", 1e-6, ["*bytes_per_s"]),
    "iops": ("IOPS", "kIOPS", 1e-3, ["iops", "*_iops"]),
    "samples/s": ("samples/s", "samples/s", 1.0, ["*samples_per_s"]),
    "files/s": ("files/s", "files/s", 1.0, ["*files_per_s"]),
    "batches/s": ("batches/s", "batches/s", 1.0, ["*batches_per_s"]),
}


def rate_subplots(keys) -> list[Subplot]:
    """Subplots for the units of the rate metrics among ``keys`` (one per unit; a subplot
    shows every key of its unit, also ones reported later, e.g. dd's read after its write)."""
    units = []
    for k in keys:
        u = unit_of(k)
        if u in _GROUPS and u not in units:
            units.append(u)
    subplots = []
    for u in units:
        title, axis, scale, patterns = _GROUPS[u]
        subplots.append(Subplot(title, list(patterns), unit=axis, scale=scale))
    return subplots


_PER_CONFIG = ", one point per configuration"


def tag_styles(subplot: Subplot, point: dict) -> None:
    """Series reported with a configuration tag (a sweep's one figure per configuration):
    drawn as markers, each configuration its own (a NaN between them breaks the line)."""
    for k in point:
        if subplot.matches(k):
            subplot.styles.setdefault(k, {"marker": "o", "markersize": 7})
    if not subplot.title.endswith(_PER_CONFIG):
        subplot.title += _PER_CONFIG
