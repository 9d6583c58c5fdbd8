"""MonitorResult: what a monitored cell or command did to the GPUs, CPUs and disks.

Metrics (base units, unit in the key):

- ``wall_s``, ``interval_s``, ``samples_count``, ``sampler_cpu_pct`` (the sampler's own
  cost, % of one core)
- ``gpu_util_mean_pct`` / ``gpu_util_peak_pct``: NVML kernel-active % (share of time
  one or more kernels ran), mean over the run and the GPUs / highest sample;
  ``gpu_idle_share_pct``: share of samples with kernel-active below
  :data:`~nbbench.monitor.sampler.IDLE_THRESHOLD_PCT` (5 %), averaged over the GPUs;
  per GPU ``gpu{i}_util_mean_pct``, ``gpu{i}_mem_used_peak_bytes``, ``gpu{i}_power_mean_w``,
  ``gpu{i}_sm_active_mean_pct`` (GPM) and so on.  None (N/A) without a GPU.
- ``cpu_mean_pct``, ``cpu_peak_pct``, ``cpu_iowait_mean_pct`` (whole machine),
  ``proc_cpu_mean_pct`` (this process and its children, % of one core)
- ``disk_read_bytes``, ``disk_write_bytes`` (the device behind the path, from its
  counters), ``disk_read_mean_bytes_per_s``, ``disk_read_peak_bytes_per_s``,
  ``sys_read_bytes`` (all disks), ``proc_read_bytes`` (this process tree, from storage),
  ``proc_read_syscall_bytes`` (its read() calls, page-cache hits included)
- ``mem_used_peak_bytes``, ``proc_rss_peak_bytes``

``samples["timeline"]`` holds the records column-wise (``t_s`` = seconds since the
start, then one list per field), ``samples["cores"]`` the per-core CPU %.
:attr:`MonitorResult.frame` gives the timeline as a DataFrame.
"""

from __future__ import annotations

import math
from typing import Any

from ..results import Result, register
from .sampler import IDLE_THRESHOLD_PCT

__all__ = ["MonitorResult", "build_result"]


@register("monitor")
class MonitorResult(Result):
    """A monitored run; see the module doc for the metrics."""

    SUMMARY = ("wall_s", "gpu_util_mean_pct", "gpu_idle_share_pct", "cpu_mean_pct", "disk_read_bytes")

    def headline(self) -> str:
        what = self.params.get("command") or self.params.get("what") or "cell"
        if isinstance(what, (list, tuple)):
            import shlex

            what = shlex.join(str(w) for w in what)
        if len(what) > 60:
            what = what[:57] + "..."
        return f"monitor {what}"

    # ---------------------------------------------------------------- views
    @property
    def frame(self):
        """The timeline as a pandas DataFrame (``t_s`` then one column per field)."""
        import pandas as pd

        data = self.samples.get("timeline") or {}
        return pd.DataFrame(data)

    def cores_frame(self):
        """Per-core CPU busy % (columns ``core0_pct``…) against ``t_s``."""
        import pandas as pd

        return pd.DataFrame(self.samples.get("cores") or {})

    @property
    def gpu_indices(self) -> list[int]:
        out = set()
        for k in (self.samples.get("timeline") or {}):
            if k.startswith("gpu") and "." in k:
                try:
                    out.add(int(k[3:k.index(".")]))
                except ValueError:
                    pass
        return sorted(out)

    @property
    def notes(self) -> list[str]:
        """Sentences: what was N/A and why, how figures were taken."""
        return list(self.extra.get("notes", []))

    @property
    def na(self) -> dict:
        return dict(self.extra.get("na", {}))

    @property
    def exit_code(self) -> int | None:
        """The monitored command's exit code (``nbbench monitor -- CMD``); None for a cell."""
        code = self.extra.get("exit_code")
        return code if isinstance(code, int) and not isinstance(code, bool) else None

    def mean(self, field: str, t0: float | None = None, t1: float | None = None) -> float | None:
        """Mean of a timeline field over ``t0 < t_s <= t1`` (seconds since the start)."""
        tl = self.samples.get("timeline") or {}
        ts, vs = tl.get("t_s", []), tl.get(field, [])
        lo = -math.inf if t0 is None else t0
        hi = math.inf if t1 is None else t1
        vals = [v for t, v in zip(ts, vs) if v is not None and lo < t <= hi]
        return sum(vals) / len(vals) if vals else None

    def figure(self, **kwargs):
        """The timeline as a matplotlib Figure (object API, Agg canvas)."""
        from ..ui.liveplot import figure_for_result

        return figure_for_result(self, **kwargs)

    def png(self, dpi: int = 80, **kwargs) -> bytes:
        """The timeline as PNG bytes (``IPython.display.Image(res.png())`` shows it anywhere)."""
        import io

        buf = io.BytesIO()
        self.figure(dpi=dpi, **kwargs).savefig(buf, format="png")
        return buf.getvalue()

    # ------------------------------------------------------------- display
    def text_table(self) -> str:
        text = super().text_table()
        for n in self.notes:
            text += f"\n  note: {n}"
        return text

    def _repr_html_(self) -> str:
        import html

        out = super()._repr_html_()
        if self.notes:
            items = "".join(f"<li>{html.escape(n)}</li>" for n in self.notes)
            out = out[: -len("</div>")] + f"<ul style='font-size:85%;color:#555'>{items}</ul></div>"
        return out


# --------------------------------------------------------------------- building
def _gpu_metrics(stats: dict, metrics: dict) -> None:
    indices = sorted({int(k[3:k.index(".")]) for k in stats
                      if k.startswith("gpu") and "." in k and k[3:k.index(".")].isdigit()})
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
        for field, key, how in (("mem_util_pct", "mem_util_mean_pct", "mean"),
                                ("mem_used_bytes", "mem_used_peak_bytes", "max"),
                                ("power_w", "power_mean_w", "mean"),
                                ("power_w", "power_peak_w", "max"),
                                ("temp_c", "temp_peak_c", "max"),
                                ("sm_clock_mhz", "sm_clock_mean_mhz", "mean"),
                                ("sm_active_pct", "sm_active_mean_pct", "mean"),
                                ("sm_occupancy_pct", "sm_occupancy_mean_pct", "mean"),
                                ("pcie_rx_bytes_per_s", "pcie_rx_mean_bytes_per_s", "mean"),
                                ("pcie_tx_bytes_per_s", "pcie_tx_mean_bytes_per_s", "mean")):
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

    res = MonitorResult(
        params=dict(params or {}, interval_s=mon.interval,
                    gpus=mon.gpus if isinstance(mon.gpus, str) else list(mon.gpus),
                    path=getattr(next((s for s in mon.sources if s.name == "host"), None), "path", mon.path)),
        metrics=metrics,
        labels=labels,
        samples=samples,
        started_at=mon.started_at or 0.0,
        extra={"notes": mon.all_notes(), "na": mon.na(),
               "field_stats": {k: v.to_dict() for k, v in stats.items()}},
    )
    if mon.n_dropped:
        res.warn(f"the ring buffer kept only the last {mon.capacity} samples ({mon.n_dropped} older ones "
                 "dropped from the timeline; the summary covers the whole run): raise capacity= or the interval")
    if mon.n_late > max(2, mon.n_samples // 10):
        res.warn(f"{mon.n_late} samples came late (the machine was too busy to sample every "
                 f"{mon.interval} s): use a longer --interval")
    if isinstance(mon.gpus, list) and mon.gpus and not metrics.get("gpu_count"):
        res.warn("GPUs were asked for but none could be read: see the notes for why")
    res.finish(status, reason)
    if mon.ended_at:
        res.ended_at = mon.ended_at
    return res
