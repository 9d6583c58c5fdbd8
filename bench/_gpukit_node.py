"""The GPU validation kit's node checks: collectives (nccl-tests' ops on every visible GPU through NCCL),
copies (host<->device pageable vs pinned, the GPU-to-GPU matrix) and the health read under load.

Each runs the nbbench command a user would (``python -m nbbench … --json``) and turns its result into
lines with what a reviewer needs to confirm each figure on the machine: the plateau busbw beside the
expected link and nccl-tests' own command to run for comparison, the transport NCCL said it used, the
pinned / pageable rates beside the PCIe link, each health finding beside the ``nvidia-smi`` query that
shows the same.  The judging is pure (``judge_*``), so it is tested without a GPU.
"""

from __future__ import annotations

from _gpukit_lines import FAIL, GB, NA, PASS, Line
from _gpukit_pipeline import cli

__all__ = ["run_collectives", "run_copies", "run_health", "judge_collectives", "judge_copies", "judge_health"]

FACTORS = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "alltoall": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "sendrecv": lambda n: 1.0,
}


def _gpus() -> int:
    import torch

    return torch.cuda.device_count()


def _failed(name, rc, data, err) -> Line | None:
    if data is None or data.get("status") == "failed":
        why = (data or {}).get("reason") or (err or "").strip().splitlines()[-1:] or [f"exit {rc}"]
        return Line(name, FAIL, why=f"exit {rc}: {why if isinstance(why, str) else why[0]}")
    return None


def judge_collectives(rc: int, data: dict | None, n: int, err: str = "") -> list[Line]:
    bad = _failed("collectives", rc, data, err)
    if bad:
        return [bad]
    out = []
    rows = [r for r in data["samples"]["rows"] if r.get("busbw_bytes_per_s")]
    off = [r for r in rows if abs(r["busbw_bytes_per_s"] / r["algbw_bytes_per_s"] - FACTORS[r["op"]](n)) > 1e-9]
    out.append(
        Line(
            "collectives.factors",
            FAIL if off or not rows else PASS,
            f"busbw / algbw on {len(rows)} rows",
            "all_reduce 2(n-1)/n, all_gather/reduce_scatter/alltoall (n-1)/n, broadcast/sendrecv 1 (nccl-tests)",
            f"{len(off)} rows off" if off else f"n = {n}",
        )
    )
    wrong = data["metrics"].get("wrong_count")
    out.append(
        Line(
            "collectives.check",
            PASS if wrong == 0 else FAIL,
            f"{wrong} wrong elements",
            "0 (every result checked on every rank, -c 1)",
        )
    )
    exp = data["extra"].get("expected_link") or {}
    t = data["extra"].get("transport") or {}
    env = data["extra"].get("nccl_env") or {}
    for v in data["extra"].get("verdicts") or []:
        if not v["check"].endswith("busbw vs link"):
            continue
        op = v["check"].split()[0]
        bw = data["metrics"].get(f"{op}_busbw_bytes_per_s")
        status = NA if v["status"] is None or n < 2 else (PASS if v["status"] == "ok" else FAIL)
        confirm = f"confirm: {op}_perf -b 8 -e 128M -f 2 -g {n} (nccl-tests)"
        fig = f"plateau {bw / GB:.1f} GB/s busbw" if bw else "no busbw"
        out.append(
            Line(
                f"collectives.{op}",
                status,
                fig,
                f">= 60 % of {exp.get('name')}" if exp.get("bytes_per_s") else "",
                f"{v['message']}; {confirm}" + ("; one GPU: busbw has no link to cross" if n < 2 else ""),
            )
        )
    out.append(
        Line(
            "collectives.transport",
            NA if not t.get("main") else PASS,
            f"NCCL used {t.get('main')}" if t.get("main") else "transport not known",
            "",
            f"channels {t.get('transports')}; NCCL vars {env or 'none'}; confirm: NCCL_DEBUG=INFO all_reduce_perf",
        )
    )
    return out


def run_collectives(ctx) -> None:
    with ctx.guard("collectives"):
        n = _gpus()
        argv = ["collectives", "--ranks", str(n), "--backend", "nccl", "-b", "8", "-e", "128M", "-n", "20", "-w", "5"]
        rc, data, err = cli(ctx, argv + ["--json", "--no-save"], ctx.timeout - 15)
        for ln in judge_collectives(rc, data, n, err):
            ctx.emit(ln)


def judge_copies(rc: int, data: dict | None, err: str = "") -> list[Line]:
    bad = _failed("copies", rc, data, err)
    if bad:
        return [bad]
    m = data["metrics"]
    out = []
    for way in ("h2d", "d2h"):
        pin, page = m.get(f"{way}_pinned_bytes_per_s"), m.get(f"{way}_pageable_bytes_per_s")
        if pin is None or page is None:
            out.append(Line(f"copies.{way}", FAIL, why="no figure"))
            continue
        out.append(
            Line(
                f"copies.{way}",
                PASS if pin >= page * 0.95 else FAIL,
                f"pinned {pin / GB:.1f} GB/s, pageable {page / GB:.1f} GB/s",
                "pinned >= pageable (CUDA's bandwidthTest --memory=pinned vs pageable)",
                "confirm: bandwidthTest --memory=pinned and --memory=pageable",
            )
        )
    mx = data["extra"].get("matrix")
    if not mx:
        out.append(Line("copies.matrix", NA, why="one GPU: no GPU-to-GPU matrix"))
        return out
    n = len(mx["bw"])
    worse = [
        (i, j)
        for i in range(n)
        for j in range(n)
        if i != j
        and mx["peer"][i][j]
        and mx["bw"][i][j]
        and mx["bw_host"][i][j]
        and mx["bw"][i][j] < mx["bw_host"][i][j]
    ]
    lo = data["metrics"].get("p2p_min_bytes_per_s")
    out.append(
        Line(
            "copies.matrix",
            FAIL if worse else PASS,
            f"{n}x{n}, slowest direct pair {lo / GB:.1f} GB/s" if lo else f"{n}x{n}",
            "a peer pair's direct copy at least as fast as through host memory",
            (f"slower pairs {worse}; " if worse else "") + "confirm: p2pBandwidthLatencyTest",
        )
    )
    return out


def run_copies(ctx) -> None:
    with ctx.guard("copies"):
        rc, data, err = cli(ctx, ["copies", "--json", "--no-save"], ctx.timeout - 10)
        for ln in judge_copies(rc, data, err):
            ctx.emit(ln)


def judge_health(rc: int, data: dict | None, err: str = "") -> list[Line]:
    if data is None:
        return [Line("health", FAIL, why=f"exit {rc}: {(err or '').strip()[-300:]}")]
    h = data["extra"].get("health") or {}
    if not h.get("loaded"):
        return [Line("health", FAIL, why=f"no reading under load: {h.get('load_error') or h.get('findings')}")]
    out = []
    by_gpu: dict = {}
    for f in h["findings"]:
        by_gpu.setdefault(f.get("gpu"), []).append(f)
    for gpu, fs in by_gpu.items():
        bad = [f for f in fs if f["status"] in ("warn", "fail")]
        link = next((f["message"] for f in fs if f["check"] == "PCIe link under load"), "PCIe not read")
        name = f"health.gpu{gpu}" if gpu is not None else "health.node"
        out.append(
            Line(
                name,
                FAIL if any(f["status"] == "fail" for f in bad) else PASS,
                link if gpu is not None else f"{len(fs)} findings",
                "no fail finding",
                "; ".join(f"{f['status']}: {f['check']}: {f['message']}" for f in bad)
                or "every finding ok" + "; confirm: nvidia-smi -q -d PCIE,PERFORMANCE,ECC,ROW_REMAPPER under load",
            )
        )
    return out


def run_health(ctx) -> None:
    with ctx.guard("health"):
        argv = ["gpu", "--health", "--no-bench", "--load-seconds", "8", "--json", "--no-save"]
        rc, data, err = cli(ctx, argv, ctx.timeout - 5)
        for ln in judge_health(rc, data, err):
            ctx.emit(ln)
