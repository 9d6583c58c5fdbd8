"""Report exporters, one small module per format: ``html`` (self-contained, embedded PNGs),
``markdown``, ``json``; ``fio`` turns disk results into fio-shaped JSON; ``summary`` words the
opening paragraph and scopes the doctor's findings to the results shown.  They take a
:class:`nbbench.report.ReportData` and return text.

Layer: report, with :mod:`nbbench.report` (above ui, below commands).  Exporters may
import the layers below: the core (results, compare, units), :mod:`nbbench.plots` for
the figures they embed (a result's samples, a comparison's bar chart); no matplotlib of
their own, no widgets, no IPython.
"""

from __future__ import annotations

__all__ = ["FORMATS", "exporter"]

FORMATS = ("html", "md", "json")


def exporter(fmt: str):
    """The ``export(data, ...)`` function for ``fmt``."""
    import importlib

    mod = {"html": "html", "md": "markdown", "markdown": "markdown", "json": "jsonfmt"}.get(fmt)
    if mod is None:
        raise ValueError(f"unknown report format {fmt!r}: choose from {', '.join(FORMATS)}")
    return importlib.import_module(f".{mod}", __name__).export
