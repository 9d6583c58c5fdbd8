"""The monitored tree's own writes: write() calls (``wchar``), what it wrote to storage (``write_bytes``:
the pages it dirtied) and, beside it, what of that was cancelled (``cancelled_write_bytes``: deleted
before writeback), per process, for the tree, in its answer and its verdict — measured on a real child
process that writes a file in a temp dir, through the /proc fast path and through psutil."""

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


def _run(tmp_path, mode, fast=True):
    m = Monitor(
        interval=0.05, gpus="none", net="none", path=str(tmp_path), sources=[ProcessTreeSource(table=0.1, fast=fast)]
    )
    with m:
        child = subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(tmp_path / "out.bin"), mode, str(SIZE)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 20
        while child.pid not in m.source("proc").table.rows and time.monotonic() < deadline:
            time.sleep(0.02)  # until the tree's scan has found the child (its own row)
        child.stdin.write("go\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "done"
        t = time.monotonic()
        while time.monotonic() - t < 0.3:  # a few samples of the child after its writes
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


def _integrated(tl, field):
    """The bytes a rate series adds up to (each rate is over the interval since the sample before)."""
    t, v = tl["t_s"], tl[field]
    return sum((v[i] or 0) * (t[i] - t[i - 1]) for i in range(1, len(t)))


@needs_proc
@pytest.mark.parametrize("mode", ["fsync", "cache", "deleted"])
def test_a_childs_writes_are_counted_as_write_calls_and_as_what_reached_storage(tmp_path, mode):
    """fsync'd, plain (page-cache) and deleted-before-writeback writes all count as written to
    storage — the kernel charges the pages when the process dirties them; the deleted file's pages
    are said beside it as cancelled.  The rate series adds up to the total in every case (the live
    plot, its peak and mean tell the same story as the figure)."""
    if not _accounts_writes(tmp_path):
        pytest.skip("this file system does not charge writes to the process (tmpfs)")
    res, row = _run(tmp_path, mode)
    m = res.metrics
    assert row["role"] == "child"
    assert row["write_syscall_bytes"] >= SIZE, row
    assert m["proc_write_syscall_bytes"] >= SIZE
    assert m["proc_write_syscall_bytes"] < 4 * SIZE  # the child's, not the machine's
    assert row["write_bytes"] >= 0.9 * SIZE, row
    assert 0.9 * SIZE <= m["proc_write_bytes"] < 4 * SIZE
    assert "to storage" in res.labels["proc_top_writer"]
    assert m["proc_top_writer_write_bytes"] >= 0.9 * SIZE
    assert m["proc_main_write_bytes"] < SIZE / 2  # the child's writes stay the child's
    tl = res.samples["timeline"]
    assert max(v or 0 for v in tl["proc.write_syscall_bytes_per_s"]) > 0
    assert _integrated(tl, "proc.write_bytes_per_s") == pytest.approx(m["proc_write_bytes"], rel=0.1)
    line = res.answer_line()
    assert line.count("write()") == 1 and line.count("to storage") == 1, line
    if mode == "deleted":
        assert row["write_cancelled_bytes"] >= 0.9 * SIZE, row
        assert m["proc_write_cancelled_bytes"] >= 0.9 * SIZE
        assert m["proc_workers_write_cancelled_bytes"] == 0 and m["proc_main_write_cancelled_bytes"] < SIZE / 2
        assert "of it cancelled: deleted before written back)" in line, line
        assert "of it cancelled" in res.labels["proc_top_writer"]
        assert "cancelled" in res.procs_lines()[0]  # the column, there only where some row had any
    else:
        assert row["write_cancelled_bytes"] < SIZE / 2, row
        assert m["proc_write_cancelled_bytes"] < SIZE / 2
        assert " write() (" in line and " to storage)" in line, line


@needs_proc
def test_psutils_path_gives_the_same_write_figures_as_the_fast_path_for_a_file_deleted_before_writeback(tmp_path):
    """fast=False reads cancelled_write_bytes from /proc/PID/io (psutil has none): the same
    figures as the fast path — dirtied to storage, cancelled beside it."""
    pytest.importorskip("psutil")
    if not _accounts_writes(tmp_path):
        pytest.skip("this file system does not charge writes to the process (tmpfs)")
    res, row = _run(tmp_path, "deleted", fast=False)
    m = res.metrics
    assert row["write_bytes"] >= 0.9 * SIZE and row["write_cancelled_bytes"] >= 0.9 * SIZE, row
    assert 0.9 * SIZE <= m["proc_write_bytes"] < 4 * SIZE
    assert 0.9 * SIZE <= m["proc_write_cancelled_bytes"] < 4 * SIZE
    assert _integrated(res.samples["timeline"], "proc.write_bytes_per_s") == pytest.approx(
        m["proc_write_bytes"], rel=0.1
    )
    assert "proc_write_cancelled_bytes" not in res.na


def test_without_a_proc_io_file_psutils_path_says_the_cancelled_figure_is_not_available(monkeypatch):
    psutil = pytest.importorskip("psutil")
    from nbbench.monitor import procfs

    monkeypatch.setattr(procfs, "read_cancelled", lambda pid: None)  # another system: no /proc/PID/io
    r = procfs.PsutilProcReader(psutil, os.getpid())
    assert r.read().cancelled_write_bytes == 0 and not r.has_cancelled
    src = ProcessTreeSource(fast=False, table=0)
    src.open()
    src.sample(1.0)
    src.sample(2.0)
    src.close()
    assert "proc_write_cancelled_bytes" not in src.summary()
    assert "cancelled_write_bytes" in src.na["proc_write_cancelled_bytes"]
    assert "proc_write_bytes" in src.summary()


def test_the_answer_says_the_trees_writes_once_in_the_sentences_prefix():
    from nbbench.results.system.monitor import MonitorResult

    base = {
        "wall_s": 10.0,
        "gpu_count": 0,
        "net_rx_bytes": 0,
        "net_tx_bytes": 0,
        "proc_cpu_s": 9.8,
        "proc_read_bytes": 0,
        "proc_read_syscall_bytes": 2.0e6,
    }
    r = MonitorResult(
        params={"what": "cell"},
        metrics={**base, "proc_write_syscall_bytes": 40e6, "proc_write_bytes": 40e6, "proc_write_cancelled_bytes": 0},
    ).finish()
    assert r.answer_line() == (
        "0.98 cores CPU · 2.00 MB read() (0 B from storage) · 40.0 MB write() "
        "(40.0 MB to storage) · 10.0 s · CPU-bound (1 core)"
    )
    gone = MonitorResult(
        params={"what": "cell"},
        metrics={**base, "proc_write_syscall_bytes": 40e6, "proc_write_bytes": 40e6, "proc_write_cancelled_bytes": 4e5},
    ).finish()
    assert (
        "40.0 MB write() (40.0 MB to storage, 0.4 MB of it cancelled: deleted before written back)"
        in gone.answer_line()
    ), gone.answer_line()
    other = MonitorResult(
        params={"what": "cell"},
        metrics={**base, "proc_write_syscall_bytes": 0, "proc_write_bytes": 0, "proc_write_cancelled_bytes": 5e6},
    ).finish()
    assert "0 B write() (0 B to storage, 5.00 MB cancelled: deleted before written back)" in other.answer_line()
    big = MonitorResult(
        params={"what": "cell"}, metrics={**base, "proc_write_syscall_bytes": 1.5e9, "proc_write_bytes": 0}
    ).finish()
    assert "0.002 GB read() (0 B from storage) · 1.50 GB write() (0 B to storage)" in big.answer_line()
    quiet = MonitorResult(
        params={"what": "cell"}, metrics={**base, "proc_write_syscall_bytes": 0, "proc_write_bytes": 0}
    ).finish()
    assert "write" not in quiet.answer_line()  # it wrote nothing: nothing said about writes


def test_a_tree_that_writes_to_storage_without_using_its_cpu_is_waiting_on_storage_writing():
    from nbbench.results.system.monitor import monitor_verdict

    base = {"wall_s": 10.0, "gpu_count": 0, "net_rx_bytes": 0, "net_tx_bytes": 0, "proc_cpu_s": 1.0}
    assert monitor_verdict({**base, "proc_read_bytes": 0, "proc_write_bytes": 900e6}) == "waiting on storage (writing)"
    assert monitor_verdict({**base, "proc_read_bytes": 900e6, "proc_write_bytes": 10e6}) == "waiting on storage"
    assert monitor_verdict({**base, "proc_cpu_s": 0.1, "proc_read_bytes": 0, "proc_write_bytes": 50e6}) != "idle"
    # written, then deleted before writeback: it never waited on storage for it
    assert (
        monitor_verdict(
            {
                **base,
                "proc_cpu_s": 0.1,
                "proc_read_bytes": 0,
                "proc_write_bytes": 900e6,
                "proc_write_cancelled_bytes": 900e6,
            }
        )
        == "idle"
    )


@needs_proc
def test_the_fast_reader_and_psutil_agree_on_a_processs_writes_and_cancelled_writes(tmp_path):
    psutil = pytest.importorskip("psutil")
    from nbbench.monitor.procfs import PsutilProcReader

    fast, slow = ProcReader(os.getpid()), PsutilProcReader(psutil, os.getpid())
    a, b = fast.read(), slow.read()
    with open(tmp_path / "x.bin", "wb") as f:
        f.write(b"\1" * SIZE)
    os.unlink(tmp_path / "x.bin")  # before writeback
    c, d = fast.read(), slow.read()
    fast.close()
    assert slow.has_cancelled
    assert c.write_chars - a.write_chars >= SIZE and d.write_chars - b.write_chars >= SIZE
    for f in ("write_bytes", "cancelled_write_bytes"):
        assert abs((getattr(c, f) - getattr(a, f)) - (getattr(d, f) - getattr(b, f))) <= SIZE / 8, f
    if _accounts_writes(tmp_path):
        assert c.write_bytes - a.write_bytes >= 0.9 * SIZE
        assert c.cancelled_write_bytes - a.cancelled_write_bytes >= 0.9 * SIZE


def test_the_status_line_gives_the_trees_read_and_write_calls_per_second():
    from nbbench.monitor.text import format_status

    rec = {
        "t": 12.3,
        "proc.cpu_pct": 98.0,
        "proc.read_syscall_bytes_per_s": 2e6,
        "proc.write_syscall_bytes_per_s": 40e6,
    }
    assert "tree 0.98 cores read() 2.00 MB/s write() 40.0 MB/s" in format_status(rec, t0=0.0)
    assert "write()" not in format_status({"t": 1.0, "proc.cpu_pct": 98.0, "proc.write_syscall_bytes_per_s": 0.0})
