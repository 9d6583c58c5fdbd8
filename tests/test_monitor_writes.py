"""The monitored tree's own writes: write() calls (``wchar``) and what reached storage
(``write_bytes`` less ``cancelled_write_bytes``), per process, for the tree, in its answer and
its verdict — measured on a real child process that writes a file in a temp dir."""

import os
import subprocess
import sys
import time

import pytest

from nbbench.monitor import Monitor
from nbbench.monitor.procfs import ProcReader, available
from nbbench.monitor.procs import ProcessTreeSource

SIZE = 8 * 2**20

#: waits for a line on stdin, writes SIZE bytes to argv[1] (fsync / not / deleted before writeback),
#: says "done", waits for stdin to close
_CHILD = r"""
import os, sys
path, mode, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
sys.stdin.readline()
with open(path, "wb") as f:
    for _ in range(size // 2**20):
        f.write(os.urandom(2**20))
    f.flush()
    if mode == "fsync":
        os.fsync(f.fileno())
if mode == "deleted":
    os.unlink(path)   # before writeback: its dirty pages are thrown away (cancelled_write_bytes)
print("done", flush=True)
sys.stdin.read()
"""


def _accounts_writes(folder) -> bool:
    """Whether this file system charges a process's writes to its /proc/PID/io (tmpfs does not)."""
    r = ProcReader(os.getpid())
    before = r.read().write_bytes
    p = os.path.join(folder, "probe.bin")
    with open(p, "wb") as f:
        f.write(b"\1" * 65536)
        f.flush()
        os.fsync(f.fileno())
    after = r.read().write_bytes
    r.close()
    os.unlink(p)
    return after - before >= 65536


def _run(tmp_path, mode):
    m = Monitor(interval=0.05, gpus="none", net="none", path=str(tmp_path), sources=[ProcessTreeSource(table=0.1)])
    with m:
        child = subprocess.Popen([sys.executable, "-c", _CHILD, str(tmp_path / "out.bin"), mode, str(SIZE)],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 20
        while child.pid not in m.source("proc").table.rows and time.monotonic() < deadline:
            time.sleep(0.02)   # until the tree's scan has found the child (its own row)
        child.stdin.write("go\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "done"
        t = time.monotonic()
        while time.monotonic() - t < 0.3:   # a few samples of the child after its writes
            time.sleep(0.05)
        child.stdin.close()
        child.wait(20)
        child.stdout.close()
    res = m.result()
    procs = res.samples["procs"]
    rows = [dict(zip(procs, v)) for v in zip(*procs.values())]
    row = next(r for r in rows if r["pid"] == child.pid)
    return res, row


needs_proc = pytest.mark.skipif(not available(), reason="needs Linux /proc")


@needs_proc
@pytest.mark.parametrize("mode", ["fsync", "cache", "deleted"])
def test_a_childs_writes_are_counted_as_write_calls_and_as_what_reached_storage(tmp_path, mode):
    """fsync'd and plain (page-cache) writes both count as written to storage — the kernel charges
    the pages when the process dirties them, written back now or later; a file deleted before
    writeback had its pages cancelled: write() calls, nothing to storage."""
    if not _accounts_writes(tmp_path):
        pytest.skip("this file system does not charge writes to the process (tmpfs)")
    res, row = _run(tmp_path, mode)
    m = res.metrics
    assert row["role"] == "child"
    assert row["write_syscall_bytes"] >= SIZE, row
    assert m["proc_write_syscall_bytes"] >= SIZE
    assert m["proc_write_syscall_bytes"] < 4 * SIZE   # the child's, not the machine's
    if mode == "deleted":
        assert row["write_bytes"] < SIZE / 2, row
        assert m["proc_write_bytes"] < SIZE / 2
    else:
        assert row["write_bytes"] >= 0.9 * SIZE, row
        assert 0.9 * SIZE <= m["proc_write_bytes"] < 4 * SIZE
        assert "to storage" in res.labels["proc_top_writer"]
        assert m["proc_top_writer_write_bytes"] >= 0.9 * SIZE
    assert m["proc_main_write_bytes"] < SIZE / 2   # the child's writes stay the child's
    tl = res.samples["timeline"]
    assert max(v or 0 for v in tl["proc.write_syscall_bytes_per_s"]) > 0
    line = res.answer_line()
    assert " write() (" in line and " to storage)" in line, line
    assert line.count("write()") == 1


def test_the_answer_says_the_trees_writes_once_in_the_sentences_prefix():
    from nbbench.results.monitor import MonitorResult

    base = {"wall_s": 10.0, "gpu_count": 0, "net_rx_bytes": 0, "net_tx_bytes": 0, "proc_cpu_s": 9.8,
            "proc_read_bytes": 0, "proc_read_syscall_bytes": 2.0e6}
    r = MonitorResult(params={"what": "cell"}, metrics={**base, "proc_write_syscall_bytes": 40e6,
                                                        "proc_write_bytes": 40e6}).finish()
    assert r.answer_line() == ("0.98 cores CPU · 2.00 MB read() (0 B from storage) · 40.0 MB write() "
                               "(40.0 MB to storage) · 10.0 s · CPU-bound (1 core)")
    big = MonitorResult(params={"what": "cell"}, metrics={**base, "proc_write_syscall_bytes": 1.5e9,
                                                          "proc_write_bytes": 0}).finish()
    assert "0.002 GB read() (0 B from storage) · 1.50 GB write() (0 B to storage)" in big.answer_line()
    quiet = MonitorResult(params={"what": "cell"}, metrics={**base, "proc_write_syscall_bytes": 0,
                                                            "proc_write_bytes": 0}).finish()
    assert "write" not in quiet.answer_line()   # it wrote nothing: nothing said about writes


def test_a_tree_that_writes_to_storage_without_using_its_cpu_is_waiting_on_storage_writing():
    from nbbench.results.monitor import monitor_verdict

    base = {"wall_s": 10.0, "gpu_count": 0, "net_rx_bytes": 0, "net_tx_bytes": 0, "proc_cpu_s": 1.0}
    assert monitor_verdict({**base, "proc_read_bytes": 0, "proc_write_bytes": 900e6}) == \
        "waiting on storage (writing)"
    assert monitor_verdict({**base, "proc_read_bytes": 900e6, "proc_write_bytes": 10e6}) == "waiting on storage"
    assert monitor_verdict({**base, "proc_cpu_s": 0.1, "proc_read_bytes": 0, "proc_write_bytes": 50e6}) != "idle"


@needs_proc
def test_the_fast_reader_and_psutil_agree_on_a_processs_writes(tmp_path):
    psutil = pytest.importorskip("psutil")
    from nbbench.monitor.procfs import PsutilProcReader

    fast, slow = ProcReader(os.getpid()), PsutilProcReader(psutil, os.getpid())
    a, b = fast.read(), slow.read()
    with open(tmp_path / "x.bin", "wb") as f:
        f.write(b"\1" * SIZE)
    c, d = fast.read(), slow.read()
    fast.close()
    assert c.write_chars - a.write_chars >= SIZE and d.write_chars - b.write_chars >= SIZE
    assert abs((c.write_bytes - a.write_bytes) - (d.write_bytes - b.write_bytes)) <= SIZE / 8


def test_the_status_line_gives_the_trees_read_and_write_calls_per_second():
    from nbbench.monitor.text import format_status

    rec = {"t": 12.3, "proc.cpu_pct": 98.0, "proc.read_syscall_bytes_per_s": 2e6,
           "proc.write_syscall_bytes_per_s": 40e6}
    assert "tree 0.98 cores read() 2.00 MB/s write() 40.0 MB/s" in format_status(rec, t0=0.0)
    assert "write()" not in format_status({"t": 1.0, "proc.cpu_pct": 98.0, "proc.write_syscall_bytes_per_s": 0.0})
