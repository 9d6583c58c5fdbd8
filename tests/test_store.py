import json
import multiprocessing as mp
import sqlite3

import pytest

from nbbench.results import Result
from nbbench.store import SCHEMA_VERSION, Store, default_path, default_store

ENV = {"id": "env-one", "host": "h"}


def res(i=0, kind="dd"):
    return Result(kind=kind, params={"i": i}, metrics={"read_bytes_per_s": 1e6 * (i + 1)}).finish()


def test_default_path_follows_nbbench_home(tmp_path, monkeypatch):
    monkeypatch.setenv("NBBENCH_HOME", str(tmp_path / "h"))
    assert default_path() == tmp_path / "h" / "results.sqlite"
    st = default_store()
    assert st.path == tmp_path / "h" / "results.sqlite" and st.path.exists()


def test_save_get_history(tmp_path):
    st = Store(tmp_path / "r.sqlite")
    a = st.save(res(0), label="base", environment=ENV)
    b = st.save(res(1), environment=ENV)
    c = st.save(res(2, kind="randread"), label="base", environment={"id": "env-two"})
    assert (a, b, c) == (1, 2, 3)
    got = st.get(b)
    assert got.run_id == b and got.metrics["read_bytes_per_s"] == 2e6 and got.env_id == "env-one"
    assert st.get(a).labels["label"] == "base"
    h = st.history()
    assert list(h["run_id"]) == [1, 2, 3]
    assert h.loc[2, "read_bytes_per_s"] == 2e6
    assert list(st.history(kind="dd")["run_id"]) == [1, 2]
    assert list(st.history(label="base")["run_id"]) == [1, 3]
    assert st.environment_count() == 2  # the environment is stored once per id
    assert [r.run_id for r in st.find("base")] == [1, 3]
    with pytest.raises(KeyError):
        st.get(99)


def test_wal_and_schema_version(tmp_path):
    st = Store(tmp_path / "r.sqlite")
    assert st.schema_version == SCHEMA_VERSION
    mode = st._conn().execute("PRAGMA journal_mode").fetchone()[0]
    assert mode.lower() == "wal"


def test_migrates_a_version_1_database(tmp_path):
    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript("""
        CREATE TABLE schema_version (version INTEGER NOT NULL);
        INSERT INTO schema_version VALUES (1);
        CREATE TABLE environments (env_id TEXT PRIMARY KEY, created_at REAL NOT NULL, data TEXT NOT NULL);
        CREATE TABLE runs (run_id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, label TEXT,
            status TEXT NOT NULL, started_at REAL NOT NULL, ended_at REAL, env_id TEXT, data TEXT NOT NULL);
    """)
    old = res(5)
    conn.execute(
        "INSERT INTO runs(kind,label,status,started_at,ended_at,env_id,data) VALUES (?,?,?,?,?,?,?)",
        ("dd", "old", "ok", old.started_at, old.ended_at, None, json.dumps(old.to_dict())),
    )
    conn.commit()
    conn.close()
    st = Store(path)
    assert st.schema_version == SCHEMA_VERSION
    h = st.history()
    # column added by the migration; the summary is worded from the stored result, the answer first
    assert h.loc[1, "summary"] == str(old) and h.loc[1, "summary"].startswith("6.00 MB/s read — dd")
    assert st.get(1).metrics == old.metrics


def test_refuses_a_newer_schema(tmp_path):
    from nbbench.store import StoreError

    path = tmp_path / "new.sqlite"
    Store(path)
    conn = sqlite3.connect(path)
    conn.execute("UPDATE schema_version SET version=?", (SCHEMA_VERSION + 1,))
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="newer than this nbbench") as info:
        Store(path)
    assert isinstance(info.value, RuntimeError) and "NBBENCH_HOME" in str(info.value)


def test_migrates_a_version_2_database_and_fills_the_verdict_column(tmp_path):
    """v2 -> v3 added the verdict column; runs stored before are judged from their JSON."""
    from nbbench.results.system.gpu import GpuCheckResult

    path = tmp_path / "v2.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript("""
        CREATE TABLE schema_version (version INTEGER NOT NULL);
        INSERT INTO schema_version VALUES (2);
        CREATE TABLE environments (env_id TEXT PRIMARY KEY, created_at REAL NOT NULL, data TEXT NOT NULL);
        CREATE TABLE runs (run_id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, label TEXT,
            status TEXT NOT NULL, started_at REAL NOT NULL, ended_at REAL, env_id TEXT, data TEXT NOT NULL,
            summary TEXT);
        CREATE INDEX runs_label ON runs(label);
    """)
    gpu = GpuCheckResult(
        extra={"available": False, "verdicts": [{"check": "torch build", "status": "fail", "message": "CPU-only"}]}
    ).finish()
    old_rows = []
    for r in (res(1), gpu):
        d = r.to_dict()
        del d["verdict"]  # written by an nbbench without verdicts
        old_rows.append((r.kind, "old", r.status, r.started_at, r.ended_at, None, json.dumps(d), str(r)))
    conn.executemany(
        "INSERT INTO runs(kind,label,status,started_at,ended_at,env_id,data,summary) VALUES (?,?,?,?,?,?,?,?)", old_rows
    )
    conn.commit()
    conn.close()
    st = Store(path)
    assert st.schema_version == SCHEMA_VERSION == 3
    h = st.history()
    assert h["status"].tolist() == ["ok", "ok"]
    assert h["verdict"].isna().tolist() == [True, False] and h.loc[2, "verdict"] == "fail"
    assert st.get(2).verdict == "fail" and st.get(1).verdict is None
    st.save(res(2), environment=ENV)  # and new rows keep theirs
    assert st.history()["verdict"].isna().tolist() == [True, False, True]


def _writer(path, tag, n, barrier):
    st = Store(path)
    barrier.wait()
    for i in range(n):
        st.save(
            Result(kind="stress", params={"tag": tag, "i": i}, metrics={"iops": i}).finish(),
            label=tag,
            environment={"id": f"env-{tag}"},
        )


def test_two_processes_saving_at_once_lose_nothing(tmp_path):
    path = tmp_path / "shared.sqlite"
    Store(path)
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(2)
    procs = [ctx.Process(target=_writer, args=(str(path), tag, 200, barrier)) for tag in ("a", "b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(300)  # a writer's error is its traceback on stderr (shown with a failure); None: still running
        assert p.exitcode == 0, f"writer {p.name} exit code {p.exitcode} (None: not done in 300 s)"
    st = Store(path)
    assert st.count("stress") == 400
    h = st.history(kind="stress")
    for tag in ("a", "b"):
        sub = h[h["label"] == tag]
        assert len(sub) == 200
    # every (tag, i) pair is there exactly once
    pairs = {(r.params["tag"], r.params["i"]) for r in (st.get(i) for i in h["run_id"])}
    assert len(pairs) == 400


def test_history_words_summaries_now_from_the_stored_results_not_the_stored_text(tmp_path):
    """A run saved by an older nbbench ('dd /tmp/…: write …', the path first) lists answer first."""
    st = Store(tmp_path / "r.sqlite")
    r = Result(
        kind="dd",
        params={"path": "/tmp/nbbench-06-q15srco8/disk"},
        metrics={"write_bytes_per_s": 1.82e9, "read_bytes_per_s": 2.01e9},
        labels={"cache": "direct"},
    ).finish()
    rid = st.save(r, environment=ENV)
    conn = sqlite3.connect(tmp_path / "r.sqlite")
    conn.execute(
        "UPDATE runs SET summary=? WHERE run_id=?",
        ("dd /tmp/nbbench-06-q15srco8/disk: write 1.82 GB/s, read 2.01 GB/s [direct]", rid),
    )
    conn.commit()
    conn.close()
    summary = st.history().loc[rid, "summary"]
    assert summary == "1.82 GB/s write · 2.01 GB/s read — dd /tmp/nbbench-06-q15srco8/disk [direct]"
