"""The server's one live sampler, shared by every client: started by the first request, stopped when idle.

:class:`LiveSampler` owns one :class:`~nbbench.monitor.Monitor` (1 Hz by default) with the
machine's sources (CPU and memory, the disk behind the server's root directory, the network,
the GPUs through NVML), :class:`~nbbench.monitor.hostextra.HostExtraSource` (pressure stalls,
CPU throttling, page cache, each disk) and
:class:`~nbbench.monitor.kernels.KernelTreesSource` (the local kernels' process trees).
Every request calls :meth:`LiveSampler.touch`; a reaper thread stops the monitor when no
request came for ``idle_s`` seconds (and the next request starts a fresh one).  Nothing here
measures: the sources do; this module arranges their records as the JSON the handlers send.

Layer: front end (the server extension); it imports the monitor and the core.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from ..monitor import CpuSource, DiskSource, Monitor, NetSource, NvmlGpuSource
from ..monitor.hostextra import HostExtraSource
from ..monitor.kernels import KernelTreesSource
from ..results.system.monitor import monitor_verdict

__all__ = ["LiveSampler", "machine_figures", "verdict_line"]

#: points of history sent with each snapshot (the charts' width)
HISTORY_POINTS = 120
#: seconds of records the machine's verdict looks at
VERDICT_WINDOW_S = 10.0


def _num(v) -> float | None:
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _on_device(disk: str, described: str) -> bool:
    """Whether the watched path's device (``'vda1 (partition of vda, …)'``) is ``disk`` or a partition of it."""
    import re

    words = re.findall(r"[\w-]+", described)
    return any(w == disk or (w.startswith(disk) and w[len(disk) :].lstrip("p").isdigit()) for w in words)


def _gpu_indices(rec: dict) -> list[int]:
    out = set()
    for k in rec:
        if k.startswith("gpu") and "." in k:
            idx = k[3 : k.index(".")]
            if idx.isdigit():
                out.add(int(idx))
    return sorted(out)


def machine_figures(records: list[dict], labels: dict) -> dict[str, Any]:
    """The machine's means over ``records`` in the terms :func:`~nbbench.results.system.monitor.monitor_verdict`
    reads (``wall_s``, ``cpu_mean_pct``, ``cpu_iowait_mean_pct``, ``gpu_count``, ``gpu_util_mean_pct``,
    ``net_rx_bytes``…)."""
    if len(records) < 2:
        return {}
    wall = records[-1]["t"] - records[0]["t"]

    def mean(key):
        vals = [_num(r.get(key)) for r in records[1:]]
        vals = [v for v in vals if v is not None]
        return sum(vals) / len(vals) if vals else None

    gpus = _gpu_indices(records[-1])
    utils = [mean(f"gpu{i}.util_pct") for i in gpus]
    utils = [u for u in utils if u is not None]
    return {
        "wall_s": wall,
        "cpu_mean_pct": mean("cpu.util_pct"),
        "cpu_iowait_mean_pct": mean("cpu.iowait_pct"),
        "gpu_count": len(gpus),
        "gpu_util_mean_pct": sum(utils) / len(utils) if utils else None,
        "net_rx_bytes": (mean("net.rx_bytes_per_s") or 0) * wall,
        "net_tx_bytes": (mean("net.tx_bytes_per_s") or 0) * wall,
        "proc_read_bytes": (mean("disk.read_bytes_per_s") or 0) * wall,
        "proc_write_bytes": (mean("disk.write_bytes_per_s") or 0) * wall,
    }


def verdict_line(machine: str, gpus: list[dict], kernels: list[dict], gpu_note: str | None) -> str:
    """'kernel train.ipynb: CPU-bound in its 4 child processes; GPU 0 idle 62 %; machine: partly busy'."""
    parts = [f"kernel {k['name'] or k['pid']}: {k['verdict']}" for k in kernels if k.get("busy") and k.get("verdict")]
    for g in gpus:
        u = g.get("util_pct")
        if u is not None:
            parts.append(f"GPU {g['index']} {'busy' if u >= 50 else 'idle'} {100 - u if u < 50 else u:.0f} %")
    if not gpus and gpu_note:  # "no GPU visible": the reason is said once, in the metrics' gpu_note
        parts.append(gpu_note.split(":")[0])
    if machine:
        parts.append(f"machine: {machine}")
    return "; ".join(parts)


class LiveSampler:
    """One shared monitor for the server's clients (see the module doc)."""

    def __init__(self, interval: float = 1.0, idle_s: float = 30.0, path: str | None = None, gpus="all", nvml=None):
        self.interval = float(interval)
        self.idle_s = float(idle_s)
        self.path = path
        self.gpus = gpus
        self._nvml = nvml
        self._lock = threading.Lock()
        self._monitor = None
        self._kernels = None
        self._extra = None
        self._last_asked = 0.0
        self._wake = threading.Event()
        self._reaper: threading.Thread | None = None
        #: how many monitors were started and stopped (the tests read it)
        self.starts = 0
        self.stops = 0

    # ---------------------------------------------------------------- life
    @property
    def running(self) -> bool:
        m = self._monitor
        return m is not None and m.running

    def touch(self) -> None:
        """A client asked: start the monitor if it is not running, and put off its idle stop."""
        with self._lock:
            self._last_asked = time.monotonic()
            if self.running:
                return

            self._kernels = KernelTreesSource()
            self._extra = HostExtraSource()
            sources = [CpuSource(per_core=False), DiskSource(path=self.path), NetSource("auto"), self._extra]
            if self.gpus not in ("none", [], None):
                sources.append(NvmlGpuSource(gpus=self.gpus, nvml=self._nvml))
            sources.append(self._kernels)
            self._monitor = Monitor(interval=self.interval, sources=sources, capacity=max(HISTORY_POINTS, 600))
            self._monitor.start()
            self.starts += 1
            if self._reaper is None:
                self._wake.clear()
                self._reaper = threading.Thread(target=self._reap, name="nbbench-live-reaper", daemon=True)
                self._reaper.start()

    def _reap(self) -> None:
        # every way out clears self._reaper under the lock, so that a touch() after it starts a new
        # reaper (a thread still alive for a moment after its last lock would otherwise be trusted)
        while True:
            with self._lock:
                if not self.running:
                    self._reaper = None
                    return
                left = self._last_asked + self.idle_s - time.monotonic()
                if left <= 0:
                    self._stop_locked()
                    self._reaper = None
                    return
            if self._wake.wait(timeout=left):
                with self._lock:
                    if self._reaper is threading.current_thread():
                        self._reaper = None
                return

    def _stop_locked(self) -> None:
        if self._monitor is not None and self._monitor.running:
            self._monitor.stop()
            self.stops += 1

    def stop(self) -> None:
        """Stop now (the server is shutting down)."""
        self._wake.set()
        with self._lock:
            self._stop_locked()

    # ---------------------------------------------------------------- data
    def track_kernels(self, pids: dict[int, str]) -> None:
        if self._kernels is not None:
            self._kernels.track(pids)

    def _labels(self) -> dict:
        m = self._monitor
        out: dict[str, Any] = {}
        for src in m.sources if m is not None else []:
            out.update(getattr(src, "labels", None) or {})
        return out

    def _window(self) -> list[dict]:
        m = self._monitor
        if m is None:
            return []
        recs = m.records()
        if not recs:
            return []
        t_end = recs[-1]["t"]
        return [r for r in recs if t_end - r["t"] <= VERDICT_WINDOW_S]

    def kernel_figures(self) -> list[dict]:
        if self._kernels is None:
            return []
        labels = self._labels()
        return self._kernels.figures(
            machine_figures(self._window(), labels), {"cpus_logical": labels.get("cpus_logical")}
        )

    def snapshot(self, kernels: list[dict] | None = None) -> dict[str, Any]:
        """The JSON of ``api/metrics``: the latest figures, the charts' history, the verdict line."""

        m = self._monitor
        recs = m.records()[-HISTORY_POINTS:] if m is not None else []
        rec = recs[-1] if recs else {}
        labels = self._labels()
        na = m.na() if m is not None else {}
        gpu_src = m.source("gpu") if m is not None else None
        gpu_note = None
        if self.gpus in ("none", [], None):
            gpu_note = "no GPU watched (gpus=none)"
        elif not _gpu_indices(rec):
            notes = [n for n in (getattr(gpu_src, "notes", None) or []) if "N/A" in n or "no GPU" in n]
            note = notes[0] if notes else "NVML reported no device"
            gpu_note = "no GPU visible: " + note.removeprefix("GPU figures are N/A: ")
        gpus = []
        for i in _gpu_indices(rec):
            dev = next((d for d in getattr(gpu_src, "devices", None) or [] if d.index == i), None)
            info = dev.info if dev is not None else {}
            gpus.append(
                {
                    "index": i,
                    "name": info.get("name"),
                    "util_pct": _num(rec.get(f"gpu{i}.util_pct")),
                    "mem_used_bytes": _num(rec.get(f"gpu{i}.mem_used_bytes")),
                    "mem_total_bytes": info.get("mem_total_bytes"),
                    "power_w": _num(rec.get(f"gpu{i}.power_w")),
                }
            )
        dataset_dev = str(labels.get("disk_device") or "")
        disks = []
        for k in sorted(rec):
            if k.startswith("dev.") and k.endswith(".read_bytes_per_s"):
                name = k[4 : -len(".read_bytes_per_s")]
                disks.append(
                    {
                        "device": name,
                        "read_bytes_per_s": _num(rec.get(k)),
                        "write_bytes_per_s": _num(rec.get(f"dev.{name}.write_bytes_per_s")),
                        "dataset": _on_device(name, dataset_dev),
                    }
                )
        pressure = {k[4:]: _num(v) for k, v in rec.items() if k.startswith("psi.")}
        machine = monitor_verdict(machine_figures(self._window(), labels), {"cpus_logical": labels.get("cpus_logical")})
        kernels = self.kernel_figures() if kernels is None else kernels
        series_keys = {
            "cpu_pct": "cpu.util_pct",
            "mem_used_bytes": "mem.used_bytes",
            "disk_read_bytes_per_s": "disk.read_bytes_per_s",
            "disk_write_bytes_per_s": "disk.write_bytes_per_s",
            "net_rx_bytes_per_s": "net.rx_bytes_per_s",
            "net_tx_bytes_per_s": "net.tx_bytes_per_s",
        }
        history: dict[str, list] = {"t": [r.get("t", 0.0) - time.monotonic() for r in recs]}
        for name, key in series_keys.items():
            history[name] = [_num(r.get(key)) for r in recs]
        for g in gpus:
            history[f"gpu{g['index']}_util_pct"] = [_num(r.get(f"gpu{g['index']}.util_pct")) for r in recs]
        return {
            "time": time.time(),
            "interval_s": self.interval,
            "samples": len(recs),
            "sampler": {
                "running": self.running,
                "idle_stop_s": self.idle_s,
                "cpu_pct_of_one_core": m.sampler_cpu_pct if m is not None else None,
            },
            "cpu": {
                "util_pct": _num(rec.get("cpu.util_pct")),
                "iowait_pct": _num(rec.get("cpu.iowait_pct")),
                "logical": labels.get("cpus_logical"),
                "usable": labels.get("cpus_usable"),
                "quota": labels.get("cpu_quota"),
                "throttled_pct": _num(rec.get("cgroup.throttled_pct")),
                "throttled_periods": _num(rec.get("cgroup.throttled_periods")),
                "throttling_na": na.get("cgroup.throttled_pct"),
            },
            "memory": {
                "used_bytes": _num(rec.get("mem.used_bytes")),
                "available_bytes": _num(rec.get("mem.available_bytes")),
                "cached_bytes": _num(rec.get("mem.cached_bytes")),
            },
            "disk": {
                "device": labels.get("disk_device"),
                "path": labels.get("path"),
                "read_bytes_per_s": _num(rec.get("disk.read_bytes_per_s")),
                "write_bytes_per_s": _num(rec.get("disk.write_bytes_per_s")),
            },
            "disks": disks,
            "net": {
                "rx_bytes_per_s": _num(rec.get("net.rx_bytes_per_s")),
                "tx_bytes_per_s": _num(rec.get("net.tx_bytes_per_s")),
            },
            "gpus": gpus,
            "gpu_note": gpu_note,
            "pressure": pressure or None,
            "pressure_na": None if pressure else (na.get("psi.cpu_some_pct") or "no pressure figures yet"),
            "verdict": {"machine": machine, "line": verdict_line(machine, gpus, kernels, gpu_note)},
            "history": history,
            "notes": m.all_notes() if m is not None else [],
        }
