"""The panel's PATH field, checked as you type.

Every keystroke (debounced) runs the storage probes' own checks from
:mod:`nbbench.probes.pathcheck` in a helper thread — what the path is (directory,
file, block device, or why it cannot be used), its filesystem and device, the free
space against the write rule, and whether O_DIRECT works there (tried: one aligned
I/O on a new temporary file in a directory, read-only on a file or device) — and
shows the answer under the field.  The field never raises: a path the probes
would refuse shows their message in red.
"""

from __future__ import annotations

import html
import os
import threading
from dataclasses import dataclass, field
from typing import Callable

from ...results import ProbeError
from ...units import format_bytes

__all__ = ["PathInfo", "check_path", "PathField"]


@dataclass
class PathInfo:
    """What the field found for a path."""

    path: str
    ok: bool
    kind: str | None = None          # dir | file | block
    filesystem: str | None = None
    device: str | None = None
    mount: str | None = None
    size_bytes: int | None = None
    free_bytes: int | None = None
    total_bytes: int | None = None
    direct: bool | None = None       # O_DIRECT works there
    direct_reason: str | None = None
    can_write: bool | None = None    # a directory where nbbench may create its temporary file
    error: str | None = None         # why the probes cannot use it
    notes: list[str] = field(default_factory=list)   # warnings (not errors)

    @property
    def writable(self) -> bool:
        return self.ok and self.kind == "dir" and bool(self.can_write)

    def summary(self) -> str:
        """One line of text, e.g. 'directory · ext4 on sda1 · 12.3 GiB free of 40 GiB · O_DIRECT ok'."""
        if not self.ok:
            return self.error or "cannot be used"
        what = {"dir": "directory", "file": "regular file", "block": "block device"}.get(self.kind or "", "?")
        parts = [what]
        if self.kind in ("file", "block") and self.size_bytes is not None:
            parts[0] += f" of {format_bytes(self.size_bytes, binary=True)} (read-only probes)"
        fs = self.filesystem or "unknown filesystem"
        if self.device:
            fs += f" on {self.device}"
        parts.append(fs)
        if self.free_bytes is not None and self.total_bytes:
            parts.append(f"{format_bytes(self.free_bytes, binary=True)} free of "
                         f"{format_bytes(self.total_bytes, binary=True)}")
        if self.direct is True:
            parts.append("O_DIRECT ok")
        elif self.direct is False:
            parts.append("no O_DIRECT: " + (self.direct_reason or "refused") + " (buffered + fadvise instead)")
        return " · ".join(parts)


def _direct_in_dir(directory: str) -> tuple[bool, str | None]:
    """Try one aligned O_DIRECT write on a new temporary file (the probes' own kind, removed at once)."""
    from ... import tempfiles
    from ...probes.pathcheck import direct_io_supported

    with tempfiles.temp_file(directory, "odirect") as tf:
        return direct_io_supported(tf.fd, write=True)


def _direct_on_file(path: str) -> tuple[bool, str | None]:
    from ...probes.pathcheck import direct_io_supported, open_read

    fd = open_read(path)
    try:
        return direct_io_supported(fd, write=False)
    finally:
        os.close(fd)


def check_path(path: str, try_direct: bool = True) -> PathInfo:
    """Check ``path`` the way the storage probes will (never raises)."""
    from ...probes import pathcheck

    text = (path or "").strip()
    if not text:
        return PathInfo(path="", ok=False, error="type a directory (write and read probes) or a file / block "
                                                  "device (read probes)")
    try:
        # read=False: a read-only dataset tree is fine for files / feed / sweep; whether the write
        # probes (and dd / randread in a directory, which write their own file) can work is noted below
        target = pathcheck.inspect(text, write=False, read=False)
    except ProbeError as exc:
        return PathInfo(path=text, ok=False, error=str(exc))
    except Exception as exc:  # noqa: BLE001 - shown, not raised
        return PathInfo(path=text, ok=False, error=f"cannot check {text}: {type(exc).__name__}: {exc}")
    info = PathInfo(path=target.path, ok=True, kind=target.kind, filesystem=target.filesystem or None,
                    device=target.device or None, mount=target.mount or None,
                    size_bytes=target.size if target.kind != "dir" else None)
    if target.kind == "dir":
        info.can_write = os.access(target.path, os.W_OK | os.X_OK)
        if not info.can_write:
            info.notes.append(f"no permission to create a file in {target.path}: dd, randread and disk cannot "
                              "write their test file here; files, feed and sweep can read the tree")
    fs_dir = target.path if target.kind == "dir" else os.path.dirname(target.path)
    try:
        space = pathcheck.check_free_space(fs_dir, 0)
        info.free_bytes, info.total_bytes = space["free_bytes"], space["total_bytes"]
    except ProbeError as exc:
        try:
            vfs = os.statvfs(fs_dir)
            info.free_bytes, info.total_bytes = vfs.f_bavail * vfs.f_frsize, vfs.f_blocks * vfs.f_frsize
        except OSError:
            pass
        if target.kind == "dir":
            info.notes.append("write probes will refuse: " + str(exc))
    if try_direct and not (target.kind == "dir" and not info.can_write):
        try:
            if target.kind == "dir":
                info.direct, info.direct_reason = _direct_in_dir(target.path)
            else:
                info.direct, info.direct_reason = _direct_on_file(target.path)
        except (OSError, ProbeError) as exc:
            info.direct, info.direct_reason = None, None
            info.notes.append(f"could not try O_DIRECT there: {exc}")
    return info


class PathField:
    """A Text widget plus a status line; ``on_change(info)`` after each check."""

    debounce_s = 0.3

    def __init__(self, value: str | None = None, checker: Callable[[str], PathInfo] = check_path,
                 on_change: Callable[[PathInfo], None] | None = None):
        import ipywidgets as w

        self.checker = checker
        self.on_change = on_change
        self.info: PathInfo | None = None
        self._info_for: str | None = None   # the raw value self.info was checked for
        self.text = w.Text(value=str(value or ""), description="PATH", continuous_update=True,
                           placeholder="a directory (e.g. /dataset), a file or a block device",
                           layout=w.Layout(width="100%"))
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
        self.text.value = str(v)   # the observer schedules a check

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
                return   # the user typed on; a newer check will report
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
