"""The GPUs the GPU check reports: torch's CUDA devices matched to NVML's (:func:`nvml_index`: the two
orders differ) and each one's facts — name, memory, compute capability, PCIe link, MIG mode, use,
temperature, power (:func:`list_devices`).  ``torch`` and the :class:`~nbbench.nvml.Nvml` wrapper come in
as arguments, so fakes stand in for them on machines without a GPU.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ..nvml import Nvml, is_na

__all__ = ["nvml_index", "list_devices"]


def nvml_index(torch, nv: Nvml, i: int, env: Mapping[str, str] | None = None) -> int | None:
    """NVML's index of torch's CUDA device ``i``, or None when it cannot be told.

    The two orders differ: torch's follows ``CUDA_VISIBLE_DEVICES`` (``=3`` makes GPU 3
    torch's device 0) and ``CUDA_DEVICE_ORDER`` (FASTEST_FIRST by default), NVML's is every
    GPU in PCI bus order.  Matched by PCI address (torch's ``pci_domain_id``/``pci_bus_id``/
    ``pci_device_id`` against ``nvmlDeviceGetPciInfo``), else by UUID; where neither can be
    compared, the same index only when nothing can reorder them (no ``CUDA_VISIBLE_DEVICES``,
    as many GPUs on both sides, one GPU or ``CUDA_DEVICE_ORDER=PCI_BUS_ID``).
    """
    env = os.environ if env is None else env
    if not nv.available:
        return None
    n = nv.device_count()
    if is_na(n):
        return None
    try:
        props = torch.cuda.get_device_properties(i)
    except Exception:  # noqa: BLE001
        return None
    pci = tuple(getattr(props, k, None) for k in ("pci_domain_id", "pci_bus_id", "pci_device_id"))
    uuid = str(getattr(props, "uuid", "") or "").lower().removeprefix("gpu-")
    told = False  # did NVML give any PCI address or UUID to compare with?
    for k in range(int(n)):
        h = nv.call("nvmlDeviceGetHandleByIndex", k)
        if is_na(h):
            continue
        if None not in pci:
            info = nv.call("nvmlDeviceGetPciInfo", h)
            if not is_na(info):
                told = True
                if (int(info.domain), int(info.bus), int(info.device)) == tuple(int(x) for x in pci):
                    return k
        if uuid:
            u = nv.call("nvmlDeviceGetUUID", h)
            if not is_na(u):
                told = True
                if str(u).lower().removeprefix("gpu-") == uuid:
                    return k
    if not told and env.get("CUDA_VISIBLE_DEVICES") is None:
        try:
            same = int(torch.cuda.device_count()) == int(n)
        except Exception:  # noqa: BLE001
            same = False
        in_order = int(n) == 1 or env.get("CUDA_DEVICE_ORDER", "").upper() == "PCI_BUS_ID"
        return i if same and in_order and i < int(n) else None
    return None


def _nvml_fields(d: dict, nv: Nvml, h, driver) -> None:
    def val(fn, *args, conv=lambda x: x):
        v = nv.call(fn, h, *args)
        return None if is_na(v) else conv(v)

    d["name"] = val("nvmlDeviceGetName", conv=str)
    mem = val("nvmlDeviceGetMemoryInfo")
    if mem is not None:
        d["memory_total_bytes"], d["memory_free_bytes"] = int(mem.total), int(mem.free)
    cc = val("nvmlDeviceGetCudaComputeCapability")
    if cc is not None:
        d["compute_capability"] = f"{cc[0]}.{cc[1]}"
    d["driver"] = None if driver is None or is_na(driver) else str(driver)
    d["pcie_gen"] = val("nvmlDeviceGetCurrPcieLinkGeneration", conv=int)
    d["pcie_width"] = val("nvmlDeviceGetCurrPcieLinkWidth", conv=int)
    d["pcie_gen_max"] = val("nvmlDeviceGetMaxPcieLinkGeneration", conv=int)
    d["pcie_width_max"] = val("nvmlDeviceGetMaxPcieLinkWidth", conv=int)
    mig = val("nvmlDeviceGetMigMode")
    d["mig_mode"] = None if mig is None else bool(mig[0] if isinstance(mig, (list, tuple)) else mig)
    util = val("nvmlDeviceGetUtilizationRates")
    d["utilization_pct"] = None if util is None else float(util.gpu)
    d["temperature_c"] = val("nvmlDeviceGetTemperature", nv.constant("NVML_TEMPERATURE_GPU", 0), conv=float)
    d["power_w"] = val("nvmlDeviceGetPowerUsage", conv=lambda mw: mw / 1000.0)


def list_devices(torch, nv: Nvml, count: int, env: Mapping[str, str] | None = None) -> list[dict]:
    """Per-device facts from torch (when CUDA works) and NVML (when the driver answers).

    torch's devices come first, by torch's index, each with the NVML facts of the same GPU
    (:func:`nvml_index`; ``nvml_index`` in the dict); GPUs NVML sees that torch does not
    (hidden by ``CUDA_VISIBLE_DEVICES``) follow with ``cuda_visible: False``.  Without
    CUDA (``torch`` None) the list is NVML's, in its order.
    """
    n_nvml = nv.device_count() if nv.available else 0
    n_nvml = 0 if is_na(n_nvml) else int(n_nvml)
    handles = {}
    for k in range(n_nvml):
        h = nv.call("nvmlDeviceGetHandleByIndex", k)
        if not is_na(h):
            handles[k] = h
    driver = nv.call("nvmlSystemGetDriverVersion") if nv.available else None
    out = []
    used: set[int] = set()
    for i in range(count if torch is not None else 0):
        d: dict[str, Any] = {"index": i}
        k = nvml_index(torch, nv, i, env) if handles else None
        if k is not None and k in handles:
            used.add(k)
            d["nvml_index"] = k
            _nvml_fields(d, nv, handles[k], driver)
        try:
            props = torch.cuda.get_device_properties(i)
            d["name"] = d.get("name") or props.name
            d["compute_capability"] = f"{props.major}.{props.minor}"
            d.setdefault("memory_total_bytes", int(props.total_memory))
            d["multiprocessors"] = getattr(props, "multi_processor_count", None)
            free, total = torch.cuda.mem_get_info(i)
            d["memory_free_bytes"], d["memory_total_bytes"] = int(free), int(total)
        except Exception:  # noqa: BLE001 - keep what NVML gave
            pass
        out.append(d)
    for k, h in handles.items():
        if k in used:
            continue
        d = {"index": len(out), "nvml_index": k}
        if torch is not None:
            d["cuda_visible"] = False
        _nvml_fields(d, nv, h, driver)
        out.append(d)
    return out
