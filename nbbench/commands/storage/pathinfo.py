"""What the storage probes would make of a path: :class:`PathInfo` and :func:`describe_path`.

The control panel's PATH field shows it (:mod:`nbbench.panel.pathfield`); the path is
inspected by the same :func:`nbbench.commands.storage.disk._target` the storage subcommands use.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from ...results import ProbeError
from ...units import format_bytes
from .disk import _target

__all__ = ["PathInfo", "describe_path"]


@dataclass
class PathInfo:
    """What the storage probes would make of a path (the control panel's PATH field shows it)."""

    path: str
    ok: bool
    kind: str | None = None  # dir | file | block
    filesystem: str | None = None
    device: str | None = None
    mount: str | None = None
    size_bytes: int | None = None
    free_bytes: int | None = None
    total_bytes: int | None = None
    direct: bool | None = None  # O_DIRECT works there
    direct_reason: str | None = None
    can_write: bool | None = None  # a directory where nbbench may create its temporary file
    error: str | None = None  # why the probes cannot use it
    notes: list[str] = field(default_factory=list)  # warnings (not errors)

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
            parts.append(
                f"{format_bytes(self.free_bytes, binary=True)} free of {format_bytes(self.total_bytes, binary=True)}"
            )
        if self.direct is True:
            parts.append("O_DIRECT ok")
        elif self.direct is False:
            parts.append("no O_DIRECT: " + (self.direct_reason or "refused") + " (buffered + fadvise instead)")
        return " · ".join(parts)


def _direct_in_dir(directory: str) -> tuple[bool, str | None]:
    """Try one aligned O_DIRECT write on a new temporary file (the probes' own kind, removed at once)."""
    from ... import tempfiles
    from ...probes.storage.target import direct_io_supported

    with tempfiles.temp_file(directory, "odirect") as tf:
        return direct_io_supported(tf.fd, write=True)


def _direct_on_file(path: str) -> tuple[bool, str | None]:
    from ...probes.storage.target import direct_io_supported, open_read

    fd = open_read(path)
    try:
        return direct_io_supported(fd, write=False)
    finally:
        os.close(fd)


def describe_path(path: str, try_direct: bool = True) -> PathInfo:
    """Check ``path`` the way the storage probes will (never raises): what it is, its filesystem
    and device, the free space against the write rule, whether O_DIRECT works there (tried: one
    aligned I/O on a new temporary file in a directory, read-only on a file or device)."""
    from ...probes.storage import target as pathcheck

    text = (path or "").strip()
    if not text:
        return PathInfo(
            path="", ok=False, error="type a directory (write and read probes) or a file / block device (read probes)"
        )
    try:
        target = _target(text)
    except ProbeError as exc:
        return PathInfo(path=text, ok=False, error=str(exc))
    except Exception as exc:  # noqa: BLE001 - shown, not raised
        return PathInfo(path=text, ok=False, error=f"cannot check {text}: {type(exc).__name__}: {exc}")
    info = PathInfo(
        path=target.path,
        ok=True,
        kind=target.kind,
        filesystem=target.filesystem or None,
        device=target.device or None,
        mount=target.mount or None,
        size_bytes=target.size if target.kind != "dir" else None,
    )
    if target.kind == "dir":
        info.can_write = os.access(target.path, os.W_OK | os.X_OK)
        if not info.can_write:
            info.notes.append(
                f"no permission to create a file in {target.path}: dd, randread and disk cannot "
                "write their test file here; files, feed and sweep can read the tree"
            )
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
