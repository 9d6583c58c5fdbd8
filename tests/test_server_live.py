"""The server's live sampler without a server: its JSON with GPUs (a fake NVML), the verdict line, the idle stop."""

from __future__ import annotations

import time

from nbbench.nvml import Nvml
from nbbench.server.live import LiveSampler, _on_device, machine_figures, verdict_line


def test_snapshot_lists_each_gpu_with_util_memory_and_power():
    from test_monitor_gpu import FakeNvml

    fake = FakeNvml(n=2, unsupported={"nvmlDeviceGetSamples"})  # kernel-active 37 % from the rates call
    live = LiveSampler(interval=0.1, idle_s=60, nvml=Nvml(fake))
    try:
        live.touch()
        time.sleep(0.6)
        snap = live.snapshot()
    finally:
        live.stop()
    assert [g["index"] for g in snap["gpus"]] == [0, 1] and snap["gpu_note"] is None
    g = snap["gpus"][0]
    assert g["util_pct"] == 37 and g["mem_used_bytes"] == 5 * 2**30 and g["mem_total_bytes"] == 80 * 2**30
    assert g["power_w"] == 251.5
    assert len(snap["history"]["gpu1_util_pct"]) == snap["samples"]
    assert "GPU 0 idle 63 %" in snap["verdict"]["line"]  # 37 % kernel-active: idle the rest


def test_no_gpu_is_said_with_its_reason():
    from test_monitor_gpu import FakeNvml

    fake = FakeNvml(init_error=FakeNvml.NVML_ERROR_LIBRARY_NOT_FOUND)
    live = LiveSampler(interval=0.1, idle_s=60, nvml=Nvml(fake))
    try:
        live.touch()
        time.sleep(0.3)
        snap = live.snapshot()
    finally:
        live.stop()
    assert snap["gpus"] == [] and snap["gpu_note"].startswith("no GPU visible: ")
    assert "no GPU visible" in snap["verdict"]["line"]


def test_idle_stop_and_restart():
    live = LiveSampler(interval=0.1, idle_s=0.5, gpus="none")
    live.touch()
    assert live.running
    deadline = time.monotonic() + 5
    while live.running and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not live.running and live.stops == 1
    live.touch()
    assert live.running and live.starts == 2
    live.stop()


def test_verdict_line_words():
    kernels = [
        {"pid": 1, "name": "train.ipynb", "busy": True, "verdict": "CPU-bound in its 4 child processes (4 cores)"},
        {"pid": 2, "name": "idle.ipynb", "busy": False, "verdict": "idle"},
    ]
    line = verdict_line("partly busy", [{"index": 0, "util_pct": 38.0}], kernels, None)
    assert (
        line
        == "kernel train.ipynb: CPU-bound in its 4 child processes (4 cores); GPU 0 idle 62 %; machine: partly busy"
    )
    # the reason is said once, on the GPU line under the verdict (the metrics' gpu_note), not in the verdict too
    assert verdict_line("idle", [], [], "no GPU visible: NVML unavailable — details") == "no GPU visible; machine: idle"


def test_machine_figures_average_the_window():
    recs = [{"t": 0.0, "cpu.util_pct": None}, {"t": 1.0, "cpu.util_pct": 50.0}, {"t": 2.0, "cpu.util_pct": 70.0}]
    m = machine_figures(recs, {})
    assert m["wall_s"] == 2.0 and m["cpu_mean_pct"] == 60.0 and m["gpu_count"] == 0
    assert machine_figures(recs[:1], {}) == {}


def test_the_root_dirs_device_is_marked():
    assert _on_device("vda", "vda1 (partition of vda, virtio)")
    assert _on_device("nvme0n1", "nvme0n1p2 (a partition)")
    assert not _on_device("sda", "sdb1 (partition of sdb)")
    assert not _on_device("vda", "system-wide")
