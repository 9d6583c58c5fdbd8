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

A probe that needs a directory of its own (``torch.distributed.checkpoint`` writes a
directory of files) gets one the same way: :func:`create_dir` makes a new
``DIR/.nbbench-<what>-<host>-<pid>-<random>.tmp/`` with ``mkdir`` (which fails on an
existing name, as ``O_EXCL`` does), registered like a file and removed with everything in
it on the same occasions (:func:`temp_dir` is its context manager).

What a SIGKILL leaves (the dd and fio engines open the file by name) is swept by the
next probe in that directory (:func:`sweep_stale`): files and directories named exactly
as above, of this host (the sanitised host name), whose process is gone (``os.kill(pid,
0)`` gives ESRCH).  Another host's (a shared filesystem) and a live process's are never
touched.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import secrets
import shutil
import signal
import socket
import stat
import threading
from dataclasses import dataclass

from .results import ProbeError

__all__ = ["create", "remove", "temp_file", "cleanup_all", "registered", "install_handlers", "sweep_stale",
           "host_tag", "temp_name", "PREFIX", "TempFile", "TempDir", "create_dir", "remove_dir", "temp_dir",
           "registered_dirs"]

PREFIX = ".nbbench-"
_lock = threading.Lock()
_files: dict[str, int | None] = {}  # path -> fd (None once closed)
_unlinked: set[str] = set()  # registered paths whose name is already gone: only their fd is closed
_dirs: set[str] = set()  # registered temporary directories (removed with their contents)
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


def _create_new(directory, what: str, make, noun: str):
    """``make(path)`` on a new name in ``directory`` (it must refuse an existing one:
    FileExistsError, then the next name); its refusals as one-line ProbeErrors.
    Returns ``(path, what make returned)``."""
    install_handlers()
    d = os.fspath(directory)
    for _ in range(20):
        path = os.path.join(d, temp_name(what))
        try:
            return path, make(path)
        except FileExistsError:
            continue
        except PermissionError:
            raise ProbeError(f"no permission to create a {noun} in {d}") from None
        except OSError as exc:
            raise ProbeError(f"cannot create a temporary {noun} in {d}: {exc.strerror or exc}") from None
    raise ProbeError(f"cannot find a free temporary {noun} name in {d}")  # pragma: no cover


def create(directory, what: str = "probe", flags: int = 0) -> TempFile:
    """Create a new temporary file in ``directory`` (O_CREAT|O_EXCL) and register it."""
    path, fd = _create_new(directory, what, lambda p: os.open(p, _flags(flags), 0o600), "file")
    with _lock:
        _files[path] = fd
    return TempFile(path, fd)


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


def registered_dirs() -> list[str]:
    with _lock:
        return list(_dirs)


@dataclass
class TempDir:
    path: str

    def remove(self) -> None:
        remove_dir(self.path)


def create_dir(directory, what: str = "probe") -> TempDir:
    """Create a new temporary directory in ``directory`` (``mkdir``: never an existing one) and register it."""
    path, _ = _create_new(directory, what, lambda p: os.mkdir(p, 0o700), "directory")
    with _lock:
        _dirs.add(path)
    return TempDir(path)


def _rmtree(path: str) -> None:
    """Remove a directory we made and all in it (symlinks inside are removed, never followed).  Tried
    a few times: a writer thread still running (a signal, exit) may add a file while it goes."""
    for _ in range(5):
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.lexists(path):
            return


def remove_dir(path: str) -> None:
    """Remove a registered temporary directory with everything in it (and forget it)."""
    with _lock:
        _dirs.discard(path)
    _rmtree(path)


@contextlib.contextmanager
def temp_dir(directory, what: str = "probe"):
    """``with temp_dir(dir) as td:`` — removed with its contents on exit, error and KeyboardInterrupt."""
    td = create_dir(directory, what)
    try:
        yield td
    finally:
        td.remove()


def cleanup_all() -> None:
    """Remove every temporary file and directory still registered (atexit, signals)."""
    for path in registered():
        remove(path)
    for path in registered_dirs():
        remove_dir(path)


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


def _tree_bytes(path: str) -> int:
    total = 0
    for dirpath, _, names in os.walk(path):
        for n in names:
            try:
                total += os.lstat(os.path.join(dirpath, n)).st_size
            except OSError:
                pass
    return total


def sweep_stale(directory) -> tuple[int, int]:
    """Remove the temp files and directories a killed nbbench process of this host left in ``directory``.

    Only regular files and directories (never a symlink) named exactly
    ``.nbbench-<what>-<this host>-<pid>-<8 hex>.tmp`` whose process is gone; returns (entries
    removed, their bytes).
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
            if stat.S_ISDIR(st.st_mode):
                size = _tree_bytes(path)
                _rmtree(path)
                if os.path.lexists(path):
                    continue
            elif stat.S_ISREG(st.st_mode):
                size = st.st_size
                os.unlink(path)
            else:
                continue
        except OSError:
            continue
        n += 1
        nbytes += size
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
