"""The per-process table: DataLoader workers' cold reads are theirs (not the main process's), roles,
a reaped child's totals, PSS within its budget, and GPU memory per process through a fake pynvml."""

import os
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from nbbench.monitor import Monitor
from nbbench.monitor.gpuprocs import GpuProcesses, pid_namespace
from nbbench.monitor.procfs import ProcCounters
from nbbench.monitor.procs import ProcessTreeSource
from nbbench.monitor.proctable import ProcessTable
from nbbench.monitor.procviews import COLUMNS
from nbbench.nvml import Nvml


def _cold_files(root, n, size):
    """``n`` files of random bytes on the real disk, written, synced and dropped from the page cache."""
    root.mkdir()
    paths = []
    for i in range(n):
        p = root / f"f{i:03d}.bin"
        with open(p, "wb") as f:
            f.write(os.urandom(size))
            f.flush()
            os.fsync(f.fileno())
        paths.append(str(p))
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
    return paths


def test_dataloader_workers_cold_reads_are_attributed_to_the_workers(tmp_path):
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader, Dataset

    if str(tmp_path).startswith("/dev/shm"):
        pytest.skip("needs a directory on a real disk")
    size, n = 512 * 1024, 48
    paths = _cold_files(tmp_path / "data", n, size)

    class Files(Dataset):
        def __len__(self):
            return len(paths)

        def __getitem__(self, i):
            with open(paths[i], "rb") as f:
                data = f.read()
            return torch.tensor(len(data))

    m = Monitor(interval=0.05, gpus="none", net="none", path=str(tmp_path), sources=[ProcessTreeSource(table=0.1)])
    with m:
        loader = DataLoader(Files(), batch_size=4, num_workers=2, multiprocessing_context="fork")
        total = sum(int(b.sum()) for b in loader)
        del loader
        time.sleep(0.3)  # the workers are reaped: their totals now sit in the main process's counters too
    assert total == n * size
    res = m.result()
    procs = res.samples["procs"]
    assert list(procs) == list(COLUMNS)
    rows = [dict(zip(procs, vals)) for vals in zip(*procs.values())]
    main = [r for r in rows if r["role"] == "main"]
    workers = [r for r in rows if r["role"].startswith("worker")]
    assert len(main) == 1 and main[0]["pid"] == os.getpid()
    assert sorted(r["role"] for r in workers) == ["worker 0", "worker 1"], rows
    assert all(r["name"] == "pt_data_worker" and r["ended_s"] is not None for r in workers)
    worker_reads = sum(r["read_syscall_bytes"] for r in workers)
    assert worker_reads >= n * size  # read() calls of the workers, page cache or not
    storage = sum(r["read_bytes"] for r in workers)
    assert storage >= 0.8 * n * size, rows  # the pages were dropped: the reads reached the device
    assert main[0]["read_bytes"] < 0.1 * n * size, rows  # not counted again for the main process
    assert main[0]["read_syscall_bytes"] < 0.1 * n * size, rows
    assert res.metrics["proc_workers_read_bytes"] == storage
    assert res.metrics["proc_workers_count"] == 2
    assert res.labels["proc_top_reader"].startswith("worker ") and "from storage" in res.labels["proc_top_reader"]
    # the table's total agrees with the process tree's counters
    assert res.metrics["proc_read_bytes"] >= storage
    frame = res.procs_frame()
    assert frame["read_bytes"].iloc[0] == max(r["read_bytes"] for r in rows)  # biggest reader first
    assert set(frame["role"]) == {"main", "worker 0", "worker 1"}


C = ProcCounters


def test_a_reaped_childs_totals_are_taken_back_from_its_parent():
    """Linux adds a reaped child's CPU and I/O to its parent; the table keeps them with the child."""
    t = ProcessTable(root_pid=os.getpid(), interval=1.0, pss=False)
    t.seen(os.getpid(), C(1.0, 100, 100, 10), 0.0, fresh=False)
    t.step(0.0, {os.getpid(): C(1.0, 100, 100, 10)})
    kid = t.rows[os.getpid()]
    assert kid.kind == "main"
    t.seen(99999999, C(0.0, 0, 0, 5), 0.5, fresh=True)  # a child born after the start
    t.rows[99999999].ppid = os.getpid()
    last = {os.getpid(): C(1.5, 150, 150, 10), 99999999: C(2.0, 5000, 6000, 5)}
    t.step(1.0, last)
    # the child exits and is reaped: the parent's counters now hold the child's totals too
    t.gone(99999999, 1.5, C(2.0, 5000, 6000, 5))
    last = {os.getpid(): C(1.5 + 2.0, 150 + 5000, 150 + 6000, 10)}
    t.step(2.0, last)
    t.sync(last)
    cols = t.columns(0.0)
    rows = {pid: dict(zip(cols, v)) for pid, v in zip(cols["pid"], zip(*cols.values()))}
    assert rows[os.getpid()]["read_bytes"] == 50 and rows[os.getpid()]["cpu_s"] == 0.5
    assert rows[99999999]["read_bytes"] == 5000 and rows[99999999]["read_syscall_bytes"] == 6000
    assert rows[99999999]["ended_s"] == 1.5
    assert cols["pid"][0] == 99999999  # the biggest reader first


WORKER = (
    "import ctypes, sys, time\n"
    "ctypes.CDLL(None).prctl(15, b'pt_data_worker', 0, 0, 0)\n"  # PR_SET_NAME, as torch does
    "time.sleep(float(sys.argv[1]))\n"
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl(PR_SET_NAME) is Linux")
def test_workers_of_another_program_are_numbered_by_start_time():
    src = ProcessTreeSource(table=0.05)
    m = Monitor(interval=0.05, sources=[src])
    with m:
        kids = []
        for _ in range(2):
            kids.append(subprocess.Popen([sys.executable, "-c", WORKER, "600"]))
            time.sleep(0.3)  # not a wait: two start times apart (the numbering's key)
        other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        try:
            # the event: both workers named (prctl ran, however slowly a loaded machine starts them)
            # and all three in the table; then the table is read once
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:
                roles = {r["pid"]: r["role"] for r in src.table.current()}
                if all(str(roles.get(k.pid, "")).startswith("worker") for k in kids) and other.pid in roles:
                    break
                time.sleep(0.05)  # the table's own interval
        finally:
            for p in kids + [other]:
                p.kill()
                p.wait()
    assert roles[kids[0].pid] == "worker 0" and roles[kids[1].pid] == "worker 1"
    assert roles[other.pid] == "child" and roles[os.getpid()] == "main"


def test_pss_is_read_within_its_cpu_budget():
    t = ProcessTable(root_pid=os.getpid(), interval=0.1, pss=True, pss_budget=0.001)
    c = ProcCounters(1.0, 0, 0, 50 * 2**20)
    t.seen(os.getpid(), c, 0.0, fresh=False)
    t.step(0.0, {os.getpid(): c})
    r = t.rows[os.getpid()]
    assert r.pss is not None and 0 < r.pss <= 4 * r.rss_peak + 2**30
    # the next read waits cost / budget (at least one table interval)
    assert r.pss_next >= 0.1
    # over a (simulated) minute, all the PSS reads together stay within the budget
    first = t.pss.spent
    for i in range(1, 601):
        t.step(i * 0.1, {os.getpid(): c})
    assert t.pss.spent <= t.pss.budget * 60 + 0.005 + 2 * first
    assert t.pss.spent > first  # and PSS is read again meanwhile
    t.close()


# ------------------------------------------------------------------ GPU memory per process (fake pynvml)
class FakeNvmlProcs:
    NVML_ERROR_NOT_FOUND = 6

    class NVMLError(Exception):
        def __init__(self, value):
            super().__init__(value)
            self.value = value

    def __init__(self, procs, util=()):
        self.procs, self.util = procs, list(util)

    def nvmlInit(self):
        pass

    def nvmlDeviceGetComputeRunningProcesses(self, h):
        return [SimpleNamespace(pid=p, usedGpuMemory=m) for p, m in self.procs]

    def nvmlDeviceGetProcessUtilization(self, h, last):
        got = [s for s in self.util if s.timeStamp > last]
        if not got:
            raise self.NVMLError(self.NVML_ERROR_NOT_FOUND)
        return got


def _dev(i=0):
    return SimpleNamespace(index=i, handle=("h", i))


def test_gpu_memory_and_utilisation_per_process_from_nvml(monkeypatch):
    me = os.getpid()
    fake = FakeNvmlProcs(
        [(me, 3 * 2**30), (424242, 2**30)],
        util=[
            SimpleNamespace(pid=me, timeStamp=10, smUtil=60, memUtil=5),
            SimpleNamespace(pid=me, timeStamp=20, smUtil=80, memUtil=5),
        ],
    )
    gp = GpuProcesses(Nvml(fake), [_dev(0)])
    gp.own_ns = False
    gp.match([me])
    matched, unmatched = gp.read()
    assert matched[me]["gpu_mem_bytes"] == 3 * 2**30 and matched[me]["gpu_util_pct"] == 70.0
    assert unmatched == [(0, 424242, 2**30)]
    # the next read sees no newer utilisation samples: N/A this time, not an error
    matched, _ = gp.read()
    assert matched[me]["gpu_util_pct"] is None and not gp.notes
    # in the table, through the monitor's link
    t = ProcessTable(root_pid=me, interval=0.1, pss=False)
    t.gpu = gp
    c = ProcCounters(1.0, 0, 0, 2**20)
    t.seen(me, c, 0.0, fresh=False)
    t.step(0.0, {me: c})
    assert t.current()[0]["gpu_mem_bytes"] == 3 * 2**30
    assert t.columns(0.0)["gpu_mem_peak_bytes"] == [3 * 2**30]


def _fake_proc(root, ns_link, nspids):
    """A fake /proc: /proc/self/ns/pid -> ns_link; /proc/PID/status with the given NSpid lines."""
    (root / "proc/self/ns").mkdir(parents=True)
    os.symlink(ns_link, root / "proc/self/ns/pid")
    for pid, ids in nspids.items():
        d = root / "proc" / str(pid)
        d.mkdir(parents=True, exist_ok=True)
        (d / "status").write_text("Name:\tpython\nNSpid:\t" + "\t".join(map(str, ids)) + "\n")
    return str(root)


def test_container_pid_namespace_is_detected_and_said_instead_of_showing_nothing(tmp_path):
    root = _fake_proc(tmp_path / "a", "pid:[4026532999]", {7: [7]})
    assert pid_namespace(root) == (True, "/proc/self/ns/pid is pid:[4026532999], not the initial namespace")
    fake = FakeNvmlProcs([(31337, 5 * 2**30)])
    gp = GpuProcesses(Nvml(fake), [_dev(0)], root=root)
    gp.match([7])
    matched, unmatched = gp.read()
    assert matched == {} and unmatched == [(0, 31337, 5 * 2**30)]
    assert any("PID namespace of its own" in n and "host PIDs" in n for n in gp.notes)
    # where /proc shows the outer PIDs (NSpid has two entries), NVML's PID is matched through it
    root = _fake_proc(tmp_path / "b", "pid:[4026532999]", {7: [31337, 7]})
    gp = GpuProcesses(Nvml(fake), [_dev(0)], root=root)
    gp.match([7])
    matched, unmatched = gp.read()
    assert matched[7]["gpu_mem_bytes"] == 5 * 2**30 and unmatched == [] and not gp.notes
    # the initial namespace: NVML's PIDs are ours
    root = _fake_proc(tmp_path / "c", "pid:[4026531836]", {})
    assert pid_namespace(root)[0] is False


def test_the_monitor_links_the_table_to_the_gpu_source_and_stores_it():
    from test_monitor_gpu import FakeNvml

    fake = FakeNvml(n=1)
    fake.nvmlDeviceGetComputeRunningProcesses = lambda h: [SimpleNamespace(pid=os.getpid(), usedGpuMemory=2**30)]
    m = Monitor(interval=0.05, gpus="all", net="none", nvml=Nvml(fake), procs=0.05)
    with m:
        time.sleep(0.4)
    res = m.result()
    table = m.source("proc").table
    assert table.gpu is not None and [d.index for d in table.gpu.devices] == [0]
    if not table.gpu.own_ns:  # this test machine's own PID namespace: matched directly
        assert res.samples["procs"]["gpu_mem_peak_bytes"][0] == 2**30
    else:
        assert res.samples["gpu_procs_unmatched"]["pid"] == [os.getpid()]


def test_a_short_run_gives_rates_over_the_time_it_was_watched():
    t = ProcessTable(root_pid=os.getpid(), interval=1.0, pss=False)
    t.seen(os.getpid(), ProcCounters(1.0, 0, 0, 2**20), 10.0, fresh=False)
    t.step(10.0, {os.getpid(): ProcCounters(1.0, 0, 0, 2**20)})
    last = {os.getpid(): ProcCounters(1.025, 6_000_000, 6_000_000, 2**20)}
    t.sync(last, 10.05)  # the run ends 50 ms later, before another step
    metrics, labels = t.summary()
    assert labels["proc_top_reader"] == f"main (pid {os.getpid()}): 120 MB/s from storage (6.00 MB read)"
    assert labels["proc_top_cpu"] == f"main (pid {os.getpid()}): 50 % of one core (0.0 s CPU)"
    assert t.columns(10.0)["read_mean_bytes_per_s"] == [pytest.approx(120e6)]
    t.sync(last, 10.005)  # under one step: no rate rather than a made-up one
    assert "proc_top_reader" not in t.summary()[1]
