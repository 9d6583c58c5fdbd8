"""The doctor on this machine, and against a real Jupyter server started without a token."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nbbench.doctor import CHECK_STATUSES, DoctorResult, doctor

VENV_BIN = Path(sys.executable).parent


def test_doctor_runs_for_real_here(tmp_path):
    res = doctor(str(tmp_path))  # every check, the GPU stack's verdicts included
    assert isinstance(res, DoctorResult) and res.ok
    checks = res.checks
    names = {c.name for c in checks}
    assert {
        "/dev/shm size",
        "open-file limit",
        "mount",
        "atime",
        "O_DIRECT",
        "vm.dirty ratios",
        "swap",
        "usable CPUs",
        "memory limit",
        "ssh password login",
        "ssh root login",
    } <= names
    assert any(c.group == "gpu" for c in checks) and any(c.group == "exposure" for c in checks)
    for c in checks:
        assert c.status in CHECK_STATUSES, c
        assert isinstance(c.evidence, str) and c.evidence, c
        if c.status in ("warn", "fail"):
            assert c.fix, c
    # the open-file limit is what resource reports
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    nof = res.get("open-file limit")
    assert nof.data["soft"] == (None if soft == resource.RLIM_INFINITY else soft)
    # O_DIRECT was tried in a new file that is gone again
    assert res.get("O_DIRECT").status in ("ok", "warn")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".nbbench-")]
    assert (
        res.get("mount").data["mount_point"] in Path(tmp_path).resolve().as_posix()
        or res.get("mount").data["mount_point"] == "/"
    )


def test_doctor_cli_json_and_save(tmp_path, capsys):
    from nbbench.cli import main
    from nbbench.store import default_store

    assert main(["doctor", str(tmp_path), "--skip", "gpu,jupyter", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["kind"] == "doctor" and data["samples"]["checks"]
    assert all(c["status"] in CHECK_STATUSES for c in data["samples"]["checks"])
    assert default_store().count("doctor") == 1
    assert main(["doctor", str(tmp_path), "--checks", "nofile", "--no-save"]) == 0
    out = capsys.readouterr().out
    assert "open-file limit" in out and default_store().count("doctor") == 1
    assert main(["doctor", str(tmp_path / "missing"), "--no-save"]) == 1


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_doctor_flags_a_real_jupyter_server_without_a_token(tmp_path):
    pytest.importorskip("jupyter_server")
    runtime = tmp_path / "runtime"
    port = _free_port()
    env = dict(
        os.environ,
        JUPYTER_RUNTIME_DIR=str(runtime),
        JUPYTER_CONFIG_DIR=str(tmp_path / "config"),
        JUPYTER_DATA_DIR=str(tmp_path / "data"),
        JUPYTER_PLATFORM_DIRS="1",
    )
    cmd = [
        str(VENV_BIN / "jupyter"),
        "server",
        "--IdentityProvider.token=",
        "--ServerApp.password=",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        "--ServerApp.open_browser=False",
        f"--ServerApp.root_dir={tmp_path}",
    ]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    log = open(tmp_path / "server.log", "w")
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 90
        info_file = runtime / f"jpserver-{proc.pid}.json"
        while not info_file.exists():
            assert proc.poll() is None, (tmp_path / "server.log").read_text()
            assert time.monotonic() < deadline, "the server did not start in 90 s"
            time.sleep(0.2)
        res = doctor(str(tmp_path), checks=["jupyter"], runtime_dir=str(runtime))
        (c,) = res.checks
        assert c.name == f"jupyter server :{port}"
        assert c.status == "fail", c
        assert "no token and no password" in c.evidence and str(proc.pid) in c.evidence
        assert "127.0.0.1" in c.evidence and "any local user" in c.evidence
        assert "token or a password" in c.fix and "--ServerApp.ip=127.0.0.1" in c.fix
        assert res.metrics["fail_count"] == 1
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
