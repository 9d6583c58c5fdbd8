"""Every figure nbbench draws: matplotlib's object API, PNG bytes.

Layer: plots, above core, measure and ranks, below ui.  Figures are
``matplotlib.figure.Figure`` objects on the Agg canvas, turned into PNG bytes here
(:func:`figure_png`) — never pyplot's global state, no widgets, no IPython: pushing
frames into a notebook is :mod:`nbbench.ui`'s job.  Modules here may import the core
layer (units, results, compare's model) and read what the measure layer hands them
(a Monitor's sources, a result's samples); matplotlib is imported inside the functions
that draw, so importing them stays light.

* :mod:`.backend`   registers the drawers a result's ``.plot()`` / ``.figure()`` and a
  comparison's chart look up in :mod:`nbbench.results.drawing` (the core imports no plots)
* :mod:`.style`     what every figure shares: >= 800 px wide, fonts >= 10 pt (passed
  explicitly, never rcParams), wrapped titles, axis units, the too-short sentence
* :mod:`.png`       :func:`figure_png`, axis formatters in the metric's unit
* :mod:`.subplot`   :class:`Subplot`: one subplot of a timeline; nice axis limits
* :mod:`.timeline`  :class:`Timeline`: named series over a shared time axis (the
  figure behind every live plot)
* :mod:`.timedata`  :class:`TimelineData`: a timeline's series and marks, kept
  thread-safe, and its plain-text summary
* :mod:`.monitor`   the monitor's subplots, a stored monitor run's figure
* :mod:`.loader`    the loader benchmark's subplots and AU gauge
* :mod:`.rates`     subplots for the rates a probe reports with its progress
* :mod:`.compare`   a comparison's bar chart
* :mod:`.samples`   a result's raw sample series (reports), or the sentence saying why
  there is no plot (a run shorter than two windows)
* :mod:`.sweep`     a DataLoader sweep's throughput by num_workers
"""

from __future__ import annotations

from .png import figure_png

__all__ = ["figure_png"]
