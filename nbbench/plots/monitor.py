"""The monitor's timeline: its default subplots (GPU kernel-active %, GPU memory, CPU, disk,
network), the specification of a live monitor plot, and a stored monitor run's figure
(with its labelled marks as vertical lines)."""

from __future__ import annotations

from ..monitor.text import format_status
from ..results.system.monitor import NET_QUIET_BYTES_PER_S, net_quiet
from .subplot import Subplot
from .timeline import Timeline

__all__ = ["monitor_subplots", "monitor_plot_kwargs", "monitor_figure"]


def _gpu_info(monitor) -> tuple[list[dict], str]:
    for src in getattr(monitor, "sources", []) or []:
        if getattr(src, "name", "") == "gpu":
            note = ""
            if not getattr(src, "devices", None):
                notes = getattr(src, "notes", None) or []
                note = "N/A: " + (notes[0].split(": ", 1)[-1] if notes else "no GPU")
            return list(getattr(src, "info", [])), note
    return [], "not monitored"


def _short(text: str, n: int = 90) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


#: the stall figures the CPU subplot draws where they were measured (throttling only under a quota)
STALL_FIELDS = ("stall.cpu_throttled_pct", "stall.psi_cpu_some_pct", "stall.psi_io_some_pct")


def _stalls_of(fields, quota) -> list[str]:
    """The stall fields worth a line: those measured, throttling only where a quota was set."""
    return [f for f in STALL_FIELDS if f in fields and (f != "stall.cpu_throttled_pct" or quota not in (None, "none"))]


def monitor_subplots(
    gpu_info: list[dict] | None = None,
    gpu_note: str = "",
    disk_label: str = "disk",
    gpus: bool = True,
    net_label: str | None = None,
    stalls=None,
) -> list[Subplot]:
    """The default subplots of ``%%iobench monitor``: GPU kernel-active %, GPU memory, CPU, disk MB/s
    and, with ``net_label`` (the interfaces watched), network receive / transmit MB/s.  ``stalls``: the
    stall fields measured (of :data:`STALL_FIELDS`), drawn dashed in the CPU subplot."""
    gpu_info = gpu_info or []
    subplots = []
    if gpus and gpu_info:
        labels, mlabels, util, mem = {}, {}, [], []
        for d in gpu_info:
            i = d.get("index", 0)
            util.append(f"gpu{i}.util_pct")
            labels[f"gpu{i}.util_pct"] = f"GPU{i} kernel-active"
            if d.get("gpm"):
                util.append(f"gpu{i}.sm_active_pct")
                labels[f"gpu{i}.sm_active_pct"] = f"GPU{i} SM active (GPM)"
            mem.append(f"gpu{i}.mem_used_bytes")
            mlabels[f"gpu{i}.mem_used_bytes"] = f"GPU{i} used"
        total = max((d.get("mem_total_bytes") or 0 for d in gpu_info), default=0)
        subplots.append(
            Subplot(
                "GPU kernel-active % (share of time a kernel ran)",
                util,
                unit="%",
                ylim=(0, 105),
                labels=labels,
                styles={"gpu*.sm_active_pct": {"linestyle": ":"}},
                note=gpu_note,
            )
        )
        subplots.append(
            Subplot(
                "GPU memory used",
                mem,
                unit="GiB",
                scale=2.0**-30,
                ylim=(0, total * 2.0**-30 * 1.05) if total else None,
                labels=mlabels,
                note=gpu_note,
            )
        )
    subplots.append(
        Subplot(
            "CPU, whole machine",
            ["cpu.util_pct", "cpu.iowait_pct", *[f for f in STALL_FIELDS if f in (stalls or ())]],
            unit="%",
            ylim=(0, 105),
            labels={
                "cpu.util_pct": "busy",
                "cpu.iowait_pct": "iowait",
                "stall.cpu_throttled_pct": "throttled by the quota",
                "stall.psi_cpu_some_pct": "waiting for CPU (PSI)",
                "stall.psi_io_some_pct": "waiting on I/O (PSI)",
            },
            styles={"stall.*": {"linestyle": "--"}},
        )
    )
    subplots.append(
        _in_out(
            f"Disk ({disk_label})", {"disk.read_bytes_per_s": "read", "disk.write_bytes_per_s": "write"}, ymax_min=10.0
        )
    )
    if net_label is not None:
        subplots.append(
            _in_out(
                f"Network ({_short(net_label, 60)})",
                {"net.rx_bytes_per_s": "receive", "net.tx_bytes_per_s": "transmit"},
                ymax_min=1.0,
                quiet_below=NET_QUIET_BYTES_PER_S,
                quiet_text="no network traffic",
            )
        )
    return subplots


def _in_out(title: str, labels: dict[str, str], **style) -> Subplot:
    """Two byte rates (read and write, receive and transmit) in MB/s."""
    return Subplot(title, list(labels), unit="MB/s", scale=1e-6, labels=labels, **style)


def _net_label(monitor) -> str | None:
    for src in getattr(monitor, "sources", []) or []:
        if getattr(src, "name", "") == "net":
            return ",".join(getattr(src, "interfaces", []) or []) or "none"
    return None


def monitor_plot_kwargs(monitor, title: str = "nbbench monitor") -> dict:
    """Keyword arguments for a live plot (:class:`~nbbench.ui.liveplot.LivePlot`, or a
    :class:`Timeline`) showing an opened or started monitor: subplots, title, status line, t0."""
    info, note = _gpu_info(monitor)
    disk = "disk"
    for src in getattr(monitor, "sources", []) or []:
        if getattr(src, "name", "") == "disk":
            disk = (getattr(src, "labels", {}) or {}).get("disk_device", "disk")
    stall = next((s for s in getattr(monitor, "sources", []) or [] if getattr(s, "name", "") == "stall"), None)
    stalls = _stalls_of(
        [f for _, f in getattr(stall, "_keys", ())], (getattr(stall, "labels", None) or {}).get("cpu_quota")
    )
    # the reason in short (the result's card says it whole, once)
    subtitle = f"GPU {': '.join(note.split(': ')[:2])}" if not info and note and note != "not monitored" else ""
    return {
        "subplots": monitor_subplots(
            info,
            note,
            disk_label=disk,
            gpus=getattr(monitor, "gpus", "all") != [],
            net_label=_net_label(monitor),
            stalls=stalls,
        ),
        "title": title,
        "subtitle": subtitle,
        "status": lambda: format_status(monitor.latest(), monitor.t_start),
        "t0": monitor.t_start,
        "min_plot_s": 2 * (getattr(monitor, "interval", 0) or 0),  # two samples' worth, else no plot
    }


def monitor_figure(res, **kwargs):
    """A Figure of a stored :class:`~nbbench.results.system.monitor.MonitorResult`'s timeline; None
    when it has fewer than two samples (nothing to draw but empty axes or dots).

    ``kwargs`` go to :class:`Timeline` (``dpi``, ``figsize``, ``title``, ``subplots``…)."""
    tl = res.samples.get("timeline") or {}
    gpu_info = [
        {
            "index": i,
            "mem_total_bytes": res.metrics.get(f"gpu{i}_mem_total_bytes"),
            "gpm": f"gpu{i}.sm_active_pct" in tl,
        }
        for i in res.gpu_indices
    ]
    # the card says why in full: the plot names it in short (the NVML sentence said once)
    note = (
        ""
        if gpu_info
        else "N/A: " + next((n.split(": ", 2)[1] for n in res.notes if "GPU" in n and n.count(": ") >= 2), "no GPU")
    )
    title, subtitle = res.headline(), "" if gpu_info else f"GPU {note}"
    net = None

    quiet = net_quiet(res.metrics)
    if "net.rx_bytes_per_s" in tl and not quiet:  # no traffic: the card's "idle:" line, not an empty subplot
        net = str(res.labels.get("net_interfaces", "")).split(":", 1)[0] or "network"
    kw = {
        "subplots": monitor_subplots(
            gpu_info,
            note,
            disk_label=res.labels.get("disk_device", "disk"),
            net_label=net,
            stalls=_stalls_of(tl, res.labels.get("cpu_quota")),
        ),
        "title": title,
        "subtitle": subtitle,
        "t0": 0.0,
        "blit": False,
        "min_span_s": 1.0,
        "min_plot_s": 2 * float(res.metrics.get("interval_s") or res.params.get("interval_s") or 0),
    }
    kw.update(kwargs)
    timeline = Timeline(**kw)
    ts = tl.get("t_s", [])
    keys = [k for k in tl if k != "t_s"]
    for j, t in enumerate(ts):
        timeline.add(t, {k: tl[k][j] for k in keys})
    marks = res.samples.get("marks") or {}
    for t, label in zip(marks.get("t_s", []), marks.get("label", [])):
        timeline.mark(t, label)
    return timeline.figure if timeline.has_plot() else None
