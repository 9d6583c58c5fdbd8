"""The store under contention and crashes: four processes writing 500 results each while a fifth
lists history, beside two busy loops, lose nothing and fail nothing; writers SIGKILLed in the
middle of their saves leave a store that opens and holds every result committed before."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from rankproc import clean_env

from nbbench.store import Store

HERE = Path(__file__).resolve().parent
WORK = [sys.executable, str(HERE / "storework.py")]


def _spawn(*args, **kw):
    return subprocess.Popen(
        [*WORK, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env(), **kw
    )


@pytest.fixture
def busy_loops():
    procs = [_spawn("busy") for _ in range(2)]
    yield
    for p in procs:
        p.kill()
        p.wait()


@pytest.mark.slow
@pytest.mark.parametrize("fresh", [False, True], ids=["existing", "created-by-the-writers"])
def test_four_writers_and_a_reader_lose_nothing_and_fail_nothing(tmp_path, busy_loops, fresh):
    path = tmp_path / "results.sqlite"
    if not fresh:
        Store(path).close()
    stop = tmp_path / "stop"
    n, tags = 500, ["a", "b", "c", "d"]
    writers = [_spawn("writer", path, tag, n, 60) for tag in tags]
    reader = _spawn("reader", path, stop)
    outs = []
    for w in writers:
        out, err = w.communicate(timeout=600)
        outs.append((w.returncode, out, err))
    stop.write_text("")
    rout, rerr = reader.communicate(timeout=120)
    problems = [f"writer rc {rc}: {out.strip()[-2000:]} {err.strip()[-2000:]}" for rc, out, err in outs if rc != 0]
    if reader.returncode != 0:
        problems.append(f"reader rc {reader.returncode}: {rout.strip()[-2000:]} {rerr.strip()[-2000:]}")
    assert not problems, "\n".join(problems)
    assert json.loads(rout)["reads"] > 0
    saved = [rid for _, out, _ in outs for rid in json.loads(out)["saved"]]
    assert len(saved) == len(set(saved)) == n * len(tags)
    st = Store(path)
    assert st.count("stress") == n * len(tags)
    pairs = {(r.params["tag"], r.params["i"]) for r in (st.get(i) for i in saved)}
    assert pairs == {(t, i) for t in tags for i in range(n)}
    assert st.environment_count() == 3


@pytest.mark.slow
def test_writers_killed_mid_save_leave_a_readable_store_with_every_committed_result(tmp_path):
    """Two savers at a time, SIGKILLed at seeded random moments of their saves, twelve rounds:
    the store then opens, passes SQLite's integrity check and holds every run whose commit returned."""
    import random

    path = tmp_path / "results.sqlite"
    Store(path).close()
    rng = random.Random(19)
    committed: list[int] = []
    rounds = 60 if os.environ.get("NBBENCH_STRESS", "") not in ("", "0") else 12  # make stress-test: more
    for _ in range(rounds):
        savers = [_spawn("saver", path) for _ in range(2)]
        for p in savers:
            for _ in range(rng.randint(1, 40)):  # after this many commits, in the middle of the next save
                line = p.stdout.readline()
                assert line, p.stderr.read()
                committed.append(int(line))
        for p in savers:
            p.send_signal(signal.SIGKILL)
        for p in savers:
            out, _ = p.communicate(timeout=60)
            committed += [int(x) for x in out.split()]  # printed after their commit, before the kill
            assert p.returncode == -signal.SIGKILL
    st = Store(path)
    assert st._read("PRAGMA integrity_check") == [("ok",)]
    assert st.count("crash") >= len(committed) > 0
    for rid in committed:
        assert st.get(rid).kind == "crash"
    assert len(st.history(kind="crash")) == st.count("crash")


def test_a_save_that_waits_past_its_timeout_says_so_in_one_line_and_shows_the_result(tmp_path):
    import sqlite3

    home = tmp_path / "home"
    Store(home / "results.sqlite").close()
    holder = sqlite3.connect(home / "results.sqlite", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process's save that never ends
    try:
        env = clean_env(NBBENCH_HOME=str(home), NBBENCH_STORE_TIMEOUT="0.5")
        out = subprocess.run(
            [sys.executable, "-m", "nbbench", "dd", str(tmp_path), "--size", "1M"],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert out.returncode == 0, out.stderr
    assert "B/s" in out.stdout  # the result, shown
    lines = [ln for ln in out.stderr.splitlines() if "not saved" in ln]
    assert len(lines) == 1 and "stayed locked by another process for 0.5 s" in lines[0], out.stderr
    assert "Traceback" not in out.stderr
    assert Store(home / "results.sqlite").count() == 0
