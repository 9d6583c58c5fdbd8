"""Is this process a rank of a distributed job?  Read from the environment a launcher sets.

* nbbench's own ``--ranks N`` (:mod:`.spawn`): ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``,
  ``LOCAL_WORLD_SIZE`` and ``NBBENCH_LAUNCH_STORE=file:DIR``: the process group meets through a
  FileStore in that private directory (``store``), no address, no port.
* torchrun, a Kubernetes PyTorchJob (and anything else using ``env://``): ``WORLD_SIZE``
  > 1 with ``RANK`` and ``MASTER_ADDR`` set; ``LOCAL_RANK`` / ``LOCAL_WORLD_SIZE`` when given
  (a single rank only when nbbench's own ``--ranks`` launched it: ``NBBENCH_LAUNCH_STORE``).
* Slurm's ``srun``: inside a job step (``SLURM_STEP_ID`` set) with ``SLURM_NTASKS`` > 1:
  ``SLURM_PROCID`` is the rank, ``SLURM_LOCALID`` the local rank; the master address is
  ``MASTER_ADDR`` or the first host of ``SLURM_JOB_NODELIST`` (``scontrol show hostnames``
  when present, else :func:`expand_nodelist`), the port ``MASTER_PORT`` or 29500.

Never in a notebook kernel (``ipykernel`` imported: the kernel is never a rank, it
launches ranks as child processes) and never with ``--no-dist`` (a batch script, or a
kernel inside such a job, is then not mistaken for a rank).

:func:`hostname` is the host name ranks report: ``NBBENCH_HOSTNAME`` when set (tests fake
several hosts on one machine with it), else ``socket.gethostname()``.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass

__all__ = ["RankEnv", "detect", "hostname", "expand_nodelist", "first_host", "DEFAULT_PORT"]

DEFAULT_PORT = 29500


@dataclass(frozen=True)
class RankEnv:
    """Where this process stands in the job."""

    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    master_addr: str
    master_port: int
    #: "torchrun" (torchelastic's agent started it), "env" (WORLD_SIZE/RANK from another launcher,
    #: e.g. a PyTorchJob), "slurm" (an srun step), "nbbench" (``--ranks N`` on this host)
    source: str
    #: under ``--ranks``: the launcher's private directory, where the FileStores are
    store: str = ""

    @property
    def is_zero(self) -> bool:
        return self.rank == 0

    @property
    def init_method(self) -> str:
        """``env://`` where the launcher exported the variables; ``tcp://ADDR:PORT`` under srun;
        ``file://DIR/pg`` under ``--ranks`` (:func:`nbbench.ranks.group.join` passes that FileStore itself)."""
        if self.source == "nbbench":
            return "file://" + os.path.join(self.store, "pg")
        if self.source == "slurm":
            host = f"[{self.master_addr}]" if ":" in self.master_addr else self.master_addr
            return f"tcp://{host}:{self.master_port}"
        return "env://"

    def describe(self) -> str:
        return f"rank {self.rank} of {self.world_size} (local rank {self.local_rank}, {self.source})"


def hostname(environ=None) -> str:
    """The host name this rank reports (``NBBENCH_HOSTNAME`` overrides ``socket.gethostname()``)."""
    env = os.environ if environ is None else environ
    return (env.get("NBBENCH_HOSTNAME") or "").strip() or socket.gethostname()


def _int(env, key: str, default: int | None = None) -> int | None:
    try:
        return int(str(env.get(key, "")).strip())
    except ValueError:
        return default


def detect(environ=None, modules=None, no_dist: bool = False) -> RankEnv | None:
    """The :class:`RankEnv` when a launcher started this process as one of several ranks, else None."""
    if no_dist:
        return None
    mods = sys.modules if modules is None else modules
    if "ipykernel" in mods:
        return None
    env = os.environ if environ is None else environ
    world = _int(env, "WORLD_SIZE")
    rank = _int(env, "RANK")
    store = env.get("NBBENCH_LAUNCH_STORE") or ""
    port = _int(env, "MASTER_PORT", DEFAULT_PORT) or DEFAULT_PORT
    if store.startswith("file:") and world is not None and rank is not None:  # nbbench's --ranks (even 1)
        local, local_world = _int(env, "LOCAL_RANK", rank) or 0, _int(env, "LOCAL_WORLD_SIZE") or world
        return RankEnv(rank, world, local, local_world, "", 0, "nbbench", store[len("file:") :])
    # a launcher's child marked as nbbench's: one rank (WORLD_SIZE 1) is a rank too
    launched = bool(store)
    if world is not None and (world > 1 or launched) and rank is not None and env.get("MASTER_ADDR"):
        local = _int(env, "LOCAL_RANK", 0) or 0
        local_world = _int(env, "LOCAL_WORLD_SIZE") or _int(env, "LOCAL_SIZE") or 0
        source = "torchrun" if env.get("TORCHELASTIC_RUN_ID") else "env"
        return RankEnv(rank, world, local, local_world or 0, env["MASTER_ADDR"], port, source)
    ntasks = _int(env, "SLURM_NTASKS") or _int(env, "SLURM_NPROCS")
    if env.get("SLURM_STEP_ID") is not None and ntasks is not None and ntasks > 1:
        rank = _int(env, "SLURM_PROCID", 0) or 0
        local = _int(env, "SLURM_LOCALID", 0) or 0
        local_world = _tasks_on_this_node(env)
        addr = env.get("MASTER_ADDR") or first_host(env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST") or "")
        return RankEnv(rank, ntasks, local, local_world, addr or "127.0.0.1", port, "slurm")
    return None


def _tasks_on_this_node(env) -> int:
    """Slurm's tasks on this node: SLURM_NTASKS_PER_NODE, else the first of SLURM_STEP_TASKS_PER_NODE
    ("4(x2),3" -> 4); 0 when unknown."""
    n = _int(env, "SLURM_NTASKS_PER_NODE")
    if n:
        return n
    text = env.get("SLURM_STEP_TASKS_PER_NODE") or env.get("SLURM_TASKS_PER_NODE") or ""
    m = re.match(r"\s*(\d+)", text)
    return int(m.group(1)) if m else 0


def first_host(nodelist: str, scontrol: bool = True) -> str | None:
    """The first host of a Slurm node list (``node[01-04],other`` -> ``node01``)."""
    hosts = expand_nodelist(nodelist, scontrol=scontrol)
    return hosts[0] if hosts else None


def expand_nodelist(nodelist: str, scontrol: bool = True) -> list[str]:
    """A Slurm host list expanded: ``scontrol show hostnames`` when it is there, else a small
    parser for the common forms ``node[01-04,07],gpu-a[1-2]-ib,login1``."""
    text = (nodelist or "").strip()
    if not text:
        return []
    if scontrol and shutil.which("scontrol"):
        try:
            out = subprocess.run(
                ["scontrol", "show", "hostnames", text],
                capture_output=True,
                text=True,
                timeout=5,
                stdin=subprocess.DEVNULL,
            )
            hosts = out.stdout.split()
            if out.returncode == 0 and hosts:
                return hosts
        except (OSError, subprocess.SubprocessError):
            pass
    hosts: list[str] = []
    for item in _split_top(text):
        hosts.extend(_expand_item(item))
    return hosts


def _split_top(text: str) -> list[str]:
    """Split on commas outside brackets."""
    out, depth, cur = [], 0, []
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth = max(0, depth - 1)
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return [s.strip() for s in out if s.strip()]


def _expand_item(item: str) -> list[str]:
    m = re.match(r"^([^\[]*)\[([^\]]*)\](.*)$", item)
    if not m:
        return [item]
    prefix, ranges, rest = m.groups()
    tails = _expand_item(rest) if rest else [""]
    out = []
    for part in ranges.split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        if hi:
            width = len(lo)
            for i in range(int(lo), int(hi) + 1):
                num = str(i).zfill(width)
                out.extend(prefix + num + t for t in tails)
        else:
            out.extend(prefix + lo + t for t in tails)
    return out
