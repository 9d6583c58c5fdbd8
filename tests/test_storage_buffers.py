"""The builtin engine's buffers and request shape (issue 11): ordinary page-aligned memory by
default, huge pages only when asked and labelled; the device's request limits and the split
of one I/O read from sysfs (a fixture tree here); the QD1 loop's histogram and cancel."""

import json
import os
import subprocess
import sys
import threading
import time

import pytest

from nbbench.probes._engines import devlimits, sync
from nbbench.probes._engines.job import JobOutput, JobSpec, Offsets
from nbbench.probes.storage import disk
from nbbench.results import ProbeError, Result

MIB = 1 << 20


def _vma(addr):
    """The /proc/self/smaps block of the mapping holding ``addr``: (VmFlags, AnonHugePages kB)."""
    flags, huge, inside = None, None, False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split(None, 1)[0]
            if "-" in head and not head.endswith(":"):
                lo, hi = (int(x, 16) for x in head.split("-"))
                if inside:
                    break
                inside = lo <= addr < hi
            elif inside and head == "VmFlags:":
                flags = line.split()[1:]
            elif inside and head == "AnonHugePages:":
                huge = int(line.split()[1])
    return flags, huge


def _addr(view):
    import ctypes

    anchor = ctypes.c_char.from_buffer(view)
    try:
        return ctypes.addressof(anchor)
    finally:
        del anchor


# ------------------------------------------------------------------ buffers
def test_default_buffers_are_ordinary_pages_not_huge():
    pool = sync.aligned_buffers(16, MIB)  # the pool a 1 MiB write uses: 16 MiB
    try:
        assert pool.kind == "pages" and pool.huge_fraction is None
        flags, huge = _vma(_addr(pool.views[0]))
        assert flags is not None and "hg" not in flags  # no MADV_HUGEPAGE
        assert "nh" in flags  # MADV_NOHUGEPAGE: 4 KiB pages also where THP is "always"
        assert huge == 0
    finally:
        pool.release()


def test_huge_buffers_are_asked_for_and_measured():
    pool = sync.aligned_buffers(2, MIB, buffers="huge")
    try:
        a = _addr(pool.views[0])
        assert a % (2 * MIB) == 0
        flags, huge = _vma(a)
        assert "hg" in flags
        assert pool.huge_fraction is not None and abs(pool.huge_fraction - huge * 1024 / (2 * MIB)) < 1e-9
    finally:
        pool.release()
    with pytest.raises(ValueError):
        sync.aligned_buffers(1, 4096, buffers="giant")


def test_physical_segments_from_pagemap(tmp_path):
    pm = tmp_path / "pagemap"
    page = os.sysconf("SC_PAGE_SIZE")
    # pages 0..3 at frames 10, 11, 12, 40; frames hidden (0) make it unknown
    entries = [0] * 8 + [10 | 1 << 63, 11 | 1 << 63, 12 | 1 << 63, 40 | 1 << 63]
    pm.write_bytes(b"".join(e.to_bytes(8, "little") for e in entries))
    assert sync.physical_segments(8 * page, 4 * page, str(pm)) == 2
    assert sync.physical_segments(8 * page, 3 * page, str(pm)) == 1
    assert sync.physical_segments(0, 4 * page, str(pm)) is None


def test_dd_labels_buffers_and_rejects_huge_on_other_engines(tmp_path):
    r = disk.dd(tmp_path, bs="1M", size="4M")
    assert r.ok and r.labels["buffers"] == "page-aligned (4 KiB pages)" and r.params["buffers"] == "pages"
    h = disk.dd(tmp_path, bs="1M", size="4M", buffers="huge")
    assert h.ok and h.labels["buffers"].startswith("2 MiB huge pages") and h.params["buffers"] == "huge"
    with pytest.raises(ProbeError, match="builtin engine's option"):
        disk.dd(tmp_path, bs="1M", size="4M", engine="dd", buffers="huge")
    with pytest.raises(ProbeError, match="pages or huge"):
        disk.randread(tmp_path, size="4M", runtime=0.1, buffers="big")


def test_cli_buffers_option(tmp_path):
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "nbbench",
            "dd",
            str(tmp_path),
            "--size",
            "4M",
            "--buffers",
            "huge",
            "--json",
            "--no-save",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    assert d["params"]["buffers"] == "huge" and d["labels"]["buffers"].startswith("2 MiB huge pages")


# ------------------------------------------------------------------ request limits
def _sysfs(root, name="vda", devno=None, max_segments=254, max_sectors_kb=1280, partition=None):
    """A fixture sysfs: block/<name>/queue/* and dev/block/MAJ:MIN -> the device (or its partition)."""
    dev = root / "devices" / "virtual" / "block" / name
    q = dev / "queue"
    q.mkdir(parents=True)
    for attr, val in (
        ("max_segments", max_segments),
        ("max_sectors_kb", max_sectors_kb),
        ("max_hw_sectors_kb", 2147483647),
        ("max_segment_size", 4294967295),
        ("logical_block_size", 512),
    ):
        (q / attr).write_text(f"{val}\n")
    (root / "block").mkdir(exist_ok=True)
    (root / "block" / name).symlink_to(dev)
    target = dev
    if partition:
        target = dev / partition
        target.mkdir()
        (target / "partition").write_text("1\n")
        (root / "class" / "block").mkdir(parents=True, exist_ok=True)
        (root / "class" / "block" / partition).symlink_to(target)
    if devno is not None:
        (root / "dev" / "block").mkdir(parents=True, exist_ok=True)
        (root / "dev" / "block" / f"{os.major(devno)}:{os.minor(devno)}").symlink_to(target)
    return root


def test_read_limits_resolves_partitions(tmp_path):
    root = _sysfs(tmp_path / "sys", partition="vda1", devno=os.stat(tmp_path).st_dev)
    lim = devlimits.read_limits("vda1", str(root))
    assert (lim.disk, lim.max_segments, lim.max_sectors_kb) == ("vda", 254, 1280)
    lim, why = devlimits.limits_for_path(str(tmp_path), sys_root=str(root))
    assert why == "" and lim.device == "vda1" and lim.disk == "vda"
    assert devlimits.read_limits("sdz", str(root)) is None


def test_split_warning_for_254_segments_and_none_for_512(tmp_path):
    st_dev = os.stat(tmp_path).st_dev
    for segs, split in ((254, True), (512, False)):
        root = _sysfs(tmp_path / f"r{segs}" / "sys", devno=st_dev, max_segments=segs)
        r = Result(kind="dd")
        devlimits.annotate(r, str(tmp_path), MIB, "pages", "builtin", True, sys_root=str(root))
        assert r.labels["device_max_segments"] == segs and r.labels["device_max_sectors_kb"] == 1280
        assert r.labels["device_max_hw_sectors_kb"] == 2147483647
        if split:
            assert r.labels["request_split"] == "yes: up to 2 requests per 1 MiB I/O (max_segments)"
            assert r.warnings == []  # kernel detail: "how it was measured", not a warning
            w = r.labels["request_shape"]
            assert w.startswith(
                "a 1 MiB request on vda (max 254 segments of 4 KiB pages, max_sectors_kb 1280) "
                "is split in two: with page-aligned buffers, as dd and fio use, each 1 MiB I/O "
                "goes to the device as 2 requests"
            )
        else:
            assert r.labels["request_split"] == "no: one request per 1 MiB I/O"
            assert r.warnings == []
        # huge pages: one segment per 1 MiB I/O; labelled as not comparable where pages split
        h = Result(kind="dd")
        devlimits.annotate(h, str(tmp_path), MIB, "huge", "builtin", True, sys_root=str(root))
        assert h.labels["request_split"] == "no: one request per 1 MiB I/O"
        assert (
            (len(h.warnings) == 1 and "not comparable" in h.warnings[0] and len(h.warnings[0].split()) <= 25)
            if split
            else h.warnings == []
        )
    # a measured buffer is its own label; the split's wording stays the same whatever its luck
    root = tmp_path / "r254" / "sys"
    shapes = set()
    for measured in (200, 256):
        out = JobOutput(extra={"buffer_segments": measured})
        r = Result(kind="dd")
        devlimits.annotate(r, str(tmp_path), MIB, "pages", "builtin", True, outs=[out], sys_root=str(root))
        assert r.labels["buffer_segments"] == measured and r.warnings == []
        shapes.add((r.labels["request_split"], r.labels["request_shape"]))
    assert len(shapes) == 1 and next(iter(shapes))[0].startswith("yes: up to 2 requests")
    # max_sectors_kb splits whatever the buffers; buffered I/O is not the buffer's shape
    root = _sysfs(tmp_path / "small" / "sys", devno=st_dev, max_segments=512, max_sectors_kb=128)
    r = Result(kind="dd")
    devlimits.annotate(r, str(tmp_path), MIB, "huge", "builtin", True, sys_root=str(root))
    assert r.labels["request_split"] == "yes: up to 8 requests per 1 MiB I/O (max_sectors_kb)"
    assert "8 requests of at most 128 KiB, whatever the buffers" in r.labels["request_shape"]
    r = Result(kind="dd")
    devlimits.annotate(r, str(tmp_path), MIB, "pages", "builtin", False, sys_root=str(root))
    assert r.labels["request_split"].startswith("not applicable") and r.warnings == []


def test_dd_records_the_request_limits(tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    root = _sysfs(tmp_path / "sys", devno=os.stat(data).st_dev, max_segments=254, max_sectors_kb=1280)
    monkeypatch.setattr(devlimits, "SYS_ROOT", str(root))
    for engine in ("builtin", "dd"):
        r = disk.dd(data, bs="1M", size="4M", engine=engine)
        assert r.ok
        assert r.labels["device_max_segments"] == 254 and r.labels["device_max_sectors_kb"] == 1280
        assert r.labels["device_queue"] == "vda"
        split = r.labels["request_split"]
        if r.labels["cache"] != "direct":
            assert split.startswith("not applicable")
        else:
            assert split == "yes: up to 2 requests per 1 MiB I/O (max_segments)"
            assert "is split in two" in r.labels["request_shape"] and r.warnings == []
    # a randread of 4 KiB is one request
    r = disk.randread(data, size="4M", runtime=0.2, ramp=0)
    assert r.labels["device_max_segments"] == 254
    assert r.labels["request_split"].startswith(("no: one request per 4 KiB I/O", "not applicable"))


def test_limits_unknown_without_a_block_device(tmp_path):
    r = Result(kind="dd")
    devlimits.annotate(r, str(tmp_path), MIB, "pages", "builtin", True, sys_root=str(tmp_path / "nosys"))
    assert r.labels["request_split"].startswith("unknown: ") and "device_max_segments" not in r.labels


# ------------------------------------------------------------------ the QD1 loop
@pytest.fixture(scope="module")
def datafile(tmp_path_factory):
    p = tmp_path_factory.mktemp("qd1") / "data.bin"
    p.write_bytes(os.urandom(8 << 20))
    return p


def test_qd1_loop_one_latency_per_io(datafile):
    fd = os.open(datafile, os.O_RDONLY)
    try:
        out = sync.run_sync(JobSpec(fd=fd, op="read", pattern="seq", bs=64 << 10, region=8 << 20, total=8 << 20))
        assert out.ios == 128 and out.hist.n == 128 and out.bytes == 8 << 20
        out = sync.run_sync(JobSpec(fd=fd, op="read", pattern="rand", bs=4096, region=8 << 20, runtime=0.3, ramp=0.1))
        assert out.ios > 0 and out.hist.n == out.ios
        assert 0 < out.hist.total <= out.elapsed_s * 1e9  # latencies lie inside the measured time
        assert out.windows and all(w[2] > 0 for w in out.windows)
        # buffered: pread64, as fio's psync (the compiled loop where it was built, else os.pread)
        assert out.io_path in (
            "sync (compiled pread loop: pread64, 1 in flight)",
            "sync (python pread loop: os.pread, 1 in flight)",
        )
    finally:
        os.close(fd)
    wfd = os.open(datafile.parent / "w.bin", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        out = sync.run_sync(
            JobSpec(fd=wfd, op="write", pattern="seq", bs=1 << 20, region=4 << 20, total=4 << 20, fsync_end=True)
        )
        assert (
            out.io_path
            in ("sync (compiled pread loop: pwrite64, 1 in flight)", "sync (python pread loop: os.pwrite, 1 in flight)")
            and out.ios == 4
            and out.hist.n == 4
        )
        assert os.fstat(wfd).st_size == 4 << 20
    finally:
        os.close(wfd)
        os.unlink(datafile.parent / "w.bin")


def test_qd1_meter_work_is_in_no_latency(datafile):
    fd = os.open(datafile, os.O_RDONLY)
    calls = []

    def slow_progress(frac, metrics):  # the meter's own work: 0.4 s per call
        calls.append(frac)
        time.sleep(0.4)

    try:
        out = sync.run_sync(
            JobSpec(fd=fd, op="read", pattern="rand", bs=4096, region=8 << 20, runtime=1.0, progress=slow_progress)
        )
    finally:
        os.close(fd)
    assert len(calls) >= 2 and out.hist.n == out.ios
    assert out.hist.max < 0.4e9  # no latency holds a progress call


def test_qd1_loop_honours_cancel(datafile):
    fd = os.open(datafile, os.O_RDONLY)
    ev = threading.Event()
    threading.Timer(0.2, ev.set).start()
    t0 = time.monotonic()
    try:
        out = sync.run_sync(JobSpec(fd=fd, op="read", pattern="rand", bs=4096, region=8 << 20, runtime=30, cancel=ev))
    finally:
        os.close(fd)
    assert out.interrupted and time.monotonic() - t0 < 3.0
    assert out.ios > 0 and out.hist.n == out.ios


def test_offsets_are_aligned_seeded_and_drawn_ahead():
    spec = JobSpec(fd=-1, pattern="rand", bs=4096, region=1 << 30, seed=7)
    a, b = Offsets(spec), Offsets(spec)
    xs = [next(a.iter) for _ in range(40000)]  # past the first chunks
    assert xs == [next(b.iter) for _ in range(40000)]
    assert all(x % 4096 == 0 and 0 <= x < 1 << 30 for x in xs)
    a.refill()
    assert len(a.ready) == 2
    seq = Offsets(JobSpec(fd=-1, pattern="seq", bs=4096, region=3 * 4096, total=7 * 4096))
    assert list(seq.iter) == [0, 4096, 8192, 0, 4096, 8192, 0]
