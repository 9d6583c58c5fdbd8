"""SIGTERM, SIGHUP and SIGINT at random moments of every writing command leave no temporary file.

Each trial is a child of a warm nbbench (tests/sigfork.py) that runs one command on a new
directory and gets one signal at a seeded random moment after its start: from the first
instant (before any file exists) to past the run's own length (measured first, unsignalled).
After each: the child ended (no clean-up hung on a lock), and nothing named ``.nbbench-*.tmp``
is anywhere under the directory, and no file of a dataset is half written.  About 24 trials a
command here; ``NBBENCH_STRESS=1`` runs hundreds (``make stress-test``), ``NBBENCH_SIGNAL_SEED``
picks another seed.
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import signal
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from rankproc import clean_env

HERE = Path(__file__).resolve().parent
STRESS = os.environ.get("NBBENCH_STRESS", "") not in ("", "0")
TRIALS = 300 if STRESS else 24
SEED = int(os.environ.get("NBBENCH_SIGNAL_SEED", "19"))
SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
HAS_TORCH = importlib.util.find_spec("torch") is not None


def _dataset_whole(root: Path) -> list[str]:
    """Files of a made dataset that are not whole (a .bin of the wrong size, a shard tar that does not read)."""
    bad = []
    for p in root.rglob("img_*.bin"):
        if p.stat().st_size != 4096:
            bad.append(f"{p.name}: {p.stat().st_size} B")
    for p in root.glob("shard-*.tar"):
        try:
            with tarfile.open(p) as t:
                if len(t.getnames()) != 2 * 8:
                    bad.append(f"{p.name}: {len(t.getnames())} members")
        except tarfile.TarError as exc:
            bad.append(f"{p.name}: {exc}")
    return bad


# name -> (argv with {d} for the directory, what to check of the directory besides leftovers)
COMMANDS = {
    "dd": (["dd", "{d}", "--size", "4M", "--no-save"], None),
    "randread": (["randread", "{d}", "--size", "4M", "--runtime", "0.2", "--ramp", "0", "--no-save"], None),
    "disk": (["disk", "{d}", "--size", "4M", "--runtime", "0.02", "--ramp", "0", "--no-save"], None),
    "checkpoint": (["checkpoint", "{d}", "--size", "8M", "--no-save"], None),
    "make-dataset": (["make-dataset", "{d}/ds", "--files", "300", "--size", "4k", "--classes", "3"], _dataset_whole),
    "make-dataset-shards": (
        ["make-dataset", "{d}/sh", "--shards", "3", "--shard-size", "96k", "--size", "8k"],
        _dataset_whole,
    ),
}


def _leftovers(d: Path) -> list[str]:
    return sorted(str(p.relative_to(d)) for p in d.rglob(".nbbench-*.tmp"))


@pytest.fixture(scope="module")
def forker(tmp_path_factory):
    home = tmp_path_factory.mktemp("home")
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "sigfork.py")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=clean_env(NBBENCH_HOME=str(home)),
    )
    assert json.loads(proc.stdout.readline()) == {"ready": True}

    def trial(argv, delay, sig=signal.SIGTERM, limit=60):
        proc.stdin.write(json.dumps({"argv": argv, "delay": delay, "sig": int(sig), "limit": limit}) + "\n")
        proc.stdin.flush()
        return json.loads(proc.stdout.readline())

    yield trial
    proc.stdin.close()
    proc.wait(30)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_signal_at_any_moment_leaves_no_temporary_file(name, forker, tmp_path):
    if name == "checkpoint" and not HAS_TORCH:
        pytest.skip("the checkpoint probe needs torch, not installed here")
    template, check = COMMANDS[name]
    rng = random.Random(f"{SEED}-{name}")

    def argv(d):
        return [a.replace("{d}", str(d)) for a in template]

    base = tmp_path / "calibrate"
    base.mkdir()
    first = forker(argv(base), None)
    assert first["rc"] == 0 and not first["hung"], first
    assert _leftovers(base) == []
    span = first["elapsed"]
    failures, signalled = [], 0
    for i in range(TRIALS):
        d = tmp_path / f"t{i}"
        d.mkdir()
        sig = SIGNALS[i % len(SIGNALS)]
        # a third right at the start (imports, parsing, the first file), the rest over the whole run
        delay = rng.uniform(0, min(0.05, span)) if i % 3 == 0 else rng.uniform(0, span * 1.1)
        out = forker(argv(d), delay, sig)
        signalled += out["signalled"]
        left = _leftovers(d) + (check(d) if check else [])
        if out["hung"] or left:
            failures.append(
                f"trial {i}: {signal.Signals(sig).name} at {delay * 1000:.0f} ms: rc {out['rc']}"
                f"{', HUNG' if out['hung'] else ''}; left {left}"
            )
    assert not failures, f"{len(failures)} of {TRIALS} trials of {name} (run {span:.2f} s):\n" + "\n".join(failures)
    assert signalled >= TRIALS // 2, f"only {signalled} of {TRIALS} trials were signalled before the run ended"


# ------------------------------------------- the moments themselves, made to happen every time
_HOOK = """
import os, signal, sys, threading
from nbbench import tempfiles
tempfiles.install_handlers()   # from the main thread, as every command does before its probe's thread
where, how = sys.argv[2], sys.argv[3]
real = getattr(os, how)

def hooked(p, *a, **k):   # the name made on disk, and at once the signal: before create() returns
    out = real(p, *a, **k)
    if os.path.basename(str(p)).startswith(tempfiles.PREFIX):
        os.kill(os.getpid(), signal.SIGTERM)
    return out

setattr(os, how, hooked)
make = tempfiles.create if how == "open" else tempfiles.create_dir
if where == "thread":   # a probe's worker thread creates while the main thread waits
    t = threading.Thread(target=make, args=(sys.argv[1], "dd"))
    t.start()
    t.join()
else:
    make(sys.argv[1], "dd")
threading.Event().wait(30)
"""


@pytest.mark.parametrize("how", ["open", "mkdir"])
@pytest.mark.parametrize("where", ["main", "thread"])
def test_sigterm_right_after_the_name_is_made_on_disk(tmp_path, where, how):
    proc = subprocess.run(
        [sys.executable, "-c", _HOOK, str(tmp_path), where, how],
        capture_output=True,
        text=True,
        timeout=60,
        env=clean_env(),
    )
    assert proc.returncode == -signal.SIGTERM, proc.stderr
    assert _leftovers(tmp_path) == []


_LOCKED = """
import os, signal, sys, threading
from nbbench import tempfiles
tempfiles.install_handlers()
tf = tempfiles.create(sys.argv[1], "dd")
held, never = threading.Event(), threading.Event()

def hold():   # another thread inside the registry's lock when the signal comes
    with tempfiles._lock:
        held.set()
        never.wait()

threading.Thread(target=hold, daemon=True).start()
held.wait()
os.kill(os.getpid(), signal.SIGTERM)
never.wait(30)
"""


def test_the_signal_clean_up_never_waits_on_the_registry_lock(tmp_path):
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _LOCKED, str(tmp_path)], capture_output=True, text=True, timeout=20, env=clean_env()
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the SIGTERM clean-up hung on the registry's lock held by another thread")
    assert proc.returncode == -signal.SIGTERM, proc.stderr
    assert _leftovers(tmp_path) == []
