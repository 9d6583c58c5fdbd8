"""What a killed nbbench process left: its temporary files and directories, swept by the next probe.

The temporary files of :mod:`nbbench.tempfiles` are removed on every exit path a process
lives through; a SIGKILL is not one (the dd and fio engines open the file by name).  The
next probe in that directory sweeps them (:func:`sweep_stale`): files and directories named
exactly ``.nbbench-<what>-<host>-<pid>-<8 hex>.tmp``, of this host (the sanitised host name),
whose lock (:mod:`nbbench.templock`) the sweep takes — the proof that its creator is dead.  The
pid proves nothing either way: another container on this machine may share the host name and
the directory but not the pid namespace (a live probe there looks dead here), and after a
container restart a dead probe's small pid is some live process's again.  Another host's (a
shared filesystem) and a live process's (ours too: ``flock`` conflicts between two open file
descriptions of one process) are never touched, nor is a symlink followed.  An entry whose
lock cannot be taken at all (a filesystem without locks) is left; the pid is then the only
hint, used for the count only: those whose pid is gone (ESRCH) are counted as leftovers kept.
"""

from __future__ import annotations

import os
import re
import stat

from . import templock
from .tempfiles import PREFIX, _rmtree, host_tag

__all__ = ["sweep_stale", "kept_note"]


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


def sweep_stale(directory) -> tuple[int, int, int]:
    """Remove the temp files and directories a killed nbbench process of this host left in ``directory``.

    Only regular files and directories (never a symlink) named exactly
    ``.nbbench-<what>-<this host>-<pid>-<8 hex>.tmp`` whose lock this sweep holds while it removes
    them; returns (entries removed, their bytes, leftovers kept because no lock can be taken —
    those whose pid is gone here).
    """
    d = os.fspath(directory)
    pattern = re.compile(rf"{re.escape(PREFIX)}[A-Za-z0-9]+-{re.escape(host_tag())}-(\d+)-[0-9a-f]{{8}}\.tmp")
    n = nbytes = kept = 0
    try:
        names = [e.name for e in os.scandir(d) if e.name.startswith(PREFIX)]
    except OSError:
        return 0, 0, 0
    for name in names:
        m = pattern.fullmatch(name)
        if m is None:
            continue
        size = _remove_if_dead(os.path.join(d, name))
        if size is None and not _alive(int(m.group(1))):
            kept += 1  # its lock could not be taken, and its pid is gone: most likely a leftover
        elif size is not None and size is not False:  # its bytes (0 is an empty file)
            n += 1
            nbytes += size
    return n, nbytes, kept


def kept_note(kept: int) -> str:
    """The warning's clause for leftovers the sweep kept ('' when none)."""
    return f"{kept} leftover{'' if kept == 1 else 's'} kept: their lock can't be taken" if kept else ""


def _remove_if_dead(path: str) -> int | bool | None:
    """Remove ``path`` (a regular file or directory) under its lock: its bytes; False when left (its
    creator is alive, or it is not such an entry); None when its lock cannot be taken."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    is_dir = stat.S_ISDIR(st.st_mode)
    if not (is_dir or stat.S_ISREG(st.st_mode)):
        return False
    with templock.take(path, is_dir) as dead:
        if not dead:
            return dead
        try:
            if is_dir:
                size = _tree_bytes(path)
                _rmtree(path)
                return False if os.path.lexists(path) else size
            size = os.lstat(path).st_size
            os.unlink(path)
            return size
        except OSError:
            return False
