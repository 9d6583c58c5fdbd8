"""Pressure stalls, cgroup throttling, per-disk counters, and the verdict on a kernel's process tree."""

from __future__ import annotations

import os
import time

from nbbench.monitor.hostextra import HostExtraSource, parse_diskstats
from nbbench.monitor.kernels import KernelTreesSource, tree_verdict

DISKSTATS = """ 252       0 vda 100 0 2048 10 50 0 4096 20 0 30 30 0 0 0 0
 252       1 vda1 90 0 1024 10 50 0 4096 20 0 30 30 0 0 0 0
   7       0 loop0 5 0 80 0 0 0 0 0 0 0 0 0 0 0 0
"""


def test_stall_figures_come_from_the_one_limits_reader(tmp_path):
    """The watcher's PSI and throttling are nbbench.limits' window over the cgroup's own counters (found from
    /proc/self/cgroup), not a second parser of the same files: a v2 fixture tree with a quota and PSI."""
    root = tmp_path
    (root / "proc/self").mkdir(parents=True)
    (root / "proc/self/cgroup").write_text("0::/pod\n")
    (root / "proc/self/mountinfo").write_text("30 20 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n")
    pod = root / "sys/fs/cgroup/pod"
    pod.mkdir(parents=True)
    (pod / "cpu.max").write_text("50000 100000\n")
    stat = pod / "cpu.stat"
    cpu = pod / "cpu.pressure"

    def write(periods, throttled, usec, some):
        stat.write_text(f"usage_usec 1\nnr_periods {periods}\nnr_throttled {throttled}\nthrottled_usec {usec}\n")
        cpu.write_text(f"some avg10=0 avg60=0 avg300=0 total={some}\nfull avg10=0 avg60=0 avg300=0 total=0\n")

    write(100, 10, 1_000_000, 0)
    src = HostExtraSource(root=str(root))
    src.open()
    first = src.sample(10.0)
    write(110, 15, 1_500_000, 250_000)  # over 1 s: 0.5 s throttled in 5 of 10 periods; 0.25 s some-pressure
    second = src.sample(11.0)
    src.close()
    assert first["cgroup.throttled_pct"] is None and first["psi.cpu_some_pct"] is None
    assert second["cgroup.throttled_pct"] == 50.0 and second["cgroup.throttled_periods"] == 5
    assert second["psi.cpu_some_pct"] == 25.0 and second["psi.cpu_full_pct"] == 0.0
    assert src.labels["psi_scope"] == "cgroup"


def test_diskstats_keeps_whole_physical_disks_in_bytes():
    got = parse_diskstats(DISKSTATS, disks={"vda", "loop0"})
    assert got == {"vda": (2048 * 512.0, 4096 * 512.0)}  # vda1 is a partition, loop0 virtual


def test_source_gives_rates_from_the_second_sample_on():
    src = HostExtraSource()
    src.open()
    first = src.sample(time.monotonic())
    time.sleep(0.2)
    second = src.sample(time.monotonic())
    src.close()
    assert all(v is None for k, v in first.items() if k != "mem.cached_bytes")
    rates = {k: v for k, v in second.items() if k.startswith(("psi.", "dev.", "cgroup."))}
    assert all(v is not None and v >= 0 for v in rates.values())
    if os.path.exists("/proc/pressure/cpu"):
        assert 0 <= second["psi.cpu_some_pct"] <= 100
    assert src.labels["cpus_usable"] > 0


def _window(cpu_pct, read=0.0, n=6, dt=1.0):
    return [(i * dt, {"proc.cpu_pct": cpu_pct, "proc.read_bytes_per_s": read}) for i in range(n)]


def test_tree_verdict_words():
    assert tree_verdict(_window(190.0), {"cpu_mean_pct": 95.0}, {"cpus_logical": 4}).startswith("CPU-bound (2 cores)")
    assert tree_verdict(_window(5.0, read=200e6), {}, {"cpus_logical": 4}).startswith("waiting on storage")
    assert tree_verdict(_window(1.0), {}, {"cpus_logical": 4}) == "idle"
    assert "GPU idle" in tree_verdict(_window(150.0), {"gpu_count": 1, "gpu_util_mean_pct": 0.0}, {"cpus_logical": 4})


def test_kernel_trees_follow_a_busy_process_and_its_child():
    import subprocess
    import sys

    code = "import subprocess,sys,time; c=subprocess.Popen([sys.executable,'-c','while 1: pass']); time.sleep(30)"
    proc = subprocess.Popen([sys.executable, "-c", code])
    src = KernelTreesSource(window_s=5)
    try:
        src.track({proc.pid: "busy.ipynb"})
        deadline = time.monotonic() + 20
        fig = {}
        while time.monotonic() < deadline:
            src.sample(time.monotonic())
            time.sleep(0.3)
            figs = src.figures({}, {"cpus_logical": os.cpu_count()})
            fig = figs[0] if figs else {}
            if fig.get("children") and (fig.get("cpu_pct") or 0) > 30 and fig.get("window_s", 0) >= 1.5:
                break
        assert fig["name"] == "busy.ipynb" and fig["children"] == 1
        assert fig["busy"] and fig["rss_bytes"] > 1e6
        assert fig["children_cpu_pct"] is not None and fig["children_cpu_pct"] > 0.5 * fig["cpu_pct"]
        src.track({})
        src.sample(time.monotonic())
        assert src.figures() == []
    finally:
        for p in __import__("psutil").Process(proc.pid).children(recursive=True):
            p.kill()
        proc.kill()
        proc.wait()
        src.close()
