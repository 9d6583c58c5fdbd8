"""The panel's PATH field, checked as you type.

Every keystroke (debounced) describes the path in a helper thread with
:func:`nbbench.commands.storage.pathinfo.describe_path` — the storage subcommands' own view of
it: what the path is (directory, file, block device, or why it cannot be used), its
filesystem and device, the free space against the write rule, and whether O_DIRECT
works there — and shows the answer under the field.  The field never raises: a path
the probes would refuse shows their message in red.
"""

from __future__ import annotations

import html
import threading
from collections.abc import Callable

from ..commands.storage.pathinfo import PathInfo, describe_path

__all__ = ["PathInfo", "check_path", "PathField"]

#: the PATH field's check (the storage commands' description of a path)
check_path = describe_path


class PathField:
    """A Text widget plus a status line; ``on_change(info)`` after each check."""

    debounce_s = 0.3

    def __init__(
        self,
        value: str | None = None,
        checker: Callable[[str], PathInfo] = check_path,
        on_change: Callable[[PathInfo], None] | None = None,
    ):
        import ipywidgets as w

        self.checker = checker
        self.on_change = on_change
        self.info: PathInfo | None = None
        self._info_for: str | None = None  # the raw value self.info was checked for
        self.text = w.Text(
            value=str(value or ""),
            description="PATH",
            continuous_update=True,
            placeholder="a directory (e.g. /dataset), a file or a block device",
            layout=w.Layout(width="100%"),
        )
        self.text.add_class("nbbench-path")
        self.status = w.HTML(value="")
        self.status.add_class("nbbench-path-status")
        self.widget = w.VBox([self.text, self.status], layout=w.Layout(width="100%"))
        self._gen = 0
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._checked = threading.Event()
        self.text.observe(self._typed, names="value")
        self.check_now()

    @property
    def value(self) -> str:
        return self.text.value.strip()

    @value.setter
    def value(self, v: str) -> None:
        self.text.value = str(v)  # the observer schedules a check

    def _typed(self, change) -> None:
        with self._lock:
            self._gen += 1
            gen = self._gen
            self._checked.clear()
            if self._timer is not None:
                self._timer.cancel()
            self.status.value = "<span style='color:#555'>checking…</span>"
            self._timer = threading.Timer(self.debounce_s, self._check, args=(gen, change["new"]))
            self._timer.daemon = True
            self._timer.start()

    def check_now(self) -> PathInfo:
        """Check the current value at once (in this thread) and show it."""
        with self._lock:
            self._gen += 1
            gen = self._gen
        self._check(gen, self.text.value)
        return self.info

    def wait(self, timeout: float = 5.0) -> PathInfo | None:
        """Wait for the check of what was typed last; returns its PathInfo."""
        self._checked.wait(timeout)
        return self.info

    def current(self) -> PathInfo:
        """The PathInfo for the field's value now (checks again if the last check is stale)."""
        if self.info is None or self._info_for != self.text.value or not self._checked.is_set():
            return self.check_now()
        return self.info

    def _check(self, gen: int, value: str) -> None:
        info = self.checker(value)
        with self._lock:
            if gen != self._gen:
                return  # the user typed on; a newer check will report
            self.info = info
            self._info_for = value
            self.status.value = render_info(info)
            self._checked.set()
        if self.on_change is not None:
            try:
                self.on_change(info)
            except Exception:  # noqa: BLE001 - a panel callback must not stop the field
                pass


def render_info(info: PathInfo) -> str:
    esc = html.escape
    if not info.ok:
        colour = "#555" if not info.path else "#c62828"
        mark = "" if not info.path else "✗ "
        return f"<span class='nbbench-path-bad' style='color:{colour}'>{mark}{esc(info.summary())}</span>"
    out = f"<span class='nbbench-path-ok' style='color:#2e7d32'>✓ {esc(info.summary())}</span>"
    for n in info.notes:
        out += f"<br><span style='color:#ef6c00'>{esc(n)}</span>"
    return out
