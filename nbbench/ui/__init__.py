"""ipywidgets and IPython.display building blocks: live plots, progress bars, the kernel check.

Layer: ui (above plots, below report and commands).  It shows what the layers below
measured and drew: :mod:`.liveplot` pushes frames, :mod:`.watchview` shows a background monitor
(its timeline and live process table), :mod:`.progress` draws a bar,
:mod:`.kernel` says whether a Jupyter kernel is there, :mod:`.panel` holds the
control panel's reusable widgets (the front-end app itself is :mod:`nbbench.panel`).
It may import everything below it (core, measure, plots), ipywidgets, IPython and
matplotlib; never report, commands or a front end.
"""
