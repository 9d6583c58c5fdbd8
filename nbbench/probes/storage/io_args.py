"""The storage probes' argument checks (sizes, durations, engine, block size, jobs) and the one
sentence an OSError met during their I/O becomes (:func:`os_error`).
"""

from __future__ import annotations

import os

from ...results import ProbeError
from ...units import format_bytes, parse_duration, parse_size
from .. import limits
from .._engines import registry

#: the engine names (declared in :mod:`nbbench.probes._engines.registry`)
ENGINES = tuple(registry.ENGINES)
#: the file a read probe writes first in a directory, unless a size is given
DEFAULT_READ_FILE = 1 << 30


def size_arg(value, name: str) -> int:
    try:
        return parse_size(value)
    except ValueError as exc:
        raise ProbeError(f"{name}: {exc}") from None


def duration_arg(value, name: str) -> float:
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise ProbeError(f"{name}: {exc}") from None


def check_engine(engine: str) -> str:
    """The engine's name (case-insensitive; None: the default), or a ProbeError naming the choices."""
    return registry.get(engine).name


def check_bs(bs: int) -> None:
    if bs < 512 or bs % 512:
        raise ProbeError(f"block size must be a multiple of 512 bytes, not {bs} (try 4k or 1M)")


def check_jobs(jobs, threads=1) -> tuple[int, str | None]:
    """``(jobs, warning)``: ``jobs`` (1-256), or the deprecated ``threads`` where only that was given
    (the warning says so)."""

    jobs, threads = limits.check("jobs", jobs, limits.JOBS), limits.check("threads", threads, limits.JOBS)
    if threads > 1:
        return max(jobs, threads), (
            f"threads={threads} is deprecated: an alias of jobs now (independent "
            "processes, as fio's numjobs; threads of one interpreter share its lock)"
        )
    return jobs, None


def os_error(
    exc: OSError, path: str, direct: bool, *, op: str | None = None, done: int | None = None, total: int | None = None
) -> ProbeError:
    """An OSError met during a probe's I/O as one sentence: what happened, where, how far it got
    (``done`` of ``total`` bytes, when known) and what to do."""
    import errno as _e

    name = _e.errorcode.get(exc.errno, str(exc.errno))
    where = os.path.dirname(path) if os.path.basename(path).startswith(".nbbench-") else path
    doing = f" while {op}" if op else ""
    if done is not None and total:
        doing += f": {format_bytes(done, binary=True)} written of {format_bytes(total, binary=True)}"
    if exc.errno == _e.ENOSPC:
        try:
            st = os.statvfs(where if os.path.isdir(where) else os.path.dirname(where) or ".")
            free = f"; free space {format_bytes(st.f_bavail * st.f_frsize, binary=True)}"
        except OSError:
            free = ""
        return ProbeError(
            f"no space left on {where}{doing}{free} (the filesystem filled up: free some space there, "
            f"or use a smaller --size or another directory)"
        )
    if exc.errno == _e.EROFS:
        return ProbeError(
            f"the filesystem holding {where} became read-only{doing} (the kernel does this after a "
            f"disk error: look at dmesg, then remount it read-write or use another directory)"
        )
    if exc.errno == _e.EIO:
        return ProbeError(
            f"an I/O error on {where}{doing} (EIO: the device or its connection failed; look at "
            f"dmesg and the disk's health before trusting it)"
        )
    hint = ""
    if exc.errno == _e.EINVAL and direct:
        hint = " — O_DIRECT needs a block size that is a multiple of the device's sector (try --bs 4k or --buffered)"
    return ProbeError(f"I/O on {path} failed{doing}: {exc.strerror} ({name}){hint}")
