"""Temporary files of the write probes: created new, always removed, never left behind.

A probe writes only a file it created itself: :func:`create` makes
``DIR/.nbbench-<what>-<host>-<pid>-<random>.tmp`` with ``O_CREAT|O_EXCL`` (it never opens
an existing file) and records it in a registry.  Where a probe needs only descriptors
(the builtin engine) it opens them all and then unlinks the name at once
(:meth:`TempFile.unlink`): the file has no name left to leave behind, even after a
SIGKILL, and the registry then only closes its descriptor.  Otherwise the registry
removes every file still listed when the probe ends in error or KeyboardInterrupt (the
context manager :func:`temp_file`), when Python exits (``atexit``) and when the process
gets SIGTERM or SIGHUP (a kernel stop or restart): the handlers are installed from the
main thread only, and chain to the handler that was there before (the default action
is then re-delivered, so the process still ends as it would have).

What a SIGKILL leaves (the dd and fio engines open the file by name) is swept by the
next probe in that directory (:func:`sweep_stale`): files named exactly as above, of
this host (the sanitised host name), whose process is gone (``os.kill(pid, 0)`` gives
ESRCH).  Another host's files (a shared filesystem) and a live process's are never touched.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import secrets
import signal
import socket
import stat
import threading
from dataclasses import dataclass

from .results import ProbeError

__all__ = ["create", "remove", "temp_file", "cleanup_all", "registered", "install_handlers", "sweep_stale",
           "host_tag", "temp_name", "PREFIX", "TempFile"]

PREFIX = ".nbbench-"
_lock = threading.Lock()
_files: dict[str, int | None] = {}  # path -> fd (None once closed)
_unlinked: set[str] = set()  # registered paths whose name is already gone: only their fd is closed
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

    def unlink(self) -> None:
        """Remove the name now (descriptors opened before keep the file): nothing can be left behind."""
        os.unlink(self.path)
        with _lock:
            _unlinked.add(self.path)


def host_tag() -> str:
    """This host's name as temp file names carry it: [A-Za-z0-9_-] only."""
    try:
        name = socket.gethostname()
    except OSError:  # pragma: no cover
        name = ""
    return re.sub(r"[^A-Za-z0-9_-]", "_", name or os.uname().nodename)[:64] or "host"


def temp_name(what: str, host: str | None = None, pid: int | None = None, token: str | None = None) -> str:
    """``.nbbench-<what>-<host>-<pid>-<random>.tmp`` (``what``: letters and digits only)."""
    what = re.sub(r"[^A-Za-z0-9]", "", what) or "probe"
    host = host_tag() if host is None else host
    pid = os.getpid() if pid is None else pid
    return f"{PREFIX}{what}-{host}-{pid}-{token or secrets.token_hex(4)}.tmp"


def _flags(extra: int = 0) -> int:
    return os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0) | extra


def create(directory, what: str = "probe", flags: int = 0) -> TempFile:
    """Create a new temporary file in ``directory`` (O_CREAT|O_EXCL) and register it."""
    install_handlers()
    d = os.fspath(directory)
    for _ in range(20):
        name = temp_name(what)
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
        gone = path in _unlinked
        _unlinked.discard(path)
    if fd is not None:
        try:
            os.close(fd)
        except OSError:
            pass
    if gone:  # unlinked when created: the name may not be ours any more
        return
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


def _alive(pid: int) -> bool:
    """Is there a process ``pid`` here?  True unless the kernel says ESRCH (when in doubt: alive)."""
    if pid <= 0 or pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError, ValueError):  # EPERM: it exists (another user's)
        return True
    return True


def sweep_stale(directory) -> tuple[int, int]:
    """Remove the temp files a killed nbbench process of this host left in ``directory``.

    Only regular files named exactly ``.nbbench-<what>-<this host>-<pid>-<8 hex>.tmp`` whose
    process is gone; returns (files removed, their bytes).
    """
    d = os.fspath(directory)
    pattern = re.compile(rf"{re.escape(PREFIX)}[A-Za-z0-9]+-{re.escape(host_tag())}-(\d+)-[0-9a-f]{{8}}\.tmp")
    n = nbytes = 0
    try:
        names = [e.name for e in os.scandir(d) if e.name.startswith(PREFIX)]
    except OSError:
        return 0, 0
    for name in names:
        m = pattern.fullmatch(name)
        if m is None or _alive(int(m.group(1))):
            continue
        path = os.path.join(d, name)
        try:
            st = os.lstat(path)
            if not stat.S_ISREG(st.st_mode):
                continue
            os.unlink(path)
        except OSError:
            continue
        n += 1
        nbytes += st.st_size
    return n, nbytes


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
