"""Linux fast path for the 10 Hz host readings: persistent /proc file descriptors.

psutil opens, reads and closes a file per call and parses it in Python; at 10 Hz
beside a busy, GIL-holding loop that costs more than the 1 %-of-a-core budget.
Here each hot file (``/proc/stat``, ``/proc/diskstats``, ``/proc/PID/stat``,
``/proc/PID/io``) stays open and is re-read with one ``pread`` at offset 0 (procfs
regenerates it), giving the same counters psutil would, as compatible namedtuples.
Everything else (discovery, memory, other platforms) stays with psutil.
:func:`available` says whether this path works here; any error falls back.

A process is read through :class:`ProcReader` here, or :class:`PsutilProcReader` (the
portable path, the same counters; psutil has no ``cancelled_write_bytes``, so it reads that one
from /proc/PID/io where there is one); :func:`process_reader` picks one.
"""

from __future__ import annotations

import os
from collections import namedtuple
from typing import Any

__all__ = [
    "available",
    "ProcFile",
    "CpuTimes",
    "DiskCounters",
    "ProcCounters",
    "COUNTED",
    "counted",
    "NetCounters",
    "read_cpu_times",
    "read_diskstats",
    "read_net_dev",
    "read_meminfo",
    "read_pss",
    "proc_identity",
    "read_cancelled",
    "ProcReader",
    "PsutilProcReader",
    "process_reader",
    "children_of",
]

CpuTimes = namedtuple("CpuTimes", "user nice system idle iowait irq softirq steal guest guest_nice")
DiskCounters = namedtuple("DiskCounters", "read_count write_count read_bytes write_bytes busy_time")
#: cpu in seconds (self + reaped children), bytes; rss in bytes.  ``read_bytes``: what the process
#: made the kernel fetch from storage; ``read_chars``: bytes its read() calls returned (page-cache hits
#: included); ``write_chars``: bytes its write() calls took; ``write_bytes``: the pages it dirtied for
#: storage (counted when dirtied, written back later); ``cancelled_write_bytes``: dirty pages it threw
#: away before writeback (a file deleted or truncated in time; charged to whoever deleted it, so it may
#: exceed what the process itself dirtied) — reported beside ``write_bytes``, never subtracted from it
ProcCounters = namedtuple(
    "ProcCounters",
    "cpu_s read_bytes read_chars rss_bytes write_bytes write_chars cancelled_write_bytes",
    defaults=(0, 0, 0),
)
#: the counters that only grow (cumulative): what totals, rates and reaped children are made of
COUNTED = ("cpu_s", "read_bytes", "read_chars", "write_bytes", "write_chars", "cancelled_write_bytes")


def counted(c) -> tuple:
    """``c``'s cumulative counters in :data:`COUNTED` order."""
    return (c.cpu_s, c.read_bytes, c.read_chars, c.write_bytes, c.write_chars, c.cancelled_write_bytes)


def read_cancelled(pid: int) -> int | None:
    """``cancelled_write_bytes`` of ``pid`` from /proc/PID/io (None where there is no such file or
    field: not Linux, no permission); ProcessLookupError once the process is gone."""
    try:
        with open(f"/proc/{pid}/io", "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        if os.path.isdir("/proc/self") and not os.path.isdir(f"/proc/{pid}"):  # Linux: the process is gone
            raise ProcessLookupError(pid) from None
        return None
    except OSError:
        return None
    for line in data.split(b"\n"):
        if line.startswith(b"cancelled_write_bytes:"):
            return int(line.split()[1])
    return None


#: one network interface's counters since boot, as psutil names them
NetCounters = namedtuple("NetCounters", "bytes_recv packets_recv bytes_sent packets_sent")

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


class HostSource:
    """What the sources reading /proc share: ``fast`` (reading /proc directly; ``want_fast``: asked for,
    else psutil), ``notes``, ``na`` (figure -> why it is not available) and ``labels``."""

    def __init__(self, fast: bool = True):
        self.want_fast = fast
        self.fast = False
        self.notes: list[str] = []
        self.na: dict[str, str] = {}
        self.labels: dict[str, Any] = {}
        self._psutil = None


class ProcFile:
    """An open /proc file re-read with ``pread`` (one syscall per read)."""

    __slots__ = ("path", "fd", "size")

    def __init__(self, path: str, size: int = 16384):
        self.path = path
        self.fd = None
        self.fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        self.size = size

    def read(self) -> bytes:
        data = os.pread(self.fd, self.size, 0)
        while len(data) >= self.size:  # grew past the buffer: read it whole
            self.size *= 4
            data = os.pread(self.fd, self.size, 0)
        return data

    def close(self) -> None:
        if self.fd is not None:
            try:
                os.close(self.fd)
            except OSError:
                pass
            self.fd = None

    def __del__(self):
        self.close()


def read_cpu_times(f: ProcFile) -> list[CpuTimes]:
    """Per-CPU times (ticks) from /proc/stat, in CPU order."""
    out = []
    for line in f.read().split(b"\n"):
        if line.startswith(b"cpu") and line[3:4].isdigit():
            parts = line.split()
            vals = [int(x) for x in parts[1:11]]
            vals += [0] * (10 - len(vals))
            out.append(CpuTimes(*vals))
    return out


def read_diskstats(f: ProcFile, names: frozenset | None = None) -> dict[str, DiskCounters]:
    """name -> counters from /proc/diskstats (sectors are 512 bytes there, always); only ``names``
    (bytes) when given."""
    out = {}
    for line in f.read().split(b"\n"):
        p = line.split()
        if len(p) < 14 or (names is not None and p[2] not in names):
            continue
        out[p[2].decode()] = DiskCounters(int(p[3]), int(p[7]), int(p[5]) * 512, int(p[9]) * 512, int(p[12]))
    return out


def read_meminfo(f: ProcFile) -> tuple[int, int]:
    """``(total, available)`` bytes from an open /proc/meminfo (as psutil's virtual_memory)."""
    total = avail = None
    for line in f.read().split(b"\n"):
        if line.startswith(b"MemTotal:"):
            total = int(line.split()[1]) * 1024
        elif line.startswith(b"MemAvailable:"):
            avail = int(line.split()[1]) * 1024
            break
    if total is None or avail is None:
        raise ValueError("no MemTotal / MemAvailable in /proc/meminfo")
    return total, avail


def read_net_dev(f: ProcFile, names: frozenset | None = None) -> dict[str, NetCounters]:
    """interface -> counters from /proc/net/dev (this network namespace's interfaces); only ``names``
    (bytes) when given."""
    out = {}
    for line in f.read().split(b"\n")[2:]:
        name, sep, rest = line.partition(b":")
        if not sep:
            continue
        name = name.strip()
        if names is not None and name not in names:
            continue
        p = rest.split()
        if len(p) < 10:
            continue
        out[name.decode()] = NetCounters(int(p[0]), int(p[1]), int(p[8]), int(p[9]))
    return out


def read_pss(f: ProcFile) -> int | None:
    """Proportional set size in bytes from an open /proc/PID/smaps_rollup (None when absent).

    The kernel walks the process's page tables to make this file: read it seldom.
    """
    for line in f.read().split(b"\n"):
        if line.startswith(b"Pss:"):
            return int(line.split()[1]) * 1024
    return None


def proc_identity(pid: int) -> tuple[str, int, float]:
    """``(comm, ppid, start time in seconds since boot)`` of ``pid`` from /proc/PID/stat (OSError once gone)."""
    with open(f"/proc/{pid}/stat", "rb") as fh:
        data = fh.read()
    comm = data[data.index(b"(") + 1 : data.rindex(b")")].decode(errors="replace")
    rest = data[data.rindex(b")") + 2 :].split()
    return comm, int(rest[1]), int(rest[19]) / _TICK


class ProcReader:
    """CPU time, I/O (reads and writes) and RSS of one process from /proc/PID/stat and /proc/PID/io."""

    __slots__ = ("pid", "stat", "io")

    def __init__(self, pid: int):
        self.pid = pid
        self.stat = ProcFile(f"/proc/{pid}/stat", 4096)
        try:
            self.io = ProcFile(f"/proc/{pid}/io", 4096)
        except OSError:  # no permission (another user's process)
            self.io = None

    def read(self) -> ProcCounters:
        """Raises OSError (ProcessLookupError) once the process is gone."""
        data = self.stat.read()
        if not data:
            raise ProcessLookupError(self.pid)
        rest = data[data.rindex(b")") + 2 :].split()
        cpu = (int(rest[11]) + int(rest[12]) + int(rest[13]) + int(rest[14])) / _TICK
        rss = int(rest[21]) * _PAGE
        rb = rc = wb = wc = cw = 0
        if self.io is not None:
            try:
                tok = self.io.read().split()
                if len(tok) > 13 and tok[0] == b"rchar:" and tok[12] == b"cancelled_write_bytes:":  # since 2.6
                    rc, wc, rb, wb, cw = int(tok[1]), int(tok[3]), int(tok[9]), int(tok[11]), int(tok[13])
                else:
                    io = dict(zip(tok[::2], tok[1::2]))
                    rc, wc = int(io.get(b"rchar:", 0)), int(io.get(b"wchar:", 0))
                    rb, wb = int(io.get(b"read_bytes:", 0)), int(io.get(b"write_bytes:", 0))
                    cw = int(io.get(b"cancelled_write_bytes:", 0))
            except PermissionError:
                self.io = None
        return ProcCounters(cpu, rb, rc, rss, wb, wc, cw)

    @property
    def has_io(self) -> bool:
        return self.io is not None

    @property
    def has_cancelled(self) -> bool:
        """Whether ``cancelled_write_bytes`` was read (always with /proc/PID/io)."""
        return self.io is not None

    def close(self) -> None:
        self.stat.close()
        if self.io is not None:
            self.io.close()


class PsutilProcReader:
    """psutil's view of one process, read like :class:`ProcReader` (the portable path)."""

    def __init__(self, ps, pid: int):
        self.ps = ps
        self.pid = pid
        self.p = ps.Process(pid)
        self.has_io = True
        #: psutil has no cancelled_write_bytes: it is read from /proc/PID/io where there is one
        self.has_cancelled = True

    def read(self) -> ProcCounters:
        ps, p = self.ps, self.p
        try:
            with p.oneshot():
                ct = p.cpu_times()
                cpu = ct.user + ct.system + getattr(ct, "children_user", 0.0) + getattr(ct, "children_system", 0.0)
                rss = p.memory_info().rss
                rb = rc = wb = wc = cw = 0
                if self.has_io:
                    try:
                        io = p.io_counters()
                        rb, rc = io.read_bytes, getattr(io, "read_chars", 0)
                        wb, wc = io.write_bytes, getattr(io, "write_chars", 0)
                    except (ps.AccessDenied, AttributeError, NotImplementedError):
                        self.has_io = False
            if self.has_io and self.has_cancelled:
                cw = read_cancelled(self.pid)
                if cw is None:
                    self.has_cancelled, cw = False, 0
        except ps.NoSuchProcess:
            raise ProcessLookupError(self.pid) from None
        except ps.Error as exc:
            raise OSError(str(exc)) from None
        return ProcCounters(cpu, rb, rc, rss, wb, wc, cw)

    def close(self) -> None:
        pass


def process_reader(pid: int, fast: bool, ps=None):
    """A reader of ``pid``: :class:`ProcReader` when ``fast``, else :class:`PsutilProcReader` (``ps``: psutil)."""
    return ProcReader(pid) if fast else PsutilProcReader(ps, pid)


def children_of(pid: int) -> list[int] | None:
    """All descendants of ``pid`` from /proc/PID/task/TID/children; None where unsupported."""
    out: list[int] = []
    todo = [pid]
    first = True
    while todo:
        p = todo.pop()
        try:
            tids = os.listdir(f"/proc/{p}/task")
        except OSError:
            if first:
                return None
            continue
        for tid in tids:
            try:
                with open(f"/proc/{p}/task/{tid}/children", "rb") as fh:
                    kids = fh.read().split()
            except FileNotFoundError:
                if first:
                    return None  # kernel without CONFIG_PROC_CHILDREN
                continue
            except OSError:
                continue
            for k in kids:
                c = int(k)
                out.append(c)
                todo.append(c)
            first = False
        first = False
    return out


def available() -> bool:
    """True where /proc has what the fast path reads (Linux)."""
    try:
        f = ProcFile("/proc/stat")
        ok = bool(read_cpu_times(f))
        f.close()
        g = ProcFile("/proc/diskstats")
        read_diskstats(g)
        g.close()
        ProcReader(os.getpid()).read()
        return ok
    except (OSError, ValueError, IndexError):
        return False
