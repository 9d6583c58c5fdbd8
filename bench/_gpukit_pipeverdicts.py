"""The GPU validation kit's pipeline verdicts: bench_loader with a GPU step, sweep with
pin_memory off and on, the monitored notebook cell, ranks on NCCL and a checkpoint of CUDA
tensors.  Plain numbers and the plain dicts nbbench's results hold (``to_dict()``) in, one
:class:`Line` out; nothing here measures, so tests/test_gpu_check.py feeds them fakes.
"""

from __future__ import annotations

import re

from _gpukit_lines import FAIL, GB, PASS, SKIP, Line, MiB


# ----------------------------------------------------------------------- loader
def judge_au_sum(cfg: str, au: float | None, starvation: float | None) -> Line:
    name = f"loader.{cfg}.au_plus_starvation"
    exp = "100 % ± 5 (the device window is the steps' busy time plus the gaps before them, CUDA events)"
    if au is None or starvation is None:
        return Line(
            name,
            FAIL,
            f"AU {au}, starvation {starvation}",
            exp,
            "a figure is missing: the CUDA-event timeline did not come back",
        )
    tot = au + starvation
    ok = abs(tot - 100.0) <= 5.0
    return Line(
        name,
        PASS if ok else FAIL,
        f"AU {au:.1f} % + starvation {starvation:.1f} % = {tot:.1f} %",
        exp,
        values={"au_pct": au, "gpu_starvation_pct": starvation},
    )


def predicted_gpu_au(wait_s: float, step_s: float) -> float:
    """AU of an asynchronous GPU step: the host's wait overlaps the queued step, so a batch's
    step hides up to its own length of waiting: 100 x step / max(step, wait) (as one worker
    prefetching in nbbench.accelerators.predicted_au_pct)."""
    return 100.0 * step_s / max(step_s, wait_s) if step_s > 0 else 0.0


def judge_vs_emulated(cfg: str, au_gpu: float | None, wait_s: float, step_s: float, au_emulated: float | None) -> Line:
    name = f"loader.{cfg}.vs_emulated"
    pred = predicted_gpu_au(wait_s, step_s)
    exp = (
        f"{pred:.1f} % ± 10 points: 100 x step / max(step, wait) from the emulated run's {step_s * 1e3:.1f} ms "
        f"step and {wait_s * 1e3:.1f} ms wait per batch (the GPU step is queued asynchronously, so the wait "
        "overlaps it; the emulated step sleeps, so it does not)"
    )
    if au_gpu is None:
        return Line(name, FAIL, "AU N/A", exp, "the GPU run gave no AU")
    fig = f"AU {au_gpu:.1f} % on the GPU" + (f", {au_emulated:.1f} % emulated" if au_emulated is not None else "")
    ok = abs(au_gpu - pred) <= 10.0
    return Line(
        name,
        PASS if ok else FAIL,
        fig,
        exp,
        "" if ok else "the GPU step's AU disagrees with the arithmetic of the same step emulated",
        {"au_pct": au_gpu, "predicted_au_pct": pred},
    )


def judge_step_length(busy_mean_s: float | None, target_s: float, reps: int | None) -> Line:
    exp = f"{target_s * 1e3:.0f} ms ± 50 % (CudaStep sizes its matmuls to target_step_s from a 5-matmul calibration)"
    if not busy_mean_s:
        return Line("loader.gpu_step_length", FAIL, "N/A", exp, "no device timing came back")
    ratio = busy_mean_s / target_s
    fig = f"{busy_mean_s * 1e3:.1f} ms per step (CUDA events)" + (f", {reps} matmuls" if reps else "")
    ok = 0.5 <= ratio <= 1.5
    return Line(
        "loader.gpu_step_length",
        PASS if ok else FAIL,
        fig,
        exp,
        "" if ok else "the calibration is off (clocks changed after it?)",
        {"busy_mean_s": busy_mean_s},
    )


def judge_sweep(rows: list[dict]) -> Line:
    """pin_memory off and on both measured; their throughput ratio reported (no direction)."""
    exp = (
        "both configurations measured (status ok); the ratio is reported, not judged: the pin thread's "
        "extra host copy can cost what faster DMA saves"
    )
    by = {bool(r.get("pin_memory")): r for r in rows}
    if set(by) != {False, True}:
        return Line(
            "sweep.pin_memory", FAIL, f"{len(rows)} rows", exp, "the sweep did not run both pin_memory settings"
        )
    bad = [(k, r) for k, r in by.items() if r.get("status") != "ok" or not r.get("samples_per_s")]
    if bad:
        skipped = all(r.get("status") == "skipped" for _, r in bad)
        why = "; ".join(f"pin_memory={k}: {r.get('status')} ({r.get('reason')})" for k, r in bad)
        return Line("sweep.pin_memory", SKIP if skipped else FAIL, "", exp, why)
    off, on = by[False]["samples_per_s"], by[True]["samples_per_s"]
    fig = f"pinned {on:,.0f} / pageable {off:,.0f} samples/s = {on / off:.2f}"
    util = [f"{r['gpu_util_mean_pct']:.0f} %" for r in (by[False], by[True]) if r.get("gpu_util_mean_pct") is not None]
    why = f"GPU kernel-active {' / '.join(util)} (pageable / pinned)" if len(util) == 2 else ""
    return Line(
        "sweep.pin_memory", PASS, fig, exp, why, values={"pinned_samples_per_s": on, "pageable_samples_per_s": off}
    )


# ------------------------------------------------------------------- notebook
_KERNEL_LINE = re.compile(r"GPU(\d+) kernel-active\s+last\s+(\S+)\s+mean\s+(\S+)\s+max\s+(\S+)")


def plot_gpu_means(text: str) -> dict[int, float]:
    """NVML GPU index -> the mean kernel-active % the final plot frame's text states ({}: no GPU series)."""
    return {int(m.group(1)): float(m.group(3)) for m in _KERNEL_LINE.finditer(text or "")}


def judge_notebook(png: bytes | None, plot_text: str, utils: dict, gpu: int | None, errors: list[str]) -> Line:
    """The saved notebook's PNG (the live plot's final frame) and the stored result's GPU utilisation.

    ``utils``: NVML GPU index -> the stored result's ``gpu{i}_util_mean_pct``; ``gpu``: the GPU the
    cell computed on (None: not known; the busiest is taken)."""
    name = "notebook.monitored_cell"
    exp = (
        "the monitored cell's saved output holds a PNG whose plot has the GPU's kernel-active series, and the "
        "stored result's kernel-active mean of that GPU > 50 % (the cell is a 4 s matmul loop)"
    )
    if errors:
        return Line(name, FAIL, "", exp, "a cell failed: " + "; ".join(errors))
    if not png:
        return Line(name, FAIL, "no PNG", exp, "the saved notebook holds no image/png output")
    if not png.startswith(b"\x89PNG\r\n\x1a\n"):
        return Line(name, FAIL, f"{len(png)} bytes", exp, "the image is not a PNG")
    shown = plot_gpu_means(plot_text)
    utils = {int(k): v for k, v in (utils or {}).items() if v is not None}
    which = gpu if gpu is not None else (max(utils, key=utils.get) if utils else None)
    util, mean = utils.get(which), shown.get(which)
    fig = (
        f"PNG {len(png) // 1024} KiB"
        + (f", the plot's GPU{which} kernel-active mean {mean:.0f} %" if mean is not None else "")
        + (f", the stored result's gpu{which}_util_mean_pct {util:.1f} %" if util is not None else "")
    )
    why = "" if gpu is not None else "which NVML GPU is torch's device 0 was not known: the busiest GPU taken"
    if mean is None:
        return Line(
            name,
            FAIL,
            fig,
            exp,
            "the plot has no kernel-active series of the GPU the cell used"
            + (f" (it shows GPU {', '.join(map(str, sorted(shown)))})" if shown else ""),
        )
    if util is None or util <= 50:
        return Line(name, FAIL, fig, exp, "the stored result's GPU utilisation is N/A or low")
    return Line(name, PASS, fig, exp, why, values={"gpu_util_mean_pct": util})


# -------------------------------------------------------------- ranks, checkpoint
def _cli_failure(rc: int, data: dict | None, stderr: str) -> str:
    if data is None:
        tail = [ln for ln in (stderr or "").strip().splitlines() if ln.strip()]
        return f"exit code {rc}, no JSON result" + (f": {tail[-1]}" if tail else "")
    why = data.get("reason") or f"status {data.get('status')}"
    # a rank's own one-line error is in the launcher's stderr, not in torchrun's report
    own = [ln for ln in (data.get("extra") or {}).get("launcher_stderr_tail", []) if ln.startswith("nbbench ")]
    return why + (f" ({own[0]})" if own else "")


def _rate(m: dict, key: str) -> str:
    v = m.get(key)
    return "N/A" if v is None else f"{v / GB:.2f} GB/s"


def _on(value, device: str) -> bool:
    return str(value or "").startswith(device)


def judge_ranks(
    rc: int, data: dict | None, n_gpus: int, stderr: str = "", backend: str = "nccl", device: str = "cuda"
) -> Line:
    """``nbbench checkpoint --ranks N --backend nccl --device cuda``'s JSON: N ranks joined the
    NCCL group, each saved and loaded its own GPU's tensors, every rank ok."""
    name = f"ranks.{backend}"
    exp = (
        f"status ok with {n_gpus} rank{'s' if n_gpus != 1 else ''} on the {backend} backend, every rank ok, "
        f"tensors on {device}" + (" (one GPU: one rank)" if n_gpus == 1 else " (one rank per visible GPU)")
    )
    if data is None or data.get("status") != "ok":
        return Line(name, FAIL, "", exp, _cli_failure(rc, data, stderr))
    ranks = (data.get("extra") or {}).get("ranks") or []
    labels, params, m = data.get("labels") or {}, data.get("params") or {}, data.get("metrics") or {}
    problems = []
    if labels.get("backend") != backend:
        problems.append(f"backend {labels.get('backend')!r}")
    if params.get("ranks") != n_gpus or len(ranks) != n_gpus:
        problems.append(f"{len(ranks)} rank records (params.ranks {params.get('ranks')}) for {n_gpus} GPUs")
    if not _on(params.get("device"), device) or not _on(labels.get("tensor_device"), device):
        problems.append(f"the tensors were on {labels.get('tensor_device')!r} (--device {params.get('device')!r})")
    problems += [
        f"rank {r.get('rank')}: {r.get('status')} ({r.get('reason')})" for r in ranks if r.get("status") != "ok"
    ]
    fig = (
        f"{n_gpus} rank{'s' if n_gpus != 1 else ''} on {backend}, {(m.get('state_bytes') or 0) / MiB:.0f} MiB on "
        f"{device} each: save {_rate(m, 'write_bytes_per_s')}, cold load {_rate(m, 'read_bytes_per_s')} together"
    )
    if problems:
        return Line(name, FAIL, fig, exp, "; ".join(problems))
    return Line(name, PASS, fig, exp, "one GPU here: one rank" if n_gpus == 1 else "")


def judge_checkpoint(rc: int, data: dict | None, stderr: str = "", device: str = "cuda") -> Line:
    """``nbbench checkpoint --device cuda``'s JSON: saved, loaded back to the device and compared."""
    name = "checkpoint.cuda" if device.startswith("cuda") else f"checkpoint.{device}"
    exp = (
        f"status ok: tensors on {device} saved (torch.save, DCP), loaded back to {device} and compared byte for "
        "byte (a mismatch fails the run)"
    )
    if data is None or data.get("status") != "ok":
        return Line(name, FAIL, "", exp, _cli_failure(rc, data, stderr))
    params, labels, m = data.get("params") or {}, data.get("labels") or {}, data.get("metrics") or {}
    fig = (
        f"{(m.get('state_bytes') or 0) / MiB:.0f} MiB on {labels.get('tensor_device')}: save "
        f"{_rate(m, 'write_bytes_per_s')}, cold load {_rate(m, 'read_bytes_per_s')}, DCP load "
        f"{_rate(m, 'dcp_read_bytes_per_s')}"
    )
    if not _on(params.get("device"), device) or not _on(labels.get("tensor_device"), device):
        return Line(name, FAIL, fig, exp, f"the tensors were on {labels.get('tensor_device')!r}, not {device}")
    warm = [w for w in data.get("warnings") or [] if "partly warm" in w]
    return Line(
        name, PASS, fig, exp, "the page cache could not be emptied: the cold load is partly warm" if warm else ""
    )


__all__ = [
    "judge_au_sum",
    "predicted_gpu_au",
    "judge_vs_emulated",
    "judge_step_length",
    "judge_sweep",
    "plot_gpu_means",
    "judge_notebook",
    "judge_ranks",
    "judge_checkpoint",
]
