"""Widget building blocks of the control panel: :mod:`.rateplot` (the progress bar that
also plots the rates a probe reports).

Layer: ui.  Reusable pieces only — the control panel app itself is a front end,
:mod:`nbbench.panel`.  May import what the ui layer may (core, measure, plots,
ipywidgets, IPython, matplotlib); never commands or a front end.
"""
