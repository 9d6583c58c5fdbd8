"""The view of a background monitor (``%iobench watch``): its live timeline and, under it,
the per-process table like iotop's — which process reads, computes, holds memory now.

One ``ipywidgets.VBox``: an ``Image`` its own drawing thread pushes frames into and an
``HTML`` table refreshed from the sampler's thread, so the view updates in place while other
cells run, and a copy made with JupyterLab's "Create New View for Output" updates too.

Its cadence is a dashboard's, not a cell plot's: at most ``max_fps`` frames a second, resting
``cost / cpu_budget`` after a frame (so drawing stays within ``cpu_budget`` of one core) but
never more than ``max_rest_s`` — a frame that had to redraw the axes (the window moved, an axis
grew) on a busy machine does not freeze the view for half a minute.
"""

from __future__ import annotations

import html
import threading
import time

from ..plots.timeline import Timeline
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
    rows = sorted(
        rows, key=lambda r: (-(r["read_bytes_per_s"] or 0), -(r["read_syscall_bytes_per_s"] or 0), -(r["cpu_pct"] or 0))
    )
    head = (
        "pid",
        "role",
        "name",
        "read (storage)",
        "read() calls",
        "write (storage)",
        "write() calls",
        "CPU",
        "RSS",
        "PSS",
        "GPU mem",
    )
    th = "".join(
        f"<th style='text-align:{'left' if i < 3 else 'right'};padding:0 6px'>{h}</th>" for i, h in enumerate(head)
    )
    body = []
    for r in rows[:limit]:
        cells = (
            r["pid"],
            r["role"],
            r["name"],
            _r(r["read_bytes_per_s"]),
            _r(r["read_syscall_bytes_per_s"]),
            _r(r.get("write_bytes_per_s")),
            _r(r.get("write_syscall_bytes_per_s")),
            "–" if r["cpu_pct"] is None else f"{r['cpu_pct']:.0f} %",
            _b(r["rss_bytes"]),
            _b(r["pss_bytes"]),
            _b(r["gpu_mem_bytes"]),
        )
        body.append(
            "<tr>"
            + "".join(
                f"<td style='text-align:{'left' if i < 3 else 'right'};padding:0 6px'>{html.escape(str(c))}</td>"
                for i, c in enumerate(cells)
            )
            + "</tr>"
        )
    more = f"<div>… {len(rows) - limit} more</div>" if len(rows) > limit else ""
    return (
        f"<div style='font-size:85%'><table class='nbbench-procs'><thead><tr>{th}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table>{more}</div>"
    )


class WatchView:
    """The live view of a started ``monitor``: ``WatchView(monitor, subplots=…, title=…, window_s=600,
    max_fps=1.0, cpu_budget=0.01, max_rest_s=5.0, table_every=2.0, **timeline_kwargs)``;
    :attr:`widget` is what to display, :meth:`close` draws the last frame and stops."""

    def __init__(
        self,
        monitor,
        window_s: float = 600.0,
        max_fps: float = 1.0,
        cpu_budget: float = 0.01,
        max_rest_s: float = 5.0,
        table_every: float = 2.0,
        **timeline_kwargs,
    ):
        import ipywidgets as w

        self.monitor = monitor
        self.timeline = Timeline(window_s=window_s, **timeline_kwargs)
        if self.timeline.t0 is None:
            self.timeline.t0 = monitor.t_start
        self.max_fps = max(0.1, float(max_fps))
        self.cpu_budget = max(1e-4, float(cpu_budget))
        self.max_rest_s = max(1.0 / self.max_fps, float(max_rest_s))
        self.table_every = table_every
        self.frames = 0
        self.draw_cpu_s = 0.0
        self.closed = False
        for rec in monitor.records():
            self.timeline.add_record(rec)
        for t, text in list(getattr(monitor, "marks", [])):
            self.timeline.mark(t, text)
        self.image = w.Image(value=self._render(), format="png", layout=w.Layout(max_width="100%"))
        self.table = w.HTML(value="")
        self.widget = w.VBox([self.image, self.table])
        self._last_table = -1e9
        self._html = ""
        self._unsub = monitor.subscribe(self._on_record)
        self._unmark = monitor.on_mark(self.timeline.mark)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="nbbench-watchview", daemon=True)
        self._thread.start()

    def _render(self) -> bytes:
        c0 = time.thread_time()
        png = self.timeline.png(compress_level=1)
        self.last_cost = time.thread_time() - c0
        self.draw_cpu_s += self.last_cost
        return png

    def _loop(self) -> None:
        period = 1.0 / self.max_fps
        while not self._stop.wait(period):
            if not self.timeline.dirty:
                continue
            try:
                self.image.value = self._render()
            except Exception:  # noqa: BLE001 - drawing trouble never stops the monitor
                period = self.max_rest_s
                continue
            self.frames += 1
            period = min(self.max_rest_s, max(1.0 / self.max_fps, self.last_cost / self.cpu_budget))

    def _on_record(self, rec: dict) -> None:
        self.timeline.add_record(rec)
        now = time.monotonic()
        if now - self._last_table < self.table_every:
            return
        self._last_table = now
        src = self.monitor.source("proc") if hasattr(self.monitor, "source") else None
        table = getattr(src, "table", None)
        if table is None:
            return
        text = table_html(table.current())
        if text != self._html:
            self._html = text
            self.table.value = text

    def mark(self, t: float, text: str = "") -> None:
        self.timeline.mark(t, text)

    def close(self) -> None:
        """Stop updating (the drawing thread joined), then draw the last frame here."""
        if self.closed:
            return
        self.closed = True
        self._unsub()
        self._unmark()
        self._stop.set()
        self._thread.join()
        try:
            self.image.value = self.timeline.png(compress_level=6)
        except Exception:  # noqa: BLE001
            pass
