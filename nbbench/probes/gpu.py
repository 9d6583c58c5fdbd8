"""GPU stack check: can torch use CUDA, on which devices, and if not, why not.

:func:`check` takes the ``torch`` module and an :class:`~nbbench.nvml.Nvml` wrapper
at its boundary, so the GPU-present logic is tested with fakes on machines without
a GPU; by default it imports the real ones.  It never raises for a missing GPU:
the result says ``available: false`` and why.

Verdicts are a list of ``{"check", "status" (ok|warn|fail), "message"}``, each
message one sentence saying what to do.  The devices and their facts are
:mod:`nbbench.probes.gpudevices`'s.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Mapping
from typing import Any

from ..nvml import NAValue, Nvml, get_nvml, is_na
from ..results.system.gpu import GpuCheckResult
from .gpudevices import list_devices
from .gpunode.health import as_verdicts, matmul_load, read_health
from .limits import GPU_ITERS, GPU_MATMUL_SIZE
from .limits import check as within

__all__ = ["check", "GpuCheckResult", "cuda_version_str", "parse_version"]

_IMPORT = object()  # sentinel: import the real module


# ------------------------------------------------------------------ versions
def parse_version(text: str | None) -> tuple[int, ...] | None:
    if not text:
        return None
    out = []
    for piece in str(text).split("+")[0].split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        if not digits:
            break
        out.append(int(digits))
    return tuple(out) or None


def cuda_version_str(v: int | None) -> str | None:
    """NVML's CUDA driver version (12020) as '12.2'."""
    if v is None or is_na(v):
        return None
    v = int(v)
    return f"{v // 1000}.{(v % 1000) // 10}"


def _hidden_by_env(env: Mapping[str, str]) -> bool:
    cvd = env.get("CUDA_VISIBLE_DEVICES")
    if cvd is None:
        return False
    v = cvd.strip()
    return v == "" or v.startswith("-1") or v.lower() in ("none", "nodevfiles", "void")


# --------------------------------------------------------------------- check
def check(
    torch: Any = _IMPORT,
    nvml: Nvml | None = None,
    benchmark: bool = True,
    env: Mapping[str, str] | None = None,
    matmul_size: int = 4096,
    copy_bytes: int = 256 * 2**20,
    repeats: int = 10,
    health: bool = False,
    health_seconds: float = 5.0,
) -> GpuCheckResult:
    """Check the GPU stack.

    ``torch``: the torch module (default: import it; ``None`` = not installed).
    ``nvml``: an :class:`~nbbench.nvml.Nvml` (default: the real one).
    ``benchmark``: when CUDA works, time matmuls and host↔device copies.
    ``health``: read the GPUs' health through NVML while a matmul load runs ``health_seconds`` on each
    (:mod:`nbbench.probes.gpunode.health`); its judged findings are verdicts, so they gate the exit code.
    """

    matmul_size = within("matmul_size", matmul_size, GPU_MATMUL_SIZE)
    repeats = within("repeats", repeats, GPU_ITERS)
    env = os.environ if env is None else env
    nv = nvml if nvml is not None else get_nvml()
    res = GpuCheckResult(
        params={"benchmark": benchmark, "matmul_size": matmul_size, "copy_bytes": copy_bytes, "repeats": repeats}
    )
    verdicts: list[dict] = []

    def verdict(name: str, status: str, message: str) -> None:
        verdicts.append({"check": name, "status": status, "message": message})

    # torch
    torch_error = None
    if torch is _IMPORT:
        try:
            import torch as _torch

            torch = _torch
        except Exception as exc:  # noqa: BLE001 - a broken torch is reported, not raised
            torch, torch_error = None, exc
    versions: dict[str, Any] = {
        "torch": None,
        "cuda_build": None,
        "hip_build": None,
        "cudnn": None,
        "driver": None,
        "driver_cuda": None,
    }
    if torch is not None:
        versions["torch"] = getattr(torch, "__version__", None)
        versions["cuda_build"] = getattr(getattr(torch, "version", None), "cuda", None)
        versions["hip_build"] = getattr(getattr(torch, "version", None), "hip", None)
        try:
            versions["cudnn"] = torch.backends.cudnn.version()
        except Exception:  # noqa: BLE001
            versions["cudnn"] = None

    # NVML
    nv_ok = nv.init()
    if nv_ok is True:
        drv = nv.call("nvmlSystemGetDriverVersion")
        versions["driver"] = None if is_na(drv) else str(drv)
        cv = nv.call("nvmlSystemGetCudaDriverVersion_v2")
        if is_na(cv):
            cv = nv.call("nvmlSystemGetCudaDriverVersion")
        versions["driver_cuda"] = cuda_version_str(None if is_na(cv) else cv)
    res.extra["versions"] = versions
    res.labels["torch"] = versions["torch"] or "not installed"

    # can torch use CUDA?
    cuda_ok = False
    count = 0
    if torch is not None and versions["cuda_build"]:
        try:
            cuda_ok = bool(torch.cuda.is_available())
            count = int(torch.cuda.device_count()) if cuda_ok else 0
        except Exception as exc:  # noqa: BLE001
            cuda_ok, torch_error = False, exc

    reason = None
    if torch is None:
        reason = (
            "torch is not installed: pip install torch (inside a PyTorch image, use the image's python)"
            if torch_error is None or isinstance(torch_error, ImportError)
            else f"torch fails to import: {torch_error}"
        )
        verdict("torch", "fail", reason)
    elif versions["hip_build"] and not versions["cuda_build"]:
        reason = f"this torch ({versions['torch']}) is a ROCm build: CUDA is not used (AMD GPUs only)"
        verdict("torch build", "fail", reason)
    elif not versions["cuda_build"]:
        reason = (
            f"this torch ({versions['torch']}) is a CPU-only build: install a CUDA build, e.g. "
            "pip install torch --index-url https://download.pytorch.org/whl/cu128"
        )
        verdict("torch build", "fail", reason)
    else:
        verdict("torch build", "ok", f"torch {versions['torch']} is built for CUDA {versions['cuda_build']}.")

    if nv_ok is not True:
        na: NAValue = nv_ok
        msg = f"{na.reason}" + (f": {na.hint}" if na.hint else "")
        if reason is None:
            reason = (
                f"no NVIDIA driver found ({na.reason}): run the container with --gpus all "
                "(NVIDIA container toolkit) on a host with the driver installed"
            )
        verdict("driver", "fail", msg)
    else:
        verdict("driver", "ok", f"NVIDIA driver {versions['driver']} supports CUDA up to {versions['driver_cuda']}.")

    if _hidden_by_env(env):
        msg = (
            f"CUDA_VISIBLE_DEVICES={env.get('CUDA_VISIBLE_DEVICES')!r} hides every GPU: unset it "
            "or list the devices to use, e.g. CUDA_VISIBLE_DEVICES=0"
        )
        verdict("CUDA_VISIBLE_DEVICES", "fail", msg)
        if reason is None:
            reason = msg

    # build vs driver CUDA
    build = parse_version(versions["cuda_build"])
    drv_cuda = parse_version(versions["driver_cuda"])
    if build and drv_cuda:
        if drv_cuda[0] < build[0] or (drv_cuda < build and not cuda_ok):
            msg = (
                f"torch was built for CUDA {versions['cuda_build']} but the driver supports up to "
                f"{versions['driver_cuda']}: update the driver or install a torch built for "
                f"{versions['driver_cuda']}"
            )
            verdict("CUDA version fit", "fail", msg)
            if reason is None and not cuda_ok:
                reason = msg
        elif drv_cuda < build:
            verdict(
                "CUDA version fit",
                "warn",
                f"torch was built for CUDA {versions['cuda_build']} and the driver supports "
                f"{versions['driver_cuda']}: it runs under minor-version compatibility, but PTX JIT and "
                f"newer features need a driver for CUDA {versions['cuda_build']}: update the driver when you can",
            )
        else:
            verdict(
                "CUDA version fit",
                "ok",
                f"the driver (CUDA {versions['driver_cuda']}) is new enough for torch's CUDA {versions['cuda_build']}.",
            )

    if reason is None and not cuda_ok and torch is not None:
        reason = (
            "torch.cuda.is_available() is False although a driver and a CUDA build are present: "
            "check the container's device files (/dev/nvidia*) and dmesg"
        )
        verdict("CUDA runtime", "fail", reason)

    # devices
    devices = list_devices(torch if cuda_ok else None, nv, count, env)
    res.extra["devices"] = devices
    for d in devices:
        w, wmax = d.get("pcie_width"), d.get("pcie_width_max")
        if w is not None and wmax is not None and w < wmax:
            verdict(
                f"PCIe link [{d['index']}]",
                "warn",
                f"{d.get('name')} runs on x{w} lanes of x{wmax}: reseat the card or move it to a full "
                "slot — a narrow link starves host↔device copies",
            )
        elif w is not None and w <= 4:
            verdict(
                f"PCIe link [{d['index']}]",
                "warn",
                f"{d.get('name')} is on a x{w} link: host↔device copies will be slow",
            )
        elif w is not None:
            verdict(
                f"PCIe link [{d['index']}]",
                "ok",
                f"x{w} link (gen{d.get('pcie_gen')}; the generation drops at idle to save power).",
            )
        if d.get("mig_mode"):
            verdict(
                f"MIG [{d['index']}]",
                "warn",
                "MIG is on: this process sees one slice, and utilisation/PCIe figures are N/A under MIG",
            )

    res.extra["available"] = cuda_ok
    res.reason = None if cuda_ok else reason
    res.metrics["device_count"] = count if cuda_ok else 0  # the GPUs torch can use
    res.labels["device"] = devices[0]["name"] if cuda_ok and devices else "none"

    if cuda_ok and benchmark:
        try:
            res.metrics.update(_benchmark(torch, matmul_size, copy_bytes, repeats, res.samples))
            res.labels["benchmark"] = f"median of {repeats} after warm-up, CUDA events"
        except Exception as exc:  # noqa: BLE001 - a failed benchmark is a verdict
            verdict("sanity benchmark", "fail", f"the matmul/copy benchmark failed: {exc}")
    if health:
        h = read_health(nv, load=matmul_load(torch) if cuda_ok else None, seconds=health_seconds)
        res.extra["health"] = h
        verdicts += as_verdicts(h)
    res.extra["verdicts"] = verdicts
    return res.finish("ok")


def _median_ms(torch, fn, repeats: int, warmup: int = 3) -> tuple[float, list[float]]:
    """Median time of ``fn()`` in ms, timed with CUDA events (one sync per repeat)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(float(start.elapsed_time(end)))
    return statistics.median(times), times


def _benchmark(torch, n: int, copy_bytes: int, repeats: int, samples: dict) -> dict[str, float]:
    metrics: dict[str, float] = {}
    dev = "cuda"
    flops = 2.0 * n**3
    old_tf32 = torch.backends.cuda.matmul.allow_tf32
    try:
        kinds = [("fp32", torch.float32, False), ("tf32", torch.float32, True)]
        bf16 = getattr(torch.cuda, "is_bf16_supported", lambda: False)()
        if bf16:
            kinds.append(("bf16", torch.bfloat16, False))
        for name, dtype, tf32 in kinds:
            torch.backends.cuda.matmul.allow_tf32 = tf32
            a = torch.randn(n, n, device=dev, dtype=dtype)
            b = torch.randn(n, n, device=dev, dtype=dtype)
            ms, times = _median_ms(torch, lambda: a @ b, repeats)
            metrics[f"matmul_{name}_flop_per_s"] = flops / (ms / 1e3)
            samples[f"matmul_{name}_ms"] = times
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old_tf32
    elems = copy_bytes // 4
    gpu = torch.empty(elems, device=dev, dtype=torch.float32)
    for pinned in (False, True):
        host = torch.empty(elems, dtype=torch.float32, pin_memory=pinned)
        tag = "pinned" if pinned else "pageable"
        ms, times = _median_ms(torch, lambda: gpu.copy_(host, non_blocking=pinned), repeats)
        metrics[f"h2d_{tag}_bytes_per_s"] = copy_bytes / (ms / 1e3)
        samples[f"h2d_{tag}_ms"] = times
        ms, times = _median_ms(torch, lambda: host.copy_(gpu, non_blocking=pinned), repeats)
        metrics[f"d2h_{tag}_bytes_per_s"] = copy_bytes / (ms / 1e3)
        samples[f"d2h_{tag}_ms"] = times
    return metrics
