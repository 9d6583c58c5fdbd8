"""Several process trees at once: the Jupyter server's local kernels and their children.

:class:`KernelTreesSource` keeps one :class:`~nbbench.monitor.procs.ProcessTreeSource` per
watched process (``track({pid: name})``, from any thread: applied at the next sample) and
samples them all on the monitor's thread.  It adds nothing to the monitor's records (a
record's field names stay fixed); :meth:`KernelTreesSource.figures` gives each tree's latest
rates and, over the last ``window_s`` seconds, its totals and the monitor's verdict on them
(:func:`nbbench.results.system.monitor.monitor_verdict`: "CPU-bound (2 cores)", "waiting on storage",
"idle", …), with where its CPU went (the kernel itself or its child processes — a
DataLoader's workers).

Fields of one tree in :meth:`figures`: ``pid``, ``name``, ``cpu_pct`` (% of one core),
``read_bytes_per_s`` / ``write_bytes_per_s`` (storage; ``read_syscall_bytes_per_s``: read()
calls, page-cache hits included), ``rss_bytes`` (the kernel and its children), ``children``,
``children_cpu_pct``, ``window_s``, ``verdict`` and ``busy`` (not idle).
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

from ..results.system.monitor import monitor_verdict
from .procfs import counted
from .procs import ProcessTreeSource

__all__ = ["KernelTreesSource", "tree_verdict"]

#: a tree is busy (worth a verdict line) when it used this many cores, or moved this many bytes/s
BUSY_CORES = 0.1
BUSY_BYTES_PER_S = 1e6


def tree_verdict(window: list[tuple[float, dict]], machine: dict | None = None, labels: dict | None = None) -> str:
    """The monitor's verdict on one tree from its samples ``[(t, fields)]`` (rates) and the
    machine's means over the same window (``cpu_mean_pct``, ``gpu_count``, ``gpu_util_mean_pct``)."""
    if len(window) < 2:
        return ""
    wall = window[-1][0] - window[0][0]
    m: dict[str, Any] = {"wall_s": wall, "proc_cpu_s": 0.0, "proc_read_bytes": 0.0, "proc_write_bytes": 0.0}
    for (t0, _), (t1, f) in zip(window, window[1:]):
        dt = t1 - t0
        m["proc_cpu_s"] += (f.get("proc.cpu_pct") or 0.0) / 100.0 * dt
        m["proc_read_bytes"] += (f.get("proc.read_bytes_per_s") or 0.0) * dt
        m["proc_write_bytes"] += (f.get("proc.write_bytes_per_s") or 0.0) * dt
    m.update(machine or {})
    return monitor_verdict(m, labels)


class KernelTreesSource:
    """Process trees by pid, sampled together; their figures on demand (see the module doc)."""

    name = "kernels"

    def __init__(self, window_s: float = 10.0):
        self.window_s = float(window_s)
        self.notes: list[str] = []
        self.na: dict[str, str] = {}
        self._lock = threading.Lock()
        self._wanted: dict[int, str] = {}
        self._trees: dict[int, Any] = {}
        self._names: dict[int, str] = {}
        self._windows: dict[int, deque] = {}
        self._children: dict[int, tuple[int, float]] = {}

    def track(self, pids: dict[int, str]) -> None:
        """Watch exactly these processes (pid -> a name: the notebook's path), from the next sample on."""
        with self._lock:
            self._wanted = {int(p): str(n) for p, n in pids.items()}

    def _sync(self) -> None:
        with self._lock:
            wanted = dict(self._wanted)
        for pid in [p for p in self._trees if p not in wanted]:
            self._trees.pop(pid).close()
            with self._lock:
                self._windows.pop(pid, None)
            self._children.pop(pid, None)
        for pid, name in wanted.items():
            if pid not in self._trees:
                tree = ProcessTreeSource(pid=pid, table=None, pss=False)
                tree.open()
                self._trees[pid] = tree
                with self._lock:
                    self._windows[pid] = deque()
            self._names[pid] = name

    def sample(self, now: float) -> dict:
        self._sync()
        for pid, tree in list(self._trees.items()):
            fields = tree.sample(now)
            if not fields:  # the process is gone: dropped at the next track()
                continue
            kids = [p for p in tree._procs if p != pid]
            child_cpu = self._child_cpu(tree, pid, now)
            self._children[pid] = (len(kids), child_cpu)
            with self._lock:  # figures() copies the windows under it
                win = self._windows[pid]
                win.append((now, fields))
                while win and now - win[0][0] > self.window_s:
                    win.popleft()
        return {}

    def _child_cpu(self, tree, pid: int, now: float) -> float | None:
        """% of one core used by the tree's children since the previous sample (the rest is the kernel's)."""
        last = tree._last
        total = sum(counted(c)[0] for p, c in last.items() if p != pid)
        prev = getattr(tree, "_nbb_child_prev", None)
        tree._nbb_child_prev = (now, total)
        if prev is None or now <= prev[0]:
            return None
        return round(max(0.0, total - prev[1]) / (now - prev[0]) * 100.0, 1)

    def figures(self, machine: dict | None = None, labels: dict | None = None) -> list[dict]:
        """One dict per watched tree with a sample (see the module doc); ``machine``: the machine's
        means over the window, for the verdict."""
        out = []
        with self._lock:
            windows = {pid: list(win) for pid, win in self._windows.items()}
        for pid, win in windows.items():
            if not win:
                continue
            _, f = win[-1]
            kids, child_cpu = self._children.get(pid, (0, None))
            cpu = f.get("proc.cpu_pct")
            read = f.get("proc.read_bytes_per_s")
            write = f.get("proc.write_bytes_per_s")
            busy = (cpu or 0) / 100.0 >= BUSY_CORES or (read or 0) + (write or 0) >= BUSY_BYTES_PER_S
            verdict = tree_verdict(win, machine, labels) if busy else "idle"
            if verdict.startswith("CPU-bound") and child_cpu and cpu and child_cpu >= 0.5 * cpu:
                verdict = verdict.replace("CPU-bound", f"CPU-bound in its {kids} child process{'es' * (kids != 1)}", 1)
            out.append(
                {
                    "pid": pid,
                    "name": self._names.get(pid, ""),
                    "cpu_pct": cpu,
                    "read_bytes_per_s": read,
                    "write_bytes_per_s": write,
                    "read_syscall_bytes_per_s": f.get("proc.read_syscall_bytes_per_s"),
                    "rss_bytes": f.get("proc.rss_bytes"),
                    "children": kids,
                    "children_cpu_pct": child_cpu,
                    "window_s": round(win[-1][0] - win[0][0], 1),
                    "busy": busy,
                    "verdict": verdict,
                }
            )
        return out

    def close(self) -> None:
        for tree in self._trees.values():
            tree.close()
        self._trees = {}
        self._windows = {}
