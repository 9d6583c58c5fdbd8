"""Faults injected under running probes: each ends in one line saying what happened and what to
do, leaves nothing behind and loses nothing saved before.  Mounts are made in a private mount
namespace (``unshare -m``) so a test that dies leaves no mount; where this machine cannot inject a
fault the test is skipped with the reason.  (A rank killed mid-run: tests/test_ranks.py and
tests/test_ckpt_ranks.py, ``test_a_rank_killed_mid_*``.)"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rankproc import clean_env

HERE = Path(__file__).resolve().parent
PY = sys.executable


def _why_no_namespace() -> str | None:
    if os.geteuid() != 0:
        return "mounting a test filesystem needs root (a private mount namespace of its own)"
    for tool in ("unshare", "mount", "mkfs.ext4", "e2fsck"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    if not os.path.exists("/dev/loop-control"):
        return "this machine has no loop devices (/dev/loop-control) to hold a test filesystem"
    probe = subprocess.run(["unshare", "-m", "--propagation", "private", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"unshare -m does not work here: {probe.stderr.strip() or probe.returncode}"
    return None


def _inject(scenario: str, tmp_path) -> dict:
    why = _why_no_namespace()
    if why:
        pytest.skip(why)
    out = subprocess.run(
        ["unshare", "-m", "--propagation", "private", PY, str(HERE / "faultwork.py"), scenario, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        env=clean_env(),
    )
    if out.returncode != 0 and "mount" in out.stderr and "loop" in out.stderr:
        pytest.skip(f"a loop-mounted filesystem cannot be made here: {out.stderr.strip().splitlines()[-1]}")
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)


def _one_line_error(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    lines = [ln for ln in stderr.splitlines() if ln.startswith("nbbench ")]
    assert len(lines) == 1, stderr
    return lines[0]


@pytest.mark.slow
def test_the_filesystem_filling_up_mid_write(tmp_path):
    r = _inject("enospc", tmp_path)
    assert r["injected"], "the filler never ran: the write ended before it had begun"
    assert r["rc"] == 1, r
    line = _one_line_error(r["stderr"])
    assert re.search(
        r"nbbench dd: no space left on \S+/mnt while writing: [0-9.]+ [KMG]?i?B written of 320 MiB; "
        r"free space [0-9.]+ [KMG]?i?B \(the filesystem filled up: free some space there",
        line,
    ), line
    assert r["left"] == [] and r["earlier_kept"], r


@pytest.mark.slow
def test_the_filesystem_turning_read_only_mid_write(tmp_path):
    r = _inject("rofs", tmp_path)
    assert r["injected"], "the write ended before the filesystem could be aborted"
    assert r["rc"] == 1, r
    line = _one_line_error(r["stderr"])
    assert re.search(
        r"nbbench dd: the filesystem holding \S+/mnt became read-only while writing: [0-9.]+ [KMG]?i?B "
        r"written of 320 MiB \(the kernel does this after a disk error: look at dmesg",
        line,
    ), line
    # what the read-only filesystem kept (a name it could not remove) the next run sweeps
    assert r["next_rc"] == 0, r["next_stderr"]
    assert r["left"] == [] and r["earlier_kept"], r


@pytest.mark.slow
def test_an_io_error_mid_read(tmp_path):
    """A device whose second half answers every read with EIO (device-mapper's ``error`` target)."""
    why = _why_no_namespace()
    if why:
        pytest.skip(why)
    if not os.path.exists("/dev/mapper/control") or shutil.which("dmsetup") is None:
        pytest.skip("no device-mapper here (/dev/mapper/control or dmsetup missing): an I/O error cannot be injected")
    img = tmp_path / "disk.img"
    with open(img, "wb") as f:
        f.truncate(64 << 20)
    loop = subprocess.run(["losetup", "--find", "--show", str(img)], capture_output=True, text=True)
    if loop.returncode != 0:
        pytest.skip(f"no loop device for the test disk: {loop.stderr.strip()}")
    dev, name = loop.stdout.strip(), f"nbbench-eio-{os.getpid()}"
    half = (64 << 20) // 512 // 2
    try:
        table = f"0 {half} linear {dev} 0\n{half} {half} error\n"
        made = subprocess.run(["dmsetup", "create", name], input=table, capture_output=True, text=True)
        if made.returncode != 0:
            pytest.skip(f"dmsetup cannot create a device here: {made.stderr.strip()}")
        try:
            out = subprocess.run(
                [PY, "-m", "nbbench", "dd", f"/dev/mapper/{name}", "--size", "64M", "--no-save"],
                capture_output=True,
                text=True,
                timeout=300,
                env=clean_env(),
            )
        finally:
            subprocess.run(["dmsetup", "remove", "--retry", name], capture_output=True)
    finally:
        subprocess.run(["losetup", "-d", dev], capture_output=True)
    assert out.returncode == 1, out.stderr
    line = _one_line_error(out.stderr)
    assert f"an I/O error on /dev/mapper/{name} while reading" in line and "dmesg" in line, line


# ------------------------------------------------ the kernel restarted in the middle of a probe
@pytest.mark.slow
@pytest.mark.parametrize("now", [False, True], ids=["restart", "killed-and-restarted"])
def test_a_kernel_restart_mid_probe_leaves_nothing(tmp_path, now):
    """Restart asks the kernel to end (its clean-up runs); a forced restart kills it, and what it
    was writing is swept by the next probe in that directory, in the new kernel."""
    pytest.importorskip("torch")
    jc = pytest.importorskip("jupyter_client")
    km = jc.KernelManager(kernel_name="python3")
    km.start_kernel(env=clean_env(NBBENCH_HOME=str(tmp_path / "home"), MPLBACKEND="Agg"))
    try:
        kc = km.client()
        kc.start_channels()
        kc.wait_for_ready(timeout=120)
        data = tmp_path / "data"
        data.mkdir()
        kc.execute(f"%load_ext nbbench\n%iobench checkpoint {data} --size 512M --no-save")
        pid = None
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:  # the probe's own file, being written
            names = [n for n in os.listdir(data) if n.startswith(".nbbench-ckptr0-")]
            if names:
                pid = int(names[0].split("-")[-2])
                break
            time.sleep(0.01)
        assert pid is not None, "the probe never started writing"
        km.restart_kernel(now=now)  # the notebook's "Restart kernel" (now: killed at once)
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)  # the old kernel is gone
        if now:  # killed: its file is still there, for the next probe to sweep
            assert [n for n in os.listdir(data) if n.startswith(".nbbench-ckptr0-")], "the kill left nothing to sweep"
            kc.wait_for_ready(timeout=120)
            reply = kc.execute_interactive(
                f"%load_ext nbbench\n%iobench checkpoint {data} --size 8M --no-dcp --no-save",
                timeout=300,
                output_hook=lambda msg: None,
            )
            assert reply["content"]["status"] == "ok", reply["content"]
        assert [n for n in os.listdir(data) if n.startswith(".nbbench-")] == []
        kc.stop_channels()
    finally:
        km.shutdown_kernel(now=True)
