"""Every bench script still imports what it uses and parses its options: `--help` exits 0.

The benches are never timed in tests (the machine is shared), but a bench that no longer starts
(a module moved in a restructure: vs_dd.py imported nbbench.probes.pathcheck after it became
probes/target.py) is only found when someone needs its figures."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = sorted(p.name for p in (ROOT / "bench").glob("*.py") if not p.name.startswith("_"))


def test_the_benches_are_found():
    assert {
        "vs_dd.py",
        "vs_fio.py",
        "vs_fio_shards.py",
        "loader_overhead.py",
        "monitor_overhead.py",
        "ranks_overhead.py",
        "gpu_check.py",
    } <= set(SCRIPTS)


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_bench_starts_and_parses_its_options(script):
    env = dict(os.environ, PYTHONPATH=str(ROOT), MPLBACKEND="Agg")
    p = subprocess.run(
        [sys.executable, str(ROOT / "bench" / script), "--help"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    assert "usage:" in p.stdout
