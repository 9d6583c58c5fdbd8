"""GPU validation kit: run every GPU path of nbbench for real and say what it found.

One line per check — its name, the figure with its unit, the expected range with its
source, and PASS / FAIL / N/A / SKIP (why) — then a summary line; the exit code is 0 when
no line says FAIL, else 1.  About 3 minutes on one GPU before copies, health and collectives
(at most 120 s more, not yet timed on a GPU); each check has its own time limit and all of
them together at most --budget seconds (280), so it ends within 5 minutes whatever hangs.
The checks, in the order they run (``--only`` takes their names):

  gpu         nbbench's gpu check: verdicts, device fields, versions; 8192x8192 matmuls
              (fp32, tf32, bf16) against the device's published dense peak; host<->device
              GB/s pinned against the PCIe link and against pageable
  overlap     a pinned copy on its own stream beside matmuls on another (overlap ratio)
  monitor     the monitor during a GPU-bound loop: kernel-active % while and after, memory
              used against a 2 GiB allocation, GPM SM-active, this process's GPU memory in
              the per-process table
  loader      bench_loader(step="gpu") input-bound and compute-bound: AU + starvation, and
              AU against an emulated step of the same length
  sweep       sweep() with pin_memory off and on and the GPU step (the throughput ratio)
  checkpoint  nbbench checkpoint DIR --device cuda --size 256M
  ranks       nbbench checkpoint DIR --device cuda --ranks N --backend nccl (one rank per GPU)
  copies      nbbench copies: host<->device pinned vs pageable, the GPU-to-GPU matrix
  health      nbbench gpu --health: NVML under load (clocks reasons, PCIe link, ECC, remaps, Xid, ...)
  collectives nbbench collectives --ranks N --backend nccl: nccl-tests' ops, busbw, check, link, transport
  notebook    a %%iobench monitor cell executed headless (nbclient): the saved PNG and the
              stored result's GPU utilisation

Each check runs in a child process of its own: a failure, a hang or a crash of one is that
check's FAIL and the others still run.  Results go to a temporary NBBENCH_HOME (your
history is left alone); files to a temporary folder (``--dir``).  A check needing a package
that is missing says SKIP and which.  Without CUDA nothing runs: each check says what it
would run and why it cannot, and the exit code is 0 (the dry run; ``--dry-run`` does the same with CUDA).

Run:  make gpu-check   or   PYTHONPATH=. python3 bench/gpu_check.py [--only gpu,monitor] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(HERE), str(REPO)]  # the kit's helpers, then this checkout's nbbench

from _gpukit_lines import FAIL, SKIP, Line, installed, one_line, summary, summary_text  # noqa: E402

BUDGET_S = 280.0
MIN_RUN_S = 15.0  # a check given less than this (or its own limit, if smaller) is not started


@dataclass(frozen=True)
class Check:
    name: str
    what: str  # what it runs, in words (the dry run's "would run …")
    timeout_s: float
    run: str  # "module:function" of the child's part
    needs: tuple = ()  # beyond torch and CUDA: "nvml", "psutil", "notebook"


CHECKS: tuple[Check, ...] = (
    Check(
        "gpu",
        "nbbench's gpu check — verdicts, device fields, 8192x8192 matmuls fp32/tf32/bf16 against the "
        "published dense peak, host<->device GB/s pinned against the PCIe link and pageable",
        50,
        "_gpukit_device:run_gpu",
    ),
    Check(
        "overlap",
        "a pinned 512 MiB host->device copy on its own stream beside matmuls on another (overlap ratio)",
        30,
        "_gpukit_device:run_overlap",
    ),
    Check(
        "monitor",
        "the monitor during a GPU-bound matmul loop — kernel-active % while and after, memory "
        "used against a 2 GiB allocation, GPM SM-active, this process's GPU memory in the "
        "per-process table",
        40,
        "_gpukit_device:run_monitor",
        ("nvml",),
    ),
    Check(
        "loader",
        "bench_loader(step='gpu') on a synthetic loader, input-bound and compute-bound — AU + "
        "starvation, and AU against an emulated step of the same length",
        50,
        "_gpukit_pipeline:run_loader",
    ),
    Check(
        "sweep",
        "sweep() with pin_memory off and on and the GPU step (throughput ratio)",
        50,
        "_gpukit_pipeline:run_sweep",
    ),
    Check(
        "checkpoint",
        "nbbench checkpoint DIR --device cuda --size 256M — CUDA tensors saved (torch.save, DCP) "
        "and loaded back to the device",
        50,
        "_gpukit_pipeline:run_checkpoint",
        ("psutil",),
    ),
    Check(
        "ranks",
        "nbbench checkpoint DIR --device cuda --size 64M --ranks N --backend nccl — one rank per "
        "visible GPU (one GPU: one rank), each its own GPU, meeting through NCCL",
        80,
        "_gpukit_pipeline:run_ranks",
        ("psutil",),
    ),
    Check(
        "copies",
        "nbbench copies — host<->device pinned vs pageable GB/s, the GPU-to-GPU matrix (direct vs through host, "
        "peer access, 4-byte latency)",
        30,
        "_gpukit_node:run_copies",
    ),
    Check(
        "health",
        "nbbench gpu --health — NVML under an 8 s matmul load on every GPU: clocks event reasons, PCIe link vs "
        "its maximum, ECC, row remaps, Xid during the run, persistence, MIG, NVLink, fabric manager, power limit",
        30,
        "_gpukit_node:run_health",
        ("nvml",),
    ),
    Check(
        "collectives",
        "nbbench collectives --ranks N --backend nccl -b 8 -e 128M -n 20 -w 5 — nccl-tests' six ops on every "
        "visible GPU: busbw = algbw x factor, 0 wrong, plateau vs the expected link, the transport NCCL used",
        60,
        "_gpukit_node:run_collectives",
    ),
    Check(
        "notebook",
        "a %%iobench monitor cell over a matmul loop executed headless (nbclient) — the saved PNG "
        "and the stored result's GPU utilisation",
        80,
        "_gpukit_pipeline:run_notebook",
        ("nvml", "notebook"),
    ),
)
BY_NAME = {c.name: c for c in CHECKS}


# --------------------------------------------------------------- the child side
class ChildContext:
    """What a check's ``run_*`` gets: ``emit(line)`` (written at once, so a killed child keeps
    its lines), ``guard(name)`` (an exception becomes that line's FAIL), the scratch folder,
    where to keep artifacts, its time limit."""

    def __init__(self, out: str, scratch: str, artifacts: str | None, timeout: float):
        self.out, self.scratch, self.artifacts, self.timeout = out, scratch, artifacts, timeout
        self.repo = str(REPO)

    def emit(self, line: Line) -> None:
        with open(self.out, "a") as f:
            f.write(json.dumps(line.to_dict(), default=str) + "\n")

    @contextmanager
    def guard(self, name: str):
        try:
            yield
        except Exception as exc:  # noqa: BLE001 - one check's failure is its line, the rest go on
            self.emit(Line(name, FAIL, why=one_line(exc)))


def child_main(args) -> int:
    """One check's part, in its own process: ``--run module:function`` (its Check's ``run``)."""
    import importlib

    ctx = ChildContext(args.out, args.dir, args.artifacts, args.timeout)
    mod, fn = args.run.split(":")
    with ctx.guard(args.child):
        getattr(importlib.import_module(mod), fn)(ctx)
    return 0


# -------------------------------------------------------------- the parent side
def cuda_state() -> tuple[bool, str | None, str]:
    """(CUDA usable, why not — nbbench's gpu check's own reason, what torch is here)."""
    try:
        import torch
    except Exception:  # noqa: BLE001 - the check below says why
        torch = None
    if torch is not None and getattr(torch.version, "cuda", None):
        try:
            n = torch.cuda.device_count() if torch.cuda.is_available() else 0
        except Exception:  # noqa: BLE001
            n = 0
        if n:
            return True, None, f"torch {torch.__version__} (CUDA {torch.version.cuda}), {n} CUDA device(s)"
    from nbbench.probes.gpu import check

    res = check(benchmark=False)  # CUDA is not usable, so this makes no CUDA context
    what = f"torch {torch.__version__}" if torch is not None else "no torch"
    return False, res.reason or "torch.cuda.is_available() is False", what


def missing(chk: Check) -> str | None:
    """Why a check cannot run for want of a package (None: it can)."""
    why = []
    if "nvml" in chk.needs:
        from _gpukit_device import nvml_missing_reason

        why.append(nvml_missing_reason())
    if "psutil" in chk.needs and not installed("psutil"):
        why.append("psutil is not installed (pip install psutil): nbbench reads memory and processes through it")
    if "notebook" in chk.needs:
        from _gpukit_pipeline import notebook_missing

        why.append(notebook_missing())
    why = [w for w in why if w]
    return "; ".join(why) or None


def run_child(
    chk: Check, scratch: str, artifacts: str | None, logs: str, timeout: float | None = None
) -> tuple[list[Line], dict]:
    """Run one check in a child process (a session of its own) within ``timeout`` (its own limit)."""
    limit = chk.timeout_s if timeout is None else timeout
    out = os.path.join(logs, f"{chk.name}.jsonl")
    log = os.path.join(logs, f"{chk.name}.log")
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        chk.name,
        "--run",
        chk.run,
        "--out",
        out,
        "--dir",
        scratch,
        "--timeout",
        str(limit),
    ] + (["--artifacts", artifacts] if artifacts else [])
    t0 = time.monotonic()
    timed_out = False
    with open(log, "w") as lf:
        proc = subprocess.Popen(
            cmd, stdout=lf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )
        try:
            proc.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            timed_out = True
        except KeyboardInterrupt:
            _end(proc)
            raise
        if proc.poll() is None:
            _end(proc)
    lines = []
    if os.path.exists(out):
        with open(out) as f:
            lines = [Line(**json.loads(s)) for s in f if s.strip()]
    with open(log, errors="replace") as f:
        rest = [s.strip() for s in f if s.strip()]
    tail = rest[-1] if rest else ""
    if timed_out:
        lines.append(
            Line(
                chk.name,
                FAIL,
                why=f"did not finish within {limit:.0f} s and was ended" + (f" (last output: {tail})" if tail else ""),
            )
        )
    elif proc.returncode != 0:
        lines.append(
            Line(
                chk.name,
                FAIL,
                why=f"the check's process ended with code {proc.returncode}" + (f": {tail}" if tail else ""),
            )
        )
    elif not lines:
        lines.append(Line(chk.name, FAIL, why="the check gave no line" + (f" (last output: {tail})" if tail else "")))
    return lines, {
        "name": chk.name,
        "wall_s": round(time.monotonic() - t0, 1),
        "limit_s": limit,
        "exit_code": proc.returncode,
        "timed_out": timed_out,
        "log": log,
    }


def _end(proc) -> None:
    """End a child's whole session (its DataLoader workers, kernel, launcher): SIGINT (Python's
    cleanup runs: a launcher ends its ranks, nbclient its kernel), then TERM, then KILL."""
    for sig, wait in ((signal.SIGINT, 8.0), (signal.SIGTERM, 4.0), (signal.SIGKILL, 4.0)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def run_checks(
    checks,
    cuda_ok: bool,
    scratch: str,
    artifacts: str | None,
    logs: str,
    budget_s: float = BUDGET_S,
    echo=print,
    lines: list | None = None,
    runs: list | None = None,
    min_run_s: float = MIN_RUN_S,
) -> tuple[list[Line], list[dict]]:
    """Every check's lines, in order (appended to ``lines`` as they come, so an interrupt keeps
    them): SKIP without CUDA or a package, else run in a child within the smaller of its own
    limit and what is left of ``budget_s``."""
    deadline = time.monotonic() + budget_s
    lines = [] if lines is None else lines
    runs = [] if runs is None else runs
    for chk in checks:
        why = missing(chk)
        left = deadline - time.monotonic()
        if not cuda_ok:
            got = [
                Line(
                    chk.name,
                    SKIP,
                    why=f"would run {chk.what} (at most {chk.timeout_s:.0f} s) — cannot: no "
                    "CUDA here" + (f"; it also needs: {why}" if why else ""),
                )
            ]
        elif why:
            got = [Line(chk.name, SKIP, why=f"would run {chk.what} — cannot: {why}")]
        elif left < min(min_run_s, chk.timeout_s):
            got = [
                Line(
                    chk.name,
                    SKIP,
                    why=f"not run: {max(0.0, left):.0f} s of the kit's {budget_s:.0f} s budget "
                    "left (the checks before it took the rest; --budget S gives more)",
                )
            ]
        else:
            limit = min(chk.timeout_s, left)
            print(f"[{chk.name}] running (at most {limit:.0f} s)…", file=sys.stderr, flush=True)
            got, info = run_child(chk, scratch, artifacts, logs, limit)
            print(f"[{chk.name}] {info['wall_s']:.0f} s", file=sys.stderr, flush=True)
            runs.append(info)
        for ln in got:
            echo(ln.text())
        lines += got
    return lines, runs


def select(only: str | None) -> list[Check]:
    if not only:
        return list(CHECKS)
    names = [n.strip() for n in only.split(",") if n.strip()]
    bad = [n for n in names if n not in BY_NAME]
    if bad:
        raise SystemExit(f"gpu_check: unknown check(s) {', '.join(bad)}: choose from {', '.join(BY_NAME)}")
    return [BY_NAME[n] for n in names]


NEED_TEXT = {
    "nvml": "nvidia-ml-py and a driver (NVML)",
    "psutil": "psutil",
    "notebook": "nbformat, nbclient, ipykernel, IPython, matplotlib",
}


def listing(checks) -> str:
    """The checks, what each runs, its limit and what it needs beyond torch and CUDA (``--list``)."""
    rows = [
        f"{c.name:<11} at most {c.timeout_s:>3.0f} s"
        + (f"; needs {', '.join(NEED_TEXT[n] for n in c.needs)}" if c.needs else "")
        + f"\n            {c.what}"
        for c in checks
    ]
    return "\n".join(rows + [f"all together at most {BUDGET_S:.0f} s (--budget)"])


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="checks:\n" + "\n".join(f"  {c.name:<11} {c.what}" for c in CHECKS),
    )
    ap.add_argument("--only", metavar="NAME,…", help=f"run these checks only ({', '.join(BY_NAME)})")
    ap.add_argument(
        "--dry-run",
        dest="dry_run",
        action="store_true",
        help="run nothing: each check says what it would run (what happens anyway without CUDA)",
    )
    ap.add_argument("--list", action="store_true", help="list the checks and exit (imports neither torch nor nbbench)")
    ap.add_argument(
        "--budget",
        type=float,
        default=BUDGET_S,
        metavar="S",
        help=f"seconds for all the checks together (default {BUDGET_S:.0f})",
    )
    ap.add_argument("--json", metavar="FILE", help="also write the lines, the summary and the exit code as JSON")
    ap.add_argument(
        "--dir",
        metavar="DIR",
        help="scratch folder for the checks' files (default: a new temporary folder, removed at the end)",
    )
    ap.add_argument("--artifacts", metavar="DIR", help="keep the executed notebook, its PNG and each check's log here")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--run", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--timeout", type=float, default=60.0, help=argparse.SUPPRESS)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.child:
        return child_main(args)
    checks = select(args.only)
    if args.list:
        print(listing(checks))
        return 0
    t0 = time.monotonic()
    ok, reason, what = cuda_state()
    if args.dry_run and ok:
        ok, reason = False, "--dry-run"
    print(
        f"nbbench GPU validation kit — {len(checks)} check{'s' if len(checks) != 1 else ''} "
        f"({', '.join(c.name for c in checks)}), at most {args.budget:.0f} s in all; here: {what}",
        flush=True,
    )
    if not ok:
        print(
            f"no CUDA here: {reason}" if reason != "--dry-run" else "--dry-run: CUDA is here, nothing runs", flush=True
        )
        print("dry run: nothing is run; each line says what the check would run and why it cannot", flush=True)
    made = args.dir is None
    scratch = args.dir or tempfile.mkdtemp(prefix="nbbench-gpukit-")
    os.makedirs(scratch, exist_ok=True)
    logs = tempfile.mkdtemp(prefix="nbbench-gpukit-logs-")
    env_before = {k: os.environ.get(k) for k in ("NBBENCH_HOME", "PYTHONPATH")}
    os.environ["NBBENCH_HOME"] = tempfile.mkdtemp(prefix="nbbench-gpukit-home-")
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(REPO)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    )  # the children and what they start import this checkout's nbbench
    if args.artifacts:
        os.makedirs(args.artifacts, exist_ok=True)
    lines: list[Line] = []
    runs: list[dict] = []
    interrupted = False
    try:
        run_checks(
            checks,
            ok,
            scratch,
            args.artifacts,
            logs,
            args.budget,
            echo=lambda s: print(s, flush=True),
            lines=lines,
            runs=runs,
        )
    except KeyboardInterrupt:
        interrupted = True
        lines.append(Line("kit", FAIL, why="interrupted (Ctrl-C): the checks after it did not run"))
        print(lines[-1].text(), flush=True)
    finally:
        if args.artifacts:
            for f in os.listdir(logs):
                shutil.copy(os.path.join(logs, f), args.artifacts)
        shutil.rmtree(logs, ignore_errors=True)
        shutil.rmtree(os.environ["NBBENCH_HOME"], ignore_errors=True)
        for k, v in env_before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        if made:
            shutil.rmtree(scratch, ignore_errors=True)
    counts, code = summary(lines)
    wall = time.monotonic() - t0
    print(f"summary: {summary_text(counts)} ({len(lines)} lines in {wall:.0f} s); exit {code}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "kit": "bench/gpu_check.py",
                    "cuda": ok,
                    "reason": reason,
                    "torch": what,
                    "checks": [c.name for c in checks],
                    "budget_s": args.budget,
                    "runs": runs,
                    "lines": [ln.to_dict() for ln in lines],
                    "summary": counts,
                    "exit_code": code,
                    "wall_s": round(wall, 1),
                    "interrupted": interrupted,
                },
                f,
                indent=2,
                default=str,
            )
    return code


if __name__ == "__main__":
    sys.exit(main())
