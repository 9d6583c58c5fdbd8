"""The command lines to run a probe as ranks on several hosts (``--ranks N --nnodes M``).

nbbench does not log in to other hosts: it prints, for each host, the exact
``torchrun`` line (c10d rendezvous at the address the user names with
``--rdzv-host HOST[:PORT]``, or a placeholder to fill in) and the one ``srun`` line that
starts every rank inside a Slurm allocation.  Rank 0 prints (and saves) the one result.
"""

from __future__ import annotations

import ipaddress
import secrets
import shlex

from .rankenv import DEFAULT_PORT

__all__ = ["command_lines", "PLACEHOLDER"]

PLACEHOLDER = "RDZV_HOST"


def _loopback(host: str) -> bool:
    if host in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def command_lines(
    argv: list[str], nproc: int, nnodes: int, rdzv_host: str | None = None, run_id: str | None = None
) -> str:
    """The text to show: a torchrun line per host, the srun line, and what to watch out for."""
    host, port = PLACEHOLDER, DEFAULT_PORT
    if rdzv_host:
        h, sep, p = rdzv_host.rpartition(":")
        if sep and p.isdigit() and not h.endswith(":"):
            host, port = h, int(p)
        else:
            host = rdzv_host
    rid = run_id or "nbbench-" + secrets.token_hex(4)
    tail = ["-m", "nbbench", *argv]
    need = (
        "the bucket must be reachable from every host, with credentials in each host's environment"
        if any(str(a).startswith("s3://") for a in argv)
        else "the same path must exist on every host"
    )
    lines = [
        f"Run nbbench {argv[0]} as {nproc} rank{'s' if nproc != 1 else ''} on each of {nnodes} hosts "
        f"({nproc * nnodes} ranks); {need}:"
    ]
    for k in range(nnodes):
        cmd = [
            "torchrun",
            "--nnodes",
            str(nnodes),
            "--nproc-per-node",
            str(nproc),
            "--node-rank",
            str(k),
            "--rdzv-backend",
            "c10d",
            "--rdzv-endpoint",
            f"{host}:{port}",
            "--rdzv-id",
            rid,
            *tail,
        ]
        lines.append(f"  host {k}:  {shlex.join(cmd)}")
    srun = ["srun", "--nodes", str(nnodes), "--ntasks-per-node", str(nproc), "python", *tail]
    lines.append(
        "Or from inside a Slurm allocation (one line starts every rank; MASTER_ADDR defaults to the "
        "job's first host, MASTER_PORT to 29500):"
    )
    lines.append(f"  {shlex.join(srun)}")
    lines.append(
        "Rank 0 prints and saves the one result: what all ranks got together (first done, last done), "
        "every rank and every host."
    )
    if host == PLACEHOLDER:
        lines.append(
            f"Replace {PLACEHOLDER} with the address of host 0 as the other hosts reach it (or give --rdzv-host HOST)."
        )
    elif not _loopback(host):
        lines.append(
            f"warning: the rendezvous server on {host}:{port} accepts connections from the network "
            "without authentication (torch's TCPStore); use it on a trusted network only, and set "
            "GLOO_SOCKET_IFNAME to that network's interface where hosts have several."
        )
    return "\n".join(lines)
