"""The results store: SQLite, embedded, one file.

Location: ``$NBBENCH_HOME/results.sqlite``; without ``NBBENCH_HOME`` the user's data
directory (``platformdirs.user_data_dir("nbbench")``, e.g. ``~/.local/share/nbbench``).

The database runs in WAL mode so readers never block a writer, every write is one
``BEGIN IMMEDIATE`` transaction with a generous busy timeout, so several processes
(two notebooks, a notebook and a terminal) can save at once without losing rows.
Environment fingerprints are stored once per distinct id.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Iterable

from .results import Result

__all__ = ["Store", "default_path", "default_store", "SCHEMA_VERSION"]

SCHEMA_VERSION = 2


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
# layout; version 2 added the label index and the ``summary`` column.
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
}


class Store:
    """A results database at ``path`` (default :func:`default_path`)."""

    def __init__(self, path: str | os.PathLike | None = None, timeout: float = 60.0):
        self.path = Path(path) if path is not None else default_path()
        self.timeout = timeout
        self._local = threading.local()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._migrate()

    # ---------------------------------------------------------------- plumbing
    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(str(self.path), timeout=self.timeout, isolation_level=None)
            conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            self._local.conn = conn
        return conn

    def _write(self, fn):
        """Run ``fn(conn)`` in one immediate transaction, retrying on a locked database."""
        conn = self._conn()
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    out = fn(conn)
                    conn.execute("COMMIT")
                    return out
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    def _migrate(self) -> None:
        def run(conn):
            conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            row = conn.execute("SELECT version FROM schema_version").fetchone()
            current = row[0] if row else 0
            if current > SCHEMA_VERSION:
                raise RuntimeError(
                    f"{self.path} has schema version {current}, newer than this nbbench "
                    f"({SCHEMA_VERSION}): upgrade nbbench or set NBBENCH_HOME to another directory"
                )
            for version in range(current + 1, SCHEMA_VERSION + 1):
                for stmt in _MIGRATIONS[version]:
                    conn.execute(stmt)
                if version == 2:
                    # fill the new column for rows written under version 1
                    for run_id, data in conn.execute("SELECT run_id, data FROM runs").fetchall():
                        conn.execute(
                            "UPDATE runs SET summary=? WHERE run_id=?",
                            (str(Result.from_dict(json.loads(data))), run_id),
                        )
            if row is None:
                conn.execute("INSERT INTO schema_version(version) VALUES (?)", (SCHEMA_VERSION,))
            elif current != SCHEMA_VERSION:
                conn.execute("UPDATE schema_version SET version=?", (SCHEMA_VERSION,))

        self._write(run)

    @property
    def schema_version(self) -> int:
        return self._conn().execute("SELECT version FROM schema_version").fetchone()[0]

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
                "INSERT INTO runs(kind, label, status, started_at, ended_at, env_id, data, summary)"
                " VALUES (?,?,?,?,?,?,?,?)",
                (result.kind, label, result.status, result.started_at, result.ended_at,
                 result.env_id if env_id else None, payload, summary),
            )
            return cur.lastrowid

        run_id = self._write(run)
        result.run_id = run_id
        return run_id

    def get(self, run_id: int) -> Result:
        """The stored result with this id (KeyError when there is none)."""
        row = self._conn().execute("SELECT data FROM runs WHERE run_id=?", (int(run_id),)).fetchone()
        if row is None:
            raise KeyError(f"no stored run with id {run_id} in {self.path}")
        res = Result.from_dict(json.loads(row[0]))
        res.run_id = int(run_id)
        return res

    def find(self, ref: int | str) -> list[Result]:
        """Runs named by an id (``12``) or a label (``baseline``), newest last."""
        if isinstance(ref, int) or (isinstance(ref, str) and ref.isdigit()):
            return [self.get(int(ref))]
        rows = self._conn().execute(
            "SELECT run_id FROM runs WHERE label=? ORDER BY run_id", (ref,)
        ).fetchall()
        if not rows:
            raise KeyError(f"no stored run has id or label {ref!r}")
        return [self.get(r[0]) for r in rows]

    def environment(self, env_id: str) -> dict[str, Any]:
        row = self._conn().execute("SELECT data FROM environments WHERE env_id=?", (env_id,)).fetchone()
        if row is None:
            raise KeyError(f"no stored environment {env_id}")
        return json.loads(row[0])

    def count(self, kind: str | None = None) -> int:
        if kind is None:
            return self._conn().execute("SELECT COUNT(*) FROM runs").fetchone()[0]
        return self._conn().execute("SELECT COUNT(*) FROM runs WHERE kind=?", (kind,)).fetchone()[0]

    def environment_count(self) -> int:
        return self._conn().execute("SELECT COUNT(*) FROM environments").fetchone()[0]

    def history(self, kind: str | None = None, label: str | None = None, limit: int | None = None):
        """Stored runs as a DataFrame, one row each, metrics as columns; oldest first."""
        import pandas as pd

        sql = "SELECT run_id, kind, label, status, started_at, ended_at, env_id, summary, data FROM runs"
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
        rows = self._conn().execute(sql, args).fetchall()
        records = []
        for run_id, kind_, label_, status, started, ended, env_id, summary, data in rows:
            d = json.loads(data)
            rec = {
                "run_id": run_id,
                "kind": kind_,
                "label": label_,
                "status": status,
                "started": pd.Timestamp(started, unit="s"),
                "duration_s": (ended - started) if ended else None,
                "env_id": env_id,
                "summary": summary,
            }
            for k, v in d.get("metrics", {}).items():
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    rec[k] = v
            records.append(rec)
        base = ["run_id", "kind", "label", "status", "started", "duration_s", "env_id", "summary"]
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


_default: Store | None = None
_default_lock = threading.Lock()


def default_store() -> Store:
    """The store at :func:`default_path` (re-opened when ``NBBENCH_HOME`` changes)."""
    global _default
    with _default_lock:
        if _default is None or _default.path != default_path():
            _default = Store()
        return _default
