"""The result model: what every probe returns, what the store keeps.

Layer: the bottom (with units, store, env, topology, compare).  This package may
import only the standard library, numpy/pandas inside functions, and the other
bottom modules; never probes, monitor, doctor, plots, ui, commands or a front end, not
even inside functions.  A result's ``.plot()`` / ``.figure()`` convenience looks its drawer
up in :mod:`.drawing`, where the plots layer registers itself (as pandas' plotting backends do).

* :mod:`.base`    :class:`Result` (params, metrics, labels, samples, status — did it run —
  and verdict — what its checks found), the
  declarative :data:`KINDS` registry, :class:`ProbeError`
* :mod:`.verdict` ok / warn / fail: what a result's checks found (apart from its status)
* :mod:`.drawing` the registry of drawers a result's ``.plot()`` looks up
* :mod:`.advice`  advice as data ("run ``sweep``"), worded by the front end showing it
* :mod:`.hist`    fio's log-linear latency histogram (kept as a result's raw samples)
* :mod:`.series`  statistics of a sampled series: :class:`~.series.FieldStats`, the
  ``(t0, t1]`` window (the live monitor's and a stored monitor run's)
* :mod:`.runs`    ``--repeat N`` merged into one result, the spread of its headline figures
* :mod:`.quality` whether the runs can be trusted (too short, unstable, warm-up)
* :mod:`.interleave` ``vs``: settings measured in interleaved turns
* :mod:`.present` how a result is shown: the rule, the view, one-line summaries
* :mod:`.storage` local storage (dd, randread, io, disk presets, files), checkpoints,
  shards, object storage
* :mod:`.pipeline` the input pipeline: loader, sweep, feed
* :mod:`.system`  the machine: the GPU check, the monitor, the doctor, the environment
"""

from __future__ import annotations

from .base import KINDS, STATUSES, ProbeError, Result, register, result_class
from .verdict import VERDICTS, worst_verdict

__all__ = ["Result", "ProbeError", "register", "result_class", "STATUSES", "VERDICTS", "worst_verdict", "KINDS"]
