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
* Where the filesystem refuses the lock (some NFS mounts; a directory on NFS, whose descriptor
  cannot be opened for writing), the creator goes on without one, and the sweep, unable to
  take it either, leaves the entry: a stale entry is kept rather than a live one removed.
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

__all__ = ["hold", "take", "open_flags", "lock_file", "lock_dir", "release"]

#: a creator waits at most this long for a sweep holding its new entry's lock (it then draws another name)
WAIT_S = 5.0


def open_flags(is_dir: bool) -> int:
    """Flags of a lock descriptor: read-write for a file (NFS grants an exclusive lock only to a
    descriptor open for writing), read-only for a directory; never following a symlink."""
    base = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    return base | (os.O_RDONLY | os.O_DIRECTORY if is_dir else os.O_RDWR)


def _same(fd: int, path: str) -> bool:
    try:
        a, b = os.fstat(fd), os.lstat(path)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def hold(fd: int, path: str) -> None:
    """Lock the new entry ``path`` through ``fd`` (a descriptor of it the caller keeps open for the
    entry's life).  Waits a bounded moment for a sweep holding it; raises FileExistsError when the
    name no longer names this entry (a sweep took it between its creation and this lock: the caller
    draws another name).  A filesystem that refuses locks: no lock, no error."""
    deadline = time.monotonic() + WAIT_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise FileExistsError(errno.EEXIST, "held by a sweep", path) from None
            time.sleep(0.001)
        except OSError:   # ENOLCK, EBADF (NFS, a directory), EOPNOTSUPP: it cannot be locked here
            break
    if not _same(fd, path):
        raise FileExistsError(errno.EEXIST, "removed by a sweep while being created", path)


def lock_file(fd: int, path: str) -> int:
    """Lock the new file ``path`` through its descriptor ``fd`` (:func:`hold`); returns a duplicate
    of ``fd`` (the same open file description: the same lock) to keep until the file is removed —
    the probe's own descriptor may be closed before a dd or fio subprocess writes the file."""
    hold(fd, path)
    return os.dup(fd)


def lock_dir(path: str) -> int:
    """Lock the new directory ``path`` (:func:`hold`) through a descriptor of its own, returned to be
    kept until the directory is removed.  On an OSError opening it the directory is removed (it is
    new and empty); when the lock finds it swept, it is not (it is not the caller's any more)."""
    try:
        fd = os.open(path, open_flags(True))
    except OSError:
        os.rmdir(path)
        raise
    try:
        hold(fd, path)
    except BaseException:   # swept, or an interrupt (the caller removes what it made)
        os.close(fd)
        raise
    return fd


def release(table: dict, path: str) -> None:
    """Close the descriptor ``table`` keeps for ``path``'s lock (once the name is gone from disk)."""
    fd = table.pop(path, None)
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)


@contextlib.contextmanager
def take(path: str, is_dir: bool):
    """``with take(path, is_dir) as ok:`` — ``ok`` when this process holds the lock of the entry
    ``path`` (its creator is dead: the entry may be removed inside the block); False when its
    creator holds it, the name is not such an entry (a symlink, another kind) or no lock can be
    taken.  The lock is released when the block ends."""
    try:
        fd = os.open(path, open_flags(is_dir))
    except OSError:
        yield False
        return
    try:
        mode = os.fstat(fd).st_mode
        kind_ok = stat.S_ISDIR(mode) if is_dir else stat.S_ISREG(mode)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            locked = True
        except OSError:   # held (alive), or no locks here: nothing proves the creator dead
            locked = False
        yield kind_ok and locked and _same(fd, path)
    finally:
        os.close(fd)
