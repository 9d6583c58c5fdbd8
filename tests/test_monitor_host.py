"""The host sources (CPU, disk, process tree), for real, and the path -> block device mapping on fake sysfs trees."""

import os
import subprocess
import sys
import time

import psutil
import pytest

from nbbench.monitor import Monitor
from nbbench.monitor.cpu import CpuSource
from nbbench.monitor.disk import DiskSource, describe, watched_device
from nbbench.monitor.procs import ProcessTreeSource


def _host(path=None, fast=True):
    """The three host sources, as Monitor's defaults make them."""
    return [CpuSource(fast=fast), DiskSource(path=path, fast=fast), ProcessTreeSource(fast=fast)]


def _sample(srcs):
    rec = {}
    now = time.monotonic()
    for s in srcs:
        rec.update(s.sample(now))
    return rec


def _two_samples(srcs, gap=0.15):
    for s in srcs:
        s.open()
    _sample(srcs)
    time.sleep(gap)
    return _sample(srcs)


@pytest.mark.parametrize("fast", [True, False], ids=["procfs", "psutil"])
def test_cpu_memory_and_disk_fields_are_sane(tmp_path, fast):
    srcs = _host(path=tmp_path, fast=fast)
    rec = _two_samples(srcs)
    assert [s.fast for s in srcs] == [fast] * 3
    assert 0.0 <= rec["cpu.util_pct"] <= 100.0
    assert 0.0 <= rec["cpu.iowait_pct"] <= 100.0
    assert len(rec["cpu.cores_pct"]) == psutil.cpu_count()
    assert all(0.0 <= c <= 100.0 for c in rec["cpu.cores_pct"])
    vm = psutil.virtual_memory()
    assert 0 < rec["mem.used_bytes"] <= vm.total
    assert 0 < rec["mem.available_bytes"] <= vm.total
    for k in ("disk.read_bytes_per_s", "disk.write_bytes_per_s", "disk.read_iops", "sys.read_bytes_per_s"):
        assert rec[k] is not None and rec[k] >= 0
    assert rec["proc.rss_bytes"] > 10 * 2**20
    disk = srcs[1]
    assert disk.labels["path"] == str(tmp_path)
    assert disk.labels["disk_device"]  # a device name or "system-wide"
    assert srcs[0].labels["cpus_logical"] == psutil.cpu_count()


def test_first_sample_has_no_rates():
    srcs = _host()
    for s in srcs:
        s.open()
    rec = _sample(srcs)
    assert rec["cpu.util_pct"] is None and rec["disk.read_bytes_per_s"] is None
    assert rec["proc.cpu_pct"] is None
    assert rec["mem.used_bytes"] > 0  # levels are there from the start


def test_busy_process_shows_in_process_cpu():
    src = ProcessTreeSource()
    src.open()
    t0 = time.monotonic()
    src.sample(t0)
    t = time.process_time()
    while time.process_time() - t < 0.3:
        pass
    t1 = time.monotonic()
    rec = src.sample(t1)
    # 0.3 s of CPU in (t1 - t0) s of wall time, however long a loaded machine made that (10 ms ticks)
    assert rec["proc.cpu_pct"] >= 100 * (0.3 - 0.03) / (t1 - t0), (rec["proc.cpu_pct"], t1 - t0)


@pytest.mark.parametrize("fast", [True, False], ids=["procfs", "psutil"])
def test_reads_of_this_process_and_its_children_are_counted(tmp_path, fast):
    data = tmp_path / "blob.bin"
    data.write_bytes(os.urandom(4 * 2**20))
    m = Monitor(interval=0.05, sources=_host(path=tmp_path, fast=fast))
    with m:
        with open(data, "rb") as f:  # this process: 4 MiB through read()
            while f.read(2**20):
                pass
        # a child that reads the file twice more (8 MiB), then exits: still counted
        code = f"f=open({str(data)!r},'rb')\nfor _ in range(2):\n    f.seek(0)\n    while f.read(1<<20): pass"
        subprocess.run([sys.executable, "-c", code], check=True)
        time.sleep(0.1)
    res = m.result()
    assert res.metrics["proc_read_syscall_bytes"] >= 12 * 2**20
    assert res.metrics["proc_cpu_s"] > 0
    assert res.metrics["disk_read_bytes"] >= 0 and res.metrics["sys_read_bytes"] >= 0


# --------------------------------------------------------------- block devices
def _fake_sysfs(root, path, target_parts, partition=False, dm_name=None, slaves=()):
    st = os.stat(path)
    dev_dir = root / "devices" / "pci0000:00"
    for part in target_parts:
        dev_dir = dev_dir / part
    dev_dir.mkdir(parents=True)
    if partition:
        (dev_dir / "partition").write_text("1\n")
    (root / "dev" / "block").mkdir(parents=True)
    os.symlink(dev_dir, root / "dev" / "block" / f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}")
    name = target_parts[-1]
    (root / "block").mkdir()
    if dm_name:
        (dev_dir / "dm").mkdir()
        (dev_dir / "dm" / "name").write_text(dm_name + "\n")
        (dev_dir / "slaves").mkdir()
        for s in slaves:
            (dev_dir / "slaves" / s).mkdir()
    os.symlink(dev_dir, root / "block" / name)
    return root


def _real_dev_or_skip(path):
    if os.major(os.stat(path).st_dev) == 0:
        pytest.skip("this filesystem has an anonymous device number")


def test_whole_disk_virtio(tmp_path):
    _real_dev_or_skip(tmp_path)
    _fake_sysfs(tmp_path / "sys", tmp_path, ["virtio1", "block", "vda"])
    dev, note = watched_device(tmp_path, tmp_path)
    assert note is None and dev.name == "vda" and dev.parent is None
    assert describe(dev) == "vda"


def test_partition_is_measured_itself_and_named_with_its_disk(tmp_path):
    _real_dev_or_skip(tmp_path)
    _fake_sysfs(tmp_path / "sys", tmp_path, ["ata1", "block", "sda", "sda2"], partition=True)
    dev, note = watched_device(tmp_path, tmp_path)
    assert dev.name == "sda2" and dev.parent == "sda"
    assert describe(dev) == "sda2 (partition of sda)"


def test_device_mapper_names_its_volume_and_slaves(tmp_path):
    _real_dev_or_skip(tmp_path)
    _fake_sysfs(tmp_path / "sys", tmp_path, ["virtual", "block", "dm-0"], dm_name="vg0-data", slaves=("nvme0n1p3",))
    dev, _ = watched_device(tmp_path, tmp_path)
    assert dev.name == "dm-0"
    assert describe(dev) == "dm-0 (vg0-data, on nvme0n1p3)"


def test_anonymous_device_falls_back_to_system_wide_with_a_note(tmp_path):
    (tmp_path / "sys" / "dev" / "block").mkdir(parents=True)
    (tmp_path / "proc" / "self").mkdir(parents=True)
    (tmp_path / "proc" / "self" / "mountinfo").write_text(
        f"1 0 0:40 / / rw - overlay overlay rw\n2 1 0:41 / {tmp_path} rw - nfs4 nfs:/export rw\n"
    )
    dev, note = watched_device(tmp_path, tmp_path)
    assert dev is None
    assert "network filesystem" in note and "system-wide" in note
    dev, note = watched_device("/", tmp_path)
    assert dev is None and "overlay" in note


def test_missing_path_notes_system_wide(tmp_path):
    dev, note = watched_device(tmp_path / "nope")
    assert dev is None and "cannot stat" in note


def test_unknown_device_in_diskstats_falls_back(tmp_path, monkeypatch):
    src = DiskSource(path=tmp_path)
    import nbbench.monitor.disk as disk

    class FakeDev:
        name = "sdz9"
        partition = False
        parent = None

    monkeypatch.setattr(disk, "watched_device", lambda p, r: (FakeDev(), None))
    src.open()
    assert src.device is None
    assert any("not in /proc/diskstats" in n for n in src.notes)
    assert src.labels["disk_device"] == "system-wide"


# ------------------------------------------------------------------ procfs path
linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")


@linux
def test_procfs_counters_agree_with_psutil():
    from nbbench.monitor import procfs

    assert procfs.available()
    tick = os.sysconf("SC_CLK_TCK")
    mine = procfs.read_cpu_times(procfs.ProcFile("/proc/stat"))
    theirs = psutil.cpu_times(percpu=True)
    assert len(mine) == len(theirs)
    for a, b in zip(mine, theirs):
        assert abs(a.idle / tick - b.idle) < 1.0 and abs(a.user / tick - b.user) < 1.0
    disks = procfs.read_diskstats(procfs.ProcFile("/proc/diskstats"))
    ps_disks = psutil.disk_io_counters(perdisk=True, nowrap=False)
    for name, c in ps_disks.items():
        assert abs(disks[name].read_bytes - c.read_bytes) <= 64 * 2**20
        assert abs(disks[name].read_count - c.read_count) <= 10_000
    me = procfs.ProcReader(os.getpid()).read()
    ct = psutil.Process().cpu_times()
    assert abs(me.cpu_s - (ct.user + ct.system + ct.children_user + ct.children_system)) < 0.5
    assert me.rss_bytes == pytest.approx(psutil.Process().memory_info().rss, rel=0.2)
    assert me.read_chars > 0


@linux
def test_children_of_finds_grandchildren_and_gone_process_raises():
    from nbbench.monitor import procfs

    code = (
        "import subprocess, sys, time; p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(5)']); "
        "print(p.pid, flush=True); time.sleep(5)"
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        grandchild = int(child.stdout.readline())
        kids = procfs.children_of(os.getpid())
        if kids is None:
            pytest.skip("kernel without /proc/PID/task/TID/children")
        assert child.pid in kids and grandchild in kids
        r = procfs.ProcReader(grandchild)
        assert r.read().cpu_s >= 0
    finally:
        child.kill()
        child.wait()
        os.kill(grandchild, 9)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            r.read()
        except OSError:
            break
        time.sleep(0.05)
    else:
        pytest.fail("reading a reaped process should raise")


def test_per_core_columns_in_frames_and_results():
    m = Monitor(interval=0.05, gpus="none")
    with m:
        time.sleep(0.2)
    n = psutil.cpu_count()
    df = m.frame(per_core=True)
    assert [f"cpu.core{i}_pct" for i in range(n)] == [c for c in df.columns if c.startswith("cpu.core")]
    assert "cpu.cores_pct" not in m.frame().columns
    cores = m.result().cores_frame()
    assert list(cores.columns) == ["t_s"] + [f"core{i}_pct" for i in range(n)]
    assert len(cores) == len(df)


def test_the_disk_source_names_the_results_path_and_the_live_plots_disk_panel(tmp_path, monkeypatch):
    from nbbench.ui.liveplot import monitor_plot_kwargs

    monkeypatch.chdir(tmp_path)
    m = Monitor(interval=0.05, gpus="none")  # no path: the current directory's disk
    m.open()
    disk = next(s for s in m.sources if s.name == "disk")
    titles = [p.title for p in monitor_plot_kwargs(m)["subplots"]]
    assert f"Disk ({disk.labels['disk_device']})" in titles and disk.labels["disk_device"] != "disk"
    with m:
        time.sleep(0.1)
    res = m.result()
    assert res.params["path"] == str(tmp_path) and res.labels["path"] == str(tmp_path)
    assert res.labels["disk_device"] == disk.labels["disk_device"]
