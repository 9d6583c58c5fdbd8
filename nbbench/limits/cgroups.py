"""Where a process's cgroups are, and the container limits they set.

:func:`locate` finds the process's own cgroup folders — ``/proc/PID/cgroup`` (v1 lines
``N:controller,…:/path``, v2 ``0::/path``) joined to the mounts of ``/proc/self/mountinfo``
(a mount's root is subtracted, as in a container with its own cgroup namespace) — and
falls back to the usual places (``/sys/fs/cgroup``, ``/sys/fs/cgroup/<controller>``,
``/sys/fs/cgroup/unified``) where mountinfo is missing, as in a fixture tree.

:func:`read_limits` reads what those cgroups allow: the CPU quota and period (v2 ``cpu.max``,
v1 ``cpu.cfs_quota_us``/``cpu.cfs_period_us``; the tightest of the cgroup and its ancestors,
as the kernel applies them), the cpuset, the memory limit (v2 ``memory.max``, v1
``memory.limit_in_bytes``), ``pids.max``, the size of /dev/shm, and where the stall counters
are (``cpu.stat`` throttling, pressure stall information: the cgroup's own v2 ``*.pressure``
else ``/proc/pressure``).  Every function takes ``root`` ("/" live, a fixture tree in tests)
and never raises for a missing or unreadable file: that limit is None ("none found").
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

__all__ = ["locate", "read_limits", "stall_files", "psi_files", "parse_cpuset", "read_int", "CgroupPaths"]

#: the v1 controllers read here
_CONTROLLERS = ("cpu", "cpuacct", "cpuset", "memory", "pids")
#: v1 reports "no limit" as a huge page-aligned number
_UNLIMITED = 2**60


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError):
        return None


def read_int(path: Path) -> int | None:
    """A file holding one integer; None for 'max', missing, unreadable or v1's "unlimited"."""
    text = _read(path)
    if text is None:
        return None
    text = text.strip()
    try:
        v = int(text)
    except ValueError:
        return None
    return v if 0 <= v < _UNLIMITED else None


def parse_cpuset(text: str) -> int | None:
    """'0-3,8,10-11' -> 7 CPUs; None for an empty or malformed list."""
    n = 0
    for part in text.strip().split(","):
        if not part:
            continue
        a, _, b = part.partition("-")
        try:
            n += (int(b) - int(a) + 1) if b else 1
        except ValueError:
            return None
    return n or None


class CgroupPaths:
    """A process's cgroup folders: ``v2`` (its unified-hierarchy folder, or None) and ``v1``
    (controller -> folder); ``own`` (controller or "" -> the path in /proc/PID/cgroup); ``v2_root`` and
    ``v1_roots`` (the mount points, where walking up to the ancestors stops)."""

    def __init__(self) -> None:
        self.v2: Path | None = None
        self.v2_root: Path | None = None
        self.v1: dict[str, Path] = {}
        self.v1_roots: dict[str, Path] = {}
        self.own: dict[str, str] = {}

    @property
    def version(self) -> str | None:
        """'v2' (unified only), 'v1', 'hybrid' (v1 controllers beside a v2 tree) or None."""
        has2 = self.v2 is not None and bool((_read(self.v2_root / "cgroup.controllers") or "").strip())
        if self.v1 and self.v2 is not None:
            return "v2" if has2 and "cpu" not in self.v1 else "hybrid"
        if self.v1:
            return "v1"
        return "v2" if self.v2 is not None else None

    def ancestors(self, folder: Path, top: Path) -> list[Path]:
        """``folder`` and its parents up to the mount point ``top``, nearest first."""
        out = [folder]
        while folder != top and top in folder.parents:
            folder = folder.parent
            out.append(folder)
        return out


def _mountinfo(root: Path) -> list[tuple[str, str, str, str]] | None:
    """(mount root, mount point, fstype, super options) of the cgroup mounts; None if unreadable."""
    text = _read(root / "proc/self/mountinfo")
    if text is None:
        return None
    out = []
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        f, r = left.split(), right.split()
        if not sep or len(f) < 5 or len(r) < 3 or r[0] not in ("cgroup", "cgroup2"):
            continue
        point = f[4].replace("\\040", " ")
        out.append((f[3], point, r[0], r[2]))
    return out


def _join(root: Path, point: str, mount_root: str, own: str) -> Path:
    rel = own
    if mount_root not in ("/", "") and (own == mount_root or own.startswith(mount_root.rstrip("/") + "/")):
        rel = own[len(mount_root) :]
    return root / point.lstrip("/") / rel.lstrip("/")


def locate(root: str | os.PathLike = "/", pid: int | str = "self") -> CgroupPaths:
    """The cgroup folders of process ``pid`` under ``root`` (see the module doc)."""
    r = Path(root)
    cg = CgroupPaths()
    text = _read(r / f"proc/{pid}/cgroup") or ""
    for line in text.splitlines():
        num, _, rest = line.partition(":")
        ctrls, _, path = rest.partition(":")
        if num == "0" and ctrls == "":
            cg.own[""] = path or "/"
        else:
            for c in ctrls.split(","):
                if c:
                    cg.own[c] = path or "/"
    mounts = _mountinfo(r)
    if mounts:
        for mroot, point, fstype, opts in mounts:
            if fstype == "cgroup2":
                own = cg.own.get("", "/")
                cg.v2_root = r / point.lstrip("/")
                cg.v2 = _join(r, point, mroot, own)
            else:
                for c in opts.split(","):
                    if c not in _CONTROLLERS or c in cg.v1:
                        continue
                    own = cg.own.get(c, "/")
                    cg.v1_roots[c] = r / point.lstrip("/")
                    cg.v1[c] = _join(r, point, mroot, own)
    else:  # no mountinfo (a fixture tree): the usual places
        base = r / "sys/fs/cgroup"
        if (base / "cgroup.controllers").exists() or (base / "cpu.max").exists() or (base / "memory.max").exists():
            cg.v2_root, cg.v2 = base, base / cg.own.get("", "/").lstrip("/")
        elif (base / "unified").is_dir():
            cg.v2_root, cg.v2 = base / "unified", base / "unified" / cg.own.get("", "/").lstrip("/")
        for c in ("cpu", "cpuacct", "cpuset", "memory", "pids"):
            for name in (c, "cpu,cpuacct" if c in ("cpu", "cpuacct") else c):
                if (base / name).is_dir():
                    cg.v1_roots[c] = base / name
                    cg.v1[c] = base / name / cg.own.get(c, "/").lstrip("/")
                    break
    # a path from another cgroup namespace that is not visible here: the mount's own folder
    for c, folder in list(cg.v1.items()):
        if not folder.is_dir():
            cg.v1[c] = cg.v1_roots[c]
    if cg.v2 is not None and not cg.v2.is_dir():
        cg.v2 = cg.v2_root
    return cg


def _rel(root: Path, p: Path) -> str:
    """``p`` as the live system names it (without the fixture root)."""
    try:
        return "/" + str(p.relative_to(root)).lstrip("/") if str(root) != "/" else str(p)
    except ValueError:
        return str(p)


def _cpu_quota(cg: CgroupPaths, root: Path) -> dict[str, Any]:
    """The tightest CPU quota of the cgroup and its ancestors (v2 cpu.max, else v1 cfs files)."""
    best: dict[str, Any] = {"cpus": None, "quota_us": None, "period_us": None, "source": None, "stat": None}
    candidates: list[tuple[Path, str]] = []
    if cg.v2 is not None and cg.v2_root is not None:
        candidates += [(d, "v2") for d in cg.ancestors(cg.v2, cg.v2_root)]
    if "cpu" in cg.v1:
        candidates += [(d, "v1") for d in cg.ancestors(cg.v1["cpu"], cg.v1_roots["cpu"])]
    seen_file = False
    for folder, ver in candidates:
        if ver == "v2":
            text = _read(folder / "cpu.max")
            if text is None:
                continue
            seen_file = True
            parts = text.split()
            quota = None if not parts or parts[0] == "max" else parts[0]
            period = parts[1] if len(parts) > 1 else "100000"
            src = folder / "cpu.max"
        else:
            q = _read(folder / "cpu.cfs_quota_us")
            if q is None:
                continue
            seen_file = True
            quota, period = q.strip(), (_read(folder / "cpu.cfs_period_us") or "100000").strip()
            src = folder / "cpu.cfs_quota_us"
        try:
            qi, pi = int(quota) if quota is not None else -1, int(period)
        except ValueError:
            continue
        if qi > 0 and pi > 0 and (best["cpus"] is None or qi / pi < best["cpus"]):
            best.update(cpus=qi / pi, quota_us=qi, period_us=pi, source=_rel(root, src), stat=folder / "cpu.stat")
    best["files"] = seen_file
    if best["stat"] is None:  # no quota: the own cgroup's cpu.stat still counts periods (none throttled)
        own = cg.v1.get("cpu") or cg.v2
        best["stat"] = own / "cpu.stat" if own is not None else None
    return best


def _memory(cg: CgroupPaths, root: Path) -> dict[str, Any]:
    out: dict[str, Any] = {"limit_bytes": None, "source": None, "events": None, "files": False}
    candidates: list[tuple[Path, str]] = []
    if "memory" in cg.v1:
        candidates += [(d, "memory.limit_in_bytes") for d in cg.ancestors(cg.v1["memory"], cg.v1_roots["memory"])]
    if cg.v2 is not None and cg.v2_root is not None:
        candidates += [(d, "memory.max") for d in cg.ancestors(cg.v2, cg.v2_root)]
    for folder, name in candidates:
        if not (folder / name).exists():
            continue
        if not out["files"]:  # the nearest memory cgroup: its events
            out["files"] = True
            ev = folder / ("memory.events" if name == "memory.max" else "memory.failcnt")
            out["events"] = ev if ev.exists() else None
        v = read_int(folder / name)
        if v is not None and (out["limit_bytes"] is None or v < out["limit_bytes"]):
            out["limit_bytes"], out["source"] = v, _rel(root, folder / name)
    return out


def _pids(cg: CgroupPaths, root: Path) -> dict[str, Any]:
    for folder in (cg.v1.get("pids"), cg.v2):
        if folder is not None and (folder / "pids.max").exists():
            return {"max": read_int(folder / "pids.max"), "source": _rel(root, folder / "pids.max")}
    return {"max": None, "source": None}


def _cpuset(cg: CgroupPaths, root: Path) -> dict[str, Any]:
    for folder, names in (
        (cg.v1.get("cpuset"), ("cpuset.effective_cpus", "cpuset.cpus")),
        (cg.v2, ("cpuset.cpus.effective", "cpuset.cpus")),
    ):
        for n in names if folder is not None else ():
            text = _read(folder / n)
            if text and text.strip():
                return {"cpus": text.strip(), "count": parse_cpuset(text), "source": _rel(root, folder / n)}
    return {"cpus": None, "count": None, "source": None}


def psi_files(cg: CgroupPaths, root: Path) -> tuple[str | None, dict[str, Path]]:
    """('cgroup' | 'system' | None, resource -> pressure file): the cgroup's own v2 files where
    it has them (and is not the root: that is the whole system), else /proc/pressure."""
    if cg.v2 is not None and cg.v2 != cg.v2_root:
        own = {k: cg.v2 / f"{k}.pressure" for k in ("cpu", "io", "memory")}
        own = {k: p for k, p in own.items() if _read(p)}
        if own:
            return "cgroup", own
    sys_ = {k: root / "proc/pressure" / k for k in ("cpu", "io", "memory")}
    sys_ = {k: p for k, p in sys_.items() if _read(p)}
    return ("system", sys_) if sys_ else (None, {})


def shm_size(root: Path) -> int | None:
    """The size of /dev/shm (statvfs; only on the live system)."""
    if str(root) != "/":
        return None
    try:
        st = os.statvfs("/dev/shm")
    except OSError:
        return None
    return st.f_blocks * st.f_frsize


def stall_files(root: str | os.PathLike = "/", pid: int | str = "self") -> dict[str, Any]:
    """The counter files the stall sampler reads: ``cpu_stat`` (the cgroup that carries the tightest
    quota, else the own one; None where unreadable), ``psi_scope`` and ``psi`` (resource -> file),
    ``memory_events`` (v2 memory.events or v1 memory.failcnt; None where absent)."""
    r = Path(root)
    try:
        cg = locate(r, pid)
    except OSError:
        cg = CgroupPaths()
    stat = _cpu_quota(cg, r)["stat"]
    scope, files = psi_files(cg, r)
    return {
        "cpu_stat": stat if stat is not None and _read(stat) is not None else None,
        "psi_scope": scope,
        "psi": files,
        "memory_events": _memory(cg, r)["events"],
    }


def read_limits(root: str | os.PathLike = "/", pid: int | str = "self") -> dict[str, Any]:
    """The container limits of process ``pid`` as a JSON-compatible dict::

        {"cgroup": "v1" | "v2" | "hybrid" | None,
         "cpu_quota": 0.5 | None, "cpu_quota_us": 50000, "cpu_period_us": 100000, "cpu_quota_source": path,
         "cpuset": "0-3", "cpuset_count": 4, "memory_limit_bytes": … | None, "memory_limit_source": path,
         "pids_max": … | None, "shm_bytes": …, "throttling": path of cpu.stat | None,
         "psi": "cgroup" | "system" | None, "psi_source": folder, "memory_events": path | None}

    None everywhere on a machine without cgroups (a plain read-only /sys): nothing raises."""
    r = Path(root)
    try:
        cg = locate(r, pid)
    except OSError:
        cg = CgroupPaths()
    cpu = _cpu_quota(cg, r)
    mem = _memory(cg, r)
    cpuset = _cpuset(cg, r)
    pids = _pids(cg, r)
    scope, files = psi_files(cg, r)
    stat = cpu["stat"]
    return {
        "cgroup": cg.version,
        "cpu_quota": cpu["cpus"],
        "cpu_quota_us": cpu["quota_us"],
        "cpu_period_us": cpu["period_us"],
        "cpu_quota_source": cpu["source"] or ("no quota set" if cpu["files"] else None),
        "cpuset": cpuset["cpus"],
        "cpuset_count": cpuset["count"],
        "memory_limit_bytes": mem["limit_bytes"],
        "memory_limit_source": mem["source"] or ("no limit set" if mem["files"] else None),
        "pids_max": pids["max"],
        "pids_source": pids["source"],
        "shm_bytes": shm_size(r),
        "throttling": _rel(r, stat) if stat is not None and _read(stat) is not None else None,
        "psi": scope,
        "psi_source": _rel(r, next(iter(files.values())).parent) if files else None,
        "memory_events": _rel(r, mem["events"]) if mem["events"] is not None else None,
    }
