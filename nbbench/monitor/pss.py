"""PSS (proportional set size) of processes, read within a CPU budget.

``/proc/PID/smaps_rollup`` gives a process's PSS — its pages, shared ones divided among
their users: what a forked DataLoader worker really adds — but the kernel walks the
process's page tables to make it (~15 ms for a 400 MB process).  :class:`PssReader` keeps
the file open per process and reads it only while what PSS cost so far stays under
``budget`` (a share of one core, 0.1 % by default) of the time since the start, first reads
included; after each read the process waits ``cost x live processes / budget`` (at least
``interval``).  A short run may so get no PSS for a large process (None, not a guess).
psutil's ``memory_full_info`` is the portable path.
"""

from __future__ import annotations

import time

from .procfs import ProcFile, read_pss

__all__ = ["PssReader"]


class PssReader:
    """Reads the PSS of table rows (objects with ``pid``, ``pss_file``, ``pss_next``) within ``budget``."""

    def __init__(
        self, budget: float = 0.001, interval: float = 1.0, fast: bool = True, ps=None, root_pid: int | None = None
    ):
        self.budget = max(1e-5, float(budget))
        self.interval = interval
        self.fast = fast
        self.ps = ps
        self.root = root_pid
        self.spent = 0.0  # CPU seconds the reads took so far
        self.ok = True
        self.notes: list[str] = []

    def allowed(self, now: float, start: float | None) -> bool:
        """Whether a read now keeps the whole run within the budget (plus 5 ms to begin with)."""
        if not self.ok:
            return False
        start = start if start is not None else now
        return self.spent < self.budget * (now - start) + 0.005

    def read(self, row, now: float, live: int = 1) -> int | None:
        """Row's PSS in bytes (None when unreadable); schedules its next read in ``row.pss_next``."""
        c0 = time.thread_time()
        pss = None
        try:
            if self.fast:
                if row.pss_file is None:
                    row.pss_file = ProcFile(f"/proc/{row.pid}/smaps_rollup", 4096)
                pss = read_pss(row.pss_file)
            else:
                pss = getattr(self.ps.Process(row.pid).memory_full_info(), "pss", None)
        except FileNotFoundError:
            if row.pid == self.root:
                self.ok = False
                self.notes.append("PSS is N/A: /proc/PID/smaps_rollup is missing (Linux 4.14 or later has it)")
        except Exception:  # noqa: BLE001 - no permission, or gone
            pass
        cost = time.thread_time() - c0
        self.spent += cost
        row.pss_next = now + max(self.interval, cost * max(1, live) / self.budget)
        return pss

    @staticmethod
    def close(row) -> None:
        if row.pss_file is not None:
            row.pss_file.close()
            row.pss_file = None
