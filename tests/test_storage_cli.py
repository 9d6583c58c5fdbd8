"""The CLI, the magic, and clean-up on a real Ctrl-C / SIGTERM in a subprocess."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

from nbbench.results.hist import PERCENTILES, percentile_key

PY = sys.executable


def _nbbench(*args, timeout=60):
    return subprocess.run(
        [PY, "-m", "nbbench", *args], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )


def _leftovers(d):
    return [n for n in os.listdir(d) if n.startswith(".nbbench-")]


def _held(pid, d):
    """The nbbench temp files in ``d`` that process ``pid`` holds open (as /proc/PID/fd shows them)."""
    out = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith(os.path.join(str(d), ".nbbench-")):
            out.append(link)
    return out


def test_cli_dd_json(tmp_path):
    out = _nbbench("dd", str(tmp_path), "--size", "16M", "--json")
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    assert d["kind"] == "dd" and d["status"] == "ok"
    assert d["metrics"]["write_bytes_per_s"] > 0 and d["metrics"]["read_bytes_per_s"] > 0
    assert d["labels"]["cache"] in ("direct", "buffered-cold", "buffered-warm")
    assert _leftovers(tmp_path) == []


def test_cli_randread_json(tmp_path):
    f = tmp_path / "f.bin"
    f.write_bytes(os.urandom(8 << 20))
    out = _nbbench("randread", str(f), "--runtime", "0.3", "--ramp", "0", "--qd", "4", "--json", "--no-save")
    assert out.returncode == 0, out.stderr
    m = json.loads(out.stdout)["metrics"]
    assert m["iops"] > 0 and all(m[percentile_key(p)] > 0 for p in PERCENTILES)


def test_cli_errors_are_one_line(tmp_path):
    out = _nbbench("dd", str(tmp_path / "missing"))
    assert out.returncode == 1 and "does not exist" in out.stderr and "Traceback" not in out.stderr
    out = _nbbench("randread", "/dev/null")
    assert out.returncode == 1 and "character device" in out.stderr
    out = _nbbench("dd", str(tmp_path), "--size", "lots")
    assert out.returncode == 2 and "not a size" in out.stderr


def test_cli_table_and_make_dataset(tmp_path):
    out = _nbbench("make-dataset", str(tmp_path / "ds"), "--files", "20", "--size", "4k", "--classes", "2")
    assert out.returncode == 0 and "20 files" in out.stdout
    out = _nbbench("files", str(tmp_path / "ds"), "--sample", "10", "--threads", "2")
    assert out.returncode == 0 and re.match(r"[\d.]+ k?files/s · ", out.stdout)  # the answer first
    assert "latency percentiles" in out.stdout and "p99.99=" not in out.stdout
    out = _nbbench("files", str(tmp_path / "ds"), "--sample", "10", "--threads", "2", "--details")
    assert out.returncode == 0 and "p99.99 " in out.stdout and "p99.99=" not in out.stdout


_SLOW_WRITE = (
    "import sys\nfrom nbbench.probes.storage import disk\n"
    "def prog(f, m):\n    print('STARTED', flush=True)\n"
    "disk.dd(sys.argv[1], bs='4k', size='1G', progress=prog, engine=(sys.argv[2:] or ['builtin'])[0])\n"
)


def _wait_started(proc, timeout=30):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        line = proc.stdout.readline()
        if "STARTED" in line:
            return
    raise AssertionError("the probe did not start")


@pytest.mark.parametrize("engine", ["builtin", "dd"])
def test_keyboard_interrupt_in_main_thread_removes_temp_file(tmp_path, engine):
    if engine == "dd" and not shutil.which("dd"):
        pytest.skip("no dd")
    proc = subprocess.Popen(
        [PY, "-c", _SLOW_WRITE, str(tmp_path), engine], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    _wait_started(proc)
    if engine == "builtin":  # descriptors only: the name is gone while the file is written
        held = _held(proc.pid, tmp_path)
        assert held and all(h.endswith(" (deleted)") for h in held), held
        assert _leftovers(tmp_path) == []
    else:  # dd opens it by name
        assert _leftovers(tmp_path), "the temp file should exist while writing"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert "KeyboardInterrupt" in err
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("engine", ["builtin", "dd"])
def test_sigterm_removes_temp_file_and_chains(tmp_path, engine):
    if engine == "dd" and not shutil.which("dd"):
        pytest.skip("no dd")
    marker = tmp_path / "prev-handler-ran"
    code = (
        "import signal, sys\n"
        f"signal.signal(signal.SIGTERM, lambda s, f: (open({str(marker)!r}, 'w').close(), sys.exit(3)))\n"
        + _SLOW_WRITE.replace("import sys\n", "")
    )
    d = tmp_path / "work"
    d.mkdir()
    proc = subprocess.Popen([PY, "-c", code, str(d), engine], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_started(proc)
    assert _held(proc.pid, d) or _leftovers(d), "the probe should be writing its temp file"
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=30)
    assert _leftovers(d) == []
    assert marker.exists() and proc.returncode == 3


def test_cli_ctrl_c_is_interrupted_result(tmp_path):
    proc = subprocess.Popen(
        [PY, "-m", "nbbench", "dd", str(tmp_path), "--bs", "4k", "--size", "1G", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    t0 = time.monotonic()
    while not _held(proc.pid, tmp_path) and time.monotonic() - t0 < 30:
        time.sleep(0.05)
    assert _held(proc.pid, tmp_path), "the probe never opened its temp file"
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    d = json.loads(out)
    assert d["status"] == "interrupted" and d["metrics"]["write_bytes_per_s"] > 0
    assert _leftovers(tmp_path) == []


def test_magic_dd_returns_result(tmp_path):
    from IPython.core.error import UsageError
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "nbbench")
    r = ip.run_line_magic("iobench", f"dd {tmp_path} --size 16M -o -q")
    assert r.kind == "dd" and r.metrics["read_bytes_per_s"] > 0 and r.run_id is not None
    with pytest.raises(UsageError, match="FIFO|character device"):
        ip.run_line_magic("iobench", "randread /dev/null")
    assert _leftovers(tmp_path) == []
