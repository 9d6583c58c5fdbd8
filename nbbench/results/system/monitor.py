"""A monitored run's result (kind ``monitor``); built by :func:`nbbench.monitor.result.build_result`."""

from __future__ import annotations

from ...limits.verdict import stall_verdict
from ...units import format_bytes, format_many, format_metric, format_sig
from .. import drawing
from ..base import Result, register
from ..present.rule import SEP, Section
from ..series import IDLE_THRESHOLD_PCT, FieldStats, window

__all__ = ["MonitorResult", "monitor_verdict", "net_quiet", "NET_QUIET_BYTES", "NET_QUIET_BYTES_PER_S"]

#: less network traffic than this over a run is "no network traffic" (ARP, a heartbeat) …
NET_QUIET_BYTES = 64 * 1024
#: … and so is a network whose rate never reached this (the live plot's rule too)
NET_QUIET_BYTES_PER_S = 10e3


def net_quiet(m: dict) -> bool:
    """No network traffic worth a plot or a figure: under :data:`NET_QUIET_BYTES_PER_S` at its
    peak (where the peaks were kept), else under :data:`NET_QUIET_BYTES` in all."""
    peaks = [m.get("net_rx_peak_bytes_per_s"), m.get("net_tx_peak_bytes_per_s")]
    if any(isinstance(p, (int, float)) for p in peaks):
        return max(p or 0 for p in peaks) < NET_QUIET_BYTES_PER_S
    return (m.get("net_rx_bytes") or 0) + (m.get("net_tx_bytes") or 0) < NET_QUIET_BYTES


#: rates that make a run "waiting on storage" / "on the network" when its CPU is not busy
STORAGE_BUSY_BYTES_PER_S = 20e6
NET_BUSY_BYTES_PER_S = 10e6
#: cores busy for "CPU-bound", the GPU util mean for "GPU busy"
CPU_BOUND_CORES = 0.8
GPU_BUSY_PCT = 50.0


def _short(note: str) -> str:
    """A note's first clause ('NVML unavailable')."""
    return note.split(":", 1)[0].strip()


def monitor_verdict(m: dict, labels: dict | None = None) -> str:
    """One verdict on a monitored tree from the figures its answer shows: "GPU busy",
    "waiting on storage", "waiting on the network", "CPU-bound (2 cores)", "idle", else
    "partly busy"; ", GPU idle" after it when a GPU was there and stayed idle.

    ``m``: a monitor result's metrics — the tree's CPU seconds (``proc_cpu_s``) over the wall
    time (cores), its reads from and writes to storage (``proc_read_bytes``, ``proc_write_bytes`` less
    ``proc_write_cancelled_bytes``: the writes thrown away before writeback never waited on storage;
    "waiting on storage (writing)" where it wrote more than it read), the machine's iowait, the
    network's bytes, the GPUs' kernel-active mean."""
    wall = m.get("wall_s") or 0.0
    cpu_s = m.get("proc_cpu_s")
    cores = cpu_s / wall if wall and isinstance(cpu_s, (int, float)) else None
    if cores is None and m.get("cpu_mean_pct") is not None and (labels or {}).get("cpus_logical"):
        cores = m["cpu_mean_pct"] / 100.0 * float(labels["cpus_logical"])
    gpu = m.get("gpu_util_mean_pct") if m.get("gpu_count") else None
    reads = m.get("proc_read_bytes") or 0
    writes = max(0, (m.get("proc_write_bytes") or 0) - (m.get("proc_write_cancelled_bytes") or 0))
    storage_rate = (reads + writes) / wall if wall else 0.0
    net_rate = ((m.get("net_rx_bytes") or 0) + (m.get("net_tx_bytes") or 0)) / wall if wall else 0.0
    cpu_busy = cores is not None and cores >= CPU_BOUND_CORES
    if gpu is not None and gpu >= GPU_BUSY_PCT:
        return "GPU busy"
    full = (
        (m.get("cpu_mean_pct") or 0) >= 90
        and labels is not None
        and cores is not None
        and cores < 0.9 * float(labels.get("cpus_logical") or 1)
    )
    if not cpu_busy and full:  # others hold the CPUs: the tree waits for a turn, whatever it needs
        verdict = "waiting for CPU (the machine's CPUs are full)"
    elif not cpu_busy and (storage_rate >= STORAGE_BUSY_BYTES_PER_S or (m.get("cpu_iowait_mean_pct") or 0) >= 20):
        verdict = "waiting on storage" + (" (writing)" if writes > reads else "")
    elif not cpu_busy and net_rate >= NET_BUSY_BYTES_PER_S:
        verdict = "waiting on the network"
    elif cpu_busy:
        n = max(1, round(cores))
        verdict = f"CPU-bound ({n} core{'s' if n != 1 else ''})"
    elif cores is not None and cores < 0.1 and storage_rate < 1e6 and net_rate < 1e6:
        verdict = "idle"
    elif cores is None and gpu is None:
        return ""  # nothing of the tree's own was measured: no verdict
    else:
        verdict = "partly busy"
    if gpu is not None and gpu < IDLE_THRESHOLD_PCT and verdict != "idle":
        verdict += ", GPU idle"
    return verdict


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

    def procs_frame(self):
        """The per-process table (one row per process: pid, role, name, reads, CPU, peak RSS/PSS,
        GPU memory), the biggest reader first; empty when the run kept none."""
        import pandas as pd

        return pd.DataFrame(self.samples.get("procs") or {})

    @property
    def marks(self) -> list[tuple[float, str]]:
        """The labelled marks: ``(seconds since the start, label)``."""
        m = self.samples.get("marks") or {}
        return list(zip(m.get("t_s", []), m.get("label", [])))

    @property
    def gpu_indices(self) -> list[int]:
        out = set()
        for k in self.samples.get("timeline") or {}:
            if k.startswith("gpu") and "." in k:
                try:
                    out.add(int(k[3 : k.index(".")]))
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
        return FieldStats.of(*window(zip(tl.get("t_s", []), tl.get(field, [])), t0, t1)).mean

    def figure(self, **kwargs):
        """The timeline as a matplotlib Figure (the "monitor" drawer: :mod:`nbbench.results.drawing`)."""
        return drawing.draw("monitor", self, **kwargs)

    def png(self, dpi: int = 80, **kwargs) -> bytes | None:
        """The timeline as PNG bytes (``IPython.display.Image(res.png())`` shows it anywhere);
        None for a run too short to plot (fewer than two samples)."""
        import io

        fig = self.figure(dpi=dpi, **kwargs)
        if fig is None:
            return None
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
        return buf.getvalue()

    # ------------------------------------------------------------- display
    def cores(self) -> float | None:
        """The monitored tree's CPU use in cores: its CPU seconds over the wall time."""
        cpu, wall = self.metrics.get("proc_cpu_s"), self.metrics.get("wall_s")
        return cpu / wall if isinstance(cpu, (int, float)) and wall else None

    def verdict_words(self) -> str:
        """One verdict on what the monitored tree was doing: what the kernel measured (throttling by
        the CPU quota, pressure stalls, memory-limit events: :func:`nbbench.limits.stall_verdict`),
        else the inference from the figures the answer shows (:func:`monitor_verdict`), labelled
        as inferred.  A result from before the stall counters were kept gives the inference alone."""
        inferred = monitor_verdict(self.metrics, self.labels)
        if "stall_counters" not in self.labels:
            return inferred

        lab = self.labels
        quota = lab.get("cpu_quota") if isinstance(lab.get("cpu_quota"), (int, float)) else None
        lim = {"cpu_quota": quota, "memory_limit_bytes": lab.get("memory_limit_bytes"), "psi": lab.get("psi_scope")}
        workers = self.metrics.get("proc_workers_count") or None
        return stall_verdict(self.metrics, lim, inferred, workers=workers)

    def stall_line(self) -> str:
        """The measured stall figures in one line: 'stalls: throttled 48 % of the time (98 % of
        periods, 0.5-CPU quota) · PSI (system-wide) cpu 12 % · io 3.1 % · memory 0 %'; '' where none
        was read."""
        m, lab = self.metrics, self.labels
        parts = []
        if m.get("cpu_throttled_pct") is not None:
            q = lab.get("cpu_quota")
            quota = f"{q:g}-CPU quota" if isinstance(q, (int, float)) else "no CPU quota"
            per = m.get("cpu_throttled_periods_pct")
            per_txt = f"{format_sig(per)} % of periods, " if per is not None else ""
            parts.append(f"throttled {format_sig(m['cpu_throttled_pct'])} % of the time ({per_txt}{quota})")
        psi = [
            f"{r} {format_sig(m[f'psi_{r}_some_pct'])} %"
            for r in ("cpu", "io", "memory")
            if m.get(f"psi_{r}_some_pct") is not None
        ]
        if psi:
            scope = {"system": "system-wide", "cgroup": "the cgroup's"}.get(lab.get("psi_scope"), "")
            parts.append(f"PSI some{f' ({scope})' if scope else ''} " + SEP.join(psi))
        if m.get("memory_limit_events_count"):
            parts.append(f"memory limit hit {m['memory_limit_events_count']} times")
        if m.get("memory_oom_kills_count"):
            parts.append(f"{m['memory_oom_kills_count']} OOM kills")
        return ("stalls: " + SEP.join(parts)) if parts else ""

    def answer_line(self) -> str:
        """What the monitored cell / command / process tree used, the figures first, then one
        verdict: '0.98 cores CPU · 2.00 MB read() (0 B from storage) · 40.0 MB write() (40.0 MB to
        storage) · 10.0 s · waiting on storage (writing)' — its bytes in one prefix; the writes only
        where it wrote; the writes cancelled (deleted before writeback) only where there were any.
        The machine's own figures are the line under it (:meth:`story`)."""
        m = self.metrics
        out = []
        cores = self.cores()
        if cores is not None:
            out.append(f"{format_sig(cores)} cores CPU")
        keys = (
            "proc_read_syscall_bytes",
            "proc_read_bytes",
            "proc_write_syscall_bytes",
            "proc_write_bytes",
            "proc_write_cancelled_bytes",
        )
        vals = [m.get(k) for k in keys]
        if not any(vals[2:]):
            vals[2:] = [None, None, None]  # it wrote nothing: nothing to say about writes
        if not vals[4]:
            vals[4] = None  # nothing cancelled (or N/A): not said
        shown = [v for v in vals if v is not None]
        texts = iter(["0 B" if v == 0 else t for v, t in zip(shown, format_many(shown, "B"))])
        for calls, to, verb, way in ((vals[0], vals[1], "read()", "from"), (vals[2], vals[3], "write()", "to")):
            a = next(texts) if calls is not None else None
            b = next(texts) if to is not None else None
            if verb == "write()" and vals[4] is not None:  # said once, as part of the figure to storage
                of = " of it" if vals[4] <= (to or 0) else ""
                b = (
                    f"{b} {way} storage, " if b is not None else ""
                ) + f"{next(texts)}{of} cancelled: deleted before written back"
            elif b is not None:
                b = f"{b} {way} storage"
            if a is not None:
                out.append(f"{a} {verb}" + (f" ({b})" if b is not None else ""))
            elif b is not None:
                out.append(b)
        if m.get("gpu_count") and m.get("gpu_util_mean_pct") is not None:
            out.append(f"GPU {format_metric('gpu_util_mean_pct', m['gpu_util_mean_pct'])} busy")
        if m.get("wall_s") is not None:
            out.append(format_metric("wall_s", m["wall_s"]))
        if not out:
            return super().answer_line()
        text = SEP.join(out + [v for v in [self.verdict_words()] if v])
        code = self.exit_code
        return text + (f" · exit code {code}" if code not in (None, 0) else "")

    def machine_line(self) -> str:
        """The machine's figures, labelled as the machine's: all CPUs, the device's total reads
        and writes (every process's), the network — in one prefix per pair."""
        m, parts = self.metrics, []
        n = self.labels.get("cpus_logical")
        if m.get("cpu_mean_pct") is not None:
            parts.append(
                f"{format_sig(m['cpu_mean_pct'])} % of its {n} CPUs" if n else f"{format_sig(m['cpu_mean_pct'])} % CPU"
            )
        dr, dw = m.get("disk_read_bytes"), m.get("disk_write_bytes")
        if dr is not None or dw is not None:
            r, w = format_many([dr, dw], "B")
            parts.append(f"device {self.labels.get('disk_device') or 'disk'} {r} read, {w} written (every process)")
        if m.get("cpu_iowait_mean_pct"):
            parts.append(f"{format_sig(m['cpu_iowait_mean_pct'])} % iowait")
        rx, tx = m.get("net_rx_bytes"), m.get("net_tx_bytes")
        if (rx is not None or tx is not None) and not net_quiet(m):
            a, b = format_many([rx, tx], "B")
            parts.append(f"network {a} in, {b} out")
        return ("the machine: " + SEP.join(parts)) if parts else ""

    def quiet_line(self) -> str:
        """What stayed idle, in one line instead of an empty plot: 'no network traffic · no GPU'."""
        m, out = self.metrics, []
        if m.get("net_rx_bytes") is not None and net_quiet(m):
            out.append("no network traffic")
        if not m.get("gpu_count"):
            na = next((v for k, v in self.na.items() if k.startswith("gpu")), "")
            out.append("no GPU" + (f" ({_short(na)})" if na else ""))
        elif m.get("gpu_util_peak_pct") is not None and m["gpu_util_peak_pct"] < IDLE_THRESHOLD_PCT:
            out.append("GPUs idle throughout")
        return SEP.join(out)

    def _said_notes(self) -> list[str]:
        """Notes the idle line already says in short ("no GPU (NVML unavailable)")."""
        quiet = self.quiet_line()
        return [
            n
            for n in self.notes
            if "GPU" in n and any(_short(v) in quiet for k, v in self.na.items() if k.startswith("gpu"))
        ]

    def story(self) -> list[str]:
        """The machine's figures, what stayed idle, the notes not already said (those said in
        short are folded whole)."""
        quiet, said = self.quiet_line(), self._said_notes()
        lines = [x for x in (self.machine_line(), self.stall_line(), f"idle: {quiet}" if quiet else "") if x]
        return lines + [f"note: {n}" for n in self.notes if n not in said]

    def procs_lines(self, n: int = 8) -> list[str]:
        """The per-process table as text lines (the ``n`` biggest readers), like iotop's."""
        rows = self._procs_rows(n)
        if not rows:
            return []
        head, body, more = rows
        out = ["  " + "  ".join(f"{c:>9}" for c in head)] + ["  " + "  ".join(f"{c:>9}" for c in r) for r in body]
        return out + ([f"  … {more} more in res.procs_frame()"] if more else [])

    def _procs_rows(self, n: int = 8):
        p = self.samples.get("procs") or {}
        if not p.get("pid"):
            return None
        size = lambda v: "-" if v is None else format_bytes(v)  # noqa: E731
        none = [None] * len(p["pid"])  # (results from before the writes were kept)
        wb, wc = p.get("write_bytes") or none, p.get("write_syscall_bytes") or none
        cw = p.get("write_cancelled_bytes") or none
        shown = range(min(n, len(p["pid"])))
        cancelled = any(cw[i] for i in shown)  # a column only where some row had writes cancelled
        head = (
            ["pid", "role", "name", "read", "read()", "write"]
            + ["cancelled"] * cancelled
            + ["write()", "CPU s", "RSS peak", "PSS peak", "GPU mem"]
        )
        body = [
            [
                str(p["pid"][i]),
                str(p["role"][i]),
                str(p["name"][i])[:16],
                size(p["read_bytes"][i]),
                size(p["read_syscall_bytes"][i]),
                size(wb[i]),
            ]
            + [size(cw[i])] * cancelled
            + [
                size(wc[i]),
                f"{p['cpu_s'][i]:.1f}",
                size(p["rss_peak_bytes"][i]),
                size(p["pss_peak_bytes"][i]),
                size(p["gpu_mem_peak_bytes"][i]),
            ]
            for i in shown
        ]
        return head, body, max(0, len(p["pid"]) - n)

    def sections(self):
        """The per-process table (open: which process read and ran most), then the defaults."""
        said = self._said_notes()
        notes = [Section("notes", [[n] for n in said], align="l")] if said else []
        rows = self._procs_rows()
        if not rows:
            return notes + super().sections()
        head, body, more = rows
        gone = ", cancelled = of the write, deleted before written back" if "cancelled" in head else ""
        table = Section(
            "processes (the biggest readers first; read / write = from / to storage"
            f"{gone}, read() / write() = the calls, page cache included)",
            body,
            head=head,
            folded=False,
            align="rll" + "r" * (len(head) - 3),
            note=f"… {more} more in res.procs_frame()" if more else "",
        )
        return [table] + notes + super().sections()
