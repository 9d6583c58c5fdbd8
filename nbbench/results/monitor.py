"""A monitored run's result (kind ``monitor``); built by :func:`nbbench.monitor.result.build_result`."""

from __future__ import annotations

from .base import Result, register
from .series import FieldStats, window

__all__ = ["MonitorResult"]

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
        return FieldStats.of(*window(zip(tl.get("t_s", []), tl.get(field, [])), t0, t1)).mean

    def figure(self, **kwargs):
        """The timeline as a matplotlib Figure (:func:`nbbench.plots.monitor.monitor_figure`)."""
        from ..plots.monitor import monitor_figure

        return monitor_figure(self, **kwargs)

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
    def answer_line(self) -> str:
        """What the run used, the figures first: '12.0 s wall time · 87.0 % GPU util mean · …'
        (figures that could not be read are left out: the notes say why)."""
        text = super().answer_line()
        code = self.exit_code
        return text + (f" · exit code {code}" if code not in (None, 0) else "")

    def story(self) -> list[str]:
        """The notes: what was N/A and why, how figures were taken."""
        return [f"note: {n}" for n in self.notes]

    def procs_lines(self, n: int = 8) -> list[str]:
        """The per-process table as text lines (the ``n`` biggest readers), like iotop's."""
        rows = self._procs_rows(n)
        if not rows:
            return []
        head, body, more = rows
        out = ["  " + "  ".join(f"{c:>9}" for c in head)] + ["  " + "  ".join(f"{c:>9}" for c in r) for r in body]
        return out + ([f"  … {more} more in res.procs_frame()"] if more else [])

    def _procs_rows(self, n: int = 8):
        from ..units import format_bytes

        p = self.samples.get("procs") or {}
        if not p.get("pid"):
            return None
        size = lambda v: "-" if v is None else format_bytes(v)  # noqa: E731
        head = ["pid", "role", "name", "read", "read()", "CPU s", "RSS peak", "PSS peak", "GPU mem"]
        body = [[str(p["pid"][i]), str(p["role"][i]), str(p["name"][i])[:16], size(p["read_bytes"][i]),
                 size(p["read_syscall_bytes"][i]), f"{p['cpu_s'][i]:.1f}", size(p["rss_peak_bytes"][i]),
                 size(p["pss_peak_bytes"][i]), size(p["gpu_mem_peak_bytes"][i])]
                for i in range(min(n, len(p["pid"])))]
        return head, body, max(0, len(p["pid"]) - n)

    def sections(self):
        """The per-process table (open: which process read and ran most), then the defaults."""
        from .present import Section

        rows = self._procs_rows()
        if not rows:
            return super().sections()
        head, body, more = rows
        table = Section("processes (the biggest readers first; read = from storage, read() = read calls)", body,
                        head=head, folded=False, align="rllrrrrrr",
                        note=f"… {more} more in res.procs_frame()" if more else "")
        return [table] + super().sections()
