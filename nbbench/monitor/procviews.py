"""What the per-process table shows: its columns, its live view and its summary.

:class:`TableViews` is the view half of :class:`~nbbench.monitor.proctable.ProcessTable`
(which keeps the rows): ``samples["procs"]`` (:data:`COLUMNS`, the biggest readers first),
the live processes with their latest rates (for live views and ``/metrics``), and the
summary — the main process's and the workers' reads and writes, the top reader, the top
writer and the top CPU user.

Reads and writes are each given twice, as ``/proc/PID/io`` gives them: ``read`` / ``write``
(``read_bytes``; ``write_bytes``: what was fetched from storage / dirtied for it) and ``read()`` /
``write()`` (``rchar`` / ``wchar``: the bytes the calls moved, page cache included); and the writes
cancelled (``cancelled_write_bytes``: dirtied, then thrown away before writeback — a file deleted or
truncated in time; charged to the process that deleted it), beside ``write``, not subtracted.
"""

from __future__ import annotations

from typing import Any

from ..units import format_many, format_si

__all__ = ["TableViews", "COLUMNS"]

#: the columns of ``samples["procs"]`` (one list per column, one entry per process)
COLUMNS = (
    "pid",
    "ppid",
    "role",
    "name",
    "started_s",
    "ended_s",
    "read_bytes",
    "read_syscall_bytes",
    "write_bytes",
    "write_syscall_bytes",
    "write_cancelled_bytes",
    "cpu_s",
    "read_mean_bytes_per_s",
    "read_peak_bytes_per_s",
    "write_mean_bytes_per_s",
    "write_peak_bytes_per_s",
    "cpu_mean_pct",
    "rss_peak_bytes",
    "pss_peak_bytes",
    "gpu_mem_peak_bytes",
    "gpu_util_mean_pct",
)


class TableViews:
    """The views of a :class:`~nbbench.monitor.proctable.ProcessTable` (its ``rows``, ``_t_now``, ``_t_step``)."""

    rows: dict
    _t_now: float | None
    _t_step: float | None

    def current(self) -> list[dict[str, Any]]:
        """The live processes now: pid, role, name and the latest rates (for live views and /metrics)."""
        out = []
        for r in list(self.rows.values()):
            if r.t_end is not None or r.pid <= 0:
                continue
            cpu, rb, rc, wb, wc = r.rates[:5]
            out.append(
                {
                    "pid": r.pid,
                    "role": r.role,
                    "kind": r.kind,
                    "worker": r.worker,
                    "name": r.name,
                    "read_bytes_per_s": rb,
                    "read_syscall_bytes_per_s": rc,
                    "write_bytes_per_s": wb,
                    "write_syscall_bytes_per_s": wc,
                    "cpu_pct": cpu,
                    "rss_bytes": r.rss,
                    "pss_bytes": r.pss,
                    "gpu_mem_bytes": r.gpu_mem,
                    "gpu_util_pct": r.gpu_util,
                }
            )
        return out

    def columns(self, t_origin: float) -> dict[str, list]:
        """``samples["procs"]``: one list per :data:`COLUMNS` entry, the biggest readers first (then writers)."""
        rows = [r for r in self.rows.values() if r.last is not None and r.base is not None]
        rows.sort(key=lambda r: (-r.totals()[1], -r.totals()[3], -r.totals()[0], r.pid))
        cols: dict[str, list] = {c: [] for c in COLUMNS}
        for r in rows:
            cpu, rb, rc, wb, wc, cw = r.totals()
            life = self._life(r)

            def mean(x, life=life):
                return round(x / life, 1) if life else None

            vals = (
                r.pid,
                r.ppid,
                r.role,
                r.name,
                round(r.t0 - t_origin, 3),
                None if r.t_end is None else round(r.t_end - t_origin, 3),
                int(rb),
                int(rc),
                int(wb),
                int(wc),
                int(cw),
                round(cpu, 3),
                mean(rb),
                r.peak_read,
                mean(wb),
                r.peak_write,
                round(100.0 * cpu / life, 1) if life else None,
                r.rss_peak,
                r.pss_peak,
                r.gpu_mem_peak,
                round(r.gpu_util_sum / r.gpu_util_n, 1) if r.gpu_util_n else None,
            )
            for c, v in zip(COLUMNS, vals):
                cols[c].append(v)
        return cols

    def summary(self) -> tuple[dict, dict]:
        """``(metrics, labels)``: the top reader, writer and CPU user; reads and writes of the main
        process and the workers."""
        metrics: dict[str, Any] = {}
        labels: dict[str, Any] = {}
        rows = [r for r in self.rows.values() if r.last is not None and r.base is not None and r.pid > 0]
        if not rows:
            return metrics, labels

        life = self._life

        def who(r):
            return f"{r.role} (pid {r.pid})"

        for kind, name in (("main", "main"), ("worker", "workers")):
            mine = [r.totals() for r in rows if r.kind == kind]
            metrics[f"proc_{name}_read_bytes"] = sum(int(t[1]) for t in mine)
            metrics[f"proc_{name}_write_bytes"] = sum(int(t[3]) for t in mine)
            metrics[f"proc_{name}_write_cancelled_bytes"] = sum(int(t[5]) for t in mine)
        metrics["proc_workers_count"] = sum(1 for r in rows if r.kind == "worker")
        for verb, i, key, done in (("read", 1, "proc_top_reader", "read"), ("write", 3, "proc_top_writer", "written")):
            top = max(rows, key=lambda r, i=i: (r.totals()[i], r.totals()[i + 1]))
            to_storage, calls = top.totals()[i], top.totals()[i + 1]
            if to_storage > 0 and life(top):
                way = "from storage" if verb == "read" else "to storage"
                cancelled = top.totals()[5] if verb == "write" else 0
                total, gone = format_many([to_storage, cancelled], "B")
                gone = f", {gone} of it cancelled" if cancelled > 0 else ""
                labels[key] = f"{who(top)}: {format_si(to_storage / life(top), 'B/s')} {way} ({total} {done}{gone})"
            elif calls > 0 and life(top) and verb == "read":
                labels[key] = (
                    f"{who(top)}: {format_si(calls / life(top), 'B/s')} through read(), "
                    "none from storage (the page cache served it)"
                )
            elif calls > 0 and life(top):
                labels[key] = (
                    f"{who(top)}: {format_si(calls / life(top), 'B/s')} through write(), "
                    "none to storage (tmpfs, a pipe or a socket)"
                )
            metrics[f"{key}_{verb}_bytes"] = int(to_storage)
        topc = max(rows, key=lambda r: r.totals()[0])
        c = topc.totals()[0]
        if c > 0 and life(topc):
            labels["proc_top_cpu"] = f"{who(topc)}: {100.0 * c / life(topc):.0f} % of one core ({c:.1f} s CPU)"
        metrics["proc_top_cpu_s"] = round(c, 3)
        return metrics, labels

    def _life(self, r) -> float | None:
        """Seconds the process was watched (None when under one sampling step: no rate then)."""
        end = r.t_end if r.t_end is not None else max(self._t_now or 0.0, self._t_step or 0.0)
        span = end - r.t0
        return span if span > 0.01 else None
