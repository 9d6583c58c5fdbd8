"""The process group: join it, meet at the start, share a clock, gather plain dicts, leave.

* :func:`join` — ``init_process_group`` with gloo (no GPU needed) or nccl (each rank on
  ``LOCAL_RANK``'s device); ``env://`` under torchrun / a PyTorchJob, ``tcp://`` under srun, a
  ``FileStore`` in the launcher's private directory under ``--ranks`` (no rendezvous port).
* :func:`start_barrier` — gloo's ``monitored_barrier(wait_all_ranks=True)``, whose
  timeout names every rank that never arrived; then rank 0 broadcasts its wall-clock
  time and every rank notes its own time on receipt: the **common clock**'s zero.  Times
  on the common clock are each rank's own ``time.time()`` minus that zero, so hosts whose
  clocks disagree still line up (to within the broadcast's latency).
* :func:`gather` — ``gather_object`` of plain dicts of numbers and strings to rank 0
  (never tensors: unpickling one would create a CUDA context on rank 0).

torch is imported inside the functions only.
"""

from __future__ import annotations

import datetime
import os
import time
from dataclasses import dataclass

from ..results import ProbeError
from .rankenv import RankEnv

__all__ = [
    "join",
    "leave",
    "start_barrier",
    "Clock",
    "gather",
    "all_gather",
    "broadcast",
    "barrier",
    "default_store",
    "DEFAULT_TIMEOUT_S",
]

#: how long a collective waits for a slow rank before it fails (a dead one is noticed sooner, by heartbeats)
DEFAULT_TIMEOUT_S = 120.0


def join(env: RankEnv, backend: str = "gloo", timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
    """Join the job's process group (``backend`` gloo or nccl)."""
    import torch.distributed as td

    if backend not in ("gloo", "nccl"):
        raise ProbeError(f"backend must be gloo or nccl, not {backend!r}")
    if not td.is_available():
        raise ProbeError("this torch build has no torch.distributed")
    kwargs = {}
    if backend == "nccl":
        import torch

        if not torch.cuda.is_available() or env.local_rank >= torch.cuda.device_count():
            raise ProbeError(
                f"--backend nccl needs a GPU for every rank: rank {env.rank} (local rank "
                f"{env.local_rank}) sees {torch.cuda.device_count() if torch.cuda.is_available() else 0}"
                " GPU(s); use --backend gloo"
            )
        torch.cuda.set_device(env.local_rank)
        kwargs["device_id"] = torch.device("cuda", env.local_rank)
    if env.source == "nbbench":  # --ranks: a FileStore in the launcher's private directory, no socket
        kwargs["store"] = td.FileStore(os.path.join(env.store, "pg"), env.world_size)
        where = f"through {env.store}"
    else:
        kwargs["init_method"] = env.init_method
        where = f"at {env.master_addr}:{env.master_port}"
    try:
        td.init_process_group(
            backend, rank=env.rank, world_size=env.world_size, timeout=datetime.timedelta(seconds=timeout_s), **kwargs
        )
    except Exception as exc:  # noqa: BLE001 - a launcher problem, said in one line
        raise ProbeError(
            f"rank {env.rank} could not join the process group {where} ({backend}): "
            f"{type(exc).__name__}: {_first_line(exc)}"
        ) from None


def leave() -> None:
    import torch.distributed as td

    if td.is_initialized():
        try:
            td.destroy_process_group()
        except Exception:  # noqa: BLE001 - leaving must not hide the run's outcome
            pass


def default_store():
    """The process group's own key-value store (torchrun's TCPStore, srun's rank 0's)."""
    from torch.distributed import PrefixStore
    from torch.distributed.distributed_c10d import _get_default_store

    return PrefixStore("nbbench-ctl", _get_default_store())


@dataclass
class Clock:
    """The common clock: ``zero`` is this rank's ``time.time()`` when rank 0's start time arrived."""

    zero: float
    rank0_start: float  # rank 0's wall-clock time it broadcast
    offset_s: float  # rank 0's clock minus this rank's (latency included): how far the clocks disagree

    def at(self, wall: float | None) -> float | None:
        """A wall-clock time of this rank on the common clock (seconds since the start)."""
        return None if wall is None else wall - self.zero

    def now(self) -> float:
        return time.time() - self.zero


def start_barrier(backend: str, world_size: int, timeout_s: float = 60.0) -> Clock:
    """Wait for every rank (naming those that never came), then take the common start from rank 0."""
    import torch.distributed as td

    try:
        if backend == "gloo":
            td.monitored_barrier(timeout=datetime.timedelta(seconds=timeout_s), wait_all_ranks=True)
        else:
            td.barrier()
    except Exception as exc:  # noqa: BLE001
        raise ProbeError(f"the start barrier failed: {_first_line(exc)}") from None
    box = [time.time()]
    td.broadcast_object_list(box, src=0)
    mine = time.time()
    return Clock(zero=mine, rank0_start=float(box[0]), offset_s=float(box[0]) - mine)


def gather(obj, rank: int, world_size: int) -> list | None:
    """``obj`` of every rank on rank 0 (in rank order); None elsewhere."""
    import torch.distributed as td

    out = [None] * world_size if rank == 0 else None
    td.gather_object(obj, out, dst=0)
    return out


def all_gather(obj, world_size: int) -> list:
    import torch.distributed as td

    out = [None] * world_size
    td.all_gather_object(out, obj)
    return out


def broadcast(obj, rank: int):
    """Rank 0's ``obj`` on every rank."""
    import torch.distributed as td

    box = [obj if rank == 0 else None]
    td.broadcast_object_list(box, src=0)
    return box[0]


def barrier() -> None:
    import torch.distributed as td

    td.barrier()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
