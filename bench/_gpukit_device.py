"""The GPU validation kit's device checks: nbbench's gpu check, a copy overlapped with a
kernel, and the monitor during a GPU-bound loop.  Each ``run_*`` measures on the real GPU
(torch's device 0) and hands its figures to :mod:`_gpukit_verdicts`; ``ctx.emit`` takes the
lines, ``ctx.guard(name)`` turns an exception into that check's FAIL and goes on.

The parts that read nbbench's results (:func:`gpu_lines`, :func:`monitor_lines`) take them
as arguments, so tests/test_gpu_check.py runs them on fake torch / NVML modules.
"""

from __future__ import annotations

import os
import statistics
import time

from _gpukit_lines import FAIL, SKIP, GiB, Line, MiB, installed
from _gpukit_verdicts import (
    judge_available,
    judge_devices,
    judge_gpm,
    judge_link,
    judge_matmul,
    judge_mem_rise,
    judge_overlap,
    judge_pinned_vs_pageable,
    judge_process_memory,
    judge_util,
    judge_verdict,
    judge_versions,
)

MATMUL_SIZE = 8192


# ------------------------------------------------------------------ gpu check
def run_gpu(ctx, torch=None, nvml=None) -> None:
    """``nbbench gpu`` for real: verdicts, device fields, versions, matmuls against the peak, copies.
    ``torch`` / ``nvml`` (an :class:`nbbench.nvml.Nvml`): the real ones unless a test gives fakes."""
    from nbbench.nvml import get_nvml
    from nbbench.probes.gpu import check

    if torch is None:
        import torch
    nv = nvml if nvml is not None else get_nvml()
    with ctx.guard("gpu.check"):
        res = check(torch=torch, nvml=nv, matmul_size=MATMUL_SIZE, repeats=10)
        torch_names = [torch.cuda.get_device_properties(i).name for i in range(torch.cuda.device_count())]
        for ln in gpu_lines(res, torch_names, nv.available):
            ctx.emit(ln)


def gpu_lines(res, torch_names: list[str], nvml_ok: bool) -> list[Line]:
    """The lines of a finished :func:`nbbench.probes.gpu.check` (a GpuCheckResult)."""
    names = [d.get("name") or "?" for d in res.devices if d.get("cuda_visible", True)]
    out = [judge_available(res.available, res.reason, names)]
    out += [judge_verdict(v) for v in res.verdicts]
    out.append(judge_devices(res.devices, torch_names, nvml_ok))
    out.append(judge_versions(res.versions))
    if not res.available or not res.devices:
        return out
    m, dev0 = res.metrics, res.devices[0]  # the benchmark ran on torch's device 0, listed first
    size = res.params.get("matmul_size", MATMUL_SIZE)
    for kind in ("fp32", "tf32", "bf16"):
        out.append(judge_matmul(kind, m.get(f"matmul_{kind}_flop_per_s"), dev0.get("name"), size))
    # the generation drops at idle to save power: the link's maximum (with this host) is what a copy gets
    gen = dev0.get("pcie_gen_max") or dev0.get("pcie_gen")
    width = dev0.get("pcie_width") or dev0.get("pcie_width_max")
    for d in ("h2d", "d2h"):
        out.append(judge_link(d, m.get(f"{d}_pinned_bytes_per_s"), gen, width, dev0.get("name")))
        out.append(judge_pinned_vs_pageable(d, m.get(f"{d}_pageable_bytes_per_s"), m.get(f"{d}_pinned_bytes_per_s")))
    return out


# -------------------------------------------------------------------- overlap
def _timed_ms(torch, work) -> float:
    """GPU time of ``work`` — [(stream, fn)] all started together — from one event before to
    one after every stream's part (the current stream waits on each)."""
    cur = torch.cuda.current_stream()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record(cur)
    for stream, fn in work:
        stream.wait_event(start)
        with torch.cuda.stream(stream):
            fn()
        done = torch.cuda.Event()
        done.record(stream)
        cur.wait_event(done)
    end.record(cur)
    end.synchronize()
    return float(start.elapsed_time(end))


def _median_ms(torch, work, n: int = 5) -> float:
    _timed_ms(torch, work)  # warm-up
    return statistics.median(_timed_ms(torch, work) for _ in range(n))


def run_overlap(ctx) -> None:
    """A pinned 512 MiB host->device copy on its own stream beside matmuls on another."""
    import torch

    with ctx.guard("overlap.pinned_copy_vs_kernel"):
        nbytes = 512 * MiB
        host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
        dev = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
        a = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
        b = torch.randn_like(a)
        c = torch.empty_like(a)
        s_copy, s_comp = torch.cuda.Stream(), torch.cuda.Stream()

        def copy():
            dev.copy_(host, non_blocking=True)

        def mm10():
            for _ in range(10):
                torch.mm(a, b, out=c)

        copy_ms = _median_ms(torch, [(s_copy, copy)])
        per_mm = _median_ms(torch, [(s_comp, mm10)]) / 10
        reps = max(1, round(copy_ms / max(per_mm, 1e-3)))  # as long as the copy

        def kernels():
            for _ in range(reps):
                torch.mm(a, b, out=c)

        kernel_ms = _median_ms(torch, [(s_comp, kernels)])
        both_ms = _median_ms(torch, [(s_copy, copy), (s_comp, kernels)])
        ctx.emit(judge_overlap(copy_ms, kernel_ms, both_ms, nbytes))


# -------------------------------------------------------------------- monitor
MONITOR_LINES = (
    "monitor.kernel_active_busy",
    "monitor.kernel_active_after",
    "monitor.mem_used_rise",
    "monitor.gpm_sm_active",
    "monitor.process_gpu_memory",
)


def run_monitor(ctx) -> None:
    """The monitor during a GPU-bound loop: idle, a 2 GiB allocation, 4 s of matmuls, idle again."""
    import torch

    from nbbench.monitor import Monitor
    from nbbench.nvml import get_nvml
    from nbbench.probes.gpudevices import nvml_index

    with ctx.guard(MONITOR_LINES[0]):
        idx = nvml_index(torch, get_nvml(), 0)
        if idx is None:
            for n in MONITOR_LINES:
                ctx.emit(
                    Line(
                        n,
                        FAIL,
                        why="which NVML GPU is torch's device 0 cannot be told (no PCI address "
                        "or UUID match): the monitor's figures would be another GPU's",
                    )
                )
            return
        dt = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        a = torch.randn(MATMUL_SIZE, MATMUL_SIZE, device="cuda", dtype=dt)
        b, c = torch.randn_like(a), torch.empty_like(a)
        torch.mm(a, b, out=c)  # cuBLAS handle and workspace now, not inside a window
        torch.cuda.synchronize()
        free, _ = torch.cuda.mem_get_info()
        alloc = int(min(2 * GiB, free // 4)) // MiB * MiB
        mon = Monitor(interval=0.1, gpus=[idx], net="none")
        w = {}
        mon.start()
        try:
            # each window ends 0.3 s before the next change: a record covers the interval before it
            t0 = time.monotonic()
            time.sleep(1.5)
            w["base"] = (t0 + 0.3, time.monotonic() - 0.3)
            block = torch.empty(alloc, dtype=torch.uint8, device="cuda")
            torch.cuda.synchronize()
            a0 = time.monotonic()
            time.sleep(1.2)
            w["held"] = (a0 + 0.4, time.monotonic() - 0.2)
            b0 = time.monotonic()
            while time.monotonic() - b0 < 4.0:
                for _ in range(8):
                    torch.mm(a, b, out=c)
                torch.cuda.synchronize()
            b1 = time.monotonic()
            w["busy"] = (b0 + 1.0, b1 - 0.3)  # NVML's rates average over up to a second: skip the ramp
            time.sleep(2.5)
            w["after"] = (b1 + 1.2, time.monotonic())
        finally:
            mon.stop()
        reserved = torch.cuda.max_memory_reserved()
        del block
        for ln in monitor_lines(mon, mon.result(), idx, w, alloc, reserved, os.getpid()):
            ctx.emit(ln)


def monitor_lines(mon, res, idx: int, w: dict, alloc: int, reserved: int, pid: int) -> list[Line]:
    """The lines of a stopped :class:`nbbench.monitor.Monitor` that watched NVML GPU ``idx`` and
    its result: windows ``w`` (base, held, busy, after: monotonic (t0, t1)), ``alloc`` bytes
    allocated between base and held, ``reserved``: torch's peak reserved bytes, ``pid``: this process."""
    p = f"gpu{idx}."
    src = mon.source("gpu")
    how = ", ".join(f"{k}={v}" for k, v in ((src.labels if src else {}) or {}).items()) or "no GPU source"
    out = [
        judge_util(MONITOR_LINES[0], mon.stats(p + "util_pct", *w["busy"]), True, how),
        judge_util(MONITOR_LINES[1], mon.stats(p + "util_pct", *w["after"]), False, how),
        judge_mem_rise(
            MONITOR_LINES[2],
            mon.stats(p + "mem_used_bytes", *w["base"]).get("mean"),
            mon.stats(p + "mem_used_bytes", *w["held"]).get("mean"),
            alloc,
            f"NVML memory used of GPU {idx}",
        ),
    ]
    gpm_na = mon.na().get(p + "sm_active_pct")
    gpm_on = any(d.get("gpm") for d in (src.info if src else []))
    out.append(judge_gpm(None if gpm_na else mon.stats(p + "sm_active_pct", *w["busy"]), gpm_na, gpm_on))
    out.append(_process_line(mon, res, reserved, pid))
    return out


def _process_line(mon, res, reserved: int, pid: int) -> Line:
    """The per-process table's row of this process: its GPU memory (N/A with why; SKIP without psutil)."""
    proc = mon.source("proc")
    table = getattr(proc, "table", None)
    if table is None:
        dead = next((n for n in mon.all_notes() if n.startswith("source 'proc'")), None)
        return Line(MONITOR_LINES[4], SKIP, why=dead or "the monitor kept no per-process table")
    cols = res.samples.get("procs") or {}
    pids = cols.get("pid") or []
    peak = cols.get("gpu_mem_peak_bytes", [None] * len(pids))[pids.index(pid)] if pid in pids else None
    why = ""
    if peak is None:
        notes = [n for n in res.extra.get("notes", []) if "per process" in n]
        why = notes[0] if notes else f"process {pid} has no GPU memory in the per-process table"
        un = res.samples.get("gpu_procs_unmatched") or {}
        if un.get("pid"):
            listed = ", ".join(f"pid {p} {m / MiB:.0f} MiB" for p, m in zip(un["pid"], un["gpu_mem_bytes"]) if m)
            why += f" (NVML lists, by its own PIDs: {listed})"
    return judge_process_memory(peak, reserved, pid, why)


def nvml_missing_reason() -> str | None:
    """Why the monitor checks cannot run here (None: NVML works)."""
    if not installed("pynvml"):
        return "nvidia-ml-py is not installed (pip install nvidia-ml-py): the monitor reads the GPU through NVML"
    from nbbench.nvml import get_nvml

    ok = get_nvml().init()
    return None if ok is True else ok.reason
