"""What a host's CPUs and disk did during a many-rank run, read by its local rank 0.

The monitor's own sources (:class:`nbbench.monitor.cpu.CpuSource`,
:class:`nbbench.monitor.disk.DiskSource`) are sampled once when the run starts and once
when it ends; their rates over that interval are the host's mean CPU busy % and the busy %
of the disk behind the probe's path (system-wide where the path has no block device of
its own: NFS, overlay, tmpfs — said in ``disk_device``).
"""

from __future__ import annotations

import time

from ..monitor.cpu import CpuSource
from ..monitor.disk import DiskSource

__all__ = ["HostStats"]


class HostStats:
    """``start()`` before the run, ``stop()`` after: ``{"cpu_util_pct", "disk_busy_pct", "disk_device"}``."""

    def __init__(self, path: str | None):
        self.path = path
        self.cpu = None
        self.disk = None
        self.notes: list[str] = []

    def start(self) -> HostStats:
        now = time.monotonic()
        try:
            self.cpu = CpuSource(per_core=False)
            self.cpu.sample(now)
        except Exception as exc:  # noqa: BLE001 - figures about the host never stop the run
            self.cpu = None
            self.notes.append(f"CPU figures N/A: {exc}")
        try:
            self.disk = DiskSource(self.path)
            self.disk.sample(now)
        except Exception as exc:  # noqa: BLE001
            self.disk = None
            self.notes.append(f"disk figures N/A: {exc}")
        return self

    def stop(self) -> dict:
        now = time.monotonic()
        out: dict = {}
        if self.cpu is not None:
            try:
                s = self.cpu.sample(now)
                out["cpu_util_pct"] = s.get("cpu.util_pct")
                out["cpu_iowait_pct"] = s.get("cpu.iowait_pct")
            except Exception:  # noqa: BLE001
                pass
            self.cpu.close()
        if self.disk is not None:
            try:
                s = self.disk.sample(now)
                out["disk_busy_pct"] = s.get("disk.busy_pct")
                out["disk_read_bytes_per_s"] = s.get("disk.read_bytes_per_s")
                out["disk_write_bytes_per_s"] = s.get("disk.write_bytes_per_s")
                out["disk_device"] = self.disk.labels.get("disk_device")
            except Exception:  # noqa: BLE001
                pass
            self.disk.close()
        if self.notes:
            out["notes"] = list(self.notes)
        return out
