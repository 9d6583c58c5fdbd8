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

No moment is left uncovered: a name is entered in the registry *before* it is created
on disk (``O_EXCL``/``mkdir``; on ``FileExistsError`` it is taken out again and another
name drawn), and a file is removed from disk *before* it is taken out of the registry, so
a signal landing anywhere finds every name that may exist.  The clean-up run by a signal
handler never waits on a lock (Python runs handlers in the main thread between bytecodes,
possibly while that thread holds one): it works on a snapshot of the registry's plain
dicts (one C call under the GIL), removes what is on disk, and waits a bounded moment for
a creation in flight in another thread (its ``open``/``mkdir`` may land just after); once
a signal's clean-up has begun, new creations are refused.

A probe that needs a directory of its own (``torch.distributed.checkpoint`` writes a
directory of files) gets one the same way: :func:`create_dir` makes a new
``DIR/.nbbench-<what>-<host>-<pid>-<random>.tmp/`` with ``mkdir`` (which fails on an
existing name, as ``O_EXCL`` does), registered like a file and removed with everything in
it on the same occasions (:func:`temp_dir` is its context manager).

Each file and directory is ``flock``-ed by its creator on a descriptor kept open until it is
removed (:mod:`nbbench.templock`): the kernel drops the lock when the process dies.  What a
SIGKILL leaves (the dd and fio engines open the file by name) is swept by the next probe in
that directory (:func:`nbbench.tempsweep.sweep_stale`): files and directories named exactly
as above, of this host (the sanitised host name), whose lock the sweep can take (the pid
proves nothing: see there).  Another host's (a shared filesystem) and a live process's — in
another container's pid namespace too — are never touched.  A file an external tool writes by
name is given its size first (:meth:`TempFile.presize`: fio would replace a shorter one) and
checked after the tool (:meth:`TempFile.check_locked`).
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
import threading
import time
from dataclasses import dataclass

from . import templock
from .results import ProbeError
from .sigchain import chain_signal, install_signal_handler

__all__ = [
    "create",
    "remove",
    "temp_file",
    "cleanup_all",
    "registered",
    "install_handlers",
    "host_tag",
    "temp_name",
    "PREFIX",
    "TempFile",
    "TempDir",
    "create_dir",
    "remove_dir",
    "temp_dir",
    "registered_dirs",
]

PREFIX = ".nbbench-"
_lock = threading.RLock()  # for changes made by ordinary code; never taken by the clean-up of a signal
_files: dict[str, int | None] = {}  # path -> fd (None once closed, or not yet opened)
_unlinked: dict[str, bool] = {}  # registered paths whose name is already gone: only their fd is closed
_dirs: dict[str, bool] = {}  # registered temporary directories (removed with their contents)
_locks: dict[str, int] = {}  # registered path -> the descriptor holding its flock (see templock)
_pending: dict[str, int] = {}  # registered names being created now -> the creating thread's ident
_closing: list = []  # non-empty while a signal's clean-up runs: creations are refused
_installed = {"atexit": False, "signals": False}
_previous: dict[int, object] = {}
_owner = [os.getpid()]  # the process whose files these are (a forked child owns none of them)


def _forget_all() -> None:
    """In a forked child (a DataLoader worker, a multiprocessing pool): the parent's files are not
    its own — a SIGTERM to the child (DataLoader's shutdown sends one) must not remove them."""
    _owner[0] = os.getpid()
    _files.clear()
    _unlinked.clear()
    _dirs.clear()
    _locks.clear()  # not closed: the worker keeps the parent's entries locked while it runs (templock)
    _pending.clear()
    _closing.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_all)


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
        _unlinked[self.path] = True

    def presize(self, size: int) -> None:
        """Give the file ``size`` bytes before fio writes it by name (:func:`nbbench.templock.presize`)."""
        templock.presize(_locks.get(self.path, self.fd), self.path, size)

    def check_locked(self, tool: str) -> None:
        """After ``tool`` wrote the file by name: ProbeError unless the name still names the locked file."""
        fd = _locks.get(self.path)
        if fd is not None:
            templock.check_same(fd, self.path, tool)


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


def _create_new(directory, what: str, make, noun: str, table: dict, value):
    """``make(path)`` on a new name in ``directory`` (it must refuse an existing one:
    FileExistsError, then the next name); its refusals as one-line ProbeErrors.  The name is
    in ``table`` (the registry) before ``make`` runs, and taken out when ``make`` fails.
    Returns ``(path, what make returned)``."""
    install_handlers()
    d = os.fspath(directory)
    me = threading.get_ident()
    for _ in range(20):
        path = os.path.join(d, temp_name(what))
        if os.path.lexists(path):  # another's (a dead process with this pid): never registered, never touched
            continue
        _pending[path] = me
        table[path] = value  # known to the clean-up before it exists
        try:
            if _closing:
                raise ProbeError(f"not creating a temporary {noun} in {d}: the process is ending")
            out = make(path)
        except FileExistsError:
            table.pop(path, None)
            continue
        except BaseException as exc:
            if not isinstance(exc, OSError):  # an interrupt: what ``make`` may have made goes too
                (_rmtree if table is _dirs else _unlink_quietly)(path)
            table.pop(path, None)
            templock.release(_locks, path)  # a lock ``make`` took (an interrupt after it): its descriptor closed
            if isinstance(exc, ProbeError) or not isinstance(exc, OSError):
                raise
            if isinstance(exc, PermissionError):
                raise ProbeError(f"no permission to create a {noun} in {d}") from None
            raise ProbeError(f"cannot create a temporary {noun} in {d}: {exc.strerror or exc}") from None
        finally:
            _pending.pop(path, None)
        return path, out
    raise ProbeError(f"cannot find a free temporary {noun} name in {d}")  # pragma: no cover


def create(directory, what: str = "probe", flags: int = 0) -> TempFile:
    """Create a new temporary file in ``directory`` (O_CREAT|O_EXCL), registered before it exists."""
    opened: list[int] = []

    def make(p):
        fd = os.open(p, _flags(flags), 0o600)
        opened.append(fd)
        _files[p] = fd
        try:
            _locks[p] = templock.lock_file(fd, p)
        except FileExistsError:  # swept before it was locked: the name is not ours any more
            opened.remove(fd)
            os.close(fd)
            raise
        except OSError:  # no descriptor left for the lock: what was made goes
            _unlink_quietly(p)
            raise
        return fd

    try:
        path, fd = _create_new(directory, what, make, "file", _files, None)
    except BaseException:
        for fd in opened:  # an interrupt after the open: the name is gone, close its descriptor
            with contextlib.suppress(OSError):
                os.close(fd)
        raise
    return TempFile(path, fd)


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def remove(path: str) -> None:
    """Remove a registered temporary file (and forget it): off the disk first, then out of the registry."""
    fd = _files.get(path)
    if path not in _unlinked:  # unlinked when created: the name may not be ours any more
        _unlink_quietly(path)
    with _lock:
        fd = _files.pop(path, fd)
        _unlinked.pop(path, None)
        templock.release(_locks, path)
    if fd is not None:
        try:
            os.close(fd)
        except OSError:
            pass


def registered() -> list[str]:
    return list(_files)  # one C call under the GIL: a consistent snapshot without a lock


def registered_dirs() -> list[str]:
    return list(_dirs)


@dataclass
class TempDir:
    path: str

    def remove(self) -> None:
        remove_dir(self.path)


def create_dir(directory, what: str = "probe") -> TempDir:
    """Create a new temporary directory in ``directory`` (``mkdir``: never an existing one) and register it."""

    def make(p):
        os.mkdir(p, 0o700)
        _locks[p] = templock.lock_dir(p)

    path, _ = _create_new(directory, what, make, "directory", _dirs, True)
    return TempDir(path)


def _rmtree(path: str) -> None:
    """Remove a directory we made and all in it (symlinks inside are removed, never followed).  Tried
    a few times: a writer thread still running (a signal, exit) may add a file while it goes."""
    for _ in range(5):
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.lexists(path):
            return


def remove_dir(path: str) -> None:
    """Remove a registered temporary directory with everything in it (and forget it): off the disk
    first, then out of the registry."""
    _rmtree(path)
    with _lock:
        _dirs.pop(path, None)
        templock.release(_locks, path)


@contextlib.contextmanager
def temp_dir(directory, what: str = "probe"):
    """``with temp_dir(dir) as td:`` — removed with its contents on exit, error and KeyboardInterrupt."""
    td = create_dir(directory, what)
    try:
        yield td
    finally:
        td.remove()


def _remove_listed() -> None:
    """Remove from disk every registered file and directory (a snapshot; no lock taken)."""
    unlinked = dict(_unlinked)
    for path in list(_files):
        if path not in unlinked:
            _unlink_quietly(path)
    for path in list(_dirs):
        _rmtree(path)


def cleanup_all(wait_s: float = 2.0) -> None:
    """Remove every temporary file and directory still registered (atexit, signal handlers).

    Never waits on a lock (it may run in a signal handler that interrupted code holding one);
    a creation in flight in another thread (registered, its ``open``/``mkdir`` not yet
    returned) is waited for up to ``wait_s`` seconds, then what it made removed too.  The
    registry is emptied only where its lock is free at once; an entry left is harmless (its
    name is gone from disk, removing it again does nothing).
    """
    _closing.append(True)
    try:
        _remove_listed()
        me, deadline = threading.get_ident(), time.monotonic() + wait_s
        while any(t != me for t in list(_pending.values())) and time.monotonic() < deadline:
            time.sleep(0.001)  # releases the GIL: the other thread's creation completes
        _remove_listed()
        if _lock.acquire(blocking=False):
            try:
                # names only: a descriptor may be in use by an I/O thread right now (a C loop runs
                # without the GIL), and a number closed here could be reused for another file under
                # it; the probe closes its own, and the process's end closes the rest
                for path in list(_files):
                    if path in _pending:
                        continue
                    _files.pop(path, None)
                    _unlinked.pop(path, None)
                    templock.release(
                        _locks, path
                    )  # a descriptor of its own, used by nothing else: closed once the name is gone
                for path in list(_dirs):
                    if path not in _pending:
                        _dirs.pop(path, None)
                        templock.release(_locks, path)
            finally:
                _lock.release()
    finally:
        _closing.pop()


@contextlib.contextmanager
def temp_file(directory, what: str = "probe", flags: int = 0):
    """``with temp_file(dir) as tf:`` — removed on exit, error and KeyboardInterrupt."""
    tf = create(directory, what, flags)
    try:
        yield tf
    finally:
        tf.remove()


def _handler(signum, frame):
    prev = _previous.get(signum)
    if os.getpid() != _owner[0]:  # a forked child: nothing here is its own
        chain_signal(signum, frame, prev)
        return
    ends = not callable(prev) and prev != signal.SIG_IGN
    _closing.append(True)  # kept when the process ends here: no thread creates a file after the clean-up
    try:
        cleanup_all()
    finally:
        if not ends:
            _closing.pop()
    chain_signal(signum, frame, prev)


def _cleanup_at_exit() -> None:
    """At exit: the clean-up, and no creation after it — a probe's daemon thread still running (the
    main thread ended on Ctrl-C) must not make a file once the registry has been emptied."""
    _closing.append(True)  # kept: the process is ending
    cleanup_all()


def install_handlers() -> None:
    """atexit always; SIGTERM/SIGHUP handlers when called from the main thread (once)."""
    with _lock:
        if not _installed["atexit"]:
            atexit.register(_cleanup_at_exit)
            _installed["atexit"] = True
        if _installed["signals"] or threading.current_thread() is not threading.main_thread():
            return
        _installed["signals"] = True
    install_signal_handler(_handler, _previous)
