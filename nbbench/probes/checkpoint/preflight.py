"""A checkpoint run's preflight: every refusal before anything is built or written (:func:`preflight`) —
torch, the model and size, the directory, the device, the free space (:func:`disk_bytes`: what one part
writes; N parts need N times it) and the memory (:func:`check_memory`: about twice the state must be
available, the state and one loaded copy, or it refuses with the numbers rather than swap; its ``ranks``
counts the parts on one host).
"""

from __future__ import annotations

import os

from ...env import cgroup_memory_limit
from ...results import ProbeError
from ...units import format_bytes
from ..pipeline.dataloader import require_torch
from ..storage.target import inspect
from . import models as ckptmodels

__all__ = ["preflight", "memory_room", "check_memory", "disk_bytes"]

#: what the free-space rule counts per tensor beyond its bytes (zip and pickle records; DCP's per-item headers)
_SAVE_OVERHEAD, _DCP_OVERHEAD = 1024, 4096


def memory_room() -> tuple[int, str]:
    """Bytes of memory a new allocation can take without swapping, and where that figure comes from."""
    import psutil

    avail = int(psutil.virtual_memory().available)
    how = f"{format_bytes(avail, binary=True)} available (psutil)"
    limit = cgroup_memory_limit()
    if limit:
        used, what = _cgroup_used()
        if used is None:
            used, what = int(psutil.Process().memory_info().rss), "this process's"
        room = max(0, limit - used)
        how += f", cgroup limit {format_bytes(limit, binary=True)} less {format_bytes(used, binary=True)} {what}"
        avail = min(avail, room)
    return avail, how


def _cgroup_used(root: str = "/") -> tuple[int | None, str]:
    """The cgroup's memory in use less its reclaimable file cache (as ``docker stats`` counts it)."""

    def read(rel):
        try:
            with open(os.path.join(root, rel)) as f:
                return f.read()
        except OSError:
            return None

    for usage, stat, key in (
        ("sys/fs/cgroup/memory.current", "sys/fs/cgroup/memory.stat", "inactive_file"),
        ("sys/fs/cgroup/memory/memory.usage_in_bytes", "sys/fs/cgroup/memory/memory.stat", "total_inactive_file"),
    ):
        text = read(usage)
        if not text or not text.strip().isdigit():
            continue
        inactive = 0
        for line in (read(stat) or "").splitlines():
            k, _, v = line.partition(" ")
            if k == key and v.strip().isdigit():
                inactive = int(v)
        return max(0, int(text) - inactive), "in use in the cgroup (less its inactive file cache)"
    return None, ""


def check_memory(state_bytes: int, device: str, what: str, ranks: int = 1, gpu: bool = True) -> str:
    """Refuse (ProbeError, with the numbers) a state of ``state_bytes`` whose build and one loaded
    copy would not fit in memory (host RAM; for a CUDA device its memory too); returns how it was judged.
    ``ranks``: that many parts run at once on this host, each with a state of its own (host RAM
    counts them all); ``gpu`` False: the host's RAM only (a launcher that must not touch the GPU)."""
    room, how = memory_room()
    on_gpu = str(device).startswith("cuda")
    ranks = max(1, int(ranks))
    each = state_bytes * (1 if on_gpu else 2)
    need = each * ranks
    keep = max(256 << 20, room // 20)
    if need > room - keep:
        fits = max(0.0, (room - keep) / need)
        why = "the state staged on the host" if on_gpu else "the state dict and one loaded copy"
        if ranks > 1:
            why = f"{ranks} ranks on this host × {format_bytes(each, binary=True)} each: {why}"
        raise ProbeError(
            f"not enough memory for {what} of {format_bytes(state_bytes, binary=True)}"
            f"{' per rank' if ranks > 1 else ''}: it needs about {format_bytes(need, binary=True)} ({why}) "
            f"and {how}, keeping {format_bytes(keep, binary=True)} spare; refused rather than swap — "
            f"use a smaller --size or --scale (about {_round_down(fits):g} of this fits)"
            + (" or fewer ranks" if ranks > 1 else "")
        )
    if on_gpu and gpu:
        import torch

        free, total = torch.cuda.mem_get_info(torch.device(device))
        if 2 * state_bytes > 0.95 * free:
            raise ProbeError(
                f"not enough memory on {device} for {what} of {format_bytes(state_bytes, binary=True)}: it needs "
                f"about {format_bytes(2 * state_bytes, binary=True)} (the state and one loaded copy) and "
                f"{format_bytes(free, binary=True)} of {format_bytes(total, binary=True)} are free — use a smaller "
                f"--size or --scale"
            )
        how += f"; {device}: {format_bytes(free, binary=True)} free"
    return how


def _round_down(x: float) -> float:
    if x <= 0:
        return 0.0
    from math import floor, log10

    p = 10 ** floor(log10(x))
    return floor(x / p) * p


def _device(device: str) -> str:
    import torch

    d = str(device or "cpu")
    if d == "cpu":
        return d
    if not d.startswith("cuda"):
        raise ProbeError(f"device must be cpu or cuda (cuda:N), not {d!r}")
    if not torch.cuda.is_available():
        raise ProbeError(
            f"--device {d}: CUDA is not usable here (torch {torch.__version__}); run on the CPU "
            "(the default) or where a GPU is visible"
        )
    try:
        torch.device(d)
        if ":" in d and int(d.split(":", 1)[1]) >= torch.cuda.device_count():
            raise ValueError
    except (RuntimeError, ValueError):
        raise ProbeError(f"--device {d}: this machine has {torch.cuda.device_count()} CUDA device(s)") from None
    return d


def preflight(
    path,
    model: str = "transformer",
    size=None,
    scale: float = 1.0,
    optimizer: bool = True,
    device: str = "cpu",
    dcp: bool = True,
):
    """Every refusal, before anything is built or written (a front end calls it before its bar):
    torch, the model and size, the directory, the device, the free space (the file and the DCP
    directory), the memory.  Returns (plan, target, device, how the memory was judged)."""
    require_torch("checkpoint")
    pl = ckptmodels.plan(model, size, scale, optimizer)
    target = inspect(path, write=True)
    if target.kind != "dir":
        raise ProbeError(
            f"{target.path} is not a directory: checkpoint writes new files of its own in a directory "
            "(and removes them)"
        )
    dev = _device(device)
    target.ensure_room(disk_bytes(pl, dcp))
    return pl, target, dev, check_memory(pl.total_bytes, dev, f"a {pl.model} checkpoint")


def disk_bytes(pl, dcp: bool = True) -> int:
    """What one run writes at most (the torch.save file and the DCP directory, with their per-tensor
    overheads) for the plan ``pl``: the free-space rule's figure."""
    nbytes = pl.total_bytes
    return nbytes + _SAVE_OVERHEAD * pl.count + (nbytes + _DCP_OVERHEAD * pl.count if dcp else 0) + (1 << 20)
