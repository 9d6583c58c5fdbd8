"""The results store's connection: one SQLite connection per thread, in WAL mode, every write one
``BEGIN IMMEDIATE`` transaction, retried while another process is in the way (locked, busy) until the
timeout; any store problem a :class:`~nbbench.store.errors.StoreError`."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from pathlib import Path

from .errors import store_error, transient

__all__ = ["Database", "default_path"]


def default_path() -> Path:
    home = os.environ.get("NBBENCH_HOME")
    if home:
        return Path(home).expanduser() / "results.sqlite"
    try:
        from platformdirs import user_data_dir

        return Path(user_data_dir("nbbench", appauthor=False)) / "results.sqlite"
    except ImportError:  # pragma: no cover - platformdirs is a dependency
        return Path.home() / ".local" / "share" / "nbbench" / "results.sqlite"


class Database:
    """The SQLite database at ``path`` (default :func:`default_path`): connections, retries, transactions."""

    def __init__(self, path: str | os.PathLike | None = None, timeout: float = 60.0):
        self.path = Path(path) if path is not None else default_path()
        self.timeout = timeout
        self._local = threading.local()
        with self._guard():
            self.path.parent.mkdir(parents=True, exist_ok=True)

    # ---------------------------------------------------------------- plumbing
    @contextlib.contextmanager
    def _guard(self):
        """OSError / sqlite3.Error inside: raised as :class:`StoreError` (a sentence); the
        connection of a failed open is dropped so the next call opens afresh."""
        try:
            yield
        except (OSError, sqlite3.Error) as exc:
            raise store_error(exc, self.path, self.timeout) from exc

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            with self._guard():
                conn = sqlite3.connect(str(self.path), timeout=self.timeout, isolation_level=None)
                try:
                    conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
                    self._retrying(lambda: self._setup(conn))
                except BaseException:
                    conn.close()
                    raise
            self._local.conn = conn
        return conn

    @staticmethod
    def _setup(conn: sqlite3.Connection) -> None:
        """WAL (switched only when not yet: the switch needs the database to itself), then this
        connection's settings."""
        if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")

    def _retrying(self, fn):
        """``fn()``, again while SQLite says another process is in the way ("database is locked",
        "busy", a WAL "locking protocol" retry: some of these come back at once, without the busy
        timeout's wait — when another process opens, recovers or checkpoints the WAL), until
        :attr:`timeout`; then the last error."""
        deadline = time.monotonic() + self.timeout
        pause = 0.002
        while True:
            try:
                return fn()
            except sqlite3.OperationalError as exc:
                if not transient(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(pause)
                pause = min(pause * 2, 0.05)

    def _read(self, sql: str, args=()) -> list:
        """Rows of a query; a store problem is a :class:`StoreError`."""
        conn = self._conn()
        with self._guard():
            return self._retrying(lambda: conn.execute(sql, args).fetchall())

    def _write(self, fn):
        """Run ``fn(conn)`` in one immediate transaction, retrying on a locked database
        until :attr:`timeout`; any store problem is a :class:`StoreError`."""
        conn = self._conn()

        def once():
            conn.execute("BEGIN IMMEDIATE")
            try:
                out = fn(conn)
                conn.execute("COMMIT")
                return out
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

        with self._guard():
            return self._retrying(once)

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
