"""Which stored runs a comparison's references name, and which of them are pooled as repeats.

A reference is a run id (that run), a label (every run with it), a
:class:`~nbbench.results.Result`, or a list of Results (one reference).  For each kind, a
reference's latest run stands for it; the reference's other runs of that kind *with the
same settings* — the same parameters (path included), the same cache mode / engine /
mode labels, and a status of ok — are pooled with it as repeats, so five separate
``dd --label A`` runs compare as one set of five.  Runs of that kind with other settings
are left out, with a note that says so (give a run id to compare one of them).

Layer: core (inside :mod:`nbbench.compare`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..results import ProbeError, Result, advice
from ..store import default_store
from .likeness import MODE_LABELS

__all__ = ["resolve", "pools_by_kind", "same_settings"]


def _name_of(results: Sequence[Result], i: int) -> str:
    labels = {str(r.labels.get("label")) for r in results if r.labels.get("label")}
    if len(labels) == 1 and all(r.labels.get("label") for r in results):
        return labels.pop()
    ids = [f"#{r.run_id}" for r in results if r.run_id is not None]
    return "+".join(ids) if ids and len(ids) == len(results) else f"run {i + 1}"


def resolve(refs: Sequence[Any], store=None) -> list[tuple[str, list[Result]]]:
    """Each reference (id, label, Result or list of Results) with its name and the runs it names."""
    out = []
    for i, ref in enumerate(refs):
        if isinstance(ref, Result):
            out.append((_name_of([ref], i), [ref]))
            continue
        if isinstance(ref, (list, tuple)) and ref and all(isinstance(r, Result) for r in ref):
            out.append((_name_of(list(ref), i), list(ref)))
            continue
        if store is None:
            store = default_store()
        try:
            runs = store.find(ref)
        except KeyError:
            raise ProbeError(
                f"no stored run has id or label {str(ref)!r}", advice=[advice.entry("see {command}", "history")]
            ) from None
        name = f"#{ref}" if isinstance(ref, int) or str(ref).isdigit() else str(ref)
        out.append((name, runs))
    names = [n for n, _ in out]
    if len(set(names)) < len(names):  # the same label twice: keep them apart
        seen: dict[str, int] = {}
        fixed = []
        for n, runs in out:
            seen[n] = seen.get(n, 0) + 1
            fixed.append((n if seen[n] == 1 else f"{n} ({seen[n]})", runs))
        out = fixed
    return out


def _key(r: Result) -> str:
    params = {k: v for k, v in r.params.items() if k != "label"}
    labels = {k: str(r.labels.get(k)) for k in MODE_LABELS}
    return json.dumps([params, labels], sort_keys=True, default=str)


def same_settings(a: Result, b: Result) -> bool:
    """Measured the same way: the same parameters (path included) and the same mode labels."""
    return _key(a) == _key(b)


def _ids(rs: Sequence[Result]) -> str:
    ids = [r.run_id for r in rs if r.run_id is not None]
    return ", ".join(map(str, ids)) if ids else f"{len(rs)} runs"


def pools_by_kind(name: str, runs: Sequence[Result]) -> tuple[dict[str, list[Result]], list[str]]:
    """Per kind: the runs pooled as repeats (the latest last; it stands for the reference), and
    the notes saying what was pooled and what was left out."""
    latest: dict[str, Result] = {}
    for r in runs:  # the latest run that ended well stands for the reference (a failed or stopped one only alone)
        cur = latest.get(r.kind)
        better_status = cur is not None and (r.status == "ok") != (cur.status == "ok")
        if cur is None or (r.status == "ok" if better_status else (r.run_id or 0) >= (cur.run_id or 0)):
            latest[r.kind] = r
    pools: dict[str, list[Result]] = {}
    notes: list[str] = []
    for kind, rep in latest.items():
        same = [r for r in runs if r.kind == kind and (r is rep or (same_settings(r, rep) and r.status == "ok"))]
        same.sort(key=lambda r: r.run_id or 0)
        other = [r for r in runs if r.kind == kind and not any(r is s for s in same)]
        pools[kind] = same
        if len(same) > 1:
            notes.append(
                f"{name}: {len(same)} {kind} runs with the same settings pooled as repeats (runs {_ids(same)})"
            )
        if other:
            notes.append(
                f"{name} also names {len(other)} {kind} run{'s' if len(other) > 1 else ''} with other "
                f"settings or a partial status (runs {_ids(other)}), left out — give a run id to compare one"
            )
    return pools, notes
