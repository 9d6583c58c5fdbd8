"""The results store's runs: save a result (its environment fingerprint once), look runs up, list
them as a DataFrame, delete them."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable
from typing import Any

from ..results import Result
from .connection import Database
from .schema import migrate

__all__ = ["Store"]


class Store(Database):
    """A results database at ``path`` (default :func:`~nbbench.store.connection.default_path`)."""

    def __init__(self, path: str | os.PathLike | None = None, timeout: float = 60.0):
        """Open (create, migrate) the store; :class:`~nbbench.store.errors.StoreError` when it cannot be.
        ``timeout``: seconds to wait for another process's lock before giving up."""
        super().__init__(path, timeout)
        self._write(lambda conn: migrate(conn, self.path))

    @property
    def schema_version(self) -> int:
        return self._read("SELECT version FROM schema_version")[0][0]

    # --------------------------------------------------------------------- API
    def save(self, result: Result, label: str | None = None, environment: dict | None = None) -> int:
        """Store ``result`` (and its environment fingerprint, once); returns the run id.

        ``environment`` defaults to this process's fingerprint.
        """
        if environment is None:
            # looked up when called: tests replace env.fingerprint
            from ..env import fingerprint

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
                (
                    result.kind,
                    label,
                    result.status,
                    result.started_at,
                    result.ended_at,
                    result.env_id if env_id else None,
                    payload,
                    summary,
                    result.verdict,
                ),
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
            sql = (
                f"SELECT * FROM ({sql[: -len(' ORDER BY run_id')]} ORDER BY run_id DESC LIMIT {int(limit)})"
                " ORDER BY run_id"
            )
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
