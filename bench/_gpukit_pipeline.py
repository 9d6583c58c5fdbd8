"""The GPU validation kit's pipeline checks: ``bench_loader`` with a real GPU step (input-bound
and compute-bound, against the same step emulated), ``sweep`` with pin_memory off and on, a
monitored notebook cell executed headless, ``--ranks`` on NCCL and a checkpoint of CUDA
tensors (the last two through the CLI, as a user types them).

Each ``run_*`` takes what it runs on as keywords (the GPU step, the backend, the device, the
cells) so tests/test_gpu_check.py runs the same code on the CPU: a fake device step, gloo,
``--device cpu``, a CPU loop.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time

from _gpukit_lines import FAIL, Line, installed
from _gpukit_pipeverdicts import (
    judge_au_sum,
    judge_checkpoint,
    judge_notebook,
    judge_ranks,
    judge_step_length,
    judge_sweep,
    judge_vs_emulated,
)

STEP_S = 0.02  # the GPU step's target length
BATCH = (64, 3, 64, 64)  # 3 MiB of float32 per batch


class SyntheticLoader:
    """``n`` batches, each after ``wait_s`` of 'loading' (a sleep): the host side of an input
    pipeline whose speed is known exactly."""

    def __init__(self, batch, wait_s: float, n: int):
        self.batch, self.wait_s, self.n = batch, wait_s, n

    def __iter__(self):
        for _ in range(self.n):
            time.sleep(self.wait_s)
            yield self.batch

    def __len__(self):
        return self.n


def run_loader(ctx, gpu_step=None, batch=None, monitor="auto", steps: int = 60) -> None:
    """bench_loader(step="gpu") input-bound and compute-bound, each against an emulated step
    of the length the GPU step measured.  ``gpu_step`` makes each run's step (default "gpu":
    nbbench's CudaStep), ``batch`` is the batch (default 3 MiB, pinned)."""
    from nbbench.accelerators import Accelerator
    from nbbench.probes.pipeline.loader import bench_loader

    if batch is None:
        import torch

        batch = torch.zeros(*BATCH).pin_memory()
    make_step = gpu_step or (lambda: "gpu")
    first = True
    n = steps + 20
    for cfg, wait_s in (("input_bound", 2 * STEP_S), ("compute_bound", STEP_S / 4)):
        with ctx.guard(f"loader.{cfg}"):
            r = bench_loader(
                SyntheticLoader(batch, wait_s, n),
                steps=steps,
                warmup=5,
                step=make_step(),
                target_step_s=STEP_S,
                monitor=monitor,
                batch_size=BATCH[0],
            )
            if r.status != "ok":
                ctx.emit(Line(f"loader.{cfg}", FAIL, why=f"bench_loader ended {r.status}: {r.reason}"))
                continue
            m = r.metrics
            busy = (r.samples.get("gpu") or {}).get("busy_s") or []
            busy_mean = statistics.mean(busy) if busy else None
            ctx.emit(judge_au_sum(cfg, m.get("au_pct"), m.get("gpu_starvation_pct")))
            if first:
                ctx.emit(judge_step_length(busy_mean, STEP_S, r.extra.get("matmuls_per_step")))
                first = False
            if not busy_mean:
                continue
            acc = Accelerator("gpukit-step", "gpu", "matmul", BATCH[0], busy_mean)
            e = bench_loader(
                SyntheticLoader(batch, wait_s, n), steps=steps, warmup=5, step=acc, monitor=False, batch_size=BATCH[0]
            )
            es = e.samples["steps"]
            ln = judge_vs_emulated(
                cfg,
                m.get("au_pct"),
                statistics.mean(es["wait_s"]),
                statistics.mean(es["compute_s"]),
                e.metrics.get("au_pct"),
            )
            util = m.get("gpu_util_mean_pct")
            if util is not None:
                of = r.labels.get("gpu_util_of", "all GPUs' mean")
                ln.why = (ln.why + "; " if ln.why else "") + f"NVML kernel-active over the GPU run {util:.0f} % ({of})"
            ctx.emit(ln)


def run_sweep(ctx, step="gpu", duration: float = 2.0) -> None:
    """sweep() over an in-memory dataset with pin_memory off and on, the GPU step on each batch."""
    import torch
    from torch.utils.data import TensorDataset

    from nbbench.probes.pipeline.sweep import sweep

    with ctx.guard("sweep.pin_memory"):
        ds = TensorDataset(torch.zeros(512, *BATCH[1:]))
        r = sweep(
            ds, num_workers=[2], batch_size=[BATCH[0]], pin_memory=[False, True], step=step, duration=duration, warmup=2
        )
        ln = judge_sweep(r.configs)
        if r.status != "ok" and ln.status == "PASS":
            ln.status, ln.why = FAIL, f"the sweep ended {r.status}: {r.reason}"
        ctx.emit(ln)


# -------------------------------------------------------------------- notebook
NOTEBOOK_LABEL = "gpukit-notebook"
_WARM = """%load_ext nbbench
import time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.float16)
b = torch.randn_like(a)
(a @ b).sum().item()"""
_LOOP = """t = time.time()
while time.time() - t < 4:
    for _ in range(8):
        c = a @ b
    torch.cuda.synchronize()
print("gpu loop done")"""
_READ = """import json
from nbbench.store import default_store
r = default_store().find(LABEL)[-1]
utils = {k[3:-14]: v for k, v in r.metrics.items()
         if k.startswith("gpu") and k.endswith("_util_mean_pct") and k[3:-14].isdigit()}
print("GPUKIT " + json.dumps({"status": r.status, "utils": utils}))"""


def notebook_missing() -> str | None:
    miss = [m for m in ("nbformat", "nbclient", "ipykernel", "IPython", "matplotlib") if not installed(m)]
    return (
        f"the notebook stack is not installed ({', '.join(miss)} missing: pip install 'nbbench[test]')"
        if miss
        else None
    )


def run_notebook(ctx, gpu="auto", warm: str = _WARM, loop: str = _LOOP) -> None:
    """A notebook executed headless (nbclient): a warm-up cell, ``loop`` under ``%%iobench monitor
    --gpu GPU`` (auto: NVML's index of torch's device 0), a cell reading the stored result; then the
    saved file's PNG and the result's GPU utilisation."""
    import nbformat
    from nbclient import NotebookClient

    with ctx.guard("notebook.monitored_cell"):
        idx = _device0_nvml() if gpu == "auto" else gpu
        work = os.path.join(ctx.scratch, "notebook")
        os.makedirs(work, exist_ok=True)
        os.environ["PYTHONPATH"] = os.pathsep.join(
            [ctx.repo] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        )  # the kernel imports this checkout's nbbench
        magic = f"%%iobench monitor --interval 0.1 --label {NOTEBOOK_LABEL} --gpu {'all' if idx is None else idx}\n"
        nb = nbformat.v4.new_notebook()
        read = _READ.replace("LABEL", repr(NOTEBOOK_LABEL))
        nb.cells = [nbformat.v4.new_code_cell(c) for c in (warm, magic + loop, read)]
        NotebookClient(
            nb,
            timeout=max(20, int(ctx.timeout) - 20),
            kernel_name="python3",
            allow_errors=True,
            resources={"metadata": {"path": work}},
        ).execute()
        path = os.path.join(work, "gpukit-monitor.ipynb")
        nbformat.write(nb, path)
        nb = nbformat.read(path, as_version=4)  # what a viewer gets
        errors = [
            f"cell {i}: {o.ename}: {o.evalue}"
            for i, c in enumerate(nb.cells)
            for o in c.outputs
            if o.output_type == "error"
        ]
        pngs = [o for o in nb.cells[1].outputs if o.output_type == "display_data" and "image/png" in o.get("data", {})]
        png = base64.b64decode(pngs[-1].data["image/png"]) if pngs else None
        text = pngs[-1].data.get("text/plain", "") if pngs else ""
        utils = {}
        for o in nb.cells[2].outputs:
            for line in (o.get("text") or "").splitlines():
                if line.startswith("GPUKIT "):
                    utils = json.loads(line[len("GPUKIT ") :]).get("utils") or {}
        if ctx.artifacts:
            shutil.copy(path, ctx.artifacts)
            if png:
                with open(os.path.join(ctx.artifacts, "gpukit-monitor.png"), "wb") as f:
                    f.write(png)
        ctx.emit(judge_notebook(png, text, utils, None if idx in (None, "none", "all") else int(idx), errors))


def _device0_nvml() -> int | None:
    import torch

    from nbbench.nvml import get_nvml
    from nbbench.probes.gpudevices import nvml_index

    return nvml_index(torch, get_nvml(), 0)


# ----------------------------------------------------------- ranks, checkpoint
def cli(ctx, argv: list[str], timeout: float) -> tuple[int, dict | None, str]:
    """``python -m nbbench ARGV`` in the scratch folder: (exit code, its --json result, stderr).
    Past ``timeout`` it gets SIGINT first (a launcher then ends its ranks), SIGKILL 10 s later."""
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([ctx.repo] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]),
    )
    p = subprocess.Popen(
        [sys.executable, "-m", "nbbench", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
        cwd=ctx.scratch,
    )
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGINT)
        try:
            out, err = p.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        err = (err or "") + f"\n(the kit stopped it after {timeout:.0f} s)"
    try:
        data = json.loads(out)
    except ValueError:
        data = None
    return p.returncode, data, err


def run_ranks(ctx, backend: str = "nccl", device: str = "cuda", n: int | None = None, size: str = "64M") -> None:
    """``nbbench checkpoint DIR --device cuda --ranks N --backend nccl``: one rank per visible GPU,
    each its own GPU's tensors, meeting through NCCL."""
    with ctx.guard(f"ranks.{backend}"):
        if n is None:
            import torch

            n = torch.cuda.device_count()
        d = os.path.join(ctx.scratch, "ranks")
        os.makedirs(d, exist_ok=True)
        rc, data, err = cli(
            ctx,
            [
                "checkpoint",
                d,
                "--device",
                device,
                "--size",
                size,
                "--ranks",
                str(n),
                "--backend",
                backend,
                "--json",
                "--no-save",
            ],
            ctx.timeout - 15,
        )
        ctx.emit(judge_ranks(rc, data, n, err, backend, device))


def run_checkpoint(ctx, device: str = "cuda", size: str = "256M") -> None:
    """``nbbench checkpoint DIR --device cuda --size 256M``: CUDA tensors saved and loaded back."""
    with ctx.guard("checkpoint.cuda" if device.startswith("cuda") else f"checkpoint.{device}"):
        d = os.path.join(ctx.scratch, "checkpoint")
        os.makedirs(d, exist_ok=True)
        rc, data, err = cli(
            ctx, ["checkpoint", d, "--device", device, "--size", size, "--json", "--no-save"], ctx.timeout - 15
        )
        ctx.emit(judge_checkpoint(rc, data, err, device))


__all__ = [
    "run_loader",
    "run_sweep",
    "run_notebook",
    "run_ranks",
    "run_checkpoint",
    "notebook_missing",
    "SyntheticLoader",
    "cli",
]
