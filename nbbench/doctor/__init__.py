"""The environment doctor: the settings behind fast numbers, and what is exposed.

:func:`doctor` runs every check and returns a :class:`DoctorResult`; each check is a
small function over a ``root`` directory (``"/"`` live, a fixture tree in tests) that
returns :class:`Check` findings with a status (ok / warn / fail / n/a), the evidence
(the value and where it was read) and the fix (the command or setting).

Layer: measure (with probes, monitor, datasets).  The doctor reads the machine
through the bottom layer (:mod:`nbbench.topology` for mounts and block devices,
``results``, ``env``, ``units``) and may borrow a probe's path checks; it never imports
plots, ui, report, commands or a front end.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ..progress import call_progress
from ..results import ProbeError
from ..results.system.doctor import DoctorResult
from ..topology import find_mount, read_mounts
from . import exposure, gpu, limits, storage, system
from .base import CHECK_STATUSES, Check, Unreadable, na

__all__ = ["doctor", "DoctorResult", "Check", "CHECK_STATUSES", "CHECKS"]

# check group names, in run order (select with doctor(checks=[...]))
CHECKS = ("shm", "nofile", "mount", "block", "vm", "cpu", "memory", "limits", "gpu", "jupyter", "ssh")

_BADGE = {"ok": "#2e7d32", "warn": "#ef6c00", "fail": "#c62828", "n/a": "#757575"}


def _safe(name: str, fn: Callable[[], Any]) -> list[Check]:
    try:
        out = fn()
    except Unreadable as exc:
        return [na(name, str(exc))]
    except Exception as exc:  # noqa: BLE001 - one broken check must not stop the others
        return [na(name, f"the check itself failed: {type(exc).__name__}: {exc}")]
    if isinstance(out, Check):
        return [out]
    return list(out)


def doctor(
    path: str | os.PathLike | None = None,
    root: str | os.PathLike = "/",
    checks=None,
    runtime_dir: str | None = None,
    workers: int | None = None,
    gpu_check=None,
    try_o_direct: bool | None = None,
    progress=None,
) -> DoctorResult:
    """Run the checks (``checks``: names from :data:`CHECKS`, default all) for ``path``.

    ``root``: the filesystem root to read (a fixture tree in tests).  ``runtime_dir``:
    the Jupyter runtime directory (default jupyter's own).  ``workers``: the DataLoader
    workers /dev/shm must serve (default min(8, usable CPUs)).  ``try_o_direct``: try an
    O_DIRECT write/read at ``path`` (default: only when ``root`` is "/").
    """
    root = str(root)
    live = root == "/"
    if path is None:
        path = os.getcwd() if live else "/"
    path = os.path.abspath(os.path.expanduser(os.fspath(path))) if live else os.fspath(path)
    real = os.path.realpath(path) if live else path
    if live and not os.path.exists(path):
        raise ProbeError(f"{path} does not exist")
    selected = list(CHECKS) if checks is None else [c for c in CHECKS if c in set(checks)]
    unknown = set(checks or ()) - set(CHECKS)
    if unknown:
        raise ValueError(f"unknown doctor checks {sorted(unknown)}; choose from {', '.join(CHECKS)}")
    if try_o_direct is None:
        try_o_direct = live

    res = DoctorResult(params={"path": path, "root": root, "checks": selected, "workers": workers})
    res.labels = {"path": path}
    found: list[Check] = []
    try:
        mounts = read_mounts(root)
        mount_error = None
    except Unreadable as exc:
        mounts, mount_error = None, str(exc)
    ctx: dict[str, Any] = {}

    def run_mount():
        if mounts is None:
            return [na("mount", mount_error, "storage"), na("atime", mount_error, "storage")]
        c, m = storage.check_mount(real, mounts)
        ctx["mount"] = m
        out = [c, storage.check_atime(m)]
        if try_o_direct:
            out.append(storage.check_o_direct(path))
        return out

    def run_block():
        if mounts is None:
            return [na("block device", mount_error, "block device")]
        m = ctx.get("mount")
        if m is None:
            m = find_mount(real, mounts)
        return storage.check_block(root, m)

    def run_memory():
        shm = next((c for c in found if c.name == "/dev/shm size"), None)
        return system.check_memory(root, shm_bytes=(shm.data.get("size_bytes") if shm else None))

    def run_jupyter():
        if not live and runtime_dir is None:
            return [na("jupyter servers", "not looked for: a fixture root without a runtime_dir", "exposure")]
        return exposure.check_jupyter(runtime_dir)

    table: dict[str, Callable[[], Any]] = {
        "shm": lambda: (
            system.check_shm(root, mounts, workers=workers)
            if mounts is not None
            else na("/dev/shm size", mount_error, "memory")
        ),
        "nofile": lambda: system.check_nofile(root),
        "mount": run_mount,
        "block": run_block,
        "vm": lambda: [system.check_dirty(root), system.check_swap(root)],
        "cpu": lambda: system.check_cpus(root),
        "memory": run_memory,
        "limits": lambda: [limits.check_limits(root, workers), limits.check_stalls(root, workers)],
        "gpu": lambda: (
            gpu.check_gpu(gpu_check) if (live or gpu_check) else [na("gpu", "not checked on a fixture root", "gpu")]
        ),
        "jupyter": run_jupyter,
        "ssh": lambda: exposure.check_sshd(root),
    }
    for i, key in enumerate(selected):
        call_progress(progress, i / max(1, len(selected)), {"done": i, "total": len(selected), "unit": "checks"})
        found += _safe(key, table[key])
    call_progress(progress, 1.0, None)
    res.samples["checks"] = [c.to_dict() for c in found]
    for s in CHECK_STATUSES:
        res.metrics[f"{s.replace('/', '')}_count"] = sum(1 for c in found if c.status == s)
    for c in found:
        if c.status in ("fail", "warn") and c.fix:
            res.warn(f"{c.name}: {c.fix}")
        for a in c.advice if c.status in ("fail", "warn") else ():
            res.advise(f"{c.name}: {a['text']}", a["command"], a.get("args", ""))
    return res.finish("ok")
