"""Process-tree source: this process and its children (DataLoader workers): CPU, reads, writes, memory.

Fields (rates over the interval since the previous sample; None on the first):

- ``proc.cpu_pct`` (% of ONE core; 350 = three and a half cores),
- ``proc.read_bytes_per_s`` (read from storage, page-cache hits not counted),
- ``proc.read_syscall_bytes_per_s`` (bytes returned by read() calls, cache hits included),
- ``proc.write_bytes_per_s`` (to storage: the pages it dirtied for writeback, counted when
  dirtied, whether or not they are thrown away before writeback — a temp file deleted in time),
- ``proc.write_syscall_bytes_per_s`` (bytes taken by write() calls, into the page cache or not),
- ``proc.rss_bytes``.

Children that exit keep counting, because Linux adds a reaped child's CPU time and
I/O to its parent; children older than the monitor count only what they do from its
start.  Summary: ``proc_cpu_s``, ``proc_read_bytes``, ``proc_read_syscall_bytes``,
``proc_write_bytes``, ``proc_write_syscall_bytes`` — each the counter's last reading less its
first, so a rate summed over the run gives the total — and ``proc_write_cancelled_bytes``
(``cancelled_write_bytes``: dirty pages thrown away before writeback, the tree's deleted or
truncated files; N/A where it cannot be read).
On Linux each process is read through kept-open ``/proc/PID/stat`` and ``/proc/PID/io``
(:class:`~nbbench.monitor.procfs.ProcReader`); ``fast=False`` or another platform uses
psutil (:class:`~nbbench.monitor.procfs.PsutilProcReader`).  The tree is rescanned at
most once a second.

With ``table`` (seconds, default 1.0; 0 or None: off) it also keeps the per-process
table (:class:`~nbbench.monitor.proctable.ProcessTable`): one row per process with its
role (main, ``worker k``, child), reads, writes, CPU, RSS/PSS and GPU memory, built from the
counters read here every ``table`` seconds; the result stores it as ``samples["procs"]``
and its summary names the top reader, the top writer and the top CPU user.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from .gpuprocs import GpuProcesses
from .procfs import COUNTED, HostSource, ProcReader, children_of, counted, process_reader
from .proctable import ProcessTable

__all__ = ["ProcessTreeSource"]

_CHILD_SCAN_S = 1.0  # rescan the process tree at most this often (a /proc walk)
#: the record fields and the summary's totals, in :data:`~nbbench.monitor.procfs.COUNTED` order (cancelled
#: writes have a total, no rate)
_RATES = (
    "proc.cpu_pct",
    "proc.read_bytes_per_s",
    "proc.read_syscall_bytes_per_s",
    "proc.write_bytes_per_s",
    "proc.write_syscall_bytes_per_s",
)
_TOTALS = (
    "proc_cpu_s",
    "proc_read_bytes",
    "proc_read_syscall_bytes",
    "proc_write_bytes",
    "proc_write_syscall_bytes",
    "proc_write_cancelled_bytes",
)
_CANCELLED = "proc_write_cancelled_bytes"


class ProcessTreeSource(HostSource):
    """Figures of process ``pid`` (default: this one) and its descendants (see the module doc)."""

    name = "proc"

    def __init__(self, pid: int | None = None, fast: bool = True, table: float | None = 1.0, pss: bool = True):
        super().__init__(fast)
        self.pid = pid if pid is not None else os.getpid()
        self.table_interval = float(table) if table else None
        self.want_pss = pss
        self.table = None  # a ProcessTable once opened (with table=...)
        self._last: dict[int, Any] = {}
        self._own = self.pid == os.getpid()
        self._procs: dict[int, Any] = {}  # pid -> reader (this process first)
        self._child_scan_t = -1e9
        self._children_fast = True
        self._prev = None
        self._first = None
        self._t = None
        self._offsets: dict[int, tuple] = {}
        self._retired = [0.0] * len(COUNTED)
        self._preexisting: set[int] = set()
        self._io_ok = True
        self._cancelled_ok = True
        self._cpu_cap = 100.0 * (os.cpu_count() or 1)

    def open(self) -> None:
        import psutil

        self._psutil = psutil
        if self.want_fast and sys.platform.startswith("linux"):
            try:
                r = ProcReader(os.getpid())
                r.read()
                r.close()
                self.fast = True
            except (OSError, ValueError, IndexError):
                self.fast = False
        if self.table_interval:
            self.table = ProcessTable(
                self.pid, interval=self.table_interval, pss=self.want_pss, fast=self.fast, ps=psutil
            )
        try:
            self._procs = {self.pid: self._reader(self.pid)}
            self._preexisting = set(self._child_pids())
        except (OSError, psutil.Error) as exc:
            self.notes.append(f"process {self.pid} cannot be read ({exc}): process figures are N/A")
            self._procs = {}

    def link(self, sources) -> None:
        """Per-process GPU figures come from the GPU source's devices (called by the monitor once opened)."""
        if self.table is None:
            return
        gpu = next((s for s in sources if getattr(s, "name", "") == "gpu" and getattr(s, "devices", None)), None)
        if gpu is not None:
            self.table.gpu = GpuProcesses(gpu.nv, gpu.devices)

    def _reader(self, pid: int):
        return process_reader(pid, self.fast, self._psutil)

    def _child_pids(self) -> list[int]:
        if self.fast and self._children_fast:
            kids = children_of(self.pid)
            if kids is not None:
                return kids
            self._children_fast = False
        try:
            return [c.pid for c in self._psutil.Process(self.pid).children(recursive=True)]
        except self._psutil.Error:
            return []

    def sample(self, now: float) -> dict:
        if self._psutil is None:
            self.open()
        out: dict[str, Any] = {}
        if self._procs:
            self._sample(now, out)
        return out

    def _quick_children(self) -> None:
        """This process's multiprocessing children (DataLoader workers) are read from their first
        sample on, not only after the next tree scan: a worker that lives less than a second still
        gets its own row (else its reads would land on the main process when it is reaped)."""
        mp = sys.modules.get("multiprocessing.process")
        if mp is None:
            return
        try:
            kids = list(mp._children)
        except (RuntimeError, AttributeError):
            return
        procs = self._procs
        for p in kids:
            pop = getattr(p, "_popen", None)
            pid = getattr(pop, "pid", None)
            if pid and pid not in procs and getattr(pop, "returncode", None) is None:
                self._add(pid)

    def _add(self, pid: int) -> None:
        try:
            r = self._reader(pid)
            if pid in self._preexisting:
                # a child older than the monitor: count only what it does from now on
                c = r.read()
                self._offsets[pid] = counted(c)
        except Exception:  # noqa: BLE001 - it exited meanwhile, or cannot be read
            return
        self._procs[pid] = r

    def _scan_children(self, now: float) -> None:
        if now - self._child_scan_t < _CHILD_SCAN_S:
            return
        self._child_scan_t = now
        kids = self._child_pids()
        procs = self._procs
        fresh = set(kids)
        for pid in kids:
            if pid not in procs:
                self._add(pid)
        for pid in [p for p in procs if p != self.pid and p not in fresh]:
            self._drop(pid, now)

    def _drop(self, pid: int, now: float | None = None, tabled: bool = False) -> None:
        c = self._last.pop(pid, None)
        if self.table is not None and not tabled:
            self.table.gone(pid, now if now is not None else self._t or 0.0, c)
        r = self._procs.pop(pid, None)
        if r is not None:
            r.close()
        off = self._offsets.pop(pid, None)
        if off is not None:  # its totals move into its reaper's counters: keep subtracting them
            for j in range(len(COUNTED)):
                self._retired[j] += off[j]

    def _sample(self, now: float, out: dict) -> None:
        if self._own:
            self._quick_children()
        self._scan_children(now)
        tot = [0.0] * len(COUNTED)
        rss = 0.0
        gone = []
        last = self._last
        table = self.table
        before = None
        if table is not None:
            before = dict(last)
            table.rename(now)
        for pid, r in self._procs.items():
            try:
                c = r.read()
            except (OSError, ValueError, IndexError):
                if pid != self.pid:
                    gone.append(pid)
                continue
            if table is not None and pid not in last:
                table.seen(pid, c, now, fresh=pid not in self._preexisting)
            last[pid] = c
            for j, v in enumerate(counted(c)):
                tot[j] += v
            rss += c.rss_bytes
            if not r.has_io:
                self._io_ok = False
            if not r.has_cancelled:
                self._cancelled_ok = False
        if gone:
            if table is not None:  # their last counters, and what their parent gained when it reaped them
                table.reaped(gone, before, last, now, now - self._t if self._t is not None else 0.0)
            for pid in gone:
                self._drop(pid, now, tabled=table is not None)
        if table is not None and table.due(now):
            table.step(now, last)
        out["proc.rss_bytes"] = int(rss)
        for off in list(self._offsets.values()) + [self._retired]:
            for j in range(len(COUNTED)):
                tot[j] -= off[j]
        cur = tuple(tot)
        prev, tprev = self._prev, self._t
        self._prev, self._t = cur, now
        if self._first is None:
            self._first = cur
        if not self._io_ok and "proc.read_bytes_per_s" not in self.na:
            for f in _RATES[1:]:
                self.na[f] = "I/O counters of this process are not readable"
            self.notes.append(
                "this process's I/O counters are not readable here "
                "(no permission to /proc/<pid>/io): process read and write figures are incomplete"
            )
        if self._io_ok and not self._cancelled_ok and _CANCELLED not in self.na:
            self.na[_CANCELLED] = "cancelled_write_bytes is not readable here (no /proc/<pid>/io)"
        if prev is None or now <= tprev:
            for f in _RATES:
                out[f] = None
            return
        dt = now - tprev
        # (a child found by the periodic scan brings the CPU time it used since it started,
        # so a rate is capped at what the machine's CPUs can do; totals come from counters)
        out["proc.cpu_pct"] = round(min(self._cpu_cap, max(0.0, cur[0] - prev[0]) / dt * 100.0), 1)
        for j, f in enumerate(_RATES[1:], 1):
            out[f] = round(max(0.0, cur[j] - prev[j]) / dt, 1)

    def summary(self) -> dict:
        """Totals over the run from the counters (not integrated rates); the table's top reader, writer and CPU user."""
        out: dict[str, Any] = {}
        if self._first is not None and self._prev is not None:
            a, b = self._first, self._prev
            out["proc_cpu_s"] = round(max(0.0, b[0] - a[0]), 3)
            for j, key in enumerate(_TOTALS[1:], 1):
                out[key] = int(max(0.0, b[j] - a[j]))
            if not (self._io_ok and self._cancelled_ok):
                del out[_CANCELLED]  # N/A (said in ``na``)
        if self.table is not None:
            self.table.sync(self._last, self._t)
            metrics, labels = self.table.summary()
            out.update(metrics)
            self.labels.update(labels)
            t = self.table
            for n in t.notes + (t.gpu.notes if t.gpu is not None else []) + (t.pss.notes if t.pss else []):
                if n not in self.notes:
                    self.notes.append(n)
        return out

    def table_samples(self, t_origin: float) -> dict:
        """``{"procs": columns}`` of the per-process table (``{}`` without one)."""
        if self.table is None or not self.table.rows:
            return {}
        self.table.sync(self._last, self._t)
        out = {"procs": self.table.columns(t_origin)}
        gpu = self.table.gpu
        if gpu is not None and gpu.unmatched:
            out["gpu_procs_unmatched"] = {
                "gpu": [g for g, _, _ in gpu.unmatched],
                "pid": [p for _, p, _ in gpu.unmatched],
                "gpu_mem_bytes": [m for _, _, m in gpu.unmatched],
            }
        return out

    def close(self) -> None:
        for r in self._procs.values():
            r.close()
        self._procs = {}
        if self.table is not None:
            self.table.close()
