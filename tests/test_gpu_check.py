"""bench/gpu_check.py, the GPU validation kit, on a machine without a GPU.

* the verdicts: fake measured figures in, PASS inside the expected range, FAIL outside,
  N/A (or FAIL, where a figure must exist) when missing;
* the parts that read nbbench's results, on fake torch / NVML (the gpu check, the monitor)
  and on the CPU (bench_loader with a fake device step, sweep, checkpoint and ranks through
  the CLI with --device cpu / gloo, the notebook with a CPU loop): every name they read
  exists in what nbbench returns today;
* the runner: a check that hangs, raises or crashes is that check's FAIL within its limit,
  the budget stops what would overrun it;
* the dry run (no CUDA here): exit 0, every check listed with what it would run and why it
  cannot, and nothing of the notebook stack imported for it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from fakes import FakePynvml, FakeTorch, fake_device

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
sys.path.insert(0, str(BENCH))

import _gpukit_device as device  # noqa: E402
import _gpukit_pipeline as pipeline  # noqa: E402
import gpu_check  # noqa: E402
from _gpukit_lines import FAIL, NA, PASS, SKIP, GiB, Line, MiB, summary  # noqa: E402
from _gpukit_pipeverdicts import (  # noqa: E402
    judge_au_sum,
    judge_checkpoint,
    judge_notebook,
    judge_ranks,
    judge_step_length,
    judge_sweep,
    judge_vs_emulated,
    plot_gpu_means,
)
from _gpukit_verdicts import (  # noqa: E402
    judge_devices,
    judge_gpm,
    judge_link,
    judge_matmul,
    judge_mem_rise,
    judge_overlap,
    judge_pinned_vs_pageable,
    judge_process_memory,
    judge_util,
    judge_verdict,
    pcie_bytes_per_s,
    peak_for,
)

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 2048


class Ctx:
    """What a check's run_* gets, collecting its lines in memory."""

    def __init__(self, tmp_path, timeout=60.0):
        self.lines: list[Line] = []
        self.scratch, self.artifacts, self.timeout, self.repo = str(tmp_path), None, timeout, str(ROOT)

    def emit(self, line):
        self.lines.append(line)

    @contextmanager
    def guard(self, name):
        try:
            yield
        except Exception as exc:  # noqa: BLE001
            self.lines.append(Line(name, FAIL, why=f"{type(exc).__name__}: {exc}"))

    def by_name(self):
        return {ln.name: ln for ln in self.lines}


# ------------------------------------------------------------------ verdicts
def test_matmul_against_the_published_dense_peak():
    h100 = "NVIDIA H100 80GB HBM3"
    assert peak_for(h100).label == "H100 SXM" and peak_for("NVIDIA H100 PCIe").label == "H100 PCIe"
    assert peak_for("NVIDIA H200 NVL").label == "H200 NVL" and peak_for("NVIDIA A10G") is None
    ok = judge_matmul("bf16", 700e12, h100, 8192)
    assert ok.status == PASS and "TFLOP/s" in ok.figure and "989.5" in ok.expected and "datasheet" in ok.expected
    assert judge_matmul("bf16", 400e12, h100, 8192).status == FAIL  # below 0.6 of the peak
    assert judge_matmul("fp32", 90e12, h100, 8192).status == FAIL  # above it: the timing is wrong
    assert judge_matmul("fp32", 50e12, h100, 8192).status == PASS
    assert judge_matmul("bf16", None, h100, 8192).status == NA  # no bf16 on this GPU
    assert judge_matmul("tf32", None, h100, 8192).status == FAIL  # must have been measured
    assert judge_matmul("tf32", 50e12, "NVIDIA Foo", 8192).status == NA  # no published peak
    assert judge_matmul("bf16", 20e12, "Tesla T4", 8192).status == NA  # no bf16 tensor cores


def test_copies_against_the_pcie_link_and_pageable():
    raw, practical = pcie_bytes_per_s(5, 16)
    assert raw == pytest.approx(63.0e9, rel=0.01) and practical == pytest.approx(0.8 * raw)
    assert judge_link("h2d", 50e9, 5, 16, "NVIDIA H100 80GB HBM3").status == PASS
    assert judge_link("h2d", 12e9, 5, 16, "NVIDIA H100 80GB HBM3").status == FAIL
    assert judge_link("h2d", 80e9, 5, 16, "NVIDIA H100 80GB HBM3").status == FAIL  # faster than the link
    assert judge_link("h2d", 50e9, None, 16, "NVIDIA H100 80GB HBM3").status == NA  # the link unknown
    assert judge_link("h2d", 200e9, 5, 16, "NVIDIA GH200 480GB").status == NA  # NVLink-C2C, not PCIe
    assert judge_link("h2d", None, 5, 16, "x").status == FAIL
    assert judge_pinned_vs_pageable("h2d", 10e9, 25e9).status == PASS
    assert judge_pinned_vs_pageable("h2d", 10e9, 9e9).status == FAIL
    assert judge_pinned_vs_pageable("h2d", None, 9e9).status == FAIL


def test_overlap():
    assert judge_overlap(10.0, 10.0, 10.5, 512 * MiB).status == PASS  # the copy hidden behind the kernel
    assert judge_overlap(10.0, 10.0, 19.5, 512 * MiB).status == FAIL  # one after the other
    assert judge_overlap(10.0, 10.0, 5.0, 512 * MiB).status == FAIL  # faster than either alone


def test_gpu_check_verdicts_and_devices():
    assert judge_verdict({"check": "driver", "status": "ok", "message": "m"}).status == PASS
    warn = judge_verdict({"check": "PCIe link [0]", "status": "warn", "message": "x8"})
    assert warn.status == PASS and warn.name == "gpu.verdict.pcie_link_0"
    no_nvml = {"check": "driver", "status": "fail", "message": "pynvml is not installed: pip"}
    assert judge_verdict(no_nvml).status == SKIP
    assert judge_verdict({"check": "CUDA version fit", "status": "fail", "message": "m"}).status == FAIL
    d = {
        "index": 0,
        "nvml_index": 3,
        "name": "NVIDIA H100 80GB HBM3",
        "compute_capability": "9.0",
        "memory_total_bytes": 80 * GiB,
        "memory_free_bytes": 79 * GiB,
        "multiprocessors": 132,
    }
    assert judge_devices([d], ["NVIDIA H100 80GB HBM3"], False).status == PASS
    # NVML's facts of another GPU merged into torch's device: the names disagree
    assert judge_devices([dict(d, name="NVIDIA A100-SXM4-80GB")], ["NVIDIA H100 80GB HBM3"], True).status == FAIL
    assert judge_devices([dict(d, nvml_index=None)], ["NVIDIA H100 80GB HBM3"], True).status == FAIL
    assert judge_devices([dict(d, multiprocessors=None)], ["NVIDIA H100 80GB HBM3"], False).status == FAIL


def test_monitor_verdicts():
    busy = {"n": 30, "mean": 98.0, "min": 95, "max": 100}
    assert judge_util("u", busy, True, "s").status == PASS
    assert judge_util("u", dict(busy, mean=60.0), True, "s").status == FAIL
    assert judge_util("u", {"n": 20, "mean": 0.0, "min": 0, "max": 0}, False, "s").status == PASS
    assert judge_util("u", busy, False, "s").status == FAIL
    assert judge_util("u", {"n": 0}, True, "s").status == FAIL
    assert judge_mem_rise("m", 1 * GiB, 3 * GiB, 2 * GiB, "w").status == PASS
    assert judge_mem_rise("m", 1 * GiB, 1 * GiB + 10 * MiB, 2 * GiB, "w").status == FAIL
    assert judge_mem_rise("m", None, 3 * GiB, 2 * GiB, "w").status == FAIL
    assert judge_gpm({"n": 30, "mean": 85.0}, None, True).status == PASS
    assert judge_gpm({"n": 30, "mean": 20.0}, None, True).status == FAIL
    assert judge_gpm({"n": 30, "mean": 140.0}, None, True).status == FAIL  # above 100 %: read wrongly
    assert judge_gpm(None, "GPM is not supported on this GPU", False).status == NA  # pre-Hopper: N/A, not FAIL
    assert judge_gpm({"n": 0}, None, True).status == FAIL  # opened but gave nothing
    assert judge_process_memory(3 * GiB, 2560 * MiB, 1).status == PASS
    assert judge_process_memory(1 * GiB, 2560 * MiB, 1).status == FAIL
    assert judge_process_memory(8 * GiB, 2560 * MiB, 1).status == FAIL
    na = judge_process_memory(None, 2560 * MiB, 1, "a PID namespace of its own")
    assert na.status == NA and "namespace" in na.why


def test_loader_and_sweep_verdicts():
    assert judge_au_sum("c", 49.0, 50.5).status == PASS
    assert judge_au_sum("c", 49.0, 30.0).status == FAIL
    assert judge_au_sum("c", 49.0, None).status == FAIL
    # input-bound: 40 ms of wait, 20 ms of step queued asynchronously: AU = 20 / 40
    assert judge_vs_emulated("i", 51.0, 0.040, 0.020, 33.0).status == PASS
    assert judge_vs_emulated("i", 33.0, 0.040, 0.020, 33.0).status == FAIL  # as if the step blocked the host
    assert judge_vs_emulated("c", 99.0, 0.005, 0.020, 80.0).status == PASS
    assert judge_vs_emulated("c", None, 0.005, 0.020, 80.0).status == FAIL
    assert judge_step_length(0.021, 0.02, 100).status == PASS
    assert judge_step_length(0.05, 0.02, 100).status == FAIL
    assert judge_step_length(None, 0.02, None).status == FAIL
    rows = [
        {"pin_memory": False, "status": "ok", "samples_per_s": 1000.0},
        {"pin_memory": True, "status": "ok", "samples_per_s": 1200.0},
    ]
    assert judge_sweep(rows).status == PASS and "1.20" in judge_sweep(rows).figure
    assert judge_sweep(rows[:1]).status == FAIL
    assert judge_sweep([rows[0], dict(rows[1], status="failed", reason="bus error")]).status == FAIL
    assert judge_sweep([rows[0], dict(rows[1], status="skipped", reason="shm")]).status == SKIP


def test_notebook_verdicts():
    text = (
        "nbbench monitor\n4.1 s\nGPU kernel-active % (share of time a kernel ran) (%)\n"
        "  GPU3 kernel-active              last   97.00  mean   93.20  max  100\n"
    )
    assert plot_gpu_means(text) == {3: 93.2}
    assert judge_notebook(PNG, text, {"3": 91.0}, 3, []).status == PASS
    assert judge_notebook(PNG, text, {"3": 12.0}, 3, []).status == FAIL  # the GPU sat idle
    assert judge_notebook(PNG, text, {"0": 91.0}, 0, []).status == FAIL  # the plot shows another GPU
    assert judge_notebook(None, text, {"3": 91.0}, 3, []).status == FAIL
    assert judge_notebook(b"GIF89a", text, {"3": 91.0}, 3, []).status == FAIL
    assert judge_notebook(PNG, text, {"3": 91.0}, 3, ["cell 1: NameError: a"]).status == FAIL
    assert judge_notebook(PNG, text, {"3": 91.0, "0": 0.0}, None, []).status == PASS  # the busiest taken


def _ranks_json(n=2, backend="nccl", device="cuda", status="ok"):
    return {
        "status": status,
        "reason": None,
        "params": {"ranks": n, "device": device},
        "labels": {"backend": backend, "tensor_device": f"{device}:0" if device == "cuda" else device},
        "metrics": {"state_bytes": 64 * MiB, "write_bytes_per_s": 2e9, "read_bytes_per_s": 3e9},
        "extra": {"ranks": [{"rank": r, "status": "ok"} for r in range(n)]},
    }


def test_ranks_and_checkpoint_verdicts():
    assert judge_ranks(0, _ranks_json(), 2).status == PASS
    one = judge_ranks(0, _ranks_json(1), 1)
    assert one.status == PASS and "one GPU" in one.why and "one rank" in one.expected
    assert judge_ranks(0, _ranks_json(backend="gloo"), 2).status == FAIL
    assert judge_ranks(0, _ranks_json(device="cpu"), 2).status == FAIL
    assert judge_ranks(0, _ranks_json(1), 2).status == FAIL  # a rank per GPU, not fewer
    bad = _ranks_json()
    bad["extra"]["ranks"][1] = {"rank": 1, "status": "failed", "reason": "NCCL error"}
    assert judge_ranks(0, bad, 2).status == FAIL
    no = judge_ranks(1, None, 2, "Traceback\nRuntimeError: boom\n")
    assert no.status == FAIL and "boom" in no.why
    ck = {
        "status": "ok",
        "params": {"device": "cuda"},
        "labels": {"tensor_device": "cuda"},
        "metrics": {"state_bytes": 256 * MiB, "write_bytes_per_s": 1e9, "read_bytes_per_s": 2e9},
    }
    assert judge_checkpoint(0, ck).status == PASS
    assert judge_checkpoint(0, dict(ck, labels={"tensor_device": "cpu"})).status == FAIL
    assert judge_checkpoint(0, dict(ck, status="failed", reason="torch.load failed: x")).status == FAIL


def test_summary_counts_and_exit_code():
    counts, code = summary([Line("a", PASS), Line("b", NA), Line("c", SKIP)])
    assert code == 0 and counts == {PASS: 1, FAIL: 0, NA: 1, SKIP: 1}
    assert summary([Line("a", PASS), Line("b", FAIL)])[1] == 1


# ------------------------------------------------- what nbbench returns, read
def test_gpu_lines_read_what_the_gpu_check_returns(tmp_path):
    """run_gpu on a fake CUDA torch and a fake NVML: every figure it judges is found (22 ms per
    timed call: 50 TFLOP/s, 12 GB/s)."""
    from nbbench.nvml import Nvml

    torch = FakeTorch(step_ms=22.0, props={0: {"pci_domain_id": 0, "pci_bus_id": 0x4F, "pci_device_id": 0}})
    nv = Nvml(FakePynvml(devices=[fake_device(pci=(0, 0x07, 0), name="NVIDIA L4"), fake_device(pci=(0, 0x4F, 0))]))
    ctx = Ctx(tmp_path)
    device.run_gpu(ctx, torch=torch, nvml=nv)
    got = ctx.by_name()
    assert got["gpu.available"].status == PASS
    assert got["gpu.devices"].status == PASS and "= NVML 1" in got["gpu.devices"].figure  # matched by PCI address
    assert got["gpu.versions"].status == PASS
    assert got["gpu.matmul_fp32"].status == PASS and "50.0 TFLOP/s" in got["gpu.matmul_fp32"].figure
    assert got["gpu.matmul_bf16"].status == FAIL  # 50 of 989.5
    assert "12.2 GB/s" in got["gpu.h2d_pinned"].figure and "gen5 x16" in got["gpu.h2d_pinned"].expected
    assert got["gpu.d2h_pinned_vs_pageable"].status == FAIL  # the fake copies take the same
    assert {"gpu.verdict.torch_build", "gpu.verdict.driver"} <= set(got)
    assert not any(ln.name == "gpu.check" for ln in ctx.lines)  # no exception


def test_monitor_lines_read_what_a_monitor_keeps(tmp_path):
    """A real Monitor over a fake NVML GPU at a steady 95 % kernel-active and unchanging memory."""
    from nbbench.monitor import Monitor
    from nbbench.nvml import Nvml

    mon = Monitor(interval=0.05, gpus=[0], nvml=Nvml(FakePynvml(devices=[fake_device(util=95)])), net="none")
    mon.start()
    time.sleep(0.3)
    mon.stop()
    whole = (mon.t_start - 1.0, mon.t_stop + 1.0)
    lines = device.monitor_lines(
        mon, mon.result(), 0, dict.fromkeys(("base", "held", "busy", "after"), whole), 0, 0, os.getpid()
    )
    got = {ln.name: ln for ln in lines}
    assert list(got) == list(device.MONITOR_LINES)
    assert got["monitor.kernel_active_busy"].status == PASS and "95.0 %" in got["monitor.kernel_active_busy"].figure
    assert got["monitor.kernel_active_after"].status == FAIL  # still 95 %: not idle
    assert got["monitor.mem_used_rise"].status == PASS  # nothing allocated, nothing rose
    assert got["monitor.gpm_sm_active"].status == NA  # the fake has no GPM
    # the per-process table ran, but this NVML lists no processes: N/A with NVML's reason
    proc = got["monitor.process_gpu_memory"]
    assert proc.status == NA and "memory per process is N/A" in proc.why


class FakeDeviceStep:
    """The CudaStep protocol on a device clock kept in host time: each step is queued at once
    and runs ``step_s`` after the one before it; the host waits only when 6 steps are queued."""

    label = "gpu:fake"

    def __init__(self, step_s=pipeline.STEP_S):
        self.step_s, self.reps = step_s, 7
        self.free_at, self.t0 = 0.0, None
        self.starts, self.ends = [], []

    def setup(self):
        pass

    def __call__(self, batch, samples=None):
        now = time.perf_counter()
        if self.t0 is None:
            self.t0 = now
        start = max(now, self.free_at)
        self.free_at = start + self.step_s
        if self.free_at - now > 6 * self.step_s:
            time.sleep(self.free_at - now - 6 * self.step_s)
        self.starts.append(start - self.t0)
        self.ends.append(self.free_at - self.t0)

    def finish(self):
        gaps = [0.0] + [max(0.0, s - e) for s, e in zip(self.starts[1:], self.ends)]
        return {
            "gpu_busy_s": [e - s for s, e in zip(self.starts, self.ends)],
            "gpu_gap_s": gaps,
            "gpu_start_s": list(self.starts),
            "gpu_end_s": list(self.ends),
        }


def test_loader_check_reads_what_bench_loader_returns(tmp_path):
    import torch

    ctx = Ctx(tmp_path)
    pipeline.run_loader(ctx, gpu_step=FakeDeviceStep, batch=torch.zeros(4, 8), monitor=False, steps=15)
    got = ctx.by_name()
    assert {
        "loader.input_bound.au_plus_starvation",
        "loader.compute_bound.au_plus_starvation",
        "loader.gpu_step_length",
        "loader.input_bound.vs_emulated",
        "loader.compute_bound.vs_emulated",
    } == set(got)
    # the device window is exactly the steps' busy time and the gaps before them
    assert got["loader.input_bound.au_plus_starvation"].status == PASS
    assert got["loader.compute_bound.au_plus_starvation"].status == PASS
    assert got["loader.gpu_step_length"].status == PASS and "20.0 ms per step" in got["loader.gpu_step_length"].figure
    for cfg in ("input_bound", "compute_bound"):  # the figures, not their timing, are asserted
        ln = got[f"loader.{cfg}.vs_emulated"]
        assert ln.status in (PASS, FAIL) and ln.figure.startswith("AU ") and "emulated" in ln.figure


def test_sweep_check_reads_what_sweep_returns(tmp_path):
    ctx = Ctx(tmp_path)
    pipeline.run_sweep(ctx, step=None, duration=0.3)
    (ln,) = ctx.lines
    assert ln.name == "sweep.pin_memory" and ln.status == PASS, ln.text()
    assert "samples/s" in ln.figure


def test_checkpoint_check_runs_the_cli_as_a_user_types_it(tmp_path):
    ctx = Ctx(tmp_path)
    pipeline.run_checkpoint(ctx, device="cpu", size="8M")
    (ln,) = ctx.lines
    assert ln.name == "checkpoint.cpu" and ln.status == PASS, ln.text()
    assert "8 MiB on cpu" in ln.figure and "GB/s" in ln.figure


@pytest.mark.slow
def test_ranks_check_runs_the_cli_as_a_user_types_it(tmp_path):
    """The same command line as on a GPU, with gloo and --device cpu: one rank, so one line PASS."""
    ctx = Ctx(tmp_path, timeout=120.0)
    pipeline.run_ranks(ctx, backend="gloo", device="cpu", n=1, size="8M")
    (ln,) = ctx.lines
    assert ln.name == "ranks.gloo" and ln.status == PASS, ln.text()
    assert ln.figure.startswith("1 rank on gloo") and "one rank" in ln.expected


@pytest.mark.slow
def test_notebook_check_reads_the_saved_notebook(tmp_path):
    """The notebook path headless, a CPU loop and --gpu none: the saved PNG is found and the
    stored result read back; without a GPU series the line is FAIL saying so."""
    ctx = Ctx(tmp_path, timeout=150.0)
    loop = "t = time.time()\nwhile time.time() - t < 1.5:\n    pass\nprint('cpu loop done')"
    pipeline.run_notebook(ctx, gpu="none", warm="%load_ext nbbench\nimport time", loop=loop)
    (ln,) = ctx.lines
    assert ln.name == "notebook.monitored_cell" and ln.status == FAIL, ln.text()
    assert ln.figure.startswith("PNG ") and "KiB" in ln.figure
    assert "no kernel-active series" in ln.why


# ------------------------------------------------------------------- runner
FAKE_CHECKS = """
import os, time
from _gpukit_lines import Line

def hang(ctx):
    ctx.emit(Line("hang.before", "PASS", "1 s"))
    time.sleep(600)

def boom(ctx):
    raise RuntimeError("no such device")

def crash(ctx):
    os._exit(3)

def fine(ctx):
    ctx.emit(Line("fine", "PASS", "1 s", "1 s", ""))
"""


@pytest.fixture
def fake_checks(tmp_path, monkeypatch):
    (tmp_path / "kitfake.py").write_text(FAKE_CHECKS)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), str(ROOT)]))
    logs = tmp_path / "logs"
    logs.mkdir()
    return tmp_path, str(logs)


def test_a_hang_raise_or_crash_is_that_checks_fail_and_the_others_run(fake_checks):
    tmp, logs = fake_checks
    checks = [
        gpu_check.Check("h", "hang", 3, "kitfake:hang"),
        gpu_check.Check("b", "raise", 30, "kitfake:boom"),
        gpu_check.Check("c", "crash", 30, "kitfake:crash"),
        gpu_check.Check("f", "fine", 30, "kitfake:fine"),
    ]
    t0 = time.monotonic()
    lines, runs = gpu_check.run_checks(checks, True, str(tmp), None, logs, budget_s=200, echo=lambda s: None)
    got = {ln.name: ln for ln in lines}
    assert got["hang.before"].status == PASS  # what it said before it hung is kept
    assert got["h"].status == FAIL and "within 3 s" in got["h"].why
    assert got["b"].status == FAIL and "RuntimeError: no such device" in got["b"].why
    assert got["c"].status == FAIL and "code 3" in got["c"].why
    assert got["fine"].status == PASS
    assert [r["timed_out"] for r in runs] == [True, False, False, False]
    assert time.monotonic() - t0 < 60  # the hang was ended, not waited out


def test_the_budget_stops_checks_that_would_overrun_it(fake_checks):
    tmp, logs = fake_checks
    checks = [gpu_check.Check("h", "hang", 30, "kitfake:hang"), gpu_check.Check("f", "fine", 30, "kitfake:fine")]
    lines, runs = gpu_check.run_checks(checks, True, str(tmp), None, logs, budget_s=3, echo=lambda s: None, min_run_s=1)
    got = {ln.name: ln for ln in lines}
    assert got["h"].status == FAIL and "within 3 s" in got["h"].why  # its limit cut to the budget
    assert got["f"].status == SKIP and "budget" in got["f"].why
    assert len(runs) == 1


# ------------------------------------------------------------------ dry run
def _run_kit(*args, code=None):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = [sys.executable, str(BENCH / "gpu_check.py"), *args] if code is None else [sys.executable, "-c", code]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env, cwd=str(ROOT))


def test_dry_run_without_cuda_lists_every_check_and_why_it_cannot():
    import torch

    if torch.cuda.is_available():
        pytest.skip("CUDA is usable here: the kit would run for real")
    out = _run_kit()
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert lines[1].startswith("no CUDA here: ") and len(lines[1]) > len("no CUDA here: ")  # nbbench's reason
    assert "dry run" in lines[2]
    for c in gpu_check.CHECKS:
        (ln,) = [s for s in lines if s.startswith(f"SKIP  {c.name}: ")]
        assert f"would run {c.what}" in ln and "cannot: no CUDA here" in ln
    n = len(gpu_check.CHECKS)
    assert lines[-1].startswith(f"summary: 0 PASS, 0 FAIL, 0 N/A, {n} SKIP") and "exit 0" in lines[-1]


def test_dry_run_and_list_import_nothing_of_the_notebook_stack():
    code = (
        "import sys; sys.path.insert(0, 'bench'); import gpu_check; rc = gpu_check.main({argv}); "
        "print('LOADED', ','.join(m for m in ('matplotlib', 'IPython', 'ipywidgets', 'pandas', 'nbclient', "
        "'nbformat', 'torch', 'nbbench') if m in sys.modules)); sys.exit(rc)"
    )
    listed = _run_kit(code=code.format(argv="['--list']"))
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[-1] == "LOADED "  # --list: not even torch or nbbench
    assert all(c.name in listed.stdout for c in gpu_check.CHECKS)
    dry = _run_kit(code=code.format(argv="[]"))
    loaded = dry.stdout.splitlines()[-1][len("LOADED ") :].split(",")
    assert dry.returncode == 0, dry.stderr
    assert not {"matplotlib", "IPython", "ipywidgets", "pandas", "nbclient", "nbformat"} & set(loaded)


def test_json_report_of_the_dry_run(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("CUDA is usable here")
    out = _run_kit("--only", "gpu,notebook", "--json", str(tmp_path / "kit.json"))
    assert out.returncode == 0, out.stderr
    data = json.loads((tmp_path / "kit.json").read_text())
    assert data["cuda"] is False and data["reason"] and data["checks"] == ["gpu", "notebook"]
    assert [ln["status"] for ln in data["lines"]] == [SKIP, SKIP] and data["exit_code"] == 0
    bad = _run_kit("--only", "gpu,nope")
    assert bad.returncode != 0 and "unknown check(s) nope" in bad.stderr
