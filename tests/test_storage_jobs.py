"""The builtin engine's batched paths and --jobs: the histogram's bulk insert, the compiled
QD1 loop against the Python one, the ring on a file and on a block device (a loop device),
N jobs in N processes (sums, merged histograms, nothing left behind when one is killed)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from nbbench.probes._engines import sync, uring, uring_setup
from nbbench.probes._engines.job import JobSpec
from nbbench.probes._engines.multijob import job_specs
from nbbench.probes.storage import disk
from nbbench.results.hist import LatencyHistogram

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def datafile(tmp_path_factory):
    p = tmp_path_factory.mktemp("jobs") / "data.bin"
    p.write_bytes(os.urandom(16 << 20))
    return p


# ------------------------------------------------------------------ histogram
def test_bulk_insert_gives_the_same_histogram_as_one_insert_per_io():
    import numpy as np

    rng = np.random.default_rng(7)
    lats = np.concatenate(
        [
            rng.lognormal(9, 1.5, 20000).astype(np.int64),  # µs-ish, a long tail
            np.array([0, 1, 63, 64, 127, 128, 129, 1 << 20, (1 << 40) + 3], dtype=np.int64),
        ]
    )
    one, bulk = LatencyHistogram(), LatencyHistogram()
    for v in lats.tolist():
        one.add(v)
    bulk.add_many(lats[:7000])
    bulk.add_many(lats[7000:])
    assert bulk.counts == one.counts and bulk.n == one.n == len(lats)
    assert bulk.percentiles() == one.percentiles()
    assert (bulk.min, bulk.max) == (one.min, one.max) and bulk.mean == pytest.approx(one.mean, rel=1e-12)
    assert bulk.stddev == pytest.approx(one.stddev, rel=1e-9)
    # a job's histogram crosses a process boundary exactly (to_state / from_state) and merges by adding
    back = LatencyHistogram.from_state(bulk.to_state())
    assert back.counts == bulk.counts and back.metrics() == bulk.metrics()
    half = LatencyHistogram()
    half.add_many(lats[:100])
    assert LatencyHistogram.from_state(LatencyHistogram().to_state()).n == 0
    assert half.merge(back).n == bulk.n + 100


# ------------------------------------------------------------------ QD1 loops
def test_the_compiled_loop_reads_what_the_file_holds(datafile):
    loop = sync.compiled_loop()
    if loop is None:
        pytest.skip("the compiled loop is not built here (python setup.py build_ext --inplace, or pip install .)")
    import numpy as np

    data = datafile.read_bytes()
    fd = os.open(datafile, os.O_RDONLY)
    try:
        buf = bytearray(4096)
        offs = np.array([8192, 0, (16 << 20) - 4096, 123 * 4096], dtype=np.int64)
        stamps = np.zeros(4, dtype=np.int64)
        t0 = time.perf_counter_ns()
        done, last = loop(fd, buf, 4096, 1, offs, 3, 1, stamps, 1 << 62, False)
        assert (done, last) == (1, 4096) and bytes(buf) == data[123 * 4096 : 124 * 4096]
        assert t0 < stamps[0] <= time.perf_counter_ns()  # the clock of time.perf_counter_ns
        done, last = loop(fd, buf, 4096, 1, offs, 0, 4, stamps, 0, False)  # deadline passed: stops after one
        assert done == 1 and bytes(buf) == data[8192:12288]
        done, last = loop(fd, buf, 4096, 1, np.array([(16 << 20) - 1024], dtype=np.int64), 0, 1, stamps, 1 << 62, False)
        assert (done, last) == (1, 1024)  # a short read ends the batch and says its bytes
        with pytest.raises(ValueError):
            loop(fd, buf, 4096, 2, offs, 0, 4, stamps, 1 << 62, False)  # two buffers asked, one given
    finally:
        os.close(fd)


@pytest.mark.parametrize("which", ["compiled", "python"])
def test_both_qd1_loops_say_which_ran(datafile, monkeypatch, which):
    if which == "compiled" and sync.compiled_loop() is None:
        pytest.skip("the compiled loop is not built here")
    monkeypatch.setenv("NBBENCH_IO_LOOP", which)
    fd = os.open(datafile, os.O_RDONLY)
    try:
        out = sync.run_sync(JobSpec(fd=fd, op="read", pattern="seq", bs=64 << 10, region=16 << 20, total=16 << 20))
        assert out.ios == 256 and out.bytes == 16 << 20 and out.hist.n == 256
        assert out.extra["io_loop"] == f"{which} pread loop" and f"{which} pread loop" in out.io_path
        out = sync.run_sync(JobSpec(fd=fd, op="read", pattern="rand", bs=4096, region=16 << 20, runtime=0.2, ramp=0.05))
        assert out.ios > 0 and out.hist.n == out.ios and 0 < out.hist.total <= out.elapsed_s * 1e9 * 1.01
    finally:
        os.close(fd)


# ------------------------------------------------------------------ the ring
def _ring_ok():
    ok, why = uring_setup.available()
    if not ok:
        pytest.skip(why)


@pytest.mark.parametrize("mode", ["each", "batch", "vector", "each-python"])
def test_the_ring_on_a_file(datafile, monkeypatch, mode):
    _ring_ok()
    if mode == "each-python":
        mode = "each"
        monkeypatch.setenv("NBBENCH_IO_LOOP", "python")
    monkeypatch.setenv("NBBENCH_URING_MODE", mode)
    fd = os.open(datafile, os.O_RDONLY)
    try:
        out = uring.run_uring(JobSpec(fd=fd, op="read", pattern="seq", bs=4096, qd=16, region=16 << 20, total=16 << 20))
        assert out.ios == 4096 and out.bytes == 16 << 20 and out.hist.n == 4096 and out.qd_max == 16
        assert out.io_path.startswith("io_uring")
        out = uring.run_uring(
            JobSpec(fd=fd, op="read", pattern="rand", bs=4096, qd=8, region=16 << 20, runtime=0.2, ramp=0.05)
        )
        assert out.ios > 0 and out.hist.n == out.ios and out.bytes == 4096 * out.ios
        # past the end of the file: the reads there come back short (0 bytes), the run stops with it
        out = uring.run_uring(
            JobSpec(fd=fd, op="read", pattern="seq", bs=4096, qd=8, region=(16 << 20) + 8192, total=(16 << 20) + 8192)
        )
        assert out.ios == 4096 and out.extra["short_io"]["bytes"] == 0
    finally:
        os.close(fd)


@pytest.mark.parametrize("loop", ["compiled", "python"])
def test_the_ring_loop_runs_in_c_where_built_else_vectorised_when_buffered(datafile, monkeypatch, loop):
    _ring_ok()
    from nbbench.probes._engines.uring_vec import compiled_ring

    if loop == "compiled" and compiled_ring() is None:
        pytest.skip("the compiled loops are not built here")
    monkeypatch.delenv("NBBENCH_URING_MODE", raising=False)
    monkeypatch.setenv("NBBENCH_IO_LOOP", loop)
    r = disk.randread(datafile, qd=16, runtime=0.2, ramp=0, direct=False, warm=True)
    assert r.status == "ok" and r.metrics["ios_count"] == sum(r.samples["lat_hist"]["count"]) > 0
    if loop == "compiled":
        assert r.labels["io_path"].startswith("io_uring (compiled loop, one submit per I/O")
    else:
        assert "re-armed with numpy" in r.labels["io_path"]


@pytest.fixture()
def loopdev(tmp_path):
    """A read-only loop device over a file of random data (root and loop devices needed)."""
    if os.geteuid() != 0 or not shutil.which("losetup"):
        pytest.skip("loop devices need root and losetup")
    backing = tmp_path / "backing.img"
    backing.write_bytes(os.urandom(8 << 20))
    p = subprocess.run(["losetup", "--find", "--show", "--read-only", str(backing)], capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip(f"no loop device here: {p.stderr.strip()}")
    dev = p.stdout.strip()
    try:
        yield dev, backing
    finally:
        subprocess.run(["losetup", "--detach", dev], capture_output=True)


@pytest.mark.parametrize("mode", ["each", "vector", "batch"])
def test_the_ring_on_a_block_device_reads_it_only(loopdev, monkeypatch, mode):
    _ring_ok()
    monkeypatch.setenv("NBBENCH_URING_MODE", mode)
    dev, backing = loopdev
    before = backing.read_bytes()
    r = disk.randread(dev, qd=32, runtime=0.3, ramp=0.05)
    assert r.status == "ok", r.reason
    assert r.labels["io_path"].startswith("io_uring") and r.metrics["iops"] > 0
    assert r.metrics["ios_count"] == sum(r.samples["lat_hist"]["count"])
    if mode == "vector":
        assert "numpy" in r.labels["io_path"]
    d = disk.dd(dev, bs="1M", size="8M")  # a device is only read
    assert d.status == "ok" and d.metrics["read_total_bytes"] == 8 << 20
    assert backing.read_bytes() == before


# ------------------------------------------------------------------ --jobs
def test_job_specs_split_a_transfer_and_share_a_random_region():
    seq = job_specs(JobSpec(fd=0, pattern="seq", bs=4096, region=10 * 4096, total=10 * 4096), 3)
    assert [(s.base, s.total) for s in seq] == [(0, 3 * 4096), (3 * 4096, 3 * 4096), (6 * 4096, 4 * 4096)]
    rnd = job_specs(JobSpec(fd=0, pattern="rand", bs=4096, region=1 << 20, runtime=1.0, seed=5), 2)
    assert [(s.base, s.region, s.seed) for s in rnd] == [(0, 1 << 20, 5), (0, 1 << 20, 6)]


def test_two_jobs_sum_their_figures_and_merge_their_histograms(datafile):
    r = disk.randread(datafile, qd=1, jobs=2, runtime=0.4, ramp=0.1, direct=False, warm=True)
    assert r.status == "ok", r.reason
    rows = r.samples["jobs"]
    assert len(rows) == 2 and all(x["ios"] > 0 for x in rows)
    assert r.metrics["ios_count"] == sum(x["ios"] for x in rows)
    assert sum(r.samples["lat_hist"]["count"]) == r.metrics["ios_count"]  # both histograms, merged
    assert r.metrics["read_total_bytes"] == 4096 * r.metrics["ios_count"]
    assert r.metrics["iops"] == pytest.approx(r.metrics["ios_count"] / r.metrics["runtime_s"])
    assert r.labels["io_path"].startswith("2 processes x sync")
    assert r.params["jobs"] == 2


def test_dd_with_two_jobs_moves_the_size_once(tmp_path):
    r = disk.dd(tmp_path, bs="1M", size="8M", jobs=2, direct=False)
    assert r.status == "ok", r.reason
    assert r.metrics["write_total_bytes"] == 8 << 20 and r.metrics["read_total_bytes"] == 8 << 20
    assert [x["bytes"] for x in r.samples["read_jobs"]] == [4 << 20, 4 << 20]
    assert list(tmp_path.iterdir()) == []


def test_threads_is_a_deprecated_alias_of_jobs(datafile):
    r = disk.randread(datafile, threads=2, runtime=0.2, ramp=0, direct=False)
    assert r.params["jobs"] == 2 and len(r.samples["jobs"]) == 2
    assert any("deprecated" in w for w in r.warnings)


def _cli(*args, **kw):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen(
        [sys.executable, "-m", "nbbench", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        **kw,
    )


@pytest.mark.parametrize("bad", ["0", "257", "x"])
def test_jobs_out_of_range_is_a_usage_error(tmp_path, bad):
    p = _cli("randread", str(tmp_path), "--jobs", bad)
    out, _ = p.communicate(timeout=120)
    assert p.returncode == 2 and "--jobs" in out


def _workers(pid: int, n: int, deadline_s: float = 120.0) -> list:
    """The job processes of ``pid`` once ``n`` of them run (waits on the processes themselves)."""
    import psutil

    parent = psutil.Process(pid)
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        kids = [c for c in parent.children(recursive=True) if "multijob" in " ".join(c.cmdline())]
        if len(kids) >= n:
            return kids
        parent.wait(timeout=0.05) if not parent.is_running() else None
    raise AssertionError("the job processes did not start")


@pytest.mark.slow
def test_a_killed_job_stops_the_run_and_leaves_nothing_behind(tmp_path):
    import psutil

    p = _cli("randread", str(tmp_path), "--jobs", "2", "--size", "8M", "--runtime", "60", "--ramp", "0")
    kids = _workers(p.pid, 2)
    kids[1].send_signal(signal.SIGKILL)
    out, _ = p.communicate(timeout=120)
    assert p.returncode != 0 and "ended without its result (killed by signal 9)" in out
    gone, alive = psutil.wait_procs(kids, timeout=30)
    assert not alive
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_a_killed_parent_takes_its_jobs_along_and_leaves_nothing_behind(tmp_path):
    import psutil

    p = _cli("randread", str(tmp_path), "--jobs", "2", "--size", "8M", "--runtime", "60", "--ramp", "0")
    kids = _workers(p.pid, 2)
    p.send_signal(signal.SIGKILL)
    p.communicate(timeout=60)
    gone, alive = psutil.wait_procs(kids, timeout=30)
    assert not alive
    assert [f for f in tmp_path.iterdir()] == []


def test_the_cdm_nvme_preset_runs_t16_as_16_jobs():
    from nbbench.probes.storage.presets import PRESETS

    tests = {t[0]: t for t in PRESETS["cdm-nvme"]["tests"]}
    assert list(tests) == ["SEQ1M Q8T1", "SEQ128K Q32T1", "RND4K Q32T16", "RND4K Q1T1"]
    assert tests["RND4K Q32T16"][3:] == (32, 16) and tests["SEQ128K Q32T1"][2] == 128 << 10
