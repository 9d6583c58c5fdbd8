"""Progress reporting shared by every front end: one core computes, thin views draw.

A probe takes ``progress``: any callable ``progress(fraction, metrics)`` where
``fraction`` is 0..1 (``None`` when unknown) and ``metrics`` a dict of current
figures keyed like result metrics (``{"read_bytes_per_s": 9.4e8}``).  Where a probe
knows how far it is in its own terms it adds three optional keys to ``metrics``
(:data:`COUNT_KEYS`): ``done`` and ``total`` (numbers) and ``unit`` (``"bytes"``,
``"files"``, ``"steps"``, ``"configs"``…) — "512 MiB/1.00 GiB", "1,000/5,000 files".
Callables that ignore them keep working; :func:`figures` gives the metrics without them.

Like tqdm (``tqdm/std.py`` computes, ``tqdm/notebook.py`` only renders), :class:`Progress`
keeps the state and computes :meth:`Progress.format_dict` — description, fraction,
done/total, elapsed, ETA, rates, status — and the views draw that one dict:
:class:`TerminalProgress` here (``randread /data/f  43%|████▎     | 2.1s<2.8s, 74.8 kIOPS,
306 MB/s read``, :func:`format_meter`), an ipywidgets bar in ``nbbench.ui.progress``.
"""

from __future__ import annotations

import shutil
import sys
import threading
import time
from collections.abc import Callable

from .units import format_bytes, metric_phrase, shorten_middle

__all__ = [
    "Progress",
    "TerminalProgress",
    "NullProgress",
    "ProgressFn",
    "call_progress",
    "figures",
    "format_meter",
    "meter_parts",
    "format_interval",
    "COUNT_KEYS",
]

ProgressFn = Callable[[float | None, dict | None], None]

#: optional keys of a progress report's metrics: how far, in the probe's own terms
COUNT_KEYS = ("done", "total", "unit")

_BLOCKS = " ▏▎▍▌▋▊▉█"


def call_progress(progress, fraction, metrics=None) -> None:
    """Call a progress callback if there is one; a broken callback never stops a probe."""
    if progress is None:
        return
    try:
        progress(fraction, metrics)
    except Exception:  # noqa: BLE001 - display problems must not break measurement
        pass


def figures(metrics: dict | None) -> dict:
    """A progress report's figures alone (without ``done`` / ``total`` / ``unit``)."""
    return {k: v for k, v in (metrics or {}).items() if k not in COUNT_KEYS}


def format_interval(seconds: float | None) -> str:
    """'2.1s', '43s', '1:05', '1:02:03'; '?' when unknown."""
    if seconds is None or seconds != seconds or seconds < 0 or seconds == float("inf"):
        return "?"
    if seconds < 10:
        return f"{seconds:.1f}s"
    if seconds < 60:
        return f"{seconds:.0f}s"
    m, s = divmod(int(round(seconds)), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def _count(v, unit: str | None) -> str:
    if unit == "bytes":
        return format_bytes(v, binary=True)
    if isinstance(v, float) and not v.is_integer():
        return f"{v:,.1f}"
    return f"{int(v):,}"


def meter_parts(d: dict) -> dict:
    """The texts a view shows, from :meth:`Progress.format_dict`: ``pct`` ("43%"), ``count``
    ("512 MiB/1.00 GiB", "1,000/5,000 files"), ``times`` ("2.1s<2.8s"), ``rates``
    ("74.8 kIOPS, 306 MB/s read"), ``status`` ('' while running)."""
    frac = d.get("fraction")
    done, total, unit = d.get("done"), d.get("total"), d.get("unit")
    count = ""
    if done is not None:
        count = _count(done, unit) + (f"/{_count(total, unit)}" if total is not None else "")
        if unit and unit != "bytes":
            count += f" {unit}"
    times = format_interval(d.get("elapsed_s"))
    if d.get("status", "running") == "running" or d.get("remaining_s") is not None:
        times += f"<{format_interval(d.get('remaining_s'))}"
    # a text value (the sweep's "config" tag) is shown as it is, in brackets, not as a figure
    rates = ", ".join(
        f"[{v}]" if isinstance(v, str) else metric_phrase(k, v)
        for k, v in (d.get("rates") or {}).items()
        if v is not None and not isinstance(v, bool)
    )
    return {
        "pct": "" if frac is None else f"{frac * 100:3.0f}%",
        "count": count,
        "times": times,
        "rates": rates,
        "status": "" if d.get("status", "running") == "running" else d["status"],
    }


def _bar(frac: float | None, width: int) -> str:
    if frac is None:
        return " " * width
    cells = frac * width
    full = int(cells)
    part = _BLOCKS[int((cells - full) * (len(_BLOCKS) - 1))] if full < width else ""
    return ("█" * full + part).ljust(width)[:width]


def format_meter(d: dict, width: int = 100, bar_width: int = 10) -> str:
    """One tqdm-like line of :meth:`Progress.format_dict`, at most ``width`` characters:
    ``desc  43%|████▎     | 512 MiB/1.00 GiB 2.1s<2.8s, 306 MB/s write``.  When it does not fit:
    the description's path is shortened in the middle (its first word, the probe, stays
    whole), then the bar goes, then all rates but the first, then the rest of the rates."""
    p = meter_parts(d)
    desc = d.get("desc") or ""
    verb, _, rest = desc.partition(" ")
    after = " ".join(x for x in (p["count"], p["times"]) if x)
    status = f"  {p['status']}" if p["status"] else ""
    rates = [r for r in p["rates"].split(", ") if r]

    def line(desc_text, bar_w, n_rates):
        head = f"{desc_text}  " if desc_text else ""
        if p["pct"]:
            head += p["pct"] + (f"|{_bar(d.get('fraction'), bar_w)}| " if bar_w else " ")
        return (head + ", ".join(x for x in [after] + rates[:n_rates] if x) + status).rstrip()

    def fitted(bar_w, n_rates, floor):
        out = line(desc, bar_w, n_rates)
        if len(out) <= width or not rest:
            return out
        room = max(floor, len(rest) - (len(out) - width))
        return line(f"{verb} {shorten_middle(rest, room)}", bar_w, n_rates)

    out = ""
    for bar_w, n_rates, floor in ((bar_width, len(rates), 24), (0, len(rates), 24), (0, 1, 16), (0, 0, 8)):
        out = fitted(bar_w, n_rates, floor)
        if len(out) <= width:
            return out
    return out


class Progress:
    """The core: keeps the last report, thread-safe, throttled redraws, and computes
    :meth:`format_dict` (elapsed from ``clock``, the ETA from the fraction); subclasses draw."""

    min_interval = 0.2

    def __init__(self, desc: str = "", total: float = 1.0, clock: Callable[[], float] = time.monotonic):
        self.desc = desc
        self.fraction: float | None = 0.0
        self.metrics: dict = {}
        self.done: float | None = None
        self.total: float | None = None
        self.unit: str | None = None
        self.status = "running"
        self.clock = clock
        self.started = clock()
        self.ended: float | None = None
        self._lock = threading.Lock()
        self._last_draw = 0.0

    def __call__(self, fraction=None, metrics=None) -> None:
        with self._lock:
            if fraction is not None:
                self.fraction = max(0.0, min(1.0, float(fraction)))
            if metrics:
                if "done" in metrics:
                    self.done, self.total = metrics.get("done"), metrics.get("total")
                    self.unit = metrics.get("unit")
                figs = figures(metrics)
                if figs:
                    self.metrics = figs
            now = time.monotonic()
            if now - self._last_draw < self.min_interval:
                return
            self._last_draw = now
        self.draw()

    def format_dict(self) -> dict:
        """What every view draws: desc, fraction (None: unknown), done, total, unit, elapsed_s,
        remaining_s (the ETA: None when unknown or ended), rates (the figures), status."""
        now = self.ended if self.ended is not None else self.clock()
        elapsed = max(0.0, now - self.started)
        frac = self.fraction
        remaining = None
        if self.status == "running" and frac is not None and 0 < frac < 1 and elapsed > 0:
            remaining = elapsed * (1 - frac) / frac
        return {
            "desc": self.desc,
            "fraction": frac,
            "done": self.done,
            "total": self.total,
            "unit": self.unit,
            "elapsed_s": elapsed,
            "remaining_s": remaining,
            "rates": dict(self.metrics),
            "status": self.status,
        }

    def text(self) -> str:
        """The line without a bar (what a widget's label shows)."""
        return format_meter(self.format_dict(), width=10_000, bar_width=0)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.text()}>"

    def draw(self) -> None:  # pragma: no cover - overridden
        pass

    def close(self, status: str = "ok", final: dict | None = None) -> None:
        """End the bar: ``ok``, ``interrupted`` or ``failed``.  ``final``: the result's metrics —
        the bar then ends on the result's figures, never on a mid-run one that differs from
        them (a figure the result does not have is dropped)."""
        if final:
            with self._lock:
                self.metrics = {
                    k: final[k]
                    for k in self.metrics
                    if isinstance(final.get(k), (int, float)) and not isinstance(final.get(k), bool)
                }
        self.status = status
        if self.ended is None:
            self.ended = self.clock()
        if status == "ok":
            self.fraction = 1.0 if self.fraction is not None else None
            if self.done is not None and self.total is not None:
                self.done = self.total
        self.draw()


class NullProgress(Progress):
    def draw(self) -> None:
        pass


class TerminalProgress(Progress):
    """One status line on stderr, redrawn in place when stderr is a terminal (at most its
    width); elsewhere (a log, a pipe) a line every 2 s and the last one."""

    def __init__(
        self,
        desc: str = "",
        stream=None,
        width: int = 10,
        clock: Callable[[], float] = time.monotonic,
        columns: int | None = None,
    ):
        super().__init__(desc, clock=clock)
        self.stream = stream or sys.stderr
        self.width = width
        self.columns = columns
        self.tty = getattr(self.stream, "isatty", lambda: False)()
        if not self.tty:
            self.min_interval = 2.0

    def line(self) -> str:
        """The line: at most the terminal's width (it is redrawn in place), whole in a log."""
        cols = self.columns or (shutil.get_terminal_size((100, 24)).columns - 1 if self.tty else 10_000)
        return format_meter(self.format_dict(), width=cols, bar_width=self.width)

    def draw(self) -> None:
        try:
            if self.tty:
                self.stream.write("\r\x1b[2K" + self.line())
                if self.status != "running":
                    self.stream.write("\n")
            elif self.status != "running":
                self.stream.write(self.line() + "\n")
            self.stream.flush()
        except (OSError, ValueError):
            pass
