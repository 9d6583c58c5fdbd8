"""The GPU kit's node checks (bench/_gpukit_node.py) judged without a GPU: collectives from a result built
the way the ranks build it, copies, health from NVML fakes; and ``--dry-run`` listing the new checks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
sys.path.insert(0, str(BENCH))

from _gpukit_lines import FAIL, NA, PASS  # noqa: E402
from _gpukit_node import judge_collectives, judge_copies, judge_health  # noqa: E402


def _coll(n=8, busbw=380e9, wrong=0, status="ok"):
    f = 2 * (n - 1) / n
    rows = (
        [
            {"op": "all_reduce", "busbw_bytes_per_s": busbw, "algbw_bytes_per_s": busbw / f},
            {"op": "all_gather", "busbw_bytes_per_s": busbw / 2, "algbw_bytes_per_s": busbw / 2 / ((n - 1) / n)},
        ]
        if n > 1
        else [{"op": "broadcast", "busbw_bytes_per_s": 9e9, "algbw_bytes_per_s": 9e9}]
    )
    return {
        "status": "ok",
        "samples": {"rows": rows},
        "metrics": {"wrong_count": wrong, "all_reduce_busbw_bytes_per_s": busbw},
        "extra": {
            "expected_link": {"kind": "nvlink", "name": "NVLink 4.0 × 18 links", "bytes_per_s": 450e9},
            "transport": {"main": "P2P", "transports": {"P2P": 24}},
            "nccl_env": {},
            "verdicts": [{"check": "all_reduce busbw vs link", "status": status, "message": "m"}],
        },
    }


def test_collectives_lines():
    got = {ln.name: ln for ln in judge_collectives(0, _coll(), 8)}
    assert got["collectives.factors"].status == PASS and got["collectives.check"].status == PASS
    assert got["collectives.all_reduce"].status == PASS and "380.0 GB/s" in got["collectives.all_reduce"].figure
    assert "all_reduce_perf -b 8 -e 128M -f 2 -g 8" in got["collectives.all_reduce"].why
    assert got["collectives.transport"].figure == "NCCL used P2P"
    bad = {ln.name: ln for ln in judge_collectives(0, _coll(wrong=4, status="warn"), 8)}
    assert bad["collectives.check"].status == FAIL and bad["collectives.all_reduce"].status == FAIL
    one = {ln.name: ln for ln in judge_collectives(0, _coll(n=1, busbw=0.0), 1)}
    assert one["collectives.all_reduce"].status == NA
    (failed,) = judge_collectives(1, None, 8, "RuntimeError: NCCL error")
    assert failed.status == FAIL and "NCCL error" in failed.why


def test_copies_lines():
    data = {
        "status": "ok",
        "metrics": {
            "h2d_pinned_bytes_per_s": 25e9,
            "h2d_pageable_bytes_per_s": 9e9,
            "d2h_pinned_bytes_per_s": 26e9,
            "d2h_pageable_bytes_per_s": 30e9,
            "p2p_min_bytes_per_s": 300e9,
        },
        "extra": {
            "matrix": {
                "bw": [[None, 300e9], [310e9, None]],
                "bw_host": [[None, 20e9], [20e9, None]],
                "peer": [[None, True], [True, None]],
            }
        },
    }
    got = {ln.name: ln for ln in judge_copies(0, data)}
    assert got["copies.h2d"].status == PASS and got["copies.d2h"].status == FAIL  # pinned slower than pageable
    assert got["copies.matrix"].status == PASS and "2x2" in got["copies.matrix"].figure


def test_health_lines():
    data = {
        "extra": {
            "health": {
                "loaded": True,
                "findings": [
                    {"gpu": 0, "check": "PCIe link under load", "status": "ok", "message": "Gen5 x16 under load"},
                    {"gpu": 1, "check": "PCIe link under load", "status": "fail", "message": "Gen1 x4 under load"},
                    {"gpu": None, "check": "Xid during the run", "status": "ok", "message": "no Xid"},
                ],
            }
        }
    }
    got = {ln.name: ln for ln in judge_health(0, data)}
    assert got["health.gpu0"].status == PASS and got["health.gpu1"].status == FAIL
    assert "Gen1 x4" in got["health.gpu1"].why and got["health.node"].status == PASS
    (ln,) = judge_health(0, {"extra": {"health": {"loaded": False, "load_error": "RuntimeError: x"}}})
    assert ln.status == FAIL and "no reading under load" in ln.why


def test_dry_run_lists_the_node_checks():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run(
        [sys.executable, str(BENCH / "gpu_check.py"), "--dry-run"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=str(ROOT),
    )
    assert out.returncode == 0, out.stderr
    for name in ("copies", "health", "collectives"):
        (ln,) = [s for s in out.stdout.splitlines() if s.startswith(f"SKIP  {name}: would run ")]
        assert "nbbench" in ln
    import gpu_check

    assert sum(c.timeout_s for c in gpu_check.CHECKS if c.name in ("copies", "health", "collectives")) <= 120
    assert gpu_check.BUDGET_S < 300  # one prepared command under 5 minutes


@pytest.mark.parametrize("name", ["copies", "health", "collectives"])
def test_node_checks_point_at_functions_that_exist(name):
    import importlib

    import gpu_check

    mod, fn = gpu_check.BY_NAME[name].run.split(":")
    assert callable(getattr(importlib.import_module(mod), fn))
