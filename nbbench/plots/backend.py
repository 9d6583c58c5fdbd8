"""The built-in drawers, registered with :mod:`nbbench.results.drawing` when imported.

Layer: plots.  ``nbbench/__init__.py`` names this module as the drawing backend; a result's
``.plot()`` / ``.figure()`` and a comparison's chart look their drawer up by name, so the
core never imports this package (pandas' plotting backends work the same way).
"""

from __future__ import annotations

from ..results import drawing
from .compare import bar_chart
from .gpunode import busbw_figure, busbw_png, matrix_figure
from .monitor import monitor_figure
from .objects import s3_sweep_figure
from .png import figure_png
from .sweep import sweep_figure, sweep_png

DRAWERS = {
    "png": figure_png,
    "busbw": busbw_figure,
    "busbw_png": busbw_png,
    "copy_matrix": matrix_figure,
    "compare": bar_chart,
    "monitor": monitor_figure,
    "s3_sweep": s3_sweep_figure,
    "sweep": sweep_figure,
    "sweep_png": sweep_png,
}

for _name, _fn in DRAWERS.items():
    drawing.register(_name, _fn)
