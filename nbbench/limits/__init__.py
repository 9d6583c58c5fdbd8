"""The container's limits and the kernel's stall counters (core layer, beside env and topology).

- :mod:`.cgroups`: where the process's cgroups are (v1, v2, hybrid) and what they allow —
  :func:`read_limits`: CPU quota and period, cpuset, memory limit, ``pids.max``, /dev/shm, and
  whether throttling counters and pressure stall information (PSI) can be read;
- :mod:`.counters`: :class:`StallReader` samples ``cpu.stat`` throttling, PSI some/full totals and
  memory-limit events; :func:`window` turns two samples into per-window figures;
- :mod:`.verdict`: :func:`stall_verdict`, the one function that words what was measured.

Every reader takes ``root`` ("/" live, a fixture tree in tests) and none raises for a missing or
unreadable file.  :mod:`nbbench.env` reads the CPU quota and memory limit through here.

Layer: core (beside :mod:`nbbench.env` and :mod:`nbbench.topology`): it imports only the standard
library and :mod:`nbbench.units`; the monitor, the doctor, the results and compare use it.
"""

from __future__ import annotations

from .cgroups import locate, read_limits, stall_files
from .counters import FIGURES, StallReader, window
from .verdict import describe_limits, limits_difference, stall_findings, stall_verdict, worker_bound

__all__ = [
    "locate",
    "read_limits",
    "stall_files",
    "StallReader",
    "window",
    "FIGURES",
    "stall_findings",
    "stall_verdict",
    "describe_limits",
    "limits_difference",
    "worker_bound",
    "measure",
]


def measure(seconds: float = 1.0, root: str = "/", pid: int | str = "self") -> dict:
    """The stall figures of the next ``seconds`` (two samples around a sleep): a quick look, as the
    doctor takes one."""
    import time

    with StallReader(root, pid) as r:
        a = r.sample()
        time.sleep(seconds)
        b = r.sample()
        out = window(a, b)
        out["psi_scope"] = r.scope
    return out
