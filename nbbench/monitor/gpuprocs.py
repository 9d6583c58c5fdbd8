"""GPU memory and utilisation per process, from NVML, matched to the processes seen in /proc.

``nvmlDeviceGetComputeRunningProcesses`` gives each compute process's GPU memory and
``nvmlDeviceGetProcessUtilization`` its SM utilisation (the share of the sample period a
kernel of that process ran; NVML's own samples since the last one seen), both through
:class:`nbbench.nvml.Nvml` (an unsupported call is N/A with the reason, never an error).

NVML reports PIDs of the driver's PID namespace — the host's.  Inside a container with
its own PID namespace those are not the PIDs in ``/proc`` here: :func:`pid_namespace`
detects it (``/proc/self/ns/pid`` is not the initial namespace, ``NSpid`` in
``/proc/self/status`` has more than one entry, or ``/proc/1/sched`` names another PID),
and :class:`GpuProcesses` matches through ``NSpid`` where ``/proc`` shows the outer PIDs;
where it cannot, it says so in a note (with what NVML lists) rather than attributing a
host process's memory to a local one that happens to share its number.
"""

from __future__ import annotations

import os
from typing import Any

from ..nvml import is_na

__all__ = ["GpuProcesses", "pid_namespace", "nspid"]

#: the inode number of the initial PID namespace (PROC_PID_INIT_INO, fixed in the kernel)
_INIT_PID_NS = "pid:[4026531836]"
_TRANSIENT = {"NVML_ERROR_NOT_FOUND", "NVML_ERROR_TIMEOUT"}


def nspid(pid: int | str, root: str = "/") -> list[int]:
    """The PIDs of ``pid`` in each PID namespace /proc shows, outermost first ([] when unreadable)."""
    try:
        with open(os.path.join(root, f"proc/{pid}/status"), "rb") as fh:
            for line in fh:
                if line.startswith(b"NSpid:"):
                    return [int(x) for x in line.split()[1:]]
    except (OSError, ValueError):
        pass
    return []


def pid_namespace(root: str = "/") -> tuple[bool, str]:
    """``(own, how)``: whether this process lives in a PID namespace of its own (a container's),
    and how that was seen."""
    try:
        link = os.readlink(os.path.join(root, "proc/self/ns/pid"))
        if link != _INIT_PID_NS:
            return True, f"/proc/self/ns/pid is {link}, not the initial namespace"
        return False, "/proc/self/ns/pid is the initial PID namespace"
    except OSError:
        pass
    ids = nspid("self", root)
    if len(ids) > 1:
        return True, f"NSpid in /proc/self/status has {len(ids)} entries"
    try:
        with open(os.path.join(root, "proc/1/sched"), "rb") as fh:
            first = fh.readline()
        pid1 = int(first[first.rindex(b"(") + 1 :].split(b",")[0])
        if pid1 != 1:
            return True, f"/proc/1/sched names PID {pid1}"
    except (OSError, ValueError, IndexError):
        pass
    return False, "no sign of a PID namespace of its own"


class GpuProcesses:
    """Per-process GPU memory and SM utilisation of ``devices`` (objects with ``index`` and ``handle``)."""

    def __init__(self, nv, devices, root: str = "/"):
        self.nv = nv
        self.devices = list(devices)
        self.root = root
        self.notes: list[str] = []
        self.own_ns, self.ns_how = pid_namespace(root)
        self._util_ts: dict[int, int] = {}
        self._no_util: set[int] = set()
        self._no_procs: set[int] = set()
        self._map: dict[int, int] = {}  # NVML pid -> local pid
        #: the compute processes NVML listed last time that are not matched here: (gpu, NVML pid, bytes)
        self.unmatched: list[tuple[int, int, int | None]] = []

    def _note(self, sentence: str) -> None:
        if sentence not in self.notes:
            self.notes.append(sentence)

    def match(self, pids) -> None:
        """Learn how NVML's PIDs name the local ``pids`` (call when the set of processes changes)."""
        pids = list(pids)
        out = {}
        for pid in pids:
            if not self.own_ns:
                out[pid] = pid
                continue
            ids = nspid(pid, self.root)
            if len(ids) > 1:
                out[ids[0]] = pid
        self._map = out
        if self.own_ns and pids and not out and self.devices:
            self._note(
                f"this process runs in a PID namespace of its own ({self.ns_how}): NVML reports host PIDs, "
                "which cannot be matched to the PIDs seen here (NSpid shows only this namespace), so GPU "
                "memory per process is N/A; the device totals are in gpu*.mem_used_bytes and what NVML "
                "lists, by host PID, in samples['gpu_procs_unmatched']"
            )

    def read(self) -> tuple[dict[int, dict[str, Any]], list[tuple[int, int, int | None]]]:
        """``(matched, unmatched)``: local pid -> ``{"gpu_mem_bytes", "gpu_util_pct", "gpus"}``,
        and ``(gpu index, NVML pid, memory bytes)`` of the compute processes not matched here."""
        matched: dict[int, dict[str, Any]] = {}
        unmatched: list[tuple[int, int, int | None]] = []
        for dev in self.devices:
            i = dev.index
            if i not in self._no_procs:
                procs = self.nv.call("nvmlDeviceGetComputeRunningProcesses", dev.handle)
                if is_na(procs):
                    if procs.error not in _TRANSIENT:
                        self._no_procs.add(i)
                        self._note(f"GPU {i} memory per process is N/A: {procs.reason}")
                    procs = []
                for p in procs or []:
                    pid, mem = int(getattr(p, "pid", 0)), getattr(p, "usedGpuMemory", None)
                    local = self._map.get(pid)
                    if local is None:
                        unmatched.append((i, pid, mem))
                        continue
                    row = matched.setdefault(local, {"gpu_mem_bytes": None, "gpu_util_pct": None, "gpus": []})
                    if mem is not None:
                        row["gpu_mem_bytes"] = (row["gpu_mem_bytes"] or 0) + int(mem)
                    row["gpus"].append(i)
            self._read_util(dev, matched)
        self.unmatched = unmatched
        return matched, unmatched

    def _read_util(self, dev, matched: dict) -> None:
        i = dev.index
        if i in self._no_util:
            return
        r = self.nv.call("nvmlDeviceGetProcessUtilization", dev.handle, self._util_ts.get(i, 0))
        if is_na(r):
            if r.error not in _TRANSIENT:
                self._no_util.add(i)
                self._note(f"GPU {i} utilisation per process is N/A: {r.reason}")
            return
        newest = self._util_ts.get(i, 0)
        per_pid: dict[int, list[float]] = {}
        for s in r or []:
            ts = int(getattr(s, "timeStamp", 0))
            if ts <= self._util_ts.get(i, 0):
                continue
            newest = max(newest, ts)
            per_pid.setdefault(int(s.pid), []).append(float(getattr(s, "smUtil", 0)))
        self._util_ts[i] = newest
        for pid, vals in per_pid.items():
            local = self._map.get(pid)
            if local is None:
                continue
            row = matched.setdefault(local, {"gpu_mem_bytes": None, "gpu_util_pct": None, "gpus": []})
            u = sum(vals) / len(vals)
            row["gpu_util_pct"] = round((row["gpu_util_pct"] or 0.0) + u, 1)
            if i not in row["gpus"]:
                row["gpus"].append(i)
