"""The per-process table (like iotop and nvitop): who reads, who writes, who computes, who holds memory.

One row per process of the monitored tree — the main process, each DataLoader worker
(``worker 2``, see below), any other child — with, over the run: bytes read
from storage (``/proc/PID/io`` ``read_bytes``: what reached the block device), bytes
returned by read() calls (``rchar``: page-cache hits included), bytes written to storage
(``write_bytes``: pages dirtied for writeback, counted when dirtied), of which cancelled
(``cancelled_write_bytes``: thrown away before writeback, the file deleted or truncated in time),
bytes taken by write() calls (``wchar``), CPU seconds, peak RSS and
PSS (``/proc/PID/smaps_rollup``: shared pages divided among their users — what forked
workers really add), and on GPUs the process's GPU memory and SM utilisation from NVML
(:mod:`.gpuprocs`); and, for a live view, the latest rates.

Roles: the monitored process is ``main``; a child named ``pt_data_worker`` (PyTorch names
its DataLoader workers so) is ``worker k``, numbered by start time among the live workers
of the same parent — torch starts them in ``worker_id`` order, so for one DataLoader k is
its worker id (multiprocessing drops a worker's target and arguments once it has started,
so the id itself cannot be read back); any other process is ``child``.

The :class:`~nbbench.monitor.procs.ProcessTreeSource` reads every process's counters
each sample anyway; the table turns them into rows every ``interval`` seconds (1 s by
default).  PSS is costly, so it is read within a CPU budget (:mod:`.pss`).  When a child
exits, Linux adds its totals to its parent's counters; the table takes them back (what
the child did after its last sample is inferred from its parent's jump, less the parent's
own recent rate: :meth:`ProcessTable.reaped`), so a worker's reads do not show up as the
main process's.  Exited processes keep their rows (the oldest are merged into one row
past ``max_rows``).  This module keeps the rows; :mod:`.procviews` turns them into the
table's columns, its live view and its summary.
"""

from __future__ import annotations

import time

from .procfs import COUNTED, ProcCounters, counted, proc_identity
from .procviews import TableViews
from .pss import PssReader

__all__ = ["ProcessTable", "WORKER_COMM"]

#: the comm PyTorch gives its DataLoader worker processes: each worker names the thread that runs
#: ``_worker_loop`` — its main thread, so the process — ``pt_data_worker`` as it starts
WORKER_COMM = "pt_data_worker"


class _Row:
    __slots__ = (
        "pid",
        "ppid",
        "name",
        "kind",
        "worker",
        "start",
        "t0",
        "t_end",
        "base",
        "absorbed",
        "prev",
        "t_prev",
        "rates",
        "peak_read",
        "peak_write",
        "rss",
        "rss_peak",
        "pss",
        "pss_peak",
        "pss_file",
        "pss_next",
        "gpu_mem",
        "gpu_mem_peak",
        "gpu_util",
        "gpu_util_sum",
        "gpu_util_n",
        "last",
    )

    def __init__(self, pid: int, t0: float):
        self.pid, self.t0 = pid, t0
        self.ppid, self.name, self.kind, self.worker, self.start = 0, "?", "child", None, 0.0
        self.t_end = None
        self.base = self.absorbed = self.prev = None
        self.last = None
        self.t_prev = t0
        self.rates = (None,) * len(COUNTED)  # CPU % of one core, then B/s of each byte counter
        self.peak_read = self.peak_write = 0.0
        self.rss = self.rss_peak = 0
        self.pss = self.pss_peak = None
        self.pss_file = None
        self.pss_next = t0
        self.gpu_mem = self.gpu_mem_peak = self.gpu_util = None
        self.gpu_util_sum, self.gpu_util_n = 0.0, 0

    @property
    def role(self) -> str:
        if self.kind == "worker" and self.worker is not None:
            return f"worker {self.worker}"
        return self.kind

    def effective(self) -> tuple:
        """Counters now (:data:`~nbbench.monitor.procfs.COUNTED` order), less what reaped children added."""
        return tuple(v - a for v, a in zip(counted(self.last), self.absorbed))

    def totals(self) -> tuple:
        """What the process did while watched (COUNTED order: CPU s, then bytes)."""
        return tuple(max(0.0, e - b) for e, b in zip(self.effective(), self.base))


_NONE = (0.0,) * len(COUNTED)


class ProcessTable(TableViews):
    """Rows of the processes a :class:`~nbbench.monitor.procs.ProcessTreeSource` reads (see the module doc)."""

    def __init__(
        self,
        root_pid: int,
        interval: float = 1.0,
        pss: bool = True,
        pss_budget: float = 0.001,
        fast: bool = True,
        ps=None,
        max_rows: int = 256,
    ):
        self.root = root_pid
        self.interval = max(0.05, float(interval))
        self.pss = PssReader(pss_budget, self.interval, fast, ps, root_pid) if pss else None
        self.fast = fast
        self.ps = ps
        self.max_rows = max(8, int(max_rows))
        self.rows: dict[int, _Row] = {}
        self.gpu = None  # a GpuProcesses, linked by the monitor when there are GPUs
        self._unnamed: list[_Row] = []  # young processes: their names are read again
        self.notes: list[str] = []
        self.cpu_s = 0.0  # CPU time the table's own steps took
        self.merged = 0
        self._new: list[int] = []
        self._t_step = None
        self._t_now = None  # when the counters were last read
        self._t_start = None
        self._pids_changed = True

    # -------------------------------------------------------------- tracking
    def seen(self, pid: int, counters, now: float, fresh: bool) -> None:
        """A process read for the first time; ``fresh``: born after the monitor started (its
        counters so far belong to the run), else they are its past."""
        if self._t_start is None:
            self._t_start = now
        r = _Row(pid, now)
        r.last = counters
        r.absorbed = _NONE
        r.base = _NONE if fresh and pid != self.root else counted(counters)
        self._identity(r)
        self._unnamed.append(r)
        self.rows[pid] = r
        self._new.append(pid)
        self._pids_changed = True

    def rename(self, now: float) -> None:
        """Read the names of young processes again (each sample, for their first 2 s; nothing to do
        when nobody is new): a forked DataLoader worker names itself once it gets to run."""
        if not self._unnamed:
            return
        keep = []
        for r in self._unnamed:
            if r.t_end is not None:
                continue
            old = r.name
            self._identity(r)
            if r.name == WORKER_COMM:
                if old != WORKER_COMM and r.pid not in self._new:
                    self._new.append(r.pid)  # its role is settled at the next step
            elif now - r.t0 < 2.0:
                keep.append(r)
        self._unnamed = keep

    def gone(self, pid: int, now: float, counters=None) -> None:
        """``pid`` exited (and was reaped): its parent's counters now hold its totals
        (``counters``: the last ones read)."""
        r = self.rows.get(pid)
        if r is None or r.t_end is not None:
            return
        if counters is not None:
            r.last = counters
        r.t_end = now
        if self.pss is not None:
            self.pss.close(r)
        parent = self.rows.get(r.ppid)
        if parent is not None and parent.t_end is None and r.last is not None:
            parent.absorbed = tuple(a + v for a, v in zip(parent.absorbed, counted(r.last)))
        self._pids_changed = True

    def reaped(self, pids, before: dict, after: dict, now: float, dt: float) -> None:
        """Children that vanished between two samples (``before`` / ``after``: pid -> counters).

        A child's last reads or writes may come after its last sample; its parent's counters then jump
        by more than the child's last known totals.  That unexplained part of the jump, less
        what the parent itself did at its recent rate, is given back to the children reaped
        in this interval (in proportion to what each did), so a DataLoader worker's final
        reads and writes stay the worker's.  The error is bounded by one sampling interval of the parent.
        """
        groups: dict[int, list[_Row]] = {}
        for pid in pids:
            r = self.rows.get(pid)
            if r is not None and r.t_end is None:
                groups.setdefault(r.ppid, []).append(r)
        for ppid, kids in groups.items():
            finals = []
            for k in kids:
                c = after.get(k.pid) or k.last
                finals.append(list(counted(c)))
            p = self.rows.get(ppid)
            b, a = before.get(ppid), after.get(ppid)
            if p is not None and p.t_end is None and a is not None and b is not None and a is not b and dt > 0:
                own = [(x or 0.0) * dt for x in p.rates]
                own[0] /= 100.0  # CPU % of one core -> seconds
                jump = [x - y for x, y in zip(counted(a), counted(b))]
                for j in range(len(COUNTED)):
                    extra = jump[j] - own[j] - sum(f[j] for f in finals)
                    if extra > 0:
                        w = [max(0.0, f[j] - k.base[j]) + 1.0 for f, k in zip(finals, kids)]
                        tw = sum(w)
                        for f, wi in zip(finals, w):
                            f[j] += extra * wi / tw
            for k, f in zip(kids, finals):
                c = after.get(k.pid) or k.last
                self.gone(k.pid, now, ProcCounters(**dict(zip(COUNTED, f)), rss_bytes=c.rss_bytes))

    def sync(self, last: dict, now: float | None = None) -> None:
        """Bring the live rows' counters up to date (before reading totals at the end; ``now``:
        when they were read)."""
        if now is not None:
            self._t_now = now
        for pid, r in self.rows.items():
            if r.t_end is None and pid in last:
                r.last = last[pid]

    def due(self, now: float) -> bool:
        return self._t_step is None or now - self._t_step >= self.interval * 0.999

    # ----------------------------------------------------------------- steps
    def step(self, now: float, last: dict) -> None:
        """Turn the latest counters (pid -> ProcCounters) into rows: rates, totals, PSS, GPU."""
        c0 = time.thread_time()
        self._t_step = now
        if self._new:
            self._identify(self._new)
            self._new = []
        gpu = None
        if self.gpu is not None:
            if self._pids_changed:
                self.gpu.match(p for p, r in self.rows.items() if r.t_end is None)
            try:
                gpu, _ = self.gpu.read()
            except Exception:  # noqa: BLE001 - NVML trouble never stops the table
                gpu = None
        self._pids_changed = False
        for pid, r in self.rows.items():
            if r.t_end is not None:
                continue
            c = last.get(pid)
            if c is None:
                continue
            r.last = c
            eff = r.effective()
            dt = now - r.t_prev
            if r.prev is not None and dt > 0:
                d = [max(0.0, e - p) / dt for e, p in zip(eff, r.prev)]
                r.rates = (round(100.0 * d[0], 1),) + tuple(round(x, 1) for x in d[1:])
                r.peak_read = max(r.peak_read, r.rates[1])
                r.peak_write = max(r.peak_write, r.rates[3])
            # (a process's first step has no rate: a child seen by the periodic scan brings
            # what it did since it started; its totals count it, its rates start here)
            r.prev, r.t_prev = eff, now
            r.rss = c.rss_bytes
            if c.rss_bytes > r.rss_peak:
                r.rss_peak = c.rss_bytes
            if self.pss is not None and now >= r.pss_next and self.pss.allowed(now, self._t_start):
                self._read_pss(r, now)
            if gpu is not None:
                g = gpu.get(pid)
                r.gpu_mem = g["gpu_mem_bytes"] if g else None
                r.gpu_util = g["gpu_util_pct"] if g else None
                if r.gpu_mem is not None and (r.gpu_mem_peak is None or r.gpu_mem > r.gpu_mem_peak):
                    r.gpu_mem_peak = r.gpu_mem
                if r.gpu_util is not None:
                    r.gpu_util_sum += r.gpu_util
                    r.gpu_util_n += 1
        if len(self.rows) > self.max_rows:
            self._merge_oldest()
        self.cpu_s += time.thread_time() - c0

    def _identity(self, r: _Row) -> None:
        """Name, parent and start time, read once when the process is first seen."""
        try:
            if self.fast:
                r.name, r.ppid, r.start = proc_identity(r.pid)
            else:
                p = self.ps.Process(r.pid)
                r.name, r.ppid, r.start = p.name(), p.ppid(), p.create_time()
        except Exception:  # noqa: BLE001 - gone meanwhile
            pass

    def _identify(self, pids: list[int]) -> None:
        """Roles of the processes seen since the last step: main, worker k, child."""
        for pid in pids:
            r = self.rows.get(pid)
            if r is None:
                continue
            if pid == self.root:
                r.kind = "main"
            elif r.name == WORKER_COMM:
                r.kind = "worker"
        # numbered by start time among the live workers of the same parent (all of them again: a
        # sibling that started earlier may be seen later)
        for ppid in {self.rows[p].ppid for p in pids if p in self.rows and self.rows[p].kind == "worker"}:
            sib = sorted(
                (
                    x
                    for x in self.rows.values()
                    if x.kind == "worker" and x.ppid == ppid and (x.t_end is None or x.pid in pids)
                ),
                key=lambda x: (x.start, x.pid),
            )
            for k, x in enumerate(sib):
                x.worker = k

    def _read_pss(self, r: _Row, now: float) -> None:
        pss = self.pss.read(r, now, live=sum(1 for x in self.rows.values() if x.t_end is None))
        if pss is not None:
            r.pss = pss
            if r.pss_peak is None or pss > r.pss_peak:
                r.pss_peak = pss

    def _merge_oldest(self) -> None:
        ended = sorted((r.t_end, pid) for pid, r in self.rows.items() if r.t_end is not None and pid > 0)
        extra = len(self.rows) - self.max_rows
        for _, pid in ended[:extra]:
            r = self.rows.pop(pid)
            acc = self.rows.get(0)
            if acc is None:
                acc = self.rows[0] = _Row(0, r.t0)
                acc.kind, acc.name, acc.t_end = "exited", "earlier processes", r.t_end
                acc.last = _Zero()
                acc.base = acc.absorbed = _NONE
            acc.base = tuple(b - t for b, t in zip(acc.base, r.totals()))
            acc.rss_peak = max(acc.rss_peak, r.rss_peak)
            acc.t_end = max(acc.t_end, r.t_end)
            self.merged += 1
        if 0 in self.rows:
            self.rows[0].name = f"{self.merged} earlier processes"

    def close(self) -> None:
        if self.pss is not None:
            for r in self.rows.values():
                self.pss.close(r)


class _Zero:
    cpu_s = read_bytes = read_chars = write_bytes = write_chars = cancelled_write_bytes = rss_bytes = 0
