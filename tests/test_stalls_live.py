"""Stalls measured for real on this machine: a cgroup v1 CPU controller with a half-CPU quota
(``cpu.cfs_quota_us`` 50000 of a 100000 µs period), ``nbbench monitor -- <busy loop>`` run inside
it and outside it, a small DataLoader inside it, and PSI read during an I/O-heavy run.

Needs root and a writable v1 ``cpu`` controller at /sys/fs/cgroup/cpu (skipped with the reason
elsewhere).  The test cgroup gets the highest ``cpu.shares`` so that, on a machine shared with other
jobs, the loop still gets its half CPU in each period and the quota — not the neighbours — is what
holds it back.  Each cgroup is removed afterwards, its processes moved back first.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from nbbench.results import Result

pytestmark = pytest.mark.xdist_group("cgroup")

CPU = Path("/sys/fs/cgroup/cpu")
REPO = Path(__file__).resolve().parents[1]
BUSY = "import time\nt = time.time()\nwhile time.time() - t < {s}:\n    pass\n"


def _writable_cpu_controller() -> str | None:
    """Why the live cgroup tests cannot run here, or None."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "not root: cannot make a cgroup"
    if not (CPU / "cpu.cfs_quota_us").exists():
        return "no cgroup v1 cpu controller at /sys/fs/cgroup/cpu"
    if not os.access(CPU, os.W_OK):
        return "/sys/fs/cgroup/cpu is not writable"
    return None


@pytest.fixture
def half_cpu():
    """A v1 CPU cgroup with a 0.5-CPU quota; yields its folder; always removed."""
    why = _writable_cpu_controller()
    if why:
        pytest.skip(why)
    cg = CPU / f"nbbench-test-{uuid.uuid4().hex[:8]}"
    try:
        cg.mkdir()
    except OSError as exc:
        pytest.skip(f"cannot make a cgroup under {CPU}: {exc}")
    try:
        (cg / "cpu.cfs_period_us").write_text("100000")
        (cg / "cpu.cfs_quota_us").write_text("50000")
        (cg / "cpu.shares").write_text("262144")  # win the neighbours' contention: the quota is the limit
        yield cg
    finally:
        for _ in range(50):
            pids = (cg / "cgroup.procs").read_text().split()
            for pid in pids:
                try:
                    (CPU / "cgroup.procs").write_text(pid)
                except OSError:
                    pass
            try:
                cg.rmdir()
                break
            except OSError:
                time.sleep(0.1)
        assert not cg.exists(), f"{cg} could not be removed"


def monitor_json(command: list[str], cgroup: Path | None = None, timeout: float = 180) -> Result:
    """``nbbench monitor --json -- COMMAND`` in a fresh interpreter, inside ``cgroup`` (the whole
    monitor and its child: written to cgroup.procs before exec) or not."""

    def enter():
        if cgroup is not None:
            (cgroup / "cgroup.procs").write_text(str(os.getpid()))

    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = subprocess.run(
        [sys.executable, "-m", "nbbench", "monitor", "--json", "--no-save", "--gpu", "none", "--interval", "0.1"]
        + ["--", *command],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        preexec_fn=enter,
        cwd=str(REPO),
        check=False,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return Result.from_dict(json.loads(out.stdout))


def test_busy_loop_inside_a_half_cpu_cgroup_is_throttled_about_half_the_time(half_cpu):
    res = monitor_json([sys.executable, "-c", BUSY.format(s=3)], cgroup=half_cpu)
    m = res.metrics
    assert res.labels["cpu_quota"] == 0.5 and "throttling" in res.labels["stall_counters"]
    assert 25 <= m["cpu_throttled_pct"] <= 75, m
    assert m["cpu_throttled_periods_pct"] >= 50, m
    assert m["cpu_throttled_s"] > 0.5
    assert 0.3 <= res.cores() <= 0.6  # the quota held the loop near half a CPU
    words = res.verdict_words()
    share = round(m["cpu_throttled_pct"])
    assert words.startswith(f"throttled by the container's 0.5-CPU quota {share} % of the time"), words
    assert "partly busy" not in words
    assert "throttled" in res.stall_line() and any(res.samples["timeline"]["stall.cpu_throttled_pct"][1:])


def test_the_same_loop_outside_claims_no_throttling():
    from nbbench.limits import read_limits

    lim = read_limits()
    if lim["cpu_quota"] is not None:
        pytest.skip(f"this process itself runs under a {lim['cpu_quota']:g}-CPU quota")
    if not lim["throttling"] and not lim["psi"]:
        pytest.skip("no stall counters here")
    res = monitor_json([sys.executable, "-c", BUSY.format(s=1.5)])
    assert (res.metrics.get("cpu_throttled_pct") or 0) < 5
    words = res.verdict_words()
    assert "throttled" not in words
    assert "inferred" in words or "PSI" in words  # a measured stall of the machine, or the inference said so


def test_a_dataloader_inside_the_cgroup_names_the_quota_its_workers_share(half_cpu):
    pytest.importorskip("torch")
    code = (
        "import time, torch\n"
        "from torch.utils.data import DataLoader, Dataset\n"
        "class Busy(Dataset):\n"
        "    def __len__(self): return 10**6\n"
        "    def __getitem__(self, i):\n"
        "        t = time.process_time()\n"
        "        while time.process_time() - t < 0.01: pass\n"
        "        return torch.zeros(4)\n"
        "t0 = time.time()\n"
        "for _ in DataLoader(Busy(), batch_size=4, num_workers=2):\n"
        "    if time.time() - t0 > 3: break\n"
    )
    res = monitor_json([sys.executable, "-c", code], cgroup=half_cpu, timeout=300)
    m = res.metrics
    assert m["cpu_throttled_pct"] >= 20, m
    assert m.get("proc_workers_count") == 2, m
    words = res.verdict_words()
    assert words.startswith("throttled by the container's 0.5-CPU quota"), words
    assert "the DataLoader's 2 workers share 0.5 CPUs" in words


def test_psi_is_read_during_an_io_heavy_run(tmp_path):
    from nbbench.limits import read_limits

    if not read_limits()["psi"]:
        pytest.skip("no pressure stall information on this kernel")
    target = tmp_path / "blob"
    code = (
        "import os, sys, time\n"
        "p = sys.argv[1]\n"
        "block = os.urandom(1 << 20)\n"
        "t0 = time.time()\n"
        "while time.time() - t0 < 2.0:\n"
        "    with open(p, 'wb') as f:\n"
        "        for _ in range(64): f.write(block)\n"
        "        f.flush(); os.fsync(f.fileno())\n"
        "    fd = os.open(p, os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)\n"
        "    while os.read(fd, 1 << 20): pass\n"
        "    os.close(fd)\n"
    )
    res = monitor_json([sys.executable, "-c", code, str(target)])
    m = res.metrics
    for key in ("psi_io_some_pct", "psi_io_full_pct", "psi_cpu_some_pct", "psi_memory_some_pct"):
        assert key in m and 0.0 <= m[key] <= 100.0, (key, m.get(key))
    assert res.labels["psi_scope"] in ("system", "cgroup")
    series = [v for v in res.samples["timeline"]["stall.psi_io_some_pct"] if v is not None]
    assert series and all(0.0 <= v <= 100.0 for v in series)
    assert "PSI some" in res.stall_line()


def test_the_loader_benchmark_inside_the_cgroup_says_it_was_throttled(half_cpu):
    pytest.importorskip("torch")
    code = (
        "import json, time, torch\n"
        "from torch.utils.data import DataLoader, Dataset\n"
        "from nbbench.probes.pipeline.loader import bench_loader\n"
        "class Busy(Dataset):\n"
        "    def __len__(self): return 10**6\n"
        "    def __getitem__(self, i):\n"
        "        t = time.process_time()\n"
        "        while time.process_time() - t < 0.005: pass\n"
        "        return torch.zeros(4)\n"
        "res = bench_loader(DataLoader(Busy(), batch_size=8, num_workers=2), duration=2.0, warmup=2, monitor=False)\n"
        "print(json.dumps({'metrics': res.metrics, 'labels': res.labels, 'warnings': res.warnings}, default=str))\n"
    )

    def enter():
        (half_cpu / "cgroup.procs").write_text(str(os.getpid()))

    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        preexec_fn=enter,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["labels"]["cpu_quota"] == 0.5 and got["metrics"]["cpu_throttled_pct"] >= 20
    said = [w for w in got["warnings"] if w.startswith("measured: throttled by the container's 0.5-CPU quota")]
    assert said and said[0].endswith("the DataLoader's 2 workers share 0.5 CPUs"), got["warnings"]
