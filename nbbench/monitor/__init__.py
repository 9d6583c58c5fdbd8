"""Live monitoring: background samplers (NVML GPU, psutil host) with callbacks.

Use it from Python code::

    import nbbench
    with nbbench.monitor(interval=0.2, gpus="all", path="/dataset") as m:
        train_one_epoch()
    res = m.result()            # a MonitorResult: res.metrics, res.frame, res.figure()
    m.frame()                   # the samples as a pandas DataFrame
    m.mean("gpu0.util_pct", t0, t1)   # windowed statistics, monotonic seconds

``nbbench.monitor(...)`` is this module called like a function; it returns a
:class:`Monitor` (``nbbench.monitor.Monitor`` is the class).  In a notebook,
``%%iobench monitor`` runs a cell under a monitor with a live plot; in a terminal,
``nbbench monitor -- COMMAND``.

Importing this package is light (no psutil, pynvml, pandas or matplotlib until a
monitor starts); it registers :class:`MonitorResult` as the ``"monitor"`` kind.

* :mod:`.sampler`  :class:`Monitor`: the sampling thread, sources, subscribers
* :mod:`.records`  what it keeps: the ring buffer, running statistics, windows
* :mod:`.result`   :func:`build_result`: a stopped monitor's :class:`MonitorResult`
* the sources (the GPUs through NVML; the host's CPU, memory, disks, processes) and
  :mod:`.text` (the status line)

Layer: measure (with probes, doctor, datasets).  The monitor may import the core
(results, units, nvml); it draws nothing (its plots are :mod:`nbbench.plots.monitor`'s)
and imports no plots, ui, commands or front end.
"""

from __future__ import annotations

import sys
import types

from ..results.series import IDLE_THRESHOLD_PCT, FieldStats
from .result import MonitorResult, build_result
from .sampler import DEFAULT_CAPACITY, Monitor, Source
from .text import format_status

__all__ = ["Monitor", "MonitorResult", "Source", "FieldStats", "monitor", "format_status",
           "build_result", "IDLE_THRESHOLD_PCT", "DEFAULT_CAPACITY", "HostSource", "NvmlGpuSource"]


def monitor(interval: float = 0.2, gpus="all", path=None, sources=None, capacity: int = DEFAULT_CAPACITY,
            **kwargs) -> Monitor:
    """A :class:`Monitor` (not started: use ``with`` or ``.start()``)."""
    return Monitor(interval=interval, sources=sources, gpus=gpus, path=path, capacity=capacity, **kwargs)


def __getattr__(name):
    if name == "HostSource":
        from .host import HostSource

        return HostSource
    if name == "NvmlGpuSource":
        from .gpu import NvmlGpuSource

        return NvmlGpuSource
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _CallableModule(types.ModuleType):
    """Lets ``nbbench.monitor(...)`` work although ``nbbench.monitor`` is a package."""

    def __call__(self, *args, **kwargs) -> Monitor:
        return monitor(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
