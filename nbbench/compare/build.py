"""Building a comparison: :func:`compare` resolves the references to runs (:mod:`.select`), groups
them by kind, and says where the runs were not measured alike (parameters, cache mode, target,
environment, verdicts, a run that did not end) as the groups' warnings and notes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from ..limits import limits_difference
from ..results import ProbeError, Result
from ..store import default_store
from .gate import parse_pct
from .likeness import HIDDEN_PARAMS, MODE_LABELS, TARGET_LABELS
from .model import Comparison, ComparisonGroup, _num
from .select import pools_by_kind, resolve
from .sizes import size_notes

__all__ = ["compare"]


def _fmt_param(v) -> str:
    if isinstance(v, (dict, list)):
        return json.dumps(v, sort_keys=True, default=str)
    return str(v)


def _env_diff(runs: list[Result], store) -> list[str]:
    ids = [r.env_id for r in runs]
    if len(set(ids)) <= 1 or store is None:
        return []
    envs = []
    for i in ids:
        try:
            envs.append(store.environment(i) if i else {})
        except KeyError:
            envs.append({})
    keys = (
        "host",
        "container",
        "kernel",
        "os",
        "cpu_model",
        "cpus",
        "memory",
        "python",
        "torch",
        "gpus",
        "packages_sha256",
    )
    differ = [k for k in keys if len({json.dumps(e.get(k), sort_keys=True, default=str) for e in envs}) > 1]

    limits = [w for e in envs[1:] for w in limits_difference(envs[0].get("limits"), e.get("limits"))]
    if not differ and not limits:
        return []
    out = [f"{w}: the container's limits differ" for w in dict.fromkeys(limits)]
    if differ:
        out.append(
            f"the runs come from different environments ({', '.join(differ)} differ): "
            "that is what this comparison measures"
        )
    return out


def compare(
    refs: Iterable[Any], store=None, metrics: Sequence[str] | None = None, fail_if_worse: float | str | None = None
) -> Comparison:
    """Compare runs like for like; the first reference is the baseline.

    ``refs``: run ids, labels (all runs with that label: per kind the latest, pooled with
    the label's other runs of the same settings as repeats), Result objects or lists of
    them (one reference each).  ``metrics``: only these metric keys.  ``fail_if_worse``:
    run the gate (:meth:`Comparison.gate`) with this percentage.
    """
    refs = list(refs)
    if len(refs) < 2:
        raise ProbeError("compare needs two or more runs or labels, e.g. compare baseline 12")
    if fail_if_worse is not None:
        parse_pct(fail_if_worse)  # a malformed percentage is refused before any work
    if any(not isinstance(r, (Result, list, tuple)) for r in refs) and store is None:
        store = default_store()
    resolved = resolve(refs, store)
    cmp = Comparison(refs=[n for n, _ in resolved], groups=[])
    per_ref: list[dict[str, list[Result]]] = []
    for name, runs in resolved:
        pools, notes = pools_by_kind(name, runs)
        cmp.notes += notes
        per_ref.append(pools)
    for kind in dict.fromkeys(k for d in per_ref for k in d):  # every kind, in order of first appearance
        idx = [i for i, d in enumerate(per_ref) if kind in d]
        if len(idx) < 2:
            continue
        names = [cmp.refs[i] for i in idx]
        pools = [per_ref[i][kind] for i in idx]
        runs = [p[-1] for p in pools]
        keys = dict.fromkeys(
            k for p in pools for r in p for k, v in r.metrics.items() if _num(v) and (metrics is None or k in metrics)
        )
        g = ComparisonGroup(kind=kind, names=names, runs=runs, metrics=list(keys), pools=pools)
        missing = [cmp.refs[i] for i in range(len(per_ref)) if i not in idx]
        if missing:
            g.notes.append(f"{', '.join(missing)} {'has' if len(missing) == 1 else 'have'} no {kind} run")
        _like_for_like(g)
        g.notes += size_notes(g)  # a figure per size (collectives' busbw): from which size on it changed
        g.notes += _env_diff(runs, store)
        cmp.groups.append(g)
    if not cmp.groups:
        desc = "; ".join(f"{n}: {', '.join(sorted(d)) or 'nothing'}" for n, d in zip(cmp.refs, per_ref))
        raise ProbeError(
            f"nothing to compare like for like — the runs are of different kinds ({desc}); "
            "compare runs of the same probe"
        )
    if fail_if_worse is not None:
        cmp.gate(fail_if_worse)
    return cmp


def _like_for_like(g: ComparisonGroup) -> None:
    pkeys = dict.fromkeys(k for r in g.runs for k in r.params)
    diffs = []
    labelled = [k for k in MODE_LABELS if all(k in r.labels for r in g.runs)]
    for k in pkeys:
        if k in MODE_LABELS and labelled:
            continue  # e.g. dd's direct=None/False: the cache-mode label below says what it meant
        vals = [_fmt_param(r.params.get(k)) for r in g.runs]
        if len(set(vals)) > 1:
            shown = ", ".join(f"{v} ({n})" for v, n in zip(vals, g.names))
            if k in HIDDEN_PARAMS:
                g.notes.append(f"{k}: {shown}")
            else:
                diffs.append(f"{k} {shown}")
    if diffs:
        g.warnings.append(
            "parameters differ — "
            + "; ".join(diffs)
            + ": the deltas mix the effect of the settings with that of the environment; "
            "rerun with the same parameters for a like-for-like figure"
        )
    for k in MODE_LABELS:
        vals = [str(r.labels.get(k, "—")) for r in g.runs]
        if len(set(vals)) > 1:
            shown = ", ".join(f"{v} ({n})" for v, n in zip(vals, g.names))
            what = "cache mode" if k == "cache" else k
            if k not in ("cache", "direct"):
                why = "the figures were taken differently"
            elif "memory" in vals:
                why = "a RAM-backed directory (cache=memory) answers at memory speed, not storage speed"
            elif any("warm" in v for v in vals):
                why = "a warm page cache answers at memory speed, not storage speed; compare direct with direct"
            else:
                why = (
                    "direct and buffered I/O take different paths through the kernel (page cache, read-ahead, "
                    "writeback); compare direct with direct"
                )
            g.warnings.append(f"{what} differs — {shown}: {why}")
    for k in TARGET_LABELS:
        vals = [str(r.labels.get(k, "—")) for r in g.runs]
        if len(set(vals)) > 1:
            g.notes.append(f"{k}: " + ", ".join(f"{v} ({n})" for v, n in zip(vals, g.names)))
    verdicts = [r.verdict or "none" for r in g.runs]  # what each run's checks found (none: no checks)
    if len(set(verdicts)) > 1:
        g.notes.append(
            "verdicts differ — "
            + ", ".join(f"{v} ({n})" for v, n in zip(verdicts, g.names))
            + ": what the runs' checks found changed"
        )
    for n, r in zip(g.names, g.runs):
        if r.status != "ok":
            g.warnings.append(
                f"{n} (run {r.run_id}) is {r.status}"
                + (f": {r.reason}" if r.reason else "")
                + " — its figures cover only part of the run"
            )
