"""The launching process of ``--ranks 2`` ended from outside: SIGTERM stops every rank, their files
and the launcher's private directory are removed, and the process ends by SIGTERM as before;
SIGKILL (nothing can run in the launcher) still leaves no rank running and no rank's file: the
ranks see their parent gone and wind up, and the next launch sweeps the private directory."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import psutil
import pytest
from rankproc import PY, clean_env

TIMEOUT = 180


def _named(d) -> list[str]:
    return sorted(n for n in os.listdir(d) if n.startswith(".nbbench-"))


def _start(tmp_path):
    """A 60 s randread of a file per rank, under a TMPDIR of its own; returns (process, data dir, tmpdir,
    the ranks) once both ranks read their files."""
    data, own_tmp = tmp_path / "data", tmp_path / "tmp"
    data.mkdir()
    own_tmp.mkdir()
    proc = subprocess.Popen(
        [
            PY,
            "-m",
            "nbbench",
            "randread",
            data,
            "--size",
            "16M",
            "--runtime",
            "60",
            "--ramp",
            "0",
            "--file-per-rank",
            "--ranks",
            "2",
            "--json",
            "--no-save",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env(TMPDIR=str(own_tmp)),
        stdin=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + TIMEOUT
    ranks: list[psutil.Process] = []
    while time.monotonic() < deadline and proc.poll() is None:
        ranks = psutil.Process(proc.pid).children()
        if len(ranks) == 2 and _reading(ranks, data):
            break
        time.sleep(0.05)
    assert proc.poll() is None and len(ranks) == 2, "the ranks never started reading"
    return proc, data, own_tmp, ranks


def _reading(ranks, data) -> bool:
    """Both ranks hold their temporary file open (named, or already unlinked: "… (deleted)")."""
    prefix = os.path.join(str(data), ".nbbench-")
    for r in ranks:
        try:
            fds = os.listdir(f"/proc/{r.pid}/fd")
            if not any(os.readlink(f"/proc/{r.pid}/fd/{fd}").startswith(prefix) for fd in fds):
                return False
        except OSError:
            return False
    return True


@pytest.mark.slow
def test_sigterm_to_the_launcher_stops_every_rank_and_removes_everything(tmp_path):
    proc, data, own_tmp, ranks = _start(tmp_path)
    assert [n for n in os.listdir(own_tmp) if n.startswith(".nbbench-ranks-")]  # its private directory
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == -signal.SIGTERM, err[-2000:]
    gone, alive = psutil.wait_procs(ranks, timeout=0)  # the launcher waited for them before it ended
    assert alive == []
    assert _named(data) == []
    assert [n for n in os.listdir(own_tmp) if "nbbench" in n] == []


@pytest.mark.slow
def test_a_killed_launcher_leaves_no_rank_running_and_its_directory_is_swept_next_time(tmp_path):
    proc, data, own_tmp, ranks = _start(tmp_path)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=TIMEOUT)
    gone, alive = psutil.wait_procs(ranks, timeout=60)  # they notice their parent is gone and wind up
    assert alive == [], "ranks still running after their launcher was killed"
    assert _named(data) == []
    left = [n for n in os.listdir(own_tmp) if n.startswith(".nbbench-ranks-")]
    assert len(left) == 1  # nothing could remove it ...
    out = subprocess.run(
        [PY, "-m", "nbbench", "dd", data, "--size", "1M", "--ranks", "1", "--json", "--no-save"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        stdin=subprocess.DEVNULL,
        env=clean_env(TMPDIR=str(own_tmp)),
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert [n for n in os.listdir(own_tmp) if "nbbench" in n] == []  # ... until the next launch swept it
    assert any(f"from {own_tmp}" in w for w in json.loads(out.stdout)["warnings"])  # and said so
