"""Live monitoring: background samplers (CPU, disk, network, process tree, NVML GPU) with callbacks.

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
monitor starts); :class:`MonitorResult` lives in :mod:`nbbench.results.system.monitor`.

* :mod:`.sampler`  :class:`Monitor`: the sampling thread, sources, subscribers, marks
* :mod:`.records`  what it keeps: the ring buffer (or, for a long life, the recent window
  at full rate and older means), running statistics, windows
* :mod:`.result`   :func:`build_result`: a stopped monitor's :class:`MonitorResult`
* the sources: :mod:`.cpu`, :mod:`.disk`, :mod:`.net` (network interfaces), :mod:`.procs`
  (the process tree, with :mod:`.proctable`, the per-process table, :mod:`.pss`, PSS within
  a CPU budget, and :mod:`.gpuprocs`, GPU memory per process), :mod:`.gpu` (NVML);
  :mod:`.procfs` reads /proc
* :mod:`.background` the one background monitor of a process (``%iobench watch``),
  :mod:`.exporter` ``/metrics`` for Prometheus (``--serve``), :mod:`.text` the status line

Layer: measure (with probes, doctor, datasets).  The sampler and its sources import the
bottom layer (:mod:`nbbench.topology` for the disk behind a path, ``results``, ``nvml``,
``units``) and psutil / pynvml / prometheus_client inside functions; drawing a live plot
(and the watch view) is ui's job, never imported from here.
"""

from __future__ import annotations

import sys
import types

from ..results.series import IDLE_THRESHOLD_PCT, FieldStats
from .result import MonitorResult, build_result
from .sampler import DEFAULT_CAPACITY, Monitor, Source
from .text import format_status

__all__ = [
    "Monitor",
    "MonitorResult",
    "Source",
    "FieldStats",
    "monitor",
    "format_status",
    "build_result",
    "IDLE_THRESHOLD_PCT",
    "DEFAULT_CAPACITY",
    "CpuSource",
    "DiskSource",
    "ProcessTreeSource",
    "NvmlGpuSource",
    "NetSource",
    "MetricsServer",
]


def monitor(
    interval: float = 0.2, gpus="all", path=None, sources=None, capacity: int = DEFAULT_CAPACITY, **kwargs
) -> Monitor:
    """A :class:`Monitor` (not started: use ``with`` or ``.start()``)."""
    return Monitor(interval=interval, sources=sources, gpus=gpus, path=path, capacity=capacity, **kwargs)


def __getattr__(name):
    # the sources are imported when first named: importing this package stays light
    if name == "CpuSource":
        # each source loaded when first named (the package's lazy API)
        from .cpu import CpuSource

        return CpuSource
    if name == "DiskSource":
        from .disk import DiskSource

        return DiskSource
    if name == "ProcessTreeSource":
        from .procs import ProcessTreeSource

        return ProcessTreeSource
    if name == "NvmlGpuSource":
        from .gpu import NvmlGpuSource

        return NvmlGpuSource
    if name == "NetSource":
        from .net import NetSource

        return NetSource
    if name == "MetricsServer":
        from .exporter import MetricsServer

        return MetricsServer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _CallableModule(types.ModuleType):
    """Lets ``nbbench.monitor(...)`` work although ``nbbench.monitor`` is a package."""

    def __call__(self, *args, **kwargs) -> Monitor:
        return monitor(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
