"""The environment fingerprint: what machine, container and packages a result came from.

:func:`fingerprint` returns a JSON-compatible dict with a stable ``id`` (a hash of
the parts that identify the environment, not of volatile readings like free
memory), so the store keeps each distinct environment once.

The container's limits (CPU quota, cpuset, memory, pids, /dev/shm, stall counters) are read by
:mod:`nbbench.limits` (one reader); the fingerprint keeps them under ``limits``.
The cgroup and CPU helpers here (:func:`usable_cpus`, :func:`cgroup_cpu_limit`,
:func:`cgroup_memory_limit`, :func:`container_kind`, :func:`nofile_limits`) take a
``root`` argument so they can be tested on fixture trees; the doctor and the
DataLoader sweep's preflight read CPUs, /dev/shm and the open-file limit through them.
The exact-version exports of the package list (requirements, conda) are :mod:`nbbench.envexport`.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import socket
import sys
import threading
from pathlib import Path
from typing import Any

from .limits.cgroups import read_limits
from .nvml import get_nvml, is_na
from .version import __version__

__all__ = [
    "fingerprint",
    "packages",
    "usable_cpus",
    "cgroup_cpu_limit",
    "cgroup_memory_limit",
    "container_kind",
    "cpu_model",
    "torch_info",
    "shm_usage",
    "shm_free_bytes",
    "nofile_limits",
    "parse_limits",
]


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError):
        return None


# ------------------------------------------------------------------ containers
def container_kind(root: str | os.PathLike = "/") -> str | None:
    """'docker', 'podman', 'kubernetes', 'containerd', 'lxc', 'container' or None."""
    r = Path(root)
    if (r / ".dockerenv").exists():
        return "docker"
    if (r / "run/.containerenv").exists():
        return "podman"
    env_container = os.environ.get("container") if str(r) == "/" else None
    if env_container:
        return env_container
    if str(r) == "/" and os.environ.get("KUBERNETES_SERVICE_HOST"):
        return "kubernetes"
    cg = _read(r / "proc/1/cgroup") or ""
    for needle, kind in (
        ("kubepods", "kubernetes"),
        ("docker", "docker"),
        ("containerd", "containerd"),
        ("lxc", "lxc"),
        ("libpod", "podman"),
    ):
        if needle in cg:
            return kind
    return None


# ------------------------------------------------------------------------ CPUs
def cgroup_cpu_limit(root: str | os.PathLike = "/") -> float | None:
    """CPUs allowed by the cgroup quota (v2 ``cpu.max`` or v1 cfs quota, the tightest of this process's
    cgroup and its ancestors: :func:`nbbench.limits.read_limits`), None if unlimited."""
    return read_limits(root)["cpu_quota"]


def usable_cpus(root: str | os.PathLike = "/") -> dict[str, Any]:
    """CPU counts: logical (os.cpu_count), affinity, cgroup quota, and the usable minimum."""
    logical = os.cpu_count() or 1
    try:
        affinity = len(os.sched_getaffinity(0)) if str(root) == "/" else logical
    except (AttributeError, OSError):
        affinity = logical
    quota = cgroup_cpu_limit(root)
    usable = float(affinity)
    if quota is not None:
        usable = min(usable, quota)
    return {
        "logical": logical,
        "affinity": affinity,
        "cgroup_quota": quota,
        "usable": usable,
        "usable_int": max(1, int(usable)),
    }


def cpu_model(root: str | os.PathLike = "/") -> str:
    text = _read(Path(root) / "proc/cpuinfo") or ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("model name", "Model", "Hardware", "cpu model"):
            return value.strip()
    return platform.processor() or platform.machine()


# ---------------------------------------------------------------------- memory
def cgroup_memory_limit(root: str | os.PathLike = "/") -> int | None:
    """Bytes allowed by the cgroup (v2 ``memory.max`` or v1 limit, the tightest of this process's cgroup
    and its ancestors: :func:`nbbench.limits.read_limits`), None if unlimited."""
    return read_limits(root)["memory_limit_bytes"]


# ------------------------------------------------ /dev/shm and open-file limit
def shm_usage(path: str = "/dev/shm") -> dict[str, int] | None:
    """statvfs of ``path``: size_bytes, used_bytes, free_bytes (what a user may still write); None if unreadable."""
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    return {
        "size_bytes": st.f_blocks * st.f_frsize,
        "used_bytes": (st.f_blocks - st.f_bfree) * st.f_frsize,
        "free_bytes": st.f_bavail * st.f_frsize,
    }


def shm_free_bytes(path: str = "/dev/shm") -> int | None:
    """Free bytes in /dev/shm (where DataLoader workers hand batches over), None if unreadable."""
    return (shm_usage(path) or {}).get("free_bytes")


def parse_limits(text: str) -> dict[str, tuple[str, str]]:
    """/proc/PID/limits -> {'Max open files': (soft, hard)}."""
    rows = (re.match(r"^(.+?)\s{2,}(\S+)\s+(\S+)(?:\s+(\S+))?\s*$", line) for line in text.splitlines()[1:])
    return {m.group(1).strip(): (m.group(2), m.group(3)) for m in rows if m}


def _limit(v) -> int | None:
    """A limit as a number; None for unlimited (or unreadable)."""
    try:
        v = int(v)
    except (TypeError, ValueError):
        return None
    return None if v < 0 or v >= 2**62 else v


def nofile_limits(root: str | os.PathLike = "/") -> dict[str, Any]:
    """The open-file limit: ``soft``, ``hard`` (None: unlimited) and ``source``: resource.getrlimit on
    the live system (``root`` "/"), else the root's /proc/self/limits.  LookupError(reason) if unreadable."""
    path = "/proc/self/limits"
    try:
        if str(root) == "/":
            import resource

            soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
            return {"soft": _limit(soft), "hard": _limit(hard), "source": "resource.getrlimit(RLIMIT_NOFILE)"}
        lim = parse_limits((Path(root) / path.lstrip("/")).read_text())
    except FileNotFoundError:
        raise LookupError(f"{path} does not exist") from None
    except PermissionError:
        raise LookupError(f"{path} is not readable (permission denied)") from None
    except (ImportError, OSError, UnicodeDecodeError, ValueError) as exc:
        raise LookupError(
            f"{path if str(root) != '/' else 'getrlimit(RLIMIT_NOFILE)'} could not be read: {exc}"
        ) from None
    if "Max open files" not in lim:
        raise LookupError(f"{path} has no 'Max open files' line")
    soft, hard = lim["Max open files"]
    return {"soft": _limit(soft), "hard": _limit(hard), "source": path}


def _memory() -> dict[str, Any]:
    try:
        import psutil

        total = psutil.virtual_memory().total
    except Exception:  # noqa: BLE001
        total = None
    return {"total_bytes": total, "cgroup_limit_bytes": cgroup_memory_limit()}


#: the limits that identify an environment (not the cgroup's path: a pod's changes every run)
LIMIT_KEYS = ("cgroup", "cpu_quota", "cpu_period_us", "cpuset_count", "memory_limit_bytes", "pids_max", "shm_bytes")


def _limits() -> dict[str, Any]:
    lim = read_limits()
    out = {k: lim.get(k) for k in LIMIT_KEYS}
    out["throttling"] = bool(lim.get("throttling"))
    out["psi"] = lim.get("psi")
    return out


# -------------------------------------------------------------------- packages
def packages() -> list[tuple[str, str]]:
    """Every installed distribution as (name, version), sorted by normalised name."""
    from importlib import metadata

    seen: dict[str, tuple[str, str]] = {}
    for dist in metadata.distributions():
        name = dist.metadata.get("Name") if dist.metadata else None
        if not name:
            continue
        key = name.lower().replace("_", "-").replace(".", "-")
        seen.setdefault(key, (name, dist.version))
    return [seen[k] for k in sorted(seen)]


# ----------------------------------------------------------------------- torch
def torch_info(import_torch: bool = True) -> dict[str, Any] | None:
    """torch / CUDA / cuDNN build versions; None when torch does not import.

    With ``import_torch=False`` only an already-imported torch is described.
    """
    if "torch" not in sys.modules and not import_torch:
        return None
    try:
        import torch
    except Exception:  # noqa: BLE001 - a broken torch is "no torch" here
        return None
    info: dict[str, Any] = {"version": getattr(torch, "__version__", None)}
    info["cuda_build"] = getattr(getattr(torch, "version", None), "cuda", None)
    info["hip_build"] = getattr(getattr(torch, "version", None), "hip", None)
    try:
        info["cudnn"] = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    except Exception:  # noqa: BLE001
        info["cudnn"] = None
    return info


def _gpus() -> list[dict[str, Any]]:
    nv = get_nvml()
    if not nv.available:
        return []
    out = []
    driver = nv.call("nvmlSystemGetDriverVersion")
    for h in nv.handles():
        name = nv.call("nvmlDeviceGetName", h)
        mem = nv.call("nvmlDeviceGetMemoryInfo", h)
        out.append(
            {
                "name": None if is_na(name) else str(name),
                "memory_total_bytes": None if is_na(mem) else int(mem.total),
                "driver": None if is_na(driver) else str(driver),
            }
        )
    return out


# ------------------------------------------------------------------ fingerprint
_cache: dict[str, Any] | None = None
_cache_lock = threading.Lock()

# keys that identify an environment; everything else is context
_IDENTITY = (
    "host",
    "os",
    "kernel",
    "machine",
    "container",
    "cpu_model",
    "cpus",
    "memory",
    "limits",
    "python",
    "packages_sha256",
    "torch",
    "gpus",
)


def fingerprint(refresh: bool = False, import_torch: bool = True) -> dict[str, Any]:
    """This process's environment, computed once (``refresh=True`` recomputes)."""
    global _cache
    with _cache_lock:
        if _cache is not None and not refresh:
            return _cache
        pk = packages()
        pk_text = "\n".join(f"{n}=={v}" for n, v in pk)
        cpus = usable_cpus()
        fp: dict[str, Any] = {
            "host": socket.gethostname(),
            "os": _os_name(),
            "kernel": platform.release(),
            "machine": platform.machine(),
            "container": container_kind(),
            "cpu_model": cpu_model(),
            "cpus": {k: cpus[k] for k in ("logical", "affinity", "cgroup_quota", "usable")},
            "memory": _memory(),
            "limits": _limits(),
            "python": {
                "version": platform.python_version(),
                "implementation": platform.python_implementation(),
                "executable": sys.executable,
            },
            "packages_sha256": hashlib.sha256(pk_text.encode()).hexdigest(),
            "packages": [[n, v] for n, v in pk],
            "torch": torch_info(import_torch=import_torch),
            "gpus": _gpus(),
            "nbbench": _nbbench_version(),
            "git_commit": _git_commit(),
        }
        ident = json.dumps({k: fp[k] for k in _IDENTITY}, sort_keys=True, default=str)
        fp["id"] = hashlib.sha256(ident.encode()).hexdigest()[:16]
        _cache = fp
        return fp


def _os_name() -> str:
    text = _read(Path("/etc/os-release")) or ""
    for line in text.splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip().strip('"')
    return f"{platform.system()} {platform.release()}"


def _nbbench_version() -> str:
    return __version__


def _git_commit() -> str | None:
    """The commit of the nbbench checkout in use, when it runs from one."""
    root = Path(__file__).resolve().parent.parent
    head = _read(root / ".git" / "HEAD")
    if not head:
        return None
    head = head.strip()
    if head.startswith("ref: "):
        ref = _read(root / ".git" / head[5:])
        if ref:
            return ref.strip()
        packed = _read(root / ".git" / "packed-refs") or ""
        for line in packed.splitlines():
            if line.endswith(head[5:]):
                return line.split()[0]
        return None
    return head


def summary(fp: dict[str, Any] | None = None) -> dict[str, Any]:
    """The fingerprint without the package list (for display)."""
    fp = fp or fingerprint()
    return {k: v for k, v in fp.items() if k != "packages"}
