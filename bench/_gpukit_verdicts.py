"""The GPU validation kit's device verdicts: measured figures in, one :class:`Line` out.

The gpu check (matmul TFLOP/s against the device's published dense peak, host<->device
GB/s against the PCIe link and pinned against pageable, the device fields), a copy
overlapped with a kernel, and the monitor during a GPU-bound loop.  Nothing here measures
or imports torch: every function takes plain numbers (or the plain dicts nbbench's results
hold), so the pass/fail logic is tested on fake measurements (tests/test_gpu_check.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from _gpukit_lines import FAIL, GB, NA, PASS, SKIP, GiB, Line, MiB


# ------------------------------------------------------------------ dense peaks
@dataclass(frozen=True)
class Peak:
    """A GPU's published dense peaks in TFLOP/s (None: no such tensor-core path)."""

    label: str
    pattern: str  # a regular expression on the lower-cased device name
    fp32: float  # CUDA cores, no tensor cores (what torch runs with TF32 off)
    tf32: float | None
    bf16: float | None
    source: str
    min_ratio: float = 0.6
    halved: bool = False  # the datasheet gives the tensor-core figures with sparsity: dense is half


_POWER = 0.5  # power-limited PCIe cards (75-350 W) hold boost clocks less: a lower line
_NO_TC = " (no TF32/BF16 tensor cores)"
PEAKS: tuple[Peak, ...] = (
    Peak("H200 NVL", r"\bh200\s*nvl\b", 60.0, 417.5, 835.5, "NVIDIA H200 datasheet", halved=True),
    Peak("H200 SXM", r"\bh200\b", 67.0, 494.5, 989.5, "NVIDIA H200 datasheet", halved=True),
    Peak("H100 NVL", r"\bh100\s*nvl\b", 60.0, 417.5, 835.5, "NVIDIA H100 datasheet", halved=True),
    Peak("H100 PCIe", r"\bh100\s*pcie\b", 51.0, 378.0, 756.5, "NVIDIA H100 datasheet", halved=True),
    Peak("H100 SXM", r"\bh100\b", 67.0, 494.5, 989.5, "NVIDIA H100 datasheet", halved=True),
    Peak("A100", r"\ba100\b", 19.5, 156.0, 312.0, "NVIDIA A100 datasheet (SXM4 and PCIe)"),
    Peak("L40S", r"\bl40s\b", 91.6, 183.0, 362.05, "NVIDIA L40S datasheet", _POWER),
    Peak("L4", r"\bl4\b", 30.3, 60.0, 121.0, "NVIDIA L4 datasheet", _POWER, halved=True),
    Peak("A10", r"\ba10\b", 31.2, 62.5, 125.0, "NVIDIA A10 datasheet", _POWER),
    Peak("A40", r"\ba40\b", 37.4, 74.8, 149.7, "NVIDIA A40 datasheet", _POWER),
    Peak("V100 SXM2", r"\bv100-sxm2\b", 15.7, None, None, "NVIDIA V100 datasheet" + _NO_TC),
    Peak("V100 PCIe", r"\bv100-pcie\b", 14.0, None, None, "NVIDIA V100 datasheet" + _NO_TC),
    Peak("T4", r"\bt4\b", 8.1, None, None, "NVIDIA T4 datasheet" + _NO_TC, _POWER),
)
KIND_TEXT = {"fp32": "FP32", "tf32": "TF32", "bf16": "BF16"}


def peak_for(device_name: str | None) -> Peak | None:
    """The table's entry for a device name as NVML / torch give it ("NVIDIA H100 80GB HBM3")."""
    name = (device_name or "").lower()
    return next((p for p in PEAKS if re.search(p.pattern, name)), None)


def judge_matmul(kind: str, flop_per_s: float | None, device_name: str | None, size: int) -> Line:
    """A matmul's TFLOP/s against the device's published dense peak."""
    name = f"gpu.matmul_{kind}"
    if flop_per_s is None:
        why = (
            "not measured: torch.cuda.is_bf16_supported() is False on this GPU"
            if kind == "bf16"
            else "not measured (see the gpu check's lines)"
        )
        return Line(name, NA if kind == "bf16" else FAIL, why=why)
    fig = f"{flop_per_s / 1e12:.1f} TFLOP/s ({size}x{size})"
    peak = peak_for(device_name)
    if peak is None:
        return Line(
            name,
            NA,
            fig,
            why=f"no published peak for {device_name!r} in the kit's table: ratio N/A",
            values={"flop_per_s": flop_per_s},
        )
    p = getattr(peak, kind)
    if p is None:
        return Line(
            name,
            NA,
            fig,
            why=f"{peak.label} has no {KIND_TEXT[kind]} tensor-core peak ({peak.source})",
            values={"flop_per_s": flop_per_s},
        )
    ratio = flop_per_s / (p * 1e12)
    src = peak.source + ("; its with-sparsity figure halved" if peak.halved and kind != "fp32" else "")
    exp = (
        f">= {peak.min_ratio:g} x {p:g} TFLOP/s = {peak.min_ratio * p:.0f} "
        f"({peak.label} dense {KIND_TEXT[kind]}, {src})"
    )
    vals = {"flop_per_s": flop_per_s, "peak_flop_per_s": p * 1e12, "ratio": ratio}
    if ratio > 1.05:
        return Line(
            name,
            FAIL,
            fig + f", {ratio:.2f} of peak",
            exp,
            "above the published peak: the timing is wrong"
            + (", or TF32 ran although it was off (NVIDIA_TF32_OVERRIDE=1?)" if kind == "fp32" else ""),
            vals,
        )
    if ratio >= peak.min_ratio:
        return Line(name, PASS, fig + f", {ratio:.2f} of peak", exp, values=vals)
    return Line(
        name,
        FAIL,
        fig + f", {ratio:.2f} of peak",
        exp,
        "below the line: clocks throttled (power, heat), another process on the GPU, or a slow path",
        vals,
    )


# ------------------------------------------------------------------------- PCIe
_GT_S = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}
_PRACTICAL = 0.8  # packet (TLP) overhead: ~25 GB/s of gen4 x16's 31.5, ~50 of gen5 x16's 63


def pcie_bytes_per_s(gen: int | None, width: int | None) -> tuple[float, float] | None:
    """(raw, practical) bytes/s per direction of a PCIe link, or None when unknown."""
    if not gen or not width or gen not in _GT_S:
        return None
    enc = 0.8 if gen <= 2 else (128 / 130 if gen <= 5 else 242 / 256)
    raw = _GT_S[gen] * 1e9 * enc / 8 * width
    return raw, raw * _PRACTICAL


def judge_link(
    direction: str, pinned: float | None, gen: int | None, width: int | None, device_name: str | None
) -> Line:
    """Pinned host<->device GB/s against what the PCIe link gives."""
    name = f"gpu.{direction}_pinned"
    if pinned is None:
        return Line(name, FAIL, why="not measured (see the gpu check's lines)")
    fig = f"{pinned / GB:.1f} GB/s"
    if re.search(r"\bg[hb]\d00\b", (device_name or "").lower()):
        return Line(name, NA, fig, why="a Grace superchip: the host link is NVLink-C2C, not PCIe — no PCIe range")
    link = pcie_bytes_per_s(gen, width)
    if link is None:
        return Line(name, NA, fig, why="the PCIe link is unknown (NVML gave no generation/width): no range")
    raw, practical = link
    line = 0.7 * practical
    exp = (
        f">= {line / GB:.1f} GB/s (0.7 of ~{practical / GB:.0f} GB/s practical on PCIe gen{gen} x{width}; "
        f"{raw / GB:.1f} GB/s raw per direction, PCI-SIG: {_GT_S[gen]:g} GT/s per lane)"
    )
    vals = {"bytes_per_s": pinned, "link_raw_bytes_per_s": raw, "link_practical_bytes_per_s": practical}
    if pinned > 1.05 * raw:
        return Line(name, FAIL, fig, exp, "faster than the link allows: the timing is wrong", vals)
    if pinned >= line:
        return Line(name, PASS, fig, exp, values=vals)
    return Line(
        name,
        FAIL,
        fig,
        exp,
        "slow for the link: a narrow or downgraded link, the IOMMU, or a busy host (NUMA: the GPU's CPU socket)",
        vals,
    )


def judge_pinned_vs_pageable(direction: str, pageable: float | None, pinned: float | None) -> Line:
    name = f"gpu.{direction}_pinned_vs_pageable"
    if not pageable or not pinned:
        return Line(name, FAIL, why="not measured (see the gpu check's lines)")
    ratio = pinned / pageable
    fig = f"pinned {pinned / GB:.1f} GB/s / pageable {pageable / GB:.1f} GB/s = {ratio:.2f}"
    exp = (
        "> 1 (pinned memory is DMA'd directly; pageable goes through a staging copy: CUDA C++ Best "
        "Practices Guide, 'Pinned Memory')"
    )
    vals = {"pinned_bytes_per_s": pinned, "pageable_bytes_per_s": pageable, "ratio": ratio}
    if ratio > 1.0:
        return Line(name, PASS, fig, exp, values=vals)
    return Line(
        name,
        FAIL,
        fig,
        exp,
        "pinned is not faster: the copies are timed wrongly, or the pinned buffer is not pinned",
        vals,
    )


def judge_overlap(copy_ms: float, kernel_ms: float, both_ms: float, nbytes: int) -> Line:
    """A pinned copy on one stream beside a kernel on another: how much of the shorter one was hidden."""
    hidden = copy_ms + kernel_ms - both_ms
    ratio = hidden / min(copy_ms, kernel_ms) if min(copy_ms, kernel_ms) > 0 else 0.0
    fig = (
        f"overlap {ratio:.2f} (copy {nbytes // MiB} MiB {copy_ms:.2f} ms, kernel {kernel_ms:.2f} ms, "
        f"together {both_ms:.2f} ms)"
    )
    exp = (
        ">= 0.8 (1 = fully hidden, 0 = one after the other; a pinned copy on its own stream runs on a copy "
        "engine beside kernels: CUDA C++ Best Practices Guide, 'Asynchronous and Overlapping Transfers with "
        "Computation')"
    )
    vals = {"overlap_ratio": ratio, "copy_ms": copy_ms, "kernel_ms": kernel_ms, "both_ms": both_ms}
    if both_ms < 0.9 * max(copy_ms, kernel_ms):
        return Line(
            "overlap.pinned_copy_vs_kernel",
            FAIL,
            fig,
            exp,
            "together faster than the longer one alone: the timing is wrong",
            vals,
        )
    if ratio >= 0.8:
        return Line("overlap.pinned_copy_vs_kernel", PASS, fig, exp, values=vals)
    return Line(
        "overlap.pinned_copy_vs_kernel",
        FAIL,
        fig,
        exp,
        "the copy and the kernel ran one after the other (same stream, pageable memory, or no free copy engine)",
        vals,
    )


# ------------------------------------------------------------------- gpu check
NVML_MISSING = "pynvml is not installed"


def judge_available(available: bool, reason: str | None, names: list[str]) -> Line:
    if available:
        return Line("gpu.available", PASS, ", ".join(names) or "?", "CUDA usable (torch sees it)")
    return Line(
        "gpu.available",
        FAIL,
        "CUDA not available",
        "CUDA usable (torch.cuda.is_available() said True to the kit)",
        reason or "",
    )


def judge_verdict(v: dict) -> Line:
    """One of the gpu check's own verdicts: ok and warn ran and said something (PASS, the word
    shown); fail is FAIL, except NVML missing, which is the kit's SKIP."""
    name = "gpu.verdict." + re.sub(r"[^a-z0-9]+", "_", str(v.get("check", "?")).lower()).strip("_")
    status, msg = v.get("status"), v.get("message", "")
    if status == "fail" and msg.startswith(NVML_MISSING):
        return Line(name, SKIP, "fail", why=f"nvidia-ml-py is not installed ({msg})")
    if status in ("ok", "warn"):
        return Line(name, PASS, status, why=msg)
    return Line(name, FAIL, str(status), why=msg)


_TORCH_FIELDS = ("name", "compute_capability", "memory_total_bytes", "memory_free_bytes", "multiprocessors")
_NVML_FIELDS = (
    "pcie_gen",
    "pcie_width",
    "pcie_gen_max",
    "pcie_width_max",
    "temperature_c",
    "power_w",
    "utilization_pct",
    "mig_mode",
)


def judge_devices(devices: list[dict], torch_names: list[str], nvml_ok: bool) -> Line:
    """The device fields: torch's are present and consistent; NVML's name the same GPU as torch's."""
    visible = [d for d in devices if d.get("cuda_visible", True)]
    problems, absent = [], []
    if len(visible) != len(torch_names):
        problems.append(f"{len(visible)} CUDA-visible devices listed, torch sees {len(torch_names)}")
    for d, tname in zip(visible, torch_names):
        i = d.get("index")
        miss = [k for k in _TORCH_FIELDS if d.get(k) is None]
        if miss:
            problems.append(f"[{i}] lacks {', '.join(miss)}")
        total, free = d.get("memory_total_bytes"), d.get("memory_free_bytes")
        if total is not None and free is not None and not 0 <= free <= total:
            problems.append(f"[{i}] free memory {free} outside 0..{total}")
        if d.get("name") and tname and not (tname.startswith(d["name"]) or d["name"].startswith(tname)):
            problems.append(f"[{i}] is {d['name']!r} by NVML but {tname!r} by torch: the facts of two GPUs mixed")
        if nvml_ok:
            if d.get("nvml_index") is None:
                problems.append(f"[{i}] was not matched to an NVML GPU")
            absent += [f"[{i}] {k}" for k in _NVML_FIELDS if d.get(k) is None]
    fig = "; ".join(
        f"[{d.get('index')}] {d.get('name')}" + (f" = NVML {d['nvml_index']}" if "nvml_index" in d else "")
        for d in visible
    )
    exp = "torch's fields present and consistent, NVML's facts of the same GPU (matched by PCI address)"
    why = ("N/A from NVML: " + ", ".join(absent)) if absent else ""
    if not nvml_ok:
        why = "NVML unavailable: only torch's fields"
    if problems:
        return Line("gpu.devices", FAIL, fig, exp, "; ".join(problems + ([why] if why else [])))
    return Line("gpu.devices", PASS, fig, exp, why)


def judge_versions(versions: dict) -> Line:
    keys = ("torch", "cuda_build", "cudnn", "driver", "driver_cuda")
    fig = ", ".join(f"{k} {versions.get(k) if versions.get(k) is not None else 'N/A'}" for k in keys)
    miss = [k for k in ("torch", "cuda_build") if not versions.get(k)]
    if miss:
        return Line("gpu.versions", FAIL, fig, "torch and its CUDA build named", f"missing: {', '.join(miss)}")
    return Line("gpu.versions", PASS, fig, "torch and its CUDA build named")


# ---------------------------------------------------------------------- monitor
def judge_util(name: str, stats: dict, busy: bool, source: str) -> Line:
    """NVML kernel-active % over a window: > 90 while a matmul loop runs, < 10 after."""
    n, mean = stats.get("n") or 0, stats.get("mean")
    exp = (
        (
            "> 90 % while a matmul loop keeps a kernel running (NVML kernel-active %: share of time "
            "one or more kernels ran)"
        )
        if busy
        else "< 10 % once the loop has stopped (the GPU idle)"
    )
    if not n or mean is None:
        return Line(name, FAIL, "no sample", exp, f"the monitor gave no kernel-active sample in the window ({source})")
    fig = f"{mean:.1f} % mean of {n} samples (min {stats.get('min'):.0f}, max {stats.get('max'):.0f})"
    ok = mean > 90 if busy else mean < 10
    why = (
        ""
        if ok
        else (
            "another process on this GPU?"
            if not busy
            else "the loop did not keep the GPU busy, or the samples are not this GPU's"
        )
    )
    why = (why + "; " if why else "") + f"the monitor's GPU source: {source}"
    return Line(name, PASS if ok else FAIL, fig, exp, why, {"mean_pct": mean, "n": n})


def judge_mem_rise(name: str, before: float | None, after: float | None, allocated: int, what: str) -> Line:
    """Memory used rising by the bytes just allocated, within max(64 MiB, 5 %)."""
    margin = max(64 * MiB, 0.05 * allocated)
    exp = f"+{allocated / MiB:.0f} MiB ± {margin / MiB:.0f} MiB (the block just allocated; {what})"
    if before is None or after is None:
        return Line(name, FAIL, "no sample", exp, "the monitor gave no memory reading before or after the allocation")
    rise = after - before
    fig = f"+{rise / MiB:.0f} MiB ({before / MiB:.0f} -> {after / MiB:.0f} MiB)"
    ok = abs(rise - allocated) <= margin
    return Line(
        name,
        PASS if ok else FAIL,
        fig,
        exp,
        ""
        if ok
        else "the rise is not the allocation: another process changed its memory, or the field is not this GPU's",
        {"rise_bytes": rise},
    )


def judge_gpm(stats: dict | None, na_reason: str | None, opened: bool = False) -> Line:
    """GPM SM-active % during the loop: N/A where the GPU or driver has no GPM (pre-Hopper, MIG);
    FAIL where GPM opened but gave nothing, or a share above 100 %."""
    exp = (
        ">= 60 % during an 8192x8192 matmul loop (GPM SM-active: share of SMs busy; a GEMM that size "
        "keeps every SM working)"
    )
    name = "monitor.gpm_sm_active"
    if stats is None or not stats.get("n"):
        if opened and not na_reason:
            return Line(name, FAIL, "no sample", exp, "GPM opened on this GPU but gave no SM-active sample")
        return Line(name, NA, "", exp, f"GPM not available: {na_reason or 'no GPM sample'}")
    mean = stats["mean"]
    fig = f"{mean:.1f} % mean of {stats['n']} samples"
    if mean > 100.5:
        return Line(name, FAIL, fig, exp, "above 100 %: the GPM metric is read wrongly")
    ok = mean >= 60
    return Line(
        name,
        PASS if ok else FAIL,
        fig,
        exp,
        "" if ok else "the SMs were not busy, or the GPM samples are read wrongly",
        {"mean_pct": mean},
    )


def judge_process_memory(peak: int | None, reserved: int, pid: int, why_na: str = "") -> Line:
    """The per-process table's GPU memory of this process (NVML, peak over the run) against what
    torch's caching allocator reserved: at least that, at most 2 GiB more (the CUDA context and
    cuBLAS's own memory live outside the allocator).  None: N/A with why (a PID namespace of its
    own, NVML refusing the process list)."""
    name = "monitor.process_gpu_memory"
    exp = (
        f"{reserved / MiB:.0f} MiB (torch.cuda.max_memory_reserved) to +2048 MiB more (the CUDA context, "
        "outside torch's allocator, is typically 300-700 MiB)"
    )
    if peak is None:
        return Line(name, NA, "", exp, why_na or "the per-process table has no GPU memory for this process")
    fig = f"{peak / MiB:.0f} MiB peak, pid {pid} (the per-process table's main row)"
    ok = reserved <= peak <= reserved + 2 * GiB
    why = (
        ""
        if ok
        else (
            "below what torch holds: another process's memory, or not this process's"
            if peak < reserved
            else "far above what torch holds: the memory of other processes counted as this one's"
        )
    )
    return Line(name, PASS if ok else FAIL, fig, exp, why, {"peak_bytes": peak, "reserved_bytes": reserved})
