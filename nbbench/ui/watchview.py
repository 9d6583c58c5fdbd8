"""The view of a background monitor (``%iobench watch``): its live timeline and, under it,
the per-process table like iotop's — which process reads, computes, holds memory now.

Both are widgets (an ``ipywidgets.Image`` the :class:`~nbbench.ui.liveplot.LivePlot`
pushes frames into, an ``HTML`` table refreshed every ``table_every`` seconds from the
sampler's thread), so the view updates in place while other cells run, and a copy
made with JupyterLab's "Create New View for Output" updates too.
"""

from __future__ import annotations

import html
import time

from ..units import format_bytes, format_si

__all__ = ["WatchView", "table_html"]


def _b(v) -> str:
    return "–" if v is None else format_bytes(v)


def _r(v) -> str:
    return "–" if v is None else format_si(v, "B/s")


def table_html(rows: list[dict], limit: int = 8) -> str:
    """The live processes, the biggest readers (from storage, then through read()) first."""
    if not rows:
        return ""
    rows = sorted(rows, key=lambda r: (-(r["read_bytes_per_s"] or 0), -(r["read_syscall_bytes_per_s"] or 0),
                                       -(r["cpu_pct"] or 0)))
    head = ("pid", "role", "name", "read (storage)", "read() calls", "CPU", "RSS", "PSS", "GPU mem")
    th = "".join(f"<th style='text-align:{'left' if i < 3 else 'right'};padding:0 6px'>{h}</th>"
                 for i, h in enumerate(head))
    body = []
    for r in rows[:limit]:
        cells = (r["pid"], r["role"], r["name"], _r(r["read_bytes_per_s"]), _r(r["read_syscall_bytes_per_s"]),
                 "–" if r["cpu_pct"] is None else f"{r['cpu_pct']:.0f} %", _b(r["rss_bytes"]), _b(r["pss_bytes"]),
                 _b(r["gpu_mem_bytes"]))
        body.append("<tr>" + "".join(f"<td style='text-align:{'left' if i < 3 else 'right'};padding:0 6px'>"
                                     f"{html.escape(str(c))}</td>" for i, c in enumerate(cells)) + "</tr>")
    more = f"<div>… {len(rows) - limit} more</div>" if len(rows) > limit else ""
    return (f"<div style='font-size:85%'><table class='nbbench-procs'><thead><tr>{th}</tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table>{more}</div>")


class WatchView:
    """A started live plot (``target="widget"``, not shown) and the process table of ``monitor``, in one widget."""

    def __init__(self, plot, monitor, table_every: float = 2.0):
        import ipywidgets as w

        self.plot = plot
        self.monitor = monitor
        self.table_every = table_every
        self._last = -1e9
        self._html = ""
        self.table = w.HTML(value="")
        self.widget = w.VBox([plot.widget, self.table])
        self._unsub = monitor.subscribe(self._on_record)
        self._unmark = monitor.on_mark(plot.mark)

    def _on_record(self, rec: dict) -> None:
        now = time.monotonic()
        if now - self._last < self.table_every:
            return
        self._last = now
        src = self.monitor.source("proc") if hasattr(self.monitor, "source") else None
        table = getattr(src, "table", None)
        if table is None:
            return
        text = table_html(table.current())
        if text != self._html:
            self._html = text
            self.table.value = text

    def close(self) -> None:
        """Stop updating; the plot's last frame is drawn (its thread joined first)."""
        self._unsub()
        self._unmark()
        self.plot.close()

    def __getattr__(self, name):
        return getattr(self.plot, name)
