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

    def png(self, dpi: int = 80, **kwargs) -> bytes:
        """The timeline as PNG bytes (``IPython.display.Image(res.png())`` shows it anywhere)."""
        import io

        buf = io.BytesIO()
        self.figure(dpi=dpi, **kwargs).savefig(buf, format="png")
        return buf.getvalue()

    # ------------------------------------------------------------- display
    def procs_lines(self, n: int = 8) -> list[str]:
        """The per-process table as text lines (the ``n`` biggest readers), like iotop's."""
        from ..units import format_bytes

        p = self.samples.get("procs") or {}
        if not p.get("pid"):
            return []
        out = [f"  {'pid':>8}  {'role':<10} {'name':<16} {'read':>9} {'read()':>9} {'CPU s':>7} "
               f"{'RSS peak':>9} {'PSS peak':>9} {'GPU mem':>9}"]
        size = lambda v: "-" if v is None else format_bytes(v)  # noqa: E731
        for i in range(min(n, len(p["pid"]))):
            out.append(f"  {p['pid'][i]:>8}  {str(p['role'][i]):<10} {str(p['name'][i])[:16]:<16} "
                       f"{size(p['read_bytes'][i]):>9} {size(p['read_syscall_bytes'][i]):>9} "
                       f"{p['cpu_s'][i]:>7.1f} {size(p['rss_peak_bytes'][i]):>9} "
                       f"{size(p['pss_peak_bytes'][i]):>9} {size(p['gpu_mem_peak_bytes'][i]):>9}")
        if len(p["pid"]) > n:
            out.append(f"  … {len(p['pid']) - n} more in res.procs_frame()")
        return out

    def text_table(self) -> str:
        text = super().text_table()
        lines = self.procs_lines()
        if lines:
            text += "\n  processes (the biggest readers first; read = from storage, read() = read calls):\n" \
                + "\n".join(lines)
        for n in self.notes:
            text += f"\n  note: {n}"
        return text

    def _repr_html_(self) -> str:
        import html

        out = super()._repr_html_()
        lines = self.procs_lines()
        if lines:
            table = html.escape("\n".join(lines))
            out = out[: -len("</div>")] + ("<details style='font-size:85%'><summary>processes (the biggest readers "
                                          f"first)</summary><pre>{table}</pre></details></div>")
        if self.notes:
            items = "".join(f"<li>{html.escape(n)}</li>" for n in self.notes)
            out = out[: -len("</div>")] + f"<ul style='font-size:85%;color:#555'>{items}</ul></div>"
        return out
