"""The results store's schema: its version and the migrations that take a database to it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from ..results import Result
from .errors import MOVE, StoreError

__all__ = ["SCHEMA_VERSION", "migrate"]

SCHEMA_VERSION = 3

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


def migrate(conn: sqlite3.Connection, path: Path) -> None:
    """Create or migrate the tables to :data:`SCHEMA_VERSION` (in the caller's write transaction);
    :class:`StoreError` for a schema newer than this nbbench."""
    conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
    row = conn.execute("SELECT version FROM schema_version").fetchone()
    current = row[0] if row else 0
    if current > SCHEMA_VERSION:
        raise StoreError(
            f"{path} has schema version {current}, newer than this nbbench "
            f"({SCHEMA_VERSION}) (upgrade nbbench, or {MOVE})",
            path,
        )
    for version in range(current + 1, SCHEMA_VERSION + 1):
        for stmt in _MIGRATIONS[version]:
            conn.execute(stmt)
        if version in (2, 3):
            # fill the new column for rows written before it existed
            column, value = ("summary", str) if version == 2 else ("verdict", lambda r: r.verdict)
            for run_id, data in conn.execute("SELECT run_id, data FROM runs").fetchall():
                conn.execute(
                    f"UPDATE runs SET {column}=? WHERE run_id=?", (value(Result.from_dict(json.loads(data))), run_id)
                )
    if row is None:
        conn.execute("INSERT INTO schema_version(version) VALUES (?)", (SCHEMA_VERSION,))
    elif current != SCHEMA_VERSION:
        conn.execute("UPDATE schema_version SET version=?", (SCHEMA_VERSION,))
