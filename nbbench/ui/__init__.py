"""Notebook building blocks: live views and progress bars.

Layer: ui, above plots, below report.  ui pushes frames that :mod:`nbbench.plots`
drew — :mod:`.liveplot` (a Timeline shown live: the drawing thread and its CPU
budget, the display handle or ``ipywidgets.Image``, pause/resume, the final frame on
the main thread), :mod:`.loaderplot` (the loader benchmark's live view) — and shows
progress (:mod:`.progress`).  It may import ipywidgets, IPython and the layers below
(core, measure, plots); it draws nothing with matplotlib itself.
"""
