"""Like-for-like comparison of stored runs: deltas against the first that know the noise, and a bar chart.

:func:`compare` takes run ids, labels, :class:`~nbbench.results.Result` objects or lists of
them.  Runs are compared within one kind (a ``dd`` run with ``dd`` runs); parameters or a
cache mode that differ are compared anyway, with a warning saying so, because the delta
then mixes the settings with the environment.  A label's runs of one kind with the same
settings are pooled as repeats (:mod:`.select`).  Each delta carries the 95 % interval of
candidate/baseline (:mod:`.noise`, :mod:`nbbench.stats`): one whose interval contains 1 is
"no significant change", drawn grey.  :meth:`Comparison.gate` is the CI gate (:mod:`.gate`).
The plain data is :attr:`Comparison.rows`; :attr:`Comparison.frame` is a DataFrame of it.
This module draws nothing: :meth:`Comparison.figure` hands a group to the "compare" drawer
of :mod:`nbbench.results.drawing` (the plots layer registers its bar chart there).
Which way of a metric is better lives in :mod:`.direction`; the tables in :mod:`.render`; the
model (:class:`Comparison`, :class:`ComparisonGroup`) in :mod:`.model`; :func:`compare` in :mod:`.build`.
This ``__init__`` only gathers the public names.

Layer: core (with results, store, stats, units).  The comparison imports only the core,
not even inside functions: its chart is looked up in :mod:`nbbench.results.drawing`.
"""

from __future__ import annotations

from .build import compare
from .direction import DIRECTION_BY_UNIT, NEUTRAL_KEYS, NEUTRAL_KINDS, better, delta_colour
from .gate import Gate, parse_pct
from .likeness import HIDDEN_PARAMS, MODE_LABELS, caveats
from .model import Comparison, ComparisonGroup, chart_metrics, table_metrics
from .select import resolve

__all__ = [
    "compare",
    "Comparison",
    "ComparisonGroup",
    "chart_metrics",
    "table_metrics",
    "better",
    "delta_colour",
    "resolve",
    "HIDDEN_PARAMS",
    "MODE_LABELS",
    "DIRECTION_BY_UNIT",
    "NEUTRAL_KINDS",
    "NEUTRAL_KEYS",
    "Gate",
    "parse_pct",
    "caveats",
]
