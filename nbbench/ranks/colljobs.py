"""The collectives' rank part: :class:`CollectivesJob`.

Every rank runs the same ladder on the process group the rank runner joined (NCCL on GPUs, one
GPU per rank by its local rank; gloo on CPU), checks its own results, and sends its per-call
times; rank 0 combines them into nccl-tests' table (:mod:`nbbench.probes.gpunode.table`), reads the
expected link (:mod:`nbbench.probes.gpunode.links`) and judges the plateau against it.  With NCCL the
rank asks NCCL for its INFO lines (unless ``NCCL_DEBUG`` is already set) and parses the transport
it used (:mod:`nbbench.probes.gpunode.nccl`).
"""

from __future__ import annotations

import os

from ..probes.gpunode.busbw import check_exact
from ..probes.gpunode.collectives import missing_forms, run_collectives
from ..probes.gpunode.links import expected_link, link_verdict, read_links
from ..probes.gpunode.nccl import capture, nccl_env, parse_transport, read_captured
from ..probes.gpunode.table import combine, metrics, plateau
from ..results import ProbeError, Result, result_class
from .rankjob import RankJob

# The probes are imported inside the jobs' methods: a rank, which unpickles its job, loads only
# the probe that job runs.

__all__ = ["CollectivesJob"]


class CollectivesJob(RankJob):
    """nccl-tests' ops over a size ladder on every rank (see the module doc)."""

    kind = "collectives"
    phases = []

    def __init__(self, params):
        super().__init__(params)
        self._capture: tuple[str | None, list[str]] = (None, [])
        self.local_rank = 0

    def bind(self, env) -> None:
        super().bind(env)
        self.local_rank = env.local_rank
        if self.params.get("backend") == "nccl":
            self._capture = capture()  # before the communicator is made (lazily, at the first collective)

    def monitor_path(self) -> str | None:
        return None

    def _exact(self, nranks: int) -> None:

        p = self.params
        why = check_exact(p.get("dtype", "float"), p.get("redop", "sum"), nranks) if p.get("check", 1) else None
        if why:
            raise ProbeError(why)

    def local_checks(self, nranks: int) -> None:
        """In the launching process, before any rank starts: the check can be exact; NCCL needs a GPU per
        local rank (one line each)."""
        self._exact(nranks)
        if self.params.get("backend") != "nccl":
            return
        import torch

        n = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if n == 0:
            raise ProbeError("no GPU visible: --backend nccl needs a GPU per rank (use --backend gloo on CPU)")
        if n < nranks:
            raise ProbeError(f"--ranks {nranks} --backend nccl needs {nranks} GPUs on this host: {n} visible")

    def preflight(self, env) -> None:
        self._exact(env.world_size)
        if self.params.get("backend") == "nccl":
            import torch

            if not torch.cuda.is_available():
                raise ProbeError("no GPU visible: NCCL needs a GPU per rank (use --backend gloo on CPU)")
            if env.local_rank >= torch.cuda.device_count():
                raise ProbeError(
                    f"local rank {env.local_rank} has no GPU of its own ({torch.cuda.device_count()} visible)"
                )

    def _device(self) -> str:
        if self.params.get("backend") == "nccl":
            import torch

            torch.cuda.set_device(self.local_rank)
            return f"cuda:{self.local_rank}"
        return "cpu"

    def run(self, progress, cancel) -> Result:

        p = self.params
        res = result_class(self.kind)(params=dict(p))
        corrupt = None
        if p.get("inject_wrong") is not None and int(p["inject_wrong"]) == self.rank:

            def corrupt(op, out):  # a test of the check: one element of this rank's result made wrong
                out.view(-1)[0] += 1

        rows, stopped = run_collectives(
            ops=list(p["ops"]),
            sizes=list(p["sizes"]),
            iters=int(p["iters"]),
            warmup=int(p["warmup"]),
            check=bool(p["check"]),
            redop=p["redop"],
            dtype=p["dtype"],
            device=self._device(),
            rank=self.rank,
            world=self.world_size,
            progress=progress,
            cancel=cancel,
            corrupt=corrupt,
        )
        path, ours = self._capture
        lines = read_captured(path, ours=ours)
        res.samples["rows"] = rows
        res.extra["nccl_env"] = nccl_env(ours=ours)
        res.extra["transport"] = parse_transport(lines) if p.get("backend") == "nccl" else None
        res.extra["nccl_debug_captured"] = bool(path)
        return res.finish("interrupted" if stopped else "ok", "stopped before the last size" if stopped else None)

    def finish(self, res: Result, records: list[dict]) -> None:

        recs = sorted(records, key=lambda r: r["rank"])
        per_rank = [((r.get("result") or {}).get("samples") or {}).get("rows") or [] for r in recs]
        world = len(recs)
        rows = combine(per_rank, world)
        res.samples["rows"] = rows
        res.metrics.update(metrics(rows))
        backend = self.params.get("backend", "gloo")
        first = (recs[0].get("result") or {}).get("extra") or {} if recs else {}
        res.extra["nccl_env"] = first.get("nccl_env") or {}
        transports = [((r.get("result") or {}).get("extra") or {}).get("transport") for r in recs]
        res.extra["transport"] = _merge_transports([t for t in transports if t]) if backend == "nccl" else None
        links = read_links() if backend == "nccl" else {}
        hosts = res.labels.get("hosts") or 1
        exp = expected_link(links, hosts, backend)
        res.extra["links"] = links
        res.extra["expected_link"] = exp
        verdicts = []
        if backend == "nccl":
            for op in dict.fromkeys(r["op"] for r in rows):
                pl = plateau(rows, op)
                verdicts.append(link_verdict(op, pl, exp, links, res.extra["transport"], res.extra["nccl_env"]))
        else:  # one line: no GPU link to judge the figures against
            verdicts.append(link_verdict("all_reduce", plateau(rows, "all_reduce"), None, links, backend=backend))
        wrong = res.metrics.get("wrong_count")
        if wrong is not None:
            bad = sorted({rk for r in rows for rk in r.get("wrong_ranks") or []})
            verdicts.append(
                {
                    "check": "correctness",
                    "status": "fail" if wrong else "ok",
                    "message": (
                        f"{wrong} wrong element(s) on rank(s) {', '.join(map(str, bad))}: the results differ from what "
                        "the operation must give"
                        if wrong
                        else f"every result checked on every rank ({world}): 0 wrong"
                    ),
                }
            )
        res.extra["verdicts"] = verdicts

        res.extra["missing_forms"] = missing_forms(self.params.get("ops") or [])
        res.labels["backend"] = backend
        if self.params.get("ladder"):
            res.labels["sizes"] = self.params["ladder"]
        res.labels["device"] = "one GPU per rank (its local rank)" if backend == "nccl" else "CPU"
        if self.params.get("inject_wrong") is not None:
            res.labels["injected"] = f"a wrong value was put in rank {self.params['inject_wrong']}'s results (a test)"
        res.extra["answer"] = None  # the result words its own answer
        if os.environ.get("SLURM_JOB_ID"):
            res.labels["slurm_job"] = os.environ["SLURM_JOB_ID"]


def _merge_transports(ts: list[dict]) -> dict | None:
    if not ts:
        return None
    out = {"transports": {}, "detail": {}, "nvls": False, "network": None}
    for t in ts:
        for k in ("transports", "detail"):
            for name, n in (t.get(k) or {}).items():
                out[k][name] = out[k].get(name, 0) + n
        out["nvls"] = out["nvls"] or bool(t.get("nvls"))
        out["network"] = out["network"] or t.get("network")
    out["main"] = max(out["transports"], key=out["transports"].get) if out["transports"] else None
    return out
