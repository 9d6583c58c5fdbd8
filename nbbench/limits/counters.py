"""Samples of the kernel's stall counters, and the figures of the window between two samples.

A :class:`StallReader` keeps the counter files open and re-reads each with one ``pread`` at
offset 0 (cgroupfs and procfs regenerate them), so a sample costs a few microseconds a file:

- ``cpu.stat`` of the cgroup that carries the CPU quota: ``nr_periods``, ``nr_throttled`` and the
  throttled time (v1 ``throttled_time`` in ns, v2 ``throttled_usec``);
- pressure stall information: ``some``/``full`` ``total=`` µs for cpu, io and memory — the
  cgroup's own v2 ``*.pressure`` files, else ``/proc/pressure/*`` (``scope`` says which);
- memory-limit events: v2 ``memory.events`` (``high``, ``max``, ``oom``, ``oom_kill``) or v1
  ``memory.failcnt`` (times the limit was hit).

:func:`window` turns two samples into per-window figures (see its doc); the keys carry their
units, as every metric does.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from .cgroups import stall_files

__all__ = [
    "StallReader",
    "window",
    "parse_cpu_stat",
    "parse_pressure",
    "parse_pressure_avg",
    "parse_memory_events",
    "FIGURES",
]

#: the figures of a window (and of a whole run): key -> what it is
FIGURES = {
    "cpu_throttled_periods_pct": "share of the quota's enforcement periods in which the cgroup was throttled",
    "cpu_throttled_pct": "time the cgroup's run queues spent throttled per second of wall time, % "
    "(summed over CPUs: may pass 100 % when several CPUs wait)",
    "psi_cpu_some_pct": "share of time some task waited for a CPU (PSI cpu some)",
    "psi_cpu_full_pct": "share of time all non-idle tasks waited for a CPU (PSI cpu full)",
    "psi_io_some_pct": "share of time some task waited on I/O (PSI io some)",
    "psi_io_full_pct": "share of time all non-idle tasks waited on I/O (PSI io full)",
    "psi_memory_some_pct": "share of time some task stalled on memory: reclaim, swap-in, refaults (PSI memory some)",
    "psi_memory_full_pct": "share of time all non-idle tasks stalled on memory (PSI memory full)",
    "memory_limit_events_count": "times the cgroup hit its memory limit (v2 memory.events max, v1 memory.failcnt)",
    "memory_oom_kills_count": "processes the OOM killer ended in the cgroup (v2 memory.events oom_kill)",
}
RESOURCES = ("cpu", "io", "memory")


def parse_cpu_stat(data: bytes | str) -> tuple[int, int, float] | None:
    """``cpu.stat`` -> (nr_periods, nr_throttled, throttled seconds); None without the fields."""
    if isinstance(data, bytes):
        data = data.decode("ascii", "replace")
    got: dict[str, int] = {}
    for line in data.split("\n"):
        k, _, v = line.partition(" ")
        if k in ("nr_periods", "nr_throttled", "throttled_time", "throttled_usec"):
            try:
                got[k] = int(v)
            except ValueError:
                return None
    if "nr_periods" not in got or "nr_throttled" not in got:
        return None
    if "throttled_usec" in got:
        secs = got["throttled_usec"] / 1e6
    else:
        secs = got.get("throttled_time", 0) / 1e9
    return got["nr_periods"], got["nr_throttled"], secs


def parse_pressure(data: bytes | str) -> tuple[int | None, int | None]:
    """A PSI file -> (some total µs, full total µs); None for a line that is not there (older
    kernels have no ``full`` line for cpu).  Byte searches, no splitting: this runs every sample."""
    if isinstance(data, str):
        data = data.encode()
    some = full = None
    at = 0
    while True:
        at = data.find(b"total=", at)
        if at < 0:
            break
        line = data.rfind(b"\n", 0, at) + 1
        end = data.find(b"\n", at)
        try:
            v = int(data[at + 6 : end if end >= 0 else len(data)].split(None, 1)[0])
        except (ValueError, IndexError):
            v = None
        if data.startswith(b"some", line):
            some = v
        elif data.startswith(b"full", line):
            full = v
        at += 6
    return some, full


def parse_pressure_avg(data: bytes | str, field: str = "avg60") -> tuple[float | None, float | None]:
    """A PSI file -> the kernel's own running averages (%, ``avg10``/``avg60``/``avg300``) of
    (some, full): what the doctor reads without waiting for a window."""
    if isinstance(data, bytes):
        data = data.decode("ascii", "replace")
    got: dict[str, float] = {}
    for line in data.split("\n"):
        kind, _, rest = line.partition(" ")
        for item in rest.split():
            k, _, v = item.partition("=")
            if k == field:
                try:
                    got[kind] = float(v)
                except ValueError:
                    pass
    return got.get("some"), got.get("full")


def parse_memory_events(data: bytes | str, v1: bool = False) -> tuple[int, int] | None:
    """(limit events, OOM kills): v2 ``memory.events`` (max + oom, oom_kill) or v1 ``memory.failcnt``
    (failcnt, 0); None if malformed."""
    if isinstance(data, bytes):
        data = data.decode("ascii", "replace")
    if v1:
        try:
            return int(data.strip()), 0
        except ValueError:
            return None
    got = {}
    for line in data.split("\n"):
        k, _, v = line.partition(" ")
        try:
            got[k] = int(v)
        except ValueError:
            continue
    if not got:
        return None
    return got.get("max", 0) + got.get("oom", 0), got.get("oom_kill", 0)


class _File:
    __slots__ = ("path", "fd")

    def __init__(self, path: Path):
        self.path = path
        self.fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))

    def read(self) -> bytes:
        return os.pread(self.fd, 4096, 0)

    def close(self) -> None:
        fd, self.fd = self.fd, -1
        if fd >= 0:
            try:
                os.close(fd)
            except OSError:
                pass

    def __del__(self) -> None:  # a reader dropped unclosed (an exception on the way) leaks no descriptor
        self.close()


class StallReader:
    """Open the stall counter files of process ``pid``'s cgroups (``root`` for fixture trees) and
    take samples: ``sample()`` -> ``{"t": monotonic s, "cpu": (periods, throttled, throttled_s) | None,
    "psi": {resource: (some_us, full_us)}, "mem": (events, oom_kills) | None}``.

    ``available`` lists what could be opened; ``scope`` is the PSI scope ("cgroup", "system" or None);
    ``sources`` names the files.  A file that fails later is dropped (its figures become None)."""

    def __init__(self, root: str | os.PathLike = "/", pid: int | str = "self"):
        self.root = str(root)
        found = stall_files(root, pid)
        self.scope: str | None = found["psi_scope"]
        self.sources: dict[str, str] = {}
        self._cpu: _File | None = None
        self._psi: dict[str, _File] = {}
        self._mem: _File | None = None
        self._mem_v1 = False
        if found["cpu_stat"] is not None:
            self._cpu = self._open(found["cpu_stat"], "cpu.stat")
            if self._cpu is not None and parse_cpu_stat(self._cpu.read()) is None:
                self._cpu.close()
                self._cpu = None
                self.sources.pop("cpu.stat", None)
        for res, path in found["psi"].items():
            f = self._open(path, f"psi {res}")
            if f is not None:
                self._psi[res] = f
        if found["memory_events"] is not None:
            self._mem = self._open(found["memory_events"], "memory events")
            self._mem_v1 = found["memory_events"].name == "memory.failcnt"
        if not self._psi:
            self.scope = None

    def _open(self, path: Path, what: str) -> _File | None:
        try:
            f = _File(path)
            f.read()
        except OSError:
            return None
        shown = str(path)
        if self.root != "/":
            shown = "/" + os.path.relpath(shown, self.root)
        self.sources[what] = shown
        return f

    @property
    def available(self) -> list[str]:
        """What is measured: 'throttling', 'psi', 'memory events'."""
        return [n for n, ok in (("throttling", self._cpu), ("psi", self._psi), ("memory events", self._mem)) if ok]

    def sample(self, now: float | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"t": time.monotonic() if now is None else now, "cpu": None, "psi": {}, "mem": None}
        if self._cpu is not None:
            try:
                out["cpu"] = parse_cpu_stat(self._cpu.read())
            except OSError:
                self._cpu.close()
                self._cpu = None
        for res, f in tuple(self._psi.items()):
            try:
                out["psi"][res] = parse_pressure(f.read())
            except OSError:
                f.close()
                del self._psi[res]
        if self._mem is not None:
            try:
                out["mem"] = parse_memory_events(self._mem.read(), self._mem_v1)
            except OSError:
                self._mem.close()
                self._mem = None
        return out

    def close(self) -> None:
        for f in (self._cpu, self._mem, *self._psi.values()):
            if f is not None:
                f.close()
        self._cpu = self._mem = None
        self._psi = {}

    def __enter__(self) -> StallReader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _pct(x: float) -> float:
    return round(min(100.0, max(0.0, x)), 2)


def window(a: dict[str, Any] | None, b: dict[str, Any] | None) -> dict[str, float | int | None]:
    """The figures of the window between samples ``a`` and ``b`` (:data:`FIGURES`); None for a figure
    not measured (no file, or no period elapsed: an idle cgroup under a quota counts none)."""
    out: dict[str, float | int | None] = dict.fromkeys(FIGURES)
    if not a or not b:
        return out
    dt = b["t"] - a["t"]
    if dt <= 0:
        return out
    ca, cb = a.get("cpu"), b.get("cpu")
    if ca and cb:
        periods = cb[0] - ca[0]
        out["cpu_throttled_periods_pct"] = _pct(100.0 * (cb[1] - ca[1]) / periods) if periods > 0 else None
        out["cpu_throttled_pct"] = round(max(0.0, 100.0 * (cb[2] - ca[2]) / dt), 2)
    pa, pb = a.get("psi") or {}, b.get("psi") or {}
    for res in RESOURCES:
        if res in pa and res in pb:
            for i, kind in enumerate(("some", "full")):
                x, y = pa[res][i], pb[res][i]
                if x is not None and y is not None:
                    out[f"psi_{res}_{kind}_pct"] = _pct((y - x) / (dt * 1e4))
    ma, mb = a.get("mem"), b.get("mem")
    if ma and mb:
        out["memory_limit_events_count"] = max(0, mb[0] - ma[0])
        out["memory_oom_kills_count"] = max(0, mb[1] - ma[1])
    return out
