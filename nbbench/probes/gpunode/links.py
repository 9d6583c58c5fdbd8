"""The link a collective should run at, and the verdict on the plateau busbw against it.

:func:`read_links` reads through NVML (:mod:`nbbench.nvml`) what joins the GPUs of this host: the
NVLink links up on each GPU and their version, the PCIe generation and width each GPU can train
to.  :func:`expected_link` turns that (and the hosts of the run) into the link's own speed, one
direction, per GPU — the figure busbw is comparable with — and :func:`link_verdict` compares the
plateau with it, naming what NCCL used and the ``NCCL_*`` variables that explain a shortfall
("all-reduce plateaus at 21 GB/s busbw, PCIe-class on a node with NVLink: NCCL_P2P_DISABLE=1 is set").
"""

from __future__ import annotations

from collections.abc import Mapping

from ...nvml import Nvml, get_nvml, is_na
from ...units import format_bytes, format_rate

__all__ = [
    "read_links",
    "expected_link",
    "link_verdict",
    "NVLINK_VERSIONS",
    "NVLINK_GBPS",
    "PCIE_LANE_GBPS",
    "OK_FRACTION",
]

#: what ``nvmlDeviceGetNvLinkVersion`` returns is a code of ``nvmlNvlinkVersion_t``, not the version
#: (an A100 answers 5 for NVLink 3.1, an H100 6 for 4.0): code -> the version's name
NVLINK_VERSIONS = {1: "1.0", 2: "2.0", 3: "2.2", 4: "3.0", 5: "3.1", 6: "4.0", 7: "5.0"}
#: NVLink, one link, one direction, GB/s by version (V100: 2.0, A100: 3.x, H100: 4.0, B200: 5.0)
NVLINK_GBPS = {"1.0": 20.0, "2.0": 25.0, "2.2": 25.0, "3.0": 25.0, "3.1": 25.0, "4.0": 25.0, "5.0": 50.0}
#: PCIe, one lane, one direction, GB/s by generation (after encoding)
PCIE_LANE_GBPS = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563}
#: a plateau at this fraction of the link's speed or more is what the link gives (nccl-tests on
#: 8×H100 reaches about 370 of 450 GB/s with rings)
OK_FRACTION = 0.6
_NVLINK_MAX = 18


def read_links(nv: Nvml | None = None) -> dict:
    """``{"gpus", "nvlink_links" (fewest up on any GPU), "nvlink_version", "pcie_gen_max", "pcie_width_max"}``
    (None where NVML cannot say)."""
    nv = nv if nv is not None else get_nvml()
    out = {"gpus": 0, "nvlink_links": None, "nvlink_version": None, "pcie_gen_max": None, "pcie_width_max": None}
    if nv.init() is not True:
        return out
    handles = nv.handles()
    out["gpus"] = len(handles)
    links, gens, widths, versions = [], [], [], []
    for h in handles:
        up = 0
        for i in range(_NVLINK_MAX):
            st = nv.call("nvmlDeviceGetNvLinkState", h, i)
            if is_na(st):
                break
            if st:
                up += 1
                v = nv.call("nvmlDeviceGetNvLinkVersion", h, i)
                if not is_na(v) and int(v) in NVLINK_VERSIONS:
                    versions.append(int(v))
        links.append(up)
        g, w = nv.call("nvmlDeviceGetMaxPcieLinkGeneration", h), nv.call("nvmlDeviceGetMaxPcieLinkWidth", h)
        if not is_na(g):
            gens.append(int(g))
        if not is_na(w):
            widths.append(int(w))
    if links:
        out["nvlink_links"] = min(links)
    out["nvlink_version"] = NVLINK_VERSIONS[min(versions)] if versions else None  # "4.0", read from its code
    out["pcie_gen_max"] = min(gens) if gens else None
    out["pcie_width_max"] = min(widths) if widths else None
    return out


def _pcie(links: Mapping) -> dict | None:
    g, w = links.get("pcie_gen_max"), links.get("pcie_width_max")
    if not g or not w or g not in PCIE_LANE_GBPS:
        return None
    return {"kind": "pcie", "name": f"PCIe gen{g} x{w}", "bytes_per_s": PCIE_LANE_GBPS[g] * w * 1e9}


def expected_link(links: Mapping, hosts: int = 1, backend: str = "nccl") -> dict | None:
    """``{"kind": nvlink | pcie | network, "name", "bytes_per_s" (None: not known)}``, or None (gloo on
    CPU: no GPU link to expect)."""
    if backend != "nccl":
        return None
    if hosts > 1:
        return {"kind": "network", "name": "the network between hosts (its rate is not read)", "bytes_per_s": None}
    n, v = links.get("nvlink_links"), links.get("nvlink_version")
    if n and v in NVLINK_GBPS:
        return {"kind": "nvlink", "name": f"NVLink {v} × {n} links", "bytes_per_s": NVLINK_GBPS[v] * n * 1e9}
    return _pcie(links)


def _class_of(busbw: float, links: Mapping) -> str:
    pcie = _pcie(links)
    if busbw <= 12.5e9:
        return "network- or socket-class (at most 100 Gb/s)"
    if pcie and busbw <= pcie["bytes_per_s"] * 1.05:
        return "PCIe-class"
    return "below the link"


def link_verdict(
    op: str,
    plateau: Mapping | None,
    expected: Mapping | None,
    links: Mapping,
    transport: Mapping | None = None,
    env: Mapping[str, str] | None = None,
    backend: str = "nccl",
    full_size: int = 32 << 20,
) -> dict:
    """``{"check", "status": ok | warn | None, "message"}``: the plateau busbw against the expected link."""
    check = f"{op} busbw vs link"
    if plateau is None:
        return {"check": check, "status": None, "message": f"{op} gave no busbw to judge"}
    bw = plateau["busbw"]
    at = f"{op} plateaus at {format_rate(bw, 'bytes/s')} busbw"
    short = plateau["to_bytes"] < full_size
    note = (
        f" (inferred: the ladder stops below {format_bytes(full_size, binary=True)}, busbw may still rise)"
        if short
        else ""
    )
    if backend != "nccl" or expected is None:
        return {
            "check": check,
            "status": None,
            "message": f"{at}{note}; {backend} on CPU: host memory and TCP on this host, no GPU link to compare with",
        }
    if not expected.get("bytes_per_s"):
        return {"check": check, "status": None, "message": f"{at}{note}; expected link: {expected['name']}"}
    frac = bw / expected["bytes_per_s"]
    link = f"{expected['name']}, {format_rate(expected['bytes_per_s'], 'bytes/s')} one way"
    if frac >= OK_FRACTION:
        return {"check": check, "status": "ok", "message": f"{at}, {frac:.0%} of {link}{note}"}
    why = []
    env = env or {}
    for k in ("NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE", "NCCL_IB_DISABLE", "NCCL_P2P_LEVEL", "NCCL_ALGO", "NCCL_PROTO"):
        if env.get(k) not in (None, "", "0"):
            why.append(f"{k}={env[k]} is set")
    main = (transport or {}).get("main")
    if main and not (expected["kind"] == "nvlink" and main in ("P2P", "NVLS")):
        why.append(f"NCCL used {main}")
    on = {"nvlink": "on a node with NVLink", "pcie": f"on {expected['name']}"}.get(expected["kind"], "")
    msg = f"{at}, {frac:.0%} of {link}: {_class_of(bw, links)} {on}".rstrip()
    msg += (": " + "; ".join(why)) if why else ": no NCCL variable explains it; see the transport NCCL used"
    return {"check": check, "status": "warn", "message": msg + note}
