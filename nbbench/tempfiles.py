"""Temporary files of the write probes: created new, always removed.

A probe writes only a file it created itself: :func:`create` makes
``DIR/.nbbench-<what>-<pid>-<random>.tmp`` with ``O_CREAT|O_EXCL`` (it never opens
an existing file) and records it in a registry.  The registry removes every
file still listed when the probe ends in error or KeyboardInterrupt (the context
manager :func:`temp_file`), when Python exits (``atexit``) and when the process
gets SIGTERM or SIGHUP (a kernel stop or restart): the handlers are installed
from the main thread only, and chain to the handler that was there before (the
default action is then re-delivered, so the process still ends as it would have).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import secrets
import signal
import threading
from dataclasses import dataclass

from .results import ProbeError

__all__ = ["create", "remove", "temp_file", "cleanup_all", "registered", "install_handlers",
           "PREFIX", "TempFile"]

PREFIX = ".nbbench-"
_lock = threading.Lock()
_files: dict[str, int | None] = {}  # path -> fd (None once closed)
_installed = {"atexit": False, "signals": False}
_previous: dict[int, object] = {}


@dataclass
class TempFile:
    path: str
    fd: int

    def close(self) -> None:
        if self.fd >= 0:
            try:
                os.close(self.fd)
            except OSError:
                pass
            with _lock:
                if self.path in _files:
                    _files[self.path] = None
            self.fd = -1

    def remove(self) -> None:
        self.close()
        remove(self.path)


def _flags(extra: int = 0) -> int:
    return os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0) | extra


def create(directory, what: str = "probe", flags: int = 0) -> TempFile:
    """Create a new temporary file in ``directory`` (O_CREAT|O_EXCL) and register it."""
    install_handlers()
    d = os.fspath(directory)
    for _ in range(20):
        name = f"{PREFIX}{what}-{os.getpid()}-{secrets.token_hex(4)}.tmp"
        path = os.path.join(d, name)
        try:
            fd = os.open(path, _flags(flags), 0o600)
        except FileExistsError:
            continue
        except PermissionError:
            raise ProbeError(f"no permission to create a file in {d}") from None
        except OSError as exc:
            raise ProbeError(f"cannot create a temporary file in {d}: {exc.strerror or exc}") from None
        with _lock:
            _files[path] = fd
        return TempFile(path, fd)
    raise ProbeError(f"cannot find a free temporary file name in {d}")  # pragma: no cover


def remove(path: str) -> None:
    """Remove a registered temporary file (and forget it)."""
    with _lock:
        fd = _files.pop(path, None)
    if fd is not None:
        try:
            os.close(fd)
        except OSError:
            pass
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError:
        pass


def registered() -> list[str]:
    with _lock:
        return list(_files)


def cleanup_all() -> None:
    """Remove every temporary file still registered (atexit, signals)."""
    for path in registered():
        remove(path)


@contextlib.contextmanager
def temp_file(directory, what: str = "probe", flags: int = 0):
    """``with temp_file(dir) as tf:`` — removed on exit, error and KeyboardInterrupt."""
    tf = create(directory, what, flags)
    try:
        yield tf
    finally:
        tf.remove()


def _handler(signum, frame):
    cleanup_all()
    prev = _previous.get(signum)
    if callable(prev):
        prev(signum, frame)
        return
    if prev == signal.SIG_IGN:
        return
    # default action: restore it and re-deliver, so the process ends as it would have
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def install_handlers() -> None:
    """atexit always; SIGTERM/SIGHUP handlers when called from the main thread (once)."""
    with _lock:
        if not _installed["atexit"]:
            atexit.register(cleanup_all)
            _installed["atexit"] = True
        if _installed["signals"] or threading.current_thread() is not threading.main_thread():
            return
        _installed["signals"] = True
    for name in ("SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)
        if sig is None:
            continue
        try:
            prev = signal.getsignal(sig)
            if prev is _handler:
                continue
            _previous[sig] = prev
            signal.signal(sig, _handler)
        except (ValueError, OSError):  # not the main thread of the main interpreter
            pass
