"""What NCCL itself says it used: its ``NCCL_DEBUG=INFO`` lines parsed (:func:`parse_transport`), the
``NCCL_*`` variables in force (:func:`nccl_env`), and the debug output captured for a run
(:func:`capture`, :func:`read_captured`).

NCCL logs the transport of every channel it connects, e.g.::

    host:1234:1290 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read
    host:1234:1290 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct
    host:1234:1290 [0] NCCL INFO Channel 00/0 : 1[1] -> 0[0] [receive] via NET/IB/0/GDRDMA
    host:1234:1290 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0
    host:1234:1290 [0] NCCL INFO Channel 00/1 : 0[0] -> 1[1] via NVLS (NVLink SHARP on NVSwitch)

P2P is NVLink or PCIe peer-to-peer between GPUs of one host (which one the topology says), SHM
goes through host memory, NET/IB is InfiniBand / RoCE, NET/Socket TCP.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

from ... import tempfiles

__all__ = ["parse_transport", "nccl_env", "capture", "read_captured", "TRANSPORT_WORDS", "INFLUENCE"]

_VIA = re.compile(r"NCCL INFO Channel \d+(?:/\d+)?\s*:.*?\bvia\s+(\S+)")
_NET_USING = re.compile(r"NCCL INFO NET/(IB|Socket)\s*:\s*Using\s+(.*)")
_NVLS = re.compile(r"NCCL INFO .*\bNVLS\b")

#: the transport's words in a sentence
TRANSPORT_WORDS = {
    "P2P": "P2P (GPU to GPU over NVLink or PCIe peer-to-peer)",
    "SHM": "SHM (through host memory: no GPU peer-to-peer)",
    "NET/IB": "NET/IB (InfiniBand or RoCE)",
    "NET/Socket": "NET/Socket (TCP sockets)",
    "NVLS": "NVLS (NVLink SHARP on NVSwitch)",
}

#: the variables that change the transport, and what each one set does
INFLUENCE = {
    "NCCL_P2P_DISABLE": "GPU peer-to-peer (NVLink / PCIe P2P) is off: traffic goes through host memory",
    "NCCL_SHM_DISABLE": "the host-memory transport is off",
    "NCCL_IB_DISABLE": "InfiniBand / RoCE is off: sockets between hosts",
    "NCCL_NVLS_ENABLE": "NVLink SHARP is set by hand",
    "NCCL_SOCKET_IFNAME": "the interface NCCL's sockets use",
    "NCCL_NET_GDR_LEVEL": "when GPUDirect RDMA is used",
    "NCCL_P2P_LEVEL": "how far apart two GPUs may be for peer-to-peer",
    "NCCL_ALGO": "the algorithm is forced",
    "NCCL_PROTO": "the protocol is forced",
}


def parse_transport(lines: Iterable[str]) -> dict:
    """``{"transports": {"P2P": channels, …}, "detail": {"P2P/CUMEM/read": channels, …},
    "nvls": bool, "network": "IB: [0]mlx5_0:1/IB …" or None, "main": the transport of most channels}``."""
    transports: dict[str, int] = {}
    detail: dict[str, int] = {}
    nvls = False
    network = None
    for line in lines:
        m = _VIA.search(line)
        if m:
            via = m.group(1).rstrip(",;")
            parts = via.split("/")
            kind = "/".join(parts[:2]) if parts[0] == "NET" and len(parts) > 1 else parts[0]
            if kind.startswith("NVLS"):
                kind, nvls = "NVLS", True
            transports[kind] = transports.get(kind, 0) + 1
            detail[via] = detail.get(via, 0) + 1
            continue
        m = _NET_USING.search(line)
        if m:
            network = f"{m.group(1)}: {m.group(2).strip()}"
            continue
        if _NVLS.search(line) and ("NVLS comm" in line or "NVLS multicast support is available" in line):
            nvls = nvls or "available" not in line
    main = max(transports, key=transports.get) if transports else None
    return {"transports": transports, "detail": detail, "nvls": nvls, "network": network, "main": main}


def nccl_env(env: Mapping[str, str] | None = None, ours: Iterable[str] = ()) -> dict[str, str]:
    """The ``NCCL_*`` variables in force (those nbbench set for the capture left out)."""
    env = os.environ if env is None else env
    skip = set(ours)
    return {k: v for k, v in sorted(env.items()) if k.startswith("NCCL_") and k not in skip}


def capture(env: dict | None = None) -> tuple[str | None, list[str]]:
    """Before the NCCL communicator is made: ask NCCL for its INFO lines in a file of our own, unless
    the user already set ``NCCL_DEBUG`` / ``NCCL_DEBUG_FILE``.  ``(the file, the variables set)``."""
    import tempfile

    env = os.environ if env is None else env
    if env.get("NCCL_DEBUG") or env.get("NCCL_DEBUG_FILE"):
        return None, []
    path = tempfiles.create(tempfile.gettempdir(), "nccl").path  # registered: removed even if the rank is killed
    ours = ["NCCL_DEBUG", "NCCL_DEBUG_FILE"]
    env["NCCL_DEBUG"] = "INFO"
    env["NCCL_DEBUG_FILE"] = path
    if not env.get("NCCL_DEBUG_SUBSYS"):  # a user's own subsystem list stays, and is reported as theirs
        env["NCCL_DEBUG_SUBSYS"] = "INIT,P2P,NET,GRAPH,ENV"
        ours.append("NCCL_DEBUG_SUBSYS")
    return path, ours


def read_captured(path: str | None, env: dict | None = None, ours: Iterable[str] = ()) -> list[str]:
    """The captured lines (the file removed, the variables we set taken back)."""
    env = os.environ if env is None else env
    for k in ours:
        env.pop(k, None)
    if not path:
        return []
    try:
        with open(path, errors="replace") as f:
            return f.read().splitlines()
    except OSError:
        return []
    finally:
        tempfiles.remove(path)
