"""Units: parsing sizes people type, and formatting metrics for people.

Metrics are stored in base units with the unit in the key (``read_bytes_per_s``,
``lat_p99_ns``, ``iops``). :func:`unit_of` reads the unit back from the key and
:func:`format_metric` turns a value into a readable figure.

Decimal prefixes are decimal and binary prefixes are binary, written as such:
MB = 10**6 bytes, MiB = 2**20 bytes.  Sizes typed by users follow dd: ``K``, ``M``,
``G``, ``T`` alone mean powers of 1024 (``1M`` = 1 MiB, as ``dd bs=1M``), ``KB``/``MB``
mean powers of 1000, and ``KiB``/``MiB`` are explicit powers of 1024.

* :mod:`.parse`    :func:`parse_size`, :func:`parse_duration`: what people type
* :mod:`.figures`  numbers for people: :func:`format_si`, :func:`format_many`, :func:`format_bytes`,
  :func:`format_duration_ns`, :func:`format_change`, :func:`shorten_middle`
* :mod:`.metrics`  metric keys: :func:`unit_of`, :func:`format_metric`, :func:`metric_label`,
  :func:`metric_phrase`, :data:`LABELS`

This package's names are the public API (``nbbench.units.format_metric``): import them from
``nbbench.units``.

Layer: the bottom (with stats, results, store, env, topology).  Only the standard library
(``math``, ``re``); nothing of nbbench.
"""

from __future__ import annotations

from .figures import (
    format_bytes,
    format_change,
    format_duration_ns,
    format_many,
    format_rate,
    format_si,
    format_sig,
    shorten_middle,
)
from .metrics import LABELS, format_metric, metric_label, metric_phrase, percentile_name, unit_of
from .parse import parse_duration, parse_size

__all__ = [
    "parse_size",
    "parse_duration",
    "unit_of",
    "format_metric",
    "format_bytes",
    "format_rate",
    "format_duration_ns",
    "format_si",
    "format_sig",
    "format_many",
    "format_change",
    "metric_label",
    "metric_phrase",
    "percentile_name",
    "shorten_middle",
    "LABELS",
]
