"""The results store: SQLite, embedded, one file.

Location: ``$NBBENCH_HOME/results.sqlite``; without ``NBBENCH_HOME`` the user's data
directory (``platformdirs.user_data_dir("nbbench")``, e.g. ``~/.local/share/nbbench``).
A save waits up to ``$NBBENCH_STORE_TIMEOUT`` seconds (default 60) for another
process's lock.

The database runs in WAL mode so readers never block a writer, every write is one
``BEGIN IMMEDIATE`` transaction with a generous busy timeout, so several processes
(two notebooks, a notebook and a terminal) can save at once without losing rows.
Environment fingerprints are stored once per distinct id.

Whatever goes wrong with the store itself — ``NBBENCH_HOME`` is not a directory, the
file is not a SQLite database, a read-only filesystem, a full disk, a lock held past
the timeout, a schema newer than this nbbench — is one :class:`StoreError` whose
message is a sentence saying what and what to do; the front ends show the result
anyway and that sentence as "not saved: …" (:func:`nbbench.commands.finish`).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Iterable

from .results import ProbeError, Result

__all__ = ["Store", "StoreError", "store_error", "default_path", "default_store", "default_timeout",
           "SCHEMA_VERSION"]

SCHEMA_VERSION = 3

_MOVE = "set NBBENCH_HOME to another directory"


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
    if code is None:   # sqlite says "unable to open" / "disk I/O error" when it cannot make its -wal/-shm files
        code = _fs_code(path)
    if isinstance(exc, (FileExistsError, NotADirectoryError)) or code == errno.ENOTDIR:
        msg = f"{_not_a_dir(parent)} is not a directory ({_MOVE}, or move the file away)"
    elif code == errno.ENOSPC or "disk is full" in text:
        msg = f"the disk holding {path} is full (free some space there, or {_MOVE})"
    elif code == errno.EROFS or "readonly" in text or "read-only" in text:
        msg = f"{path} is on a read-only filesystem or file ({_MOVE}, or make it writable)"
    elif isinstance(exc, PermissionError) or code in (errno.EACCES, errno.EPERM):
        msg = f"no permission to write {path} ({_MOVE}, or fix its permissions)"
    elif "locked" in text or "busy" in text:
        held = f" for {timeout:g} s" if timeout is not None else ""
        msg = (f"{path} stayed locked by another process{held} (try again when the other run has saved, "
               f"or {_MOVE})")
    elif "not a database" in text or "malformed" in text or isinstance(exc, sqlite3.DatabaseError) \
            and not isinstance(exc, sqlite3.OperationalError):
        msg = f"{path} is not a SQLite database ({_MOVE}, or move the file away)"
    elif "unable to open" in text:
        msg = f"{path} cannot be opened ({_MOVE}, or check that its directory is writable)"
    else:
        msg = f"{path} cannot be used: {exc} ({_MOVE})"
    return StoreError(msg, path)


def _transient(exc: BaseException) -> bool:
    """Is ``exc`` SQLite saying another process is in the way (worth trying again)?"""
    text = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and any(
        w in text for w in ("locked", "busy", "locking protocol"))


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


def default_path() -> Path:
    home = os.environ.get("NBBENCH_HOME")
    if home:
        return Path(home).expanduser() / "results.sqlite"
    try:
        from platformdirs import user_data_dir

        return Path(user_data_dir("nbbench", appauthor=False)) / "results.sqlite"
    except ImportError:  # pragma: no cover - platformdirs is a dependency
        return Path.home() / ".local" / "share" / "nbbench" / "results.sqlite"


# Each migration takes the schema from version N-1 to N.  Version 1 was the first
# layout; version 2 added the label index and the ``summary`` column; version 3 the
# ``verdict`` column (what a run's checks found; also in its JSON).
_MIGRATIONS: dict[int, list[str]] = {
    1: [
        """CREATE TABLE IF NOT EXISTS environments (
               env_id TEXT PRIMARY KEY,
               created_at REAL NOT NULL,
               data TEXT NOT NULL)""",
        """CREATE TABLE IF NOT EXISTS runs (
               run_id INTEGER PRIMARY KEY AUTOINCREMENT,
               kind TEXT NOT NULL,
               label TEXT,
               status TEXT NOT NULL,
               started_at REAL NOT NULL,
               ended_at REAL,
               env_id TEXT REFERENCES environments(env_id),
               data TEXT NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS runs_kind ON runs(kind)",
    ],
    2: [
        "ALTER TABLE runs ADD COLUMN summary TEXT",
        "CREATE INDEX IF NOT EXISTS runs_label ON runs(label)",
    ],
    3: [
        "ALTER TABLE runs ADD COLUMN verdict TEXT",
    ],
}


class Store:
    """A results database at ``path`` (default :func:`default_path`)."""

    def __init__(self, path: str | os.PathLike | None = None, timeout: float = 60.0):
        """Open (create, migrate) the store; :class:`StoreError` when it cannot be.
        ``timeout``: seconds to wait for another process's lock before giving up."""
        self.path = Path(path) if path is not None else default_path()
        self.timeout = timeout
        self._local = threading.local()
        with self._guard():
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._migrate()

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
                if not _transient(exc) or time.monotonic() > deadline:
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

    def _migrate(self) -> None:
        def run(conn):
            conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            row = conn.execute("SELECT version FROM schema_version").fetchone()
            current = row[0] if row else 0
            if current > SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path} has schema version {current}, newer than this nbbench "
                    f"({SCHEMA_VERSION}) (upgrade nbbench, or {_MOVE})", self.path)
            for version in range(current + 1, SCHEMA_VERSION + 1):
                for stmt in _MIGRATIONS[version]:
                    conn.execute(stmt)
                if version in (2, 3):
                    # fill the new column for rows written before it existed
                    column, value = ("summary", str) if version == 2 else ("verdict", lambda r: r.verdict)
                    for run_id, data in conn.execute("SELECT run_id, data FROM runs").fetchall():
                        conn.execute(f"UPDATE runs SET {column}=? WHERE run_id=?",
                                     (value(Result.from_dict(json.loads(data))), run_id))
            if row is None:
                conn.execute("INSERT INTO schema_version(version) VALUES (?)", (SCHEMA_VERSION,))
            elif current != SCHEMA_VERSION:
                conn.execute("UPDATE schema_version SET version=?", (SCHEMA_VERSION,))

        self._write(run)

    @property
    def schema_version(self) -> int:
        return self._read("SELECT version FROM schema_version")[0][0]

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    # --------------------------------------------------------------------- API
    def save(self, result: Result, label: str | None = None, environment: dict | None = None) -> int:
        """Store ``result`` (and its environment fingerprint, once); returns the run id.

        ``environment`` defaults to this process's fingerprint.
        """
        if environment is None:
            from .env import fingerprint

            environment = fingerprint()
        env_id = environment.get("id") if environment else None
        if result.env_id is None:
            result.env_id = env_id
        if label is not None:
            result.labels["label"] = label
        label = result.labels.get("label")
        data = result.to_dict()
        data.pop("run_id", None)
        payload = json.dumps(data, default=str)
        summary = str(result)

        def run(conn):
            if env_id and environment:
                conn.execute(
                    "INSERT OR IGNORE INTO environments(env_id, created_at, data) VALUES (?,?,?)",
                    (env_id, time.time(), json.dumps(environment, default=str)),
                )
            cur = conn.execute(
                "INSERT INTO runs(kind, label, status, started_at, ended_at, env_id, data, summary, verdict)"
                " VALUES (?,?,?,?,?,?,?,?,?)",
                (result.kind, label, result.status, result.started_at, result.ended_at,
                 result.env_id if env_id else None, payload, summary, result.verdict),
            )
            return cur.lastrowid

        run_id = self._write(run)
        result.run_id = run_id
        return run_id

    def get(self, run_id: int) -> Result:
        """The stored result with this id (KeyError when there is none)."""
        row = next(iter(self._read("SELECT data FROM runs WHERE run_id=?", (int(run_id),))), None)
        if row is None:
            raise KeyError(f"no stored run with id {run_id} in {self.path}")
        res = Result.from_dict(json.loads(row[0]))
        res.run_id = int(run_id)
        return res

    def find(self, ref: int | str) -> list[Result]:
        """Runs named by an id (``12``) or a label (``baseline``), newest last."""
        if isinstance(ref, int) or (isinstance(ref, str) and ref.isdigit()):
            return [self.get(int(ref))]
        rows = self._read("SELECT run_id FROM runs WHERE label=? ORDER BY run_id", (ref,))
        if not rows:
            raise KeyError(f"no stored run has id or label {ref!r}")
        return [self.get(r[0]) for r in rows]

    def environment(self, env_id: str) -> dict[str, Any]:
        row = next(iter(self._read("SELECT data FROM environments WHERE env_id=?", (env_id,))), None)
        if row is None:
            raise KeyError(f"no stored environment {env_id}")
        return json.loads(row[0])

    def count(self, kind: str | None = None) -> int:
        if kind is None:
            return self._read("SELECT COUNT(*) FROM runs")[0][0]
        return self._read("SELECT COUNT(*) FROM runs WHERE kind=?", (kind,))[0][0]

    def environment_count(self) -> int:
        return self._read("SELECT COUNT(*) FROM environments")[0][0]

    def history(self, kind: str | None = None, label: str | None = None, limit: int | None = None):
        """Stored runs as a DataFrame, one row each (status: did it run; verdict: what its checks
        found, None without checks), metrics as columns; oldest first."""
        import pandas as pd

        sql = "SELECT run_id, kind, label, status, verdict, started_at, ended_at, env_id, summary, data FROM runs"
        where, args = [], []
        if kind:
            where.append("kind=?")
            args.append(kind)
        if label:
            where.append("label=?")
            args.append(label)
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY run_id"
        if limit:
            sql = f"SELECT * FROM ({sql[:-len(' ORDER BY run_id')]} ORDER BY run_id DESC LIMIT {int(limit)}) ORDER BY run_id"
        rows = self._read(sql, args)
        records = []
        for run_id, kind_, label_, status, verdict, started, ended, env_id, summary, data in rows:
            d = json.loads(data)
            summary = _summary(d, summary)
            rec = {
                "run_id": run_id,
                "kind": kind_,
                "label": label_,
                "status": status,
                "verdict": verdict,
                "started": pd.Timestamp(started, unit="s"),
                "duration_s": (ended - started) if ended else None,
                "env_id": env_id,
                "summary": summary,
            }
            for k, v in d.get("metrics", {}).items():
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    rec[k] = v
            records.append(rec)
        base = ["run_id", "kind", "label", "status", "verdict", "started", "duration_s", "env_id", "summary"]
        frame = pd.DataFrame.from_records(records)
        if frame.empty:
            return pd.DataFrame(columns=base)
        frame.index = pd.Index(frame["run_id"].to_list())  # look runs up by id: frame.loc[run_id]
        return frame

    def delete(self, run_ids: Iterable[int]) -> int:
        ids = [int(i) for i in run_ids]

        def run(conn):
            return conn.executemany("DELETE FROM runs WHERE run_id=?", [(i,) for i in ids]).rowcount

        return self._write(run)


def _summary(data: dict[str, Any], stored: str | None) -> str | None:
    """A stored run's one-line summary worded now, from its stored result (answer first, as
    :meth:`Result.summary` words it today) — the stored ``summary`` text only when the result
    cannot be rebuilt (a kind this nbbench does not know how to read)."""
    try:
        return Result.from_dict(data, copy_data=False).summary()
    except Exception:  # noqa: BLE001 - an unreadable row still lists, with what it said then
        return stored


_default: Store | None = None
_default_lock = threading.Lock()


def default_timeout() -> float:
    """Seconds a save waits for another process's lock: ``$NBBENCH_STORE_TIMEOUT``, default 60."""
    text = os.environ.get("NBBENCH_STORE_TIMEOUT", "").strip()
    try:
        value = float(text) if text else 60.0
    except ValueError:
        raise StoreError(f"NBBENCH_STORE_TIMEOUT={text!r} is not a number of seconds") from None
    return value if value >= 0 else 60.0


def default_store() -> Store:
    """The store at :func:`default_path` (re-opened when ``NBBENCH_HOME`` or
    ``NBBENCH_STORE_TIMEOUT`` changes); :class:`StoreError` when it cannot be opened."""
    global _default
    with _default_lock:
        timeout = default_timeout()
        if _default is None or _default.path != default_path() or _default.timeout != timeout:
            _default = Store(timeout=timeout)
        return _default
