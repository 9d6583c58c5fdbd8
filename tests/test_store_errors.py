"""A result is never lost to the store: whatever is wrong with it, the result is shown
as usual plus one "not saved: …" line saying why and what to do, and the exit code is
the probe's — in the CLI, through the magic and in the panel.

The broken stores are real: a file where NBBENCH_HOME's directory should be, a file
that is not a database, a read-only bind mount, a full tmpfs, a lock held by another
connection past the store's timeout, a schema newer than this nbbench.  The mounts
need root (this machine and CI run as root); without it they are skipped with the
reason, except under CI, where they must run.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

import pytest

from nbbench import cli
from nbbench.results import Result
from nbbench.results.system.gpu import GpuCheckResult
from nbbench.store import SCHEMA_VERSION, Store

ENV = {"id": "env-test"}


def _mount(args: list[str], target, request) -> None:
    """``mount ARGS TARGET``, unmounted at the end of the test; skip (fail in CI) when impossible."""
    why = None
    if os.geteuid() != 0:
        why = "mounting needs root"
    else:
        out = subprocess.run(["mount", *args, str(target)], capture_output=True, text=True)
        if out.returncode != 0:
            why = f"mount {' '.join(args)} failed: {out.stderr.strip()}"
    if why is not None:
        if os.environ.get("CI"):
            pytest.fail(f"the store's read-only / full-disk tests must run in CI: {why}")
        pytest.skip(why)
    request.addfinalizer(lambda: subprocess.run(["umount", "-l", str(target)], capture_output=True))


def _seeded(path) -> None:
    """A healthy store at ``path`` with one run in it, closed."""
    st = Store(path)
    st.save(Result(kind="dd", metrics={"read_bytes_per_s": 1e9}).finish(), environment=ENV)
    st.close()


def not_a_directory(tmp_path, request, monkeypatch):
    home = tmp_path / "home-is-a-file"
    home.write_text("not a directory\n")
    return home, "is not a directory"


def corrupt(tmp_path, request, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    (home / "results.sqlite").write_bytes(b"this is not a SQLite database\n" * 200)
    return home, "is not a SQLite database"


def read_only(tmp_path, request, monkeypatch):
    src, home = tmp_path / "src", tmp_path / "home"
    src.mkdir()
    home.mkdir()
    _seeded(src / "results.sqlite")
    _mount(["--bind", str(src)], home, request)
    _mount(["-o", "remount,bind,ro"], home, request)
    with pytest.raises(OSError):  # it is really read-only
        (home / "probe").write_text("x")
    return home, "read-only"


def disk_full(tmp_path, request, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    _mount(["-t", "tmpfs", "-o", "size=256k", "tmpfs"], home, request)
    _seeded(home / "results.sqlite")
    fd = os.open(home / "filler", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)
    assert os.statvfs(home).f_bavail == 0
    return home, "is full"


def locked(tmp_path, request, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    _seeded(home / "results.sqlite")
    holder = sqlite3.connect(home / "results.sqlite", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the lock for the whole test
    request.addfinalizer(holder.close)
    monkeypatch.setenv("NBBENCH_STORE_TIMEOUT", "0.2")
    return home, "stayed locked by another process for 0.2 s"


def newer_schema(tmp_path, request, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    _seeded(home / "results.sqlite")
    conn = sqlite3.connect(home / "results.sqlite")
    conn.execute("UPDATE schema_version SET version=?", (SCHEMA_VERSION + 1,))
    conn.commit()
    conn.close()
    return home, "newer than this nbbench"


CASES = [not_a_directory, corrupt, read_only, disk_full, locked, newer_schema]


@pytest.fixture(params=CASES, ids=[c.__name__ for c in CASES])
def broken_home(request, tmp_path, monkeypatch):
    home, why = request.param(tmp_path, request, monkeypatch)
    monkeypatch.setenv("NBBENCH_HOME", str(home))
    return home, why


@pytest.fixture
def fake_gpu(monkeypatch):
    """A quick, machine-independent GPU check that ran and found everything ok."""
    from nbbench.probes import gpu

    def check(**kw):
        res = GpuCheckResult(
            extra={
                "available": True,
                "devices": [{"index": 0, "name": "Fake GPU"}],
                "verdicts": [{"check": "driver", "status": "ok", "message": "fine"}],
            }
        )
        res.metrics["device_count"] = 1
        return res.finish("ok")

    monkeypatch.setattr(gpu, "check", check)


def _one_not_saved_line(err: str, why: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("not saved: ") and why in lines[0], lines[0]
    assert "NBBENCH_HOME" in lines[0]  # and what to do
    return lines[0]


def test_the_store_raises_one_typed_error_with_a_sentence(broken_home):
    from nbbench.store import StoreError, default_store

    home, why = broken_home
    with pytest.raises(StoreError, match=why) as info:
        default_store().save(Result(kind="dd").finish(), environment=ENV)
    assert "\n" not in str(info.value) and "NBBENCH_HOME" in str(info.value)


def test_cli_shows_the_result_and_one_line_and_exits_with_the_probes_outcome(broken_home, fake_gpu, capsys):
    _, why = broken_home
    assert cli.main(["gpu", "--no-bench"]) == 0  # the probe ran and its checks are ok
    out, err = capsys.readouterr()
    assert "Fake GPU" in out and "CUDA available" in out
    _one_not_saved_line(err, why)
    # --json: stdout is the result's JSON alone, the line is on stderr
    assert cli.main(["gpu", "--no-bench", "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["kind"] == "gpu"
    _one_not_saved_line(err, why)


def test_magic_returns_the_result_and_prints_one_line(broken_home, fake_gpu, ipshell, capsys):
    _, why = broken_home
    res = ipshell.run_line_magic("iobench", "gpu --no-bench -o")
    out, err = capsys.readouterr()
    assert isinstance(res, GpuCheckResult) and res.status == "ok" and res.run_id is None
    assert "Fake GPU" in out
    _one_not_saved_line(err, why)


def test_magic_with_an_open_store_when_the_disk_fills_up(tmp_path, request, monkeypatch, fake_gpu, ipshell, capsys):
    """The store opened fine (a first run saved), then the disk filled: the write fails, not the open."""
    home = tmp_path / "home"
    home.mkdir()
    _mount(["-t", "tmpfs", "-o", "size=256k", "tmpfs"], home, request)
    monkeypatch.setenv("NBBENCH_HOME", str(home))
    first = ipshell.run_line_magic("iobench", "gpu --no-bench -o -q")
    assert first.run_id == 1
    fd = os.open(home / "filler", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        while True:
            os.write(fd, b"\0" * 65536)
    except OSError:
        pass
    finally:
        os.close(fd)
    capsys.readouterr()
    # a big environment fingerprint to write: more than the few bytes a full disk might still take
    from nbbench import env

    monkeypatch.setattr(env, "fingerprint", lambda: {"id": "another-env", "padding": "x" * 200_000})
    res = ipshell.run_line_magic("iobench", "gpu --no-bench -o")
    out, err = capsys.readouterr()
    assert res.status == "ok" and res.run_id is None and "Fake GPU" in out
    _one_not_saved_line(err, "is full")
    from nbbench.store import default_store

    default_store().close()


def test_real_cli_in_a_terminal(tmp_path):
    """As a new user meets it: NBBENCH_HOME is a file, then a results.sqlite that is no
    database — the real probe's output, one line, the probe's exit code, no traceback."""
    home = tmp_path / "home-file"
    home.write_text("x")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "results.sqlite").write_text("garbage " * 500)
    env = dict(os.environ, PYTHONPATH=os.getcwd() + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for where, why in ((home, "is not a directory"), (bad, "is not a SQLite database")):
        out = subprocess.run(
            [sys.executable, "-m", "nbbench", "gpu", "--no-bench", "--json"],
            capture_output=True,
            text=True,
            timeout=180,
            env=dict(env, NBBENCH_HOME=str(where)),
        )
        data = json.loads(out.stdout)
        assert data["kind"] == "gpu" and data["status"] == "ok"
        assert out.returncode == (3 if data["verdict"] == "fail" else 0), out.stderr
        assert "Traceback" not in out.stderr
        _one_not_saved_line(out.stderr, why)


def test_panel_shows_the_same_line(tmp_path, monkeypatch, fake_gpu):
    pytest.importorskip("ipywidgets")
    from nbbench.panel import panel as make

    home = tmp_path / "home-file"
    home.write_text("x")
    monkeypatch.setenv("NBBENCH_HOME", str(home))
    p = make(str(tmp_path))
    p.select("GPU")
    p.tab("GPU").bench.value = False
    p.run_button.click()
    rec = p.wait(30)
    assert rec.status == "ok" and rec.error is None
    assert len(rec.notes) == 1 and rec.notes[0].startswith("not saved: ") and "is not a directory" in rec.notes[0]
    assert "Fake GPU" in p.results.value and "not saved: " in p.results.value
    assert "nbbench-status-ok" in p.status.value  # the run's outcome, not the store's
