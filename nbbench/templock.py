"""The lock that proves a temporary file's creator is alive: held while it lives, dropped by the kernel at its death.

A temporary file or directory of :mod:`nbbench.tempfiles` is ``flock(LOCK_EX)``-ed by the
process that creates it, on a descriptor of its own (:func:`hold`), kept open until the entry
is removed — not the descriptor a probe does its I/O with (which it may close before a dd or
fio subprocess writes the file by name; ``O_DIRECT`` does not matter to a lock).  The kernel
releases the lock when the process dies, however it dies (SIGKILL included); the stale sweep
(:mod:`nbbench.tempsweep`) removes an entry only while it holds that lock itself
(:func:`take`).  The pid in the name cannot prove a death: two containers on one machine may
share a host name and a directory but not a pid namespace, so a live probe in one looks dead
from the other.

* A lock belongs to an open file description: a forked child (a DataLoader worker) inherits
  it and keeps the entry alive while it runs — an entry is then swept only once the child has
  ended too.
* Between the creation (``O_EXCL``/``mkdir``) and the lock there is a moment when the entry is
  unlocked: a sweep may take it there.  The creator then finds its name gone or another entry
  under it (:func:`hold` compares the inode) and draws a new name; the sweeper removes the
  name only after checking that it still names the entry it locked.
* A directory is locked through a file of its own inside it, :data:`DIR_LOCK`, created by its
  creator (``O_EXCL``) and opened read-write: NFS refuses ``flock`` on a read-only descriptor,
  which is all a directory gives.  A sweep that finds a directory without it creates it (a
  creator that then finds its lock file made by another takes that as "swept": it draws
  another name).  The checkpoint probe's byte and file counts leave it out.
* Where the filesystem refuses the lock (some NFS mounts), the creator goes on without one,
  and the sweep, unable to take it either, leaves the entry — a stale entry is kept rather than
  a live one removed — and says how many it kept (:mod:`nbbench.tempsweep`).
* A creator that waits past :data:`WAIT_S` for a sweep holding its new entry removes the name
  itself when it still names its entry, then draws another name.
* An external tool must write the file in place: fio "lays out" a file shorter than its job by
  unlinking it and creating another under the name — the lock would then be on the unlinked
  one.  The probe gives the file its size first (:meth:`nbbench.tempfiles.TempFile.presize`),
  and checks after each dd or fio run that the name still names the locked file
  (:meth:`nbbench.tempfiles.TempFile.check_locked`): if not, the run fails (see there).
  On NFS, ``flock`` is emulated with byte-range locks on the server (``local_lock=none``):
  it holds across clients; with ``local_lock=flock`` it is local to each client.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import time

from .results import ProbeError
from .units import format_bytes

__all__ = [
    "hold",
    "take",
    "open_flags",
    "lock_file",
    "lock_dir",
    "release",
    "same",
    "DIR_LOCK",
    "presize",
    "check_same",
]

#: a creator waits at most this long for a sweep holding its new entry's lock (it then draws another name)
WAIT_S = 5.0
#: the file inside a temporary directory whose lock stands for the directory's
DIR_LOCK = ".nbbench-lock"


def open_flags(is_dir: bool) -> int:
    """Flags of a descriptor: read-write for a file (NFS grants an exclusive lock only to a
    descriptor open for writing; a directory's lock is on its :data:`DIR_LOCK` file), read-only
    for a directory; never following a symlink."""
    base = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    return base | (os.O_RDONLY | os.O_DIRECTORY if is_dir else os.O_RDWR)


def same(fd: int, path: str) -> bool:
    """Does ``path`` (not followed) name the file open on ``fd``?"""
    try:
        a, b = os.fstat(fd), os.lstat(path)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def hold(fd: int, path: str) -> None:
    """Lock the new entry ``path`` through ``fd`` (a descriptor of it the caller keeps open for the
    entry's life).  Waits a bounded moment for a sweep holding it; raises FileExistsError when the
    name no longer names this entry (a sweep took it between its creation and this lock: the caller
    draws another name; on a timeout the name, still this entry's, is removed first).  A
    filesystem that refuses locks: no lock, no error."""
    deadline = time.monotonic() + WAIT_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() > deadline:
                if same(fd, path):  # still ours: the caller draws another name, this one must not stay
                    with contextlib.suppress(OSError):
                        os.unlink(path)
                raise FileExistsError(errno.EEXIST, "held by a sweep", path) from None
            time.sleep(0.001)
        except OSError:  # ENOLCK, EBADF (NFS, a directory), EOPNOTSUPP: it cannot be locked here
            break
    if not same(fd, path):
        raise FileExistsError(errno.EEXIST, "removed by a sweep while being created", path)


def lock_file(fd: int, path: str) -> int:
    """Lock the new file ``path`` through its descriptor ``fd`` (:func:`hold`); returns a duplicate
    of ``fd`` (the same open file description: the same lock) to keep until the file is removed —
    the probe's own descriptor may be closed before a dd or fio subprocess writes the file."""
    hold(fd, path)
    return os.dup(fd)


def lock_dir(path: str) -> int:
    """Lock the new directory ``path`` through its :data:`DIR_LOCK` file, created here (``O_EXCL``:
    one a sweep made first means the directory is the sweep's) and locked (:func:`hold`); its
    descriptor is returned, to be kept until the directory is removed.  On another OSError the
    directory is removed (it is new and empty); when the lock finds it swept, it is not."""
    lock = os.path.join(path, DIR_LOCK)
    try:
        fd = os.open(lock, open_flags(False) | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise
    except OSError:
        with contextlib.suppress(OSError):
            os.rmdir(path)
        raise
    try:
        hold(fd, lock)
    except FileExistsError as exc:
        os.close(fd)
        if exc.strerror == "held by a sweep":  # hold removed our lock file: the directory is ours and empty
            with contextlib.suppress(OSError):
                os.rmdir(path)
        raise
    except BaseException:  # an interrupt (the caller removes what it made)
        os.close(fd)
        raise
    return fd


def presize(fd: int, path: str, size: int) -> None:
    """Give the file ``path`` (open on ``fd``, read-write) ``size`` bytes before fio writes it by name: fio
    "lays out" a file shorter than its job by unlinking it and creating another under the name, which
    the lock would not cover.  ``posix_fallocate``: the space fio would allocate itself (the free-space
    rule counted it); ``ftruncate`` where the filesystem has no fallocate."""
    try:
        os.posix_fallocate(fd, 0, size)
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            raise ProbeError(f"no space left for {format_bytes(size, binary=True)} in {path}") from None
        os.ftruncate(fd, size)


def check_same(fd: int, path: str, tool: str) -> None:
    """After ``tool`` (dd, fio) wrote ``path`` by name: it must still name the file locked on ``fd``.
    If the tool replaced it, the new file was unlocked while it ran (a sweep in another container could
    remove it; the figures would be of a file nobody vouches for): the run fails in one line.  Taking
    the lock again now could not undo that, so it is not tried."""
    if not same(fd, path):
        raise ProbeError(
            f"{tool} replaced the temporary file {path} with a new one (not covered by its lock "
            "against another probe's stale sweep): result dropped"
        )


def release(table: dict, path: str) -> None:
    """Close the descriptor ``table`` keeps for ``path``'s lock (once the name is gone from disk)."""
    fd = table.pop(path, None)
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)


def _open_lock(path: str, is_dir: bool) -> tuple[int, int]:
    """(descriptor to lock, descriptor of the directory or -1) of the entry ``path``: the file itself,
    or a directory's :data:`DIR_LOCK` (made when missing: a creator killed before making it)."""
    if not is_dir:
        return os.open(path, open_flags(False)), -1
    dfd = os.open(path, open_flags(True))
    try:
        return os.open(DIR_LOCK, open_flags(False) | os.O_CREAT, 0o600, dir_fd=dfd), dfd
    except BaseException:
        os.close(dfd)
        raise


def _held(fd: int) -> bool:
    """Is ``fd`` locked by another open file description?  (Its lock, when taken, goes with ``fd``.)"""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        pass
    return False


@contextlib.contextmanager
def take(path: str, is_dir: bool):
    """``with take(path, is_dir) as ok:`` — ``ok`` True when this process holds the lock of the entry
    ``path`` (its creator is dead: the entry may be removed inside the block); False when its
    creator holds it or the name is not such an entry (a symlink, another kind); None when no lock
    can be taken (the filesystem refuses it, or the lock file cannot be opened).  The lock is
    released when the block ends."""
    fd = dfd = -1
    try:
        try:
            fd, dfd = _open_lock(path, is_dir)
        except OSError as exc:
            yield None if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT) else False
            return
        mode = os.fstat(fd).st_mode
        kind_ok = stat.S_ISREG(mode) and (not is_dir or same(dfd, path))
        if dfd >= 0 and _held(dfd):  # an earlier nbbench locked the directory itself
            yield False
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # held: its creator (or a sweep) is alive
            yield False
            return
        except OSError:  # no locks here: nothing proves the creator dead
            yield None if kind_ok else False
            return
        yield kind_ok and same(fd, os.path.join(path, DIR_LOCK) if is_dir else path)
    finally:
        for d in (fd, dfd):
            if d >= 0:
                os.close(d)
