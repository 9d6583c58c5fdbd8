"""MonitorResult: what a monitored cell or command did to the GPUs, CPUs and disks.

Metrics (base units, unit in the key):

- ``wall_s``, ``interval_s``, ``samples_count``, ``sampler_cpu_pct`` (the sampler's own
  cost, % of one core)
- ``gpu_util_mean_pct`` / ``gpu_util_peak_pct``: NVML kernel-active % (share of time
  one or more kernels ran), mean over the run and the GPUs / highest sample;
  ``gpu_idle_share_pct``: share of samples with kernel-active below
  :data:`~nbbench.results.series.IDLE_THRESHOLD_PCT` (5 %), averaged over the GPUs;
  per GPU ``gpu{i}_util_mean_pct``, ``gpu{i}_mem_used_peak_bytes``, ``gpu{i}_power_mean_w``,
  ``gpu{i}_sm_active_mean_pct`` (GPM) and so on.  None (N/A) without a GPU.
- ``cpu_mean_pct``, ``cpu_peak_pct``, ``cpu_iowait_mean_pct`` (whole machine),
  ``proc_cpu_mean_pct`` (this process and its children, % of one core)
- ``disk_read_bytes``, ``disk_write_bytes`` (the device behind the path, from its
  counters), ``disk_read_mean_bytes_per_s``, ``disk_read_peak_bytes_per_s``,
  ``sys_read_bytes`` (all disks), ``proc_read_bytes`` (this process tree, from storage),
  ``proc_read_syscall_bytes`` (its read() calls, page-cache hits included),
  ``proc_write_bytes`` (written to storage: pages it dirtied, counted when dirtied),
  ``proc_write_cancelled_bytes`` (of those, thrown away before writeback: files deleted or
  truncated in time; absent, N/A, where unreadable), ``proc_write_syscall_bytes`` (its write() calls)
- ``mem_used_peak_bytes``, ``proc_rss_peak_bytes``
- ``net_rx_bytes``, ``net_tx_bytes``, ``net_rx_mean_bytes_per_s``, ``net_rx_peak_bytes_per_s``
  (and tx), per interface ``net_eth0_rx_bytes``… (:mod:`nbbench.monitor.net`)
- ``proc_top_reader_read_bytes``, ``proc_top_writer_write_bytes``, ``proc_top_cpu_s``,
  ``proc_main_read_bytes``, ``proc_workers_read_bytes``, ``proc_main_write_bytes``,
  ``proc_workers_write_bytes`` (and their ``…_write_cancelled_bytes``), ``proc_workers_count``; labels
  ``proc_top_reader``
  ("worker 2 (pid 123): 45 MB/s from storage …"), ``proc_top_writer`` and ``proc_top_cpu``
  (:mod:`nbbench.monitor.proctable`)

``samples["timeline"]`` holds the records column-wise (``t_s`` = seconds since the
start, then one list per field), ``samples["cores"]`` the per-core CPU %,
``samples["procs"]`` the per-process table (one list per column: pid, role, name, reads,
writes, CPU, peak RSS/PSS, GPU memory), ``samples["marks"]`` the labelled marks (``t_s``,
``label``).  :attr:`MonitorResult.frame` gives the timeline as a DataFrame,
:meth:`MonitorResult.procs_frame` the table.
"""

from __future__ import annotations

from typing import Any

from ..results.series import IDLE_THRESHOLD_PCT
from ..results.system.monitor import MonitorResult

__all__ = ["MonitorResult", "build_result"]


# --------------------------------------------------------------------- building
def _gpu_metrics(stats: dict, metrics: dict) -> None:
    indices = sorted(
        {int(k[3 : k.index(".")]) for k in stats if k.startswith("gpu") and "." in k and k[3 : k.index(".")].isdigit()}
    )
    means, peaks, idles, mem_peaks = [], [], [], []
    for i in indices:
        p = f"gpu{i}."
        u = stats.get(p + "util_pct")
        if u is not None and u.n:
            metrics[f"gpu{i}_util_mean_pct"] = round(u.mean, 2)
            metrics[f"gpu{i}_util_peak_pct"] = u.max
            metrics[f"gpu{i}_idle_share_pct"] = round(100.0 * u.n_below / u.n, 2)
            means.append(u.mean)
            peaks.append(u.max)
            idles.append(100.0 * u.n_below / u.n)
        for field, key, how in (
            ("mem_util_pct", "mem_util_mean_pct", "mean"),
            ("mem_used_bytes", "mem_used_peak_bytes", "max"),
            ("power_w", "power_mean_w", "mean"),
            ("power_w", "power_peak_w", "max"),
            ("temp_c", "temp_peak_c", "max"),
            ("sm_clock_mhz", "sm_clock_mean_mhz", "mean"),
            ("sm_active_pct", "sm_active_mean_pct", "mean"),
            ("sm_occupancy_pct", "sm_occupancy_mean_pct", "mean"),
            ("pcie_rx_bytes_per_s", "pcie_rx_mean_bytes_per_s", "mean"),
            ("pcie_tx_bytes_per_s", "pcie_tx_mean_bytes_per_s", "mean"),
        ):
            st = stats.get(p + field)
            if st is not None and st.n:
                v = st.mean if how == "mean" else st.max
                metrics[f"gpu{i}_{key}"] = round(v, 2) if isinstance(v, float) else v
                if key == "mem_used_peak_bytes":
                    mem_peaks.append(v)
    metrics["gpu_util_mean_pct"] = round(sum(means) / len(means), 2) if means else None
    metrics["gpu_util_peak_pct"] = max(peaks) if peaks else None
    metrics["gpu_idle_share_pct"] = round(sum(idles) / len(idles), 2) if idles else None
    metrics["gpu_mem_used_peak_bytes"] = max(mem_peaks) if mem_peaks else None
    metrics["gpu_count"] = len(indices)


def _columns(records: list[dict], t0: float) -> tuple[dict, dict]:
    fields: list[str] = []
    seen = set()
    for r in records:
        for k in r:
            if k not in seen and k not in ("t", "cpu.cores_pct"):
                seen.add(k)
                fields.append(k)
    timeline: dict[str, list] = {"t_s": [round(r["t"] - t0, 4) for r in records]}
    for f in fields:
        timeline[f] = [r.get(f) for r in records]
    cores: dict[str, list] = {}
    width = max((len(r["cpu.cores_pct"]) for r in records if r.get("cpu.cores_pct")), default=0)
    if width:
        cores["t_s"] = timeline["t_s"]
        for i in range(width):
            cores[f"core{i}_pct"] = [
                (r["cpu.cores_pct"][i] if r.get("cpu.cores_pct") and i < len(r["cpu.cores_pct"]) else None)
                for r in records
            ]
    return timeline, cores


def build_result(mon, status: str = "ok", reason: str | None = None, params: dict | None = None) -> MonitorResult:
    """A :class:`MonitorResult` from a stopped :class:`~nbbench.monitor.Monitor`."""
    stats = mon._stats
    metrics: dict[str, Any] = {
        "wall_s": round(mon.wall_s or 0.0, 4),
        "interval_s": mon.interval,
        "samples_count": mon.n_samples,
    }
    _gpu_metrics(stats, metrics)

    def put(key, field, how="mean", digits=2):
        st = stats.get(field)
        if st is not None and st.n:
            v = st.mean if how == "mean" else st.max
            metrics[key] = round(v, digits) if isinstance(v, float) else v

    put("cpu_mean_pct", "cpu.util_pct")
    put("cpu_peak_pct", "cpu.util_pct", "max")
    put("cpu_iowait_mean_pct", "cpu.iowait_pct")
    put("proc_cpu_mean_pct", "proc.cpu_pct")
    put("proc_cpu_peak_pct", "proc.cpu_pct", "max")
    put("mem_used_peak_bytes", "mem.used_bytes", "max")
    put("proc_rss_peak_bytes", "proc.rss_bytes", "max")
    for src in mon.sources:
        summ = getattr(src, "summary", None)
        if summ is not None:
            try:
                metrics.update(summ())
            except Exception:  # noqa: BLE001
                pass
    wall = mon.wall_s or 0.0
    if wall > 0 and metrics.get("disk_read_bytes") is not None:
        metrics["disk_read_mean_bytes_per_s"] = round(metrics["disk_read_bytes"] / wall, 1)
        metrics["disk_write_mean_bytes_per_s"] = round(metrics.get("disk_write_bytes", 0) / wall, 1)
    put("disk_read_peak_bytes_per_s", "disk.read_bytes_per_s", "max")
    put("disk_write_peak_bytes_per_s", "disk.write_bytes_per_s", "max")
    put("disk_read_peak_iops", "disk.read_iops", "max")
    put("disk_busy_mean_pct", "disk.busy_pct")
    net = next((s for s in mon.sources if getattr(s, "name", "") == "net"), None)
    if net is not None and hasattr(net, "peaks"):
        metrics.update(net.peaks(stats))
    if mon.sampler_cpu_pct is not None:
        metrics["sampler_cpu_pct"] = round(mon.sampler_cpu_pct, 3)

    labels: dict[str, Any] = {"sources": ",".join(getattr(s, "name", "?") for s in mon.sources)}
    for src in mon.sources:
        labels.update(getattr(src, "labels", None) or {})
    if any(s.startswith("gpu") for s in labels.get("sources", "").split(",")):
        labels["gpu_util_meaning"] = "kernel-active % (share of time one or more kernels ran)"
        labels["idle_threshold_pct"] = IDLE_THRESHOLD_PCT

    records = mon.records()
    t0 = mon.t_start if mon.t_start is not None else (records[0]["t"] if records else 0.0)
    timeline, cores = _columns(records, t0)
    samples: dict[str, Any] = {"timeline": timeline}
    if cores:
        samples["cores"] = cores
    for src in mon.sources:
        more = getattr(src, "table_samples", None)
        if more is not None:
            try:
                samples.update(more(t0))
            except Exception:  # noqa: BLE001
                pass
    marks = list(getattr(mon, "marks", []) or [])
    if marks:
        samples["marks"] = {"t_s": [round(t - t0, 3) for t, _ in marks], "label": [m for _, m in marks]}

    res = MonitorResult(
        params=dict(
            params or {},
            interval_s=mon.interval,
            gpus=mon.gpus if isinstance(mon.gpus, str) else list(mon.gpus),
            path=getattr(next((s for s in mon.sources if s.name == "disk"), None), "path", mon.path),
        ),
        metrics=metrics,
        labels=labels,
        samples=samples,
        started_at=mon.started_at or 0.0,
        extra={"notes": mon.all_notes(), "na": mon.na(), "field_stats": {k: v.to_dict() for k, v in stats.items()}},
    )
    if getattr(mon, "recent_s", None):
        res.extra["retention"] = (
            f"the last {mon.recent_s:g} s at full rate, older samples as 10 s means "
            "(1 min means after 6 h); the summary covers every sample"
        )
        if mon.n_dropped:
            res.warn(
                f"{mon.n_dropped} downsampled samples older than 7 days were dropped from the timeline "
                "(the summary covers the whole run)"
            )
    elif mon.n_dropped:
        res.warn(
            f"the ring buffer kept only the last {mon.capacity} samples ({mon.n_dropped} older ones "
            "dropped from the timeline; the summary covers the whole run): raise capacity= or the interval"
        )
    if mon.n_late > max(2, mon.n_samples // 10):
        res.warn(
            f"{mon.n_late} samples came late (the machine was too busy to sample every "
            f"{mon.interval} s): use a longer --interval"
        )
    if isinstance(mon.gpus, list) and mon.gpus and not metrics.get("gpu_count"):
        res.warn("GPUs were asked for but none could be read: see the notes for why")
    res.finish(status, reason)
    if mon.ended_at:
        res.ended_at = mon.ended_at
    return res
