"""The dd and fio engines for real (same result schema), and their parsers."""

import os
import shutil

import pytest

from nbbench.probes._engines import extern
from nbbench.probes.storage import disk
from nbbench.results import ProbeError
from nbbench.results.hist import PERCENTILES, percentile_key

# In CI (.ci/run installs fio) the fio engine must be tested for real: never skipped there.
needs_fio = pytest.mark.skipif(
    shutil.which("fio") is None and not os.environ.get("CI"), reason="fio not installed (apt-get install fio)"
)
needs_dd = pytest.mark.skipif(shutil.which("dd") is None, reason="no dd")


@pytest.fixture(scope="module")
def datafile(tmp_path_factory):
    p = tmp_path_factory.mktemp("eng") / "data.bin"
    with open(p, "wb") as f:
        f.write(os.urandom(16 << 20))
        os.fsync(f.fileno())
    return p


def test_parse_dd_summary():
    text = (
        "1+0 records in\n1+0 records out\r12582912 bytes (13 MB, 12 MiB) copied, 1 s, 12.5 MB/s"
        "\n16777216 bytes (17 MB, 16 MiB) copied, 0.0123 s, 1.4 GB/s\n"
    )
    assert extern.parse_dd_summary(text) == (16777216, 0.0123)
    assert extern.parse_dd_summary("dd: failed to open") is None


def test_fio_missing_says_how_to_install(monkeypatch, datafile):
    monkeypatch.setattr(extern.shutil, "which", lambda name: None)
    with pytest.raises(ProbeError, match="apt-get install fio"):
        disk.randread(datafile, engine="fio", runtime=0.1)


@needs_dd
def test_dd_engine_write_and_read(tmp_path):
    r = disk.dd(tmp_path, size="16M", engine="dd")
    assert r.ok and r.labels["engine"] == "dd"
    assert r.labels["write_io_path"] == "dd (coreutils)" and r.labels["write_data"].startswith("zeros")
    assert r.metrics["write_total_bytes"] == r.metrics["read_total_bytes"] == 16 << 20
    assert r.metrics["write_bytes_per_s"] > 0 and r.metrics["read_bytes_per_s"] > 0
    assert [n for n in os.listdir(tmp_path) if n.startswith(".nbbench-")] == []


@needs_dd
def test_dd_engine_reads_file_read_only(datafile):
    before = (os.stat(datafile).st_mtime_ns, open(datafile, "rb").read(4096))
    r = disk.dd(datafile, size="8M", engine="dd", direct=False)
    assert r.metrics["read_total_bytes"] == 8 << 20 and r.labels["cache"] in ("buffered-cold", "buffered-warm")
    assert (os.stat(datafile).st_mtime_ns, open(datafile, "rb").read(4096)) == before


@needs_fio
def test_fio_randread_maps_percentiles(datafile):
    r = disk.randread(datafile, engine="fio", qd=4, runtime=1.1, ramp=0.1)
    assert r.ok and r.labels["engine"] == "fio" and r.labels["io_path"].startswith("fio ")
    assert r.metrics["iops"] > 0
    vals = [r.metrics[percentile_key(p)] for p in PERCENTILES]
    assert all(v > 0 for v in vals) and vals == sorted(vals)
    assert r.metrics["lat_mean_ns"] > 0
    assert r.samples["bw"]["t_s"], "fio's 500 ms bandwidth log"


@needs_fio
def test_fio_dd_in_directory(tmp_path):
    r = disk.dd(tmp_path, size="16M", engine="fio")
    assert r.ok and r.metrics["write_total_bytes"] == r.metrics["read_total_bytes"] == 16 << 20
    assert r.metrics["write_bytes_per_s"] > 0 and r.metrics["read_bytes_per_s"] > 0
    assert [n for n in os.listdir(tmp_path) if n.startswith(".nbbench-")] == []


@needs_fio
def test_fio_and_builtin_same_schema(datafile):
    a = disk.randread(datafile, engine="fio", runtime=0.2, ramp=0)
    b = disk.randread(datafile, engine="builtin", runtime=0.2, ramp=0)
    core = {
        "iops",
        "read_bytes_per_s",
        "lat_mean_ns",
        "lat_stddev_ns",
        "qd_reached",
        *(percentile_key(p) for p in PERCENTILES),
    }
    assert core <= set(a.metrics) and core <= set(b.metrics)
    assert {"engine", "cache", "path", "filesystem", "device", "io_path"} <= set(a.labels) & set(b.labels)


def test_the_builtin_engine_says_how_busy_its_io_thread_was(datafile):
    """The I/O thread's CPU time over the measured window (thread_time): the figure that tells a
    storage-bound run from one bound by the engine's own CPU cost per I/O."""
    for qd in (1, 8):
        r = disk.randread(datafile, engine="builtin", runtime=0.3, ramp=0, qd=qd, direct=False)
        pct, per_io = r.metrics["engine_cpu_pct"], r.metrics["engine_cpu_per_io_ns"]
        assert 0 < pct <= 110 and per_io > 0, (qd, pct, per_io)
        # CPU time per I/O x I/Os = CPU time <= wall time (one thread at QD1, one ring at QD8)
        assert per_io * r.metrics["ios_count"] / 1e9 <= r.metrics["runtime_s"] * 1.1
    assert (
        "engine_cpu_pct" not in disk.randread(datafile, engine="fio", runtime=0.2, ramp=0).metrics
        if shutil.which("fio")
        else True
    )


def test_a_cpu_bound_run_is_labelled_with_its_cpu_cost_per_io():
    from nbbench.probes._engines.job import JobOutput
    from nbbench.probes.storage.io_cpu import cpu_bound_warning
    from nbbench.results import Result

    def judged(pct, engine="builtin"):
        r = Result(kind="randread")
        cpu_bound_warning(r, JobOutput(ios=1000, extra={"engine_cpu_pct": pct, "engine_cpu_ns_per_io": 9400.0}), engine)
        return r

    busy = judged(97.0)
    assert busy.metrics["engine_cpu_pct"] == 97.0 and busy.metrics["engine_cpu_per_io_ns"] == 9400.0
    assert len(busy.warnings) == 1 and busy.warnings[0].startswith("CPU-bound in one job: the I/O thread was busy 97 %")
    assert "9.4 µs of CPU per I/O" in busy.warnings[0] and "--engine fio" in busy.warnings[0]
    assert "near 106 k I/Os per second" in busy.warnings[0]  # 1 / 9.4 µs
    assert busy.labels["cpu_bound"].startswith("one job's CPU") and busy.labels["cpu_bound"].endswith(
        "97 % of the measured time"
    )
    import os as _os

    cores = len(_os.sched_getaffinity(0))
    if cores > 1:  # one job of several cores: --jobs is the way out
        assert "--jobs 2 spreads the I/Os" in busy.warnings[0]
    idle = judged(12.0)
    assert idle.warnings == [] and "cpu_bound" not in idle.labels and idle.metrics["engine_cpu_pct"] == 12.0
    assert judged(97.0, engine="fio").metrics == {}
    # N jobs using all usable cores: that limit, not one job's, and no --jobs advice
    jobs = [{"engine_cpu_pct": 95.0}] * cores
    r = Result(kind="randread")
    cpu_bound_warning(
        r,
        JobOutput(
            ios=1000,
            extra={
                "engine_cpu_pct": 96.0,
                "engine_cpu_ns_per_io": 2000.0,
                "engine_cpu_pct_sum": 95.0 * cores,
                "jobs": jobs,
            },
        ),
        "builtin",
    )
    if cores > 1:
        assert r.labels["cpu_bound"].startswith("all cores") and r.warnings[0].startswith("CPU-bound on all cores")
        assert "more jobs cannot lift it" in r.warnings[0] and "--jobs" not in r.warnings[0]
