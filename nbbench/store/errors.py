"""What goes wrong with the results store, as one :class:`StoreError` whose message is a sentence saying
what and what to do; and which SQLite errors are another process in the way (worth trying again)."""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

from ..results import ProbeError

__all__ = ["StoreError", "store_error", "MOVE"]

MOVE = "set NBBENCH_HOME to another directory"


class StoreError(ProbeError, RuntimeError):
    """The results store cannot be opened or written; ``str()`` is a sentence with what
    to do ("/x/results.sqlite is not a SQLite database (set NBBENCH_HOME to another
    directory, or move the file away)").  ``path``: the database file."""

    def __init__(self, message: str, path: str | os.PathLike | None = None):
        super().__init__(message)
        self.path = None if path is None else Path(path)


def store_error(exc: BaseException, path: Path, timeout: float | None = None) -> StoreError:
    """``exc`` (an OSError or sqlite3.Error met opening or using the store at ``path``) as a StoreError."""
    if isinstance(exc, StoreError):
        return exc
    text = str(exc).lower()
    code = getattr(exc, "errno", None)
    if code is None and isinstance(exc, sqlite3.Error):
        code = {13: errno.ENOSPC, 8: errno.EROFS}.get(getattr(exc, "sqlite_errorcode", 0) & 0xFF)
    parent = path.parent
    if code is None:  # sqlite says "unable to open" / "disk I/O error" when it cannot make its -wal/-shm files
        code = _fs_code(path)
    if isinstance(exc, (FileExistsError, NotADirectoryError)) or code == errno.ENOTDIR:
        msg = f"{_not_a_dir(parent)} is not a directory ({MOVE}, or move the file away)"
    elif code == errno.ENOSPC or "disk is full" in text:
        msg = f"the disk holding {path} is full (free some space there, or {MOVE})"
    elif code == errno.EROFS or "readonly" in text or "read-only" in text:
        msg = f"{path} is on a read-only filesystem or file ({MOVE}, or make it writable)"
    elif isinstance(exc, PermissionError) or code in (errno.EACCES, errno.EPERM):
        msg = f"no permission to write {path} ({MOVE}, or fix its permissions)"
    elif "locked" in text or "busy" in text:
        held = f" for {timeout:g} s" if timeout is not None else ""
        msg = f"{path} stayed locked by another process{held} (try again when the other run has saved, or {MOVE})"
    elif (
        "not a database" in text
        or "malformed" in text
        or isinstance(exc, sqlite3.DatabaseError)
        and not isinstance(exc, sqlite3.OperationalError)
    ):
        msg = f"{path} is not a SQLite database ({MOVE}, or move the file away)"
    elif "unable to open" in text:
        msg = f"{path} cannot be opened ({MOVE}, or check that its directory is writable)"
    else:
        msg = f"{path} cannot be used: {exc} ({MOVE})"
    return StoreError(msg, path)


def transient(exc: BaseException) -> bool:
    """Is ``exc`` SQLite saying another process is in the way (worth trying again)?"""
    text = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and any(w in text for w in ("locked", "busy", "locking protocol"))


def _fs_code(path: Path) -> int | None:
    """Why the filesystem holding ``path`` refuses writes, as an errno (None: it does not seem to)."""
    try:
        st = os.statvfs(path.parent)
    except OSError:
        return None
    if st.f_flag & os.ST_RDONLY:
        return errno.EROFS
    if st.f_blocks > 0 and st.f_bavail == 0:
        return errno.ENOSPC
    target = path if path.exists() else path.parent
    return None if os.access(target, os.W_OK) else errno.EACCES


def _not_a_dir(parent: Path) -> Path:
    """The first component of ``parent`` that exists and is not a directory (NBBENCH_HOME itself, usually)."""
    for p in [*reversed(parent.parents), parent]:
        if p.exists() and not p.is_dir():
            return p
    return parent
