"""Real I/O on small temp files: dd, randread, files, presets, cache labels, warnings,
cancel, read-only guarantees, the histogram."""

import hashlib
import os
import random
import threading
import time

import pytest

from nbbench.probes._engines import uring_setup
from nbbench.probes.storage import disk, files
from nbbench.results import Result
from nbbench.results.hist import PERCENTILES, LatencyHistogram, percentile_key

PKEYS = [percentile_key(p) for p in PERCENTILES]


def _leftovers(d):
    return [n for n in os.listdir(d) if n.startswith(".nbbench-")]


def _state(path):
    st = os.stat(path)
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest(), st.st_mtime_ns, st.st_size


@pytest.fixture(scope="module")
def datafile(tmp_path_factory):
    p = tmp_path_factory.mktemp("data") / "data.bin"
    with open(p, "wb") as f:
        f.write(os.urandom(16 << 20))
        os.fsync(f.fileno())
    return p


def test_percentile_keys_are_fio_list():
    assert len(PKEYS) == 17
    assert PKEYS[0] == "lat_p1_ns" and "lat_p99_9_ns" in PKEYS and PKEYS[-1] == "lat_p99_99_ns"


def test_histogram_vectorised_equals_scalar_and_percentiles():
    vals = [random.Random(3).randrange(1, 10**9) for _ in range(5000)] + [0, 1, 63, 64, 127, 128, 2**40]
    a, b = LatencyHistogram(), LatencyHistogram()
    for v in vals:
        a.add(v)
    b.add_many(vals)
    assert a.counts == b.counts and a.n == b.n
    h = LatencyHistogram()
    h.add_many(list(range(1000, 1_001_000, 1000)))  # uniform 1 µs .. 1 ms
    p = h.percentiles()
    assert abs(p[50.0] - 500_000) / 500_000 < 0.02
    assert abs(p[99.0] - 990_000) / 990_000 < 0.02
    merged = LatencyHistogram().merge(a).merge(h)
    assert merged.n == a.n + h.n
    back = LatencyHistogram.from_dict(h.to_dict())
    assert back.counts == h.counts


def test_dd_directory_direct(tmp_path):
    r = disk.dd(tmp_path, size="16M")
    assert r.ok and r.kind == "dd"
    assert r.metrics["write_bytes_per_s"] > 0 and r.metrics["read_bytes_per_s"] > 0
    assert r.metrics["write_total_bytes"] == r.metrics["read_total_bytes"] == 16 << 20
    if "direct_fallback" in r.labels:
        assert r.labels["cache"] in ("buffered-cold", "buffered-warm")
    else:
        assert r.labels["cache"] == "direct" and r.labels["write_cache"] == "direct"
    assert r.labels["engine"] == "builtin" and r.labels["filesystem"]
    series = r.samples["read_bw"]
    assert len(series["t_s"]) == len(series["read_bytes_per_s"]) >= 1
    assert _leftovers(tmp_path) == []


def test_dd_buffered_is_cold_and_warns_about_page_cache(tmp_path):
    r = disk.dd(tmp_path, size="16M", bs="256k", direct=False)
    assert r.labels["cache"] in ("buffered-cold", "buffered-warm")
    assert "posix_fadvise" in r.labels["cache_drop"]
    assert r.labels["write_cache"] == "buffered + fdatasync"
    assert any("page cache will serve it" in w for w in r.warnings)
    assert _leftovers(tmp_path) == []


def test_dd_count_overrides_size_and_reads_a_file_read_only(datafile):
    before = _state(datafile)
    r = disk.dd(datafile, bs="1M", count=4)
    assert r.params["mode"] == "read" and "write_bytes_per_s" not in r.metrics
    assert r.metrics["read_total_bytes"] == 4 << 20
    assert _state(datafile) == before


def test_tmpfs_is_labelled_memory_whatever_o_direct_says():
    # kernels since 6.6 accept O_DIRECT on tmpfs: reads from RAM must still not pass for storage
    shm = "/dev/shm"
    if not os.path.isdir(shm) or not os.access(shm, os.W_OK):
        pytest.skip("no /dev/shm")
    r = disk.dd(shm, size="4M", bs="1M")
    assert r.labels["filesystem"] == "tmpfs"
    assert r.labels["cache"] == "memory" and r.labels["write_cache"] == "memory"
    assert [w for w in r.warnings if w.startswith("this is RAM, not storage: ")] == r.warnings[:1]
    assert not any("O_DIRECT is not available" in w for w in r.warnings)
    assert _leftovers(shm) == []


@pytest.mark.parametrize("qd", [1, 8])
def test_randread_file_metrics_and_read_only(datafile, qd):
    before = _state(datafile)
    r = disk.randread(datafile, bs="4k", qd=qd, runtime=0.3, ramp=0.05)
    assert r.ok and r.kind == "randread"
    assert r.metrics["iops"] > 0 and r.metrics["read_bytes_per_s"] == pytest.approx(r.metrics["iops"] * 4096)
    vals = [r.metrics[k] for k in PKEYS]
    assert all(v > 0 for v in vals) and vals == sorted(vals)
    assert r.metrics["lat_stddev_ns"] >= 0
    assert r.metrics["qd_reached"] == qd
    assert sum(r.samples["lat_hist"]["count"]) == r.metrics["ios_count"]
    if qd > 1 and uring_setup.available()[0]:
        assert r.labels["io_path"].startswith("io_uring")
    assert _state(datafile) == before


def test_randread_thread_pool_path_and_threads(datafile):
    r = disk.randread(datafile, qd=4, runtime=0.2, ramp=0, builtin_path="threads")
    assert r.labels["io_path"].startswith("threads")
    r2 = disk.randread(datafile, qd=2, threads=2, runtime=0.2, ramp=0)
    assert r2.metrics["qd_reached"] == 4 and r2.metrics["iops"] > 0


def test_randread_directory_writes_then_removes(tmp_path):
    r = disk.randread(tmp_path, size="8M", qd=4, runtime=0.2, ramp=0)
    assert r.ok and r.params["size"] == 8 << 20
    assert not any("zeros" in w for w in r.warnings)
    assert _leftovers(tmp_path) == []


def test_randread_buffered_warm_labels_and_warns(datafile):
    r = disk.randread(datafile, runtime=0.2, ramp=0, direct=False, warm=True)
    assert r.labels["cache"] == "buffered-warm"
    assert any("page cache will serve it" in w for w in r.warnings)
    r = disk.randread(datafile, runtime=0.2, ramp=0, direct=False)
    assert r.labels["cache"] == "buffered-cold" and "posix_fadvise" in r.labels["cache_drop"]


def test_zero_and_sparse_data_warned(tmp_path):
    zeros = tmp_path / "zeros.bin"
    with open(zeros, "wb") as f:
        f.write(bytes(4 << 20))
        os.fsync(f.fileno())
    r = disk.randread(zeros, runtime=0.1, ramp=0)
    assert any("all zeros" in w for w in r.warnings)
    sparse = tmp_path / "sparse.bin"
    with open(sparse, "wb") as f:
        f.truncate(8 << 20)
    r = disk.randread(sparse, runtime=0.1, ramp=0)
    assert any("sparse" in w for w in r.warnings)


def _cancel_after(seconds):
    ev = threading.Event()
    t = threading.Timer(seconds, ev.set)
    t.daemon = True
    t.start()
    return ev


def test_cancel_randread_returns_interrupted_quickly(datafile):
    ev = _cancel_after(0.3)
    t0 = time.monotonic()
    r = disk.randread(datafile, qd=4, runtime=20, ramp=0, cancel=ev)
    took = time.monotonic() - t0
    assert r.status == "interrupted" and r.metrics["ios_count"] > 0
    assert took < 3.0  # honoured within 0.5 s; generous on a shared machine


def test_cancel_mid_write_leaves_no_temp_file(tmp_path):
    ev = _cancel_after(0.2)
    r = disk.dd(tmp_path, bs="4k", size="512M", cancel=ev)  # 4 KiB writes: seconds of work
    assert r.status == "interrupted"
    assert "write_bytes_per_s" in r.metrics and "read_bytes_per_s" not in r.metrics
    assert _leftovers(tmp_path) == []


def test_progress_reports_fraction_and_rate(datafile):
    seen = []
    disk.randread(datafile, runtime=0.5, ramp=0, progress=lambda f, m: seen.append((f, m)))
    assert seen and seen[-1][0] == 1.0
    assert any(m and "read_bytes_per_s" in m for _, m in seen)


def test_files_tree(tmp_path):
    from nbbench.datasets import make_image_folder

    root = make_image_folder(tmp_path / "ds", files=60, size="8k", classes=3)
    some = sorted(root.rglob("img_*"))[:5]
    before = [_state(p) for p in some]
    r = files.read_files(root, sample=25, threads=3, cold=True)
    assert r.ok and r.kind == "files"
    assert r.metrics["files_count"] == 25 and r.metrics["tree_files_count"] == 60
    assert r.metrics["read_total_bytes"] == 25 * 8192
    assert r.metrics["files_per_s"] > 0 and r.metrics["lat_p50_ns"] > 0
    assert r.labels["cache"] == "buffered-cold" and r.labels["cache_drop"]
    assert sum(r.samples["size_hist"]["count"]) == 60
    assert r.metrics["file_size_p50_bytes"] == pytest.approx(8192, rel=0.02)
    assert [_state(p) for p in some] == before
    warm = files.read_files(root, sample=1000, threads=2)
    assert warm.labels["cache"] == "buffered-warm" and warm.metrics["files_count"] == 60
    assert any("only 60 files" in w for w in warm.warnings)


def test_walk_memory_is_bounded_by_the_sample(tmp_path):
    for d in range(5):
        sub = tmp_path / f"d{d}"
        sub.mkdir()
        for i in range(40):
            (sub / f"f{i}").write_bytes(b"x" * (i + 1))
    idx = files.walk(str(tmp_path), sample=7)
    assert idx.files == 200 and len(idx.reservoir) == 7
    assert idx.sizes.n == 200


def test_preset_cdm_directory_table(tmp_path):
    r = disk.preset(tmp_path, "cdm", size="8M", runtime=0.1, ramp=0)
    assert r.ok and r.kind == "disk"
    tests = [row["test"] for row in r.table()]
    assert tests == ["SEQ1M Q8T1", "SEQ1M Q1T1", "RND4K Q32T1", "RND4K Q1T1"]
    assert all(row["read_bytes_per_s"] > 0 and row["write_bytes_per_s"] > 0 for row in r.table())
    text = r.text_table()
    assert "Read [MB/s]" in text and "Write [MB/s]" in text and "RND4K Q32T1" in text
    assert "<table" in r._repr_html_()
    assert len(r.rows) == 8 and all(isinstance(x, Result) for x in r.rows)
    back = Result.from_dict(r.to_dict())
    assert type(back) is type(r) and back.table() == r.table()
    assert _leftovers(tmp_path) == []


def test_preset_on_file_reads_only(datafile):
    before = _state(datafile)
    r = disk.preset(datafile, "mlperf-resnet50", size="8M", runtime=0.1, ramp=0)
    assert all("write_bytes_per_s" not in row for row in r.table())
    assert all(row["read_samples_per_s"] > 0 for row in r.table())
    r = disk.preset(datafile, "cdm", size="8M", runtime=0.1, ramp=0)
    assert any("write tests need a directory" in w for w in r.warnings)
    assert _state(datafile) == before


def test_results_round_trip(datafile):
    r = disk.randread(datafile, runtime=0.1, ramp=0)
    back = Result.from_json(r.to_json())
    assert type(back).__name__ == "RandreadResult" and back == r
    assert back.histogram().n == r.metrics["ios_count"]


def test_without_io_uring_falls_back_to_threads_and_says_why(datafile, monkeypatch):
    monkeypatch.setattr(uring_setup, "available", lambda: (False, "io_uring unavailable: blocked (test)"))
    r = disk.randread(datafile, qd=16, runtime=0.2, ramp=0)
    assert r.labels["io_path"].startswith("threads")
    assert r.labels["uring_unavailable"] == "io_uring unavailable: blocked (test)"
    assert r.metrics["iops"] > 0


def test_deep_queue_split_over_rings(datafile):
    if not uring_setup.available()[0]:
        pytest.skip("no io_uring here")
    r = disk.randread(datafile, qd=64, runtime=0.3, ramp=0)
    assert "2 rings x 32 in flight = 64" in r.labels["io_path"]
    assert r.metrics["qd_reached"] == 64
    assert sum(r.samples["lat_hist"]["count"]) == r.metrics["ios_count"]
