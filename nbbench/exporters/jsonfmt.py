"""The report as one JSON document (data, not presentation)."""

from __future__ import annotations

import json

from ..version import __version__

__all__ = ["export", "to_dict"]


def to_dict(data) -> dict:
    scope = data.doctor_scope()
    return {
        "format": "nbbench-report",
        "version": 1,
        "nbbench": __version__,
        "title": data.title,
        "created_at": data.created_at,
        "created": data.created_iso,
        "summary": data.summary(),
        "environment": data.environment,
        "environments": data.environments,
        "doctor": data.doctor.to_dict() if data.doctor is not None else None,
        # the doctor's checks that bear on these results: their groups and counts
        "doctor_scope": None
        if scope is None
        else {
            "groups": scope.groups,
            "kinds": scope.kinds,
            "counts": scope.counts(),
            "verdict": scope.verdict,
            "checks": [c.name for c in scope.checks],
        },
        "results": [r.to_dict() for r in data.results],
        "comparisons": [c.to_dict() for c in data.comparisons],
        "fio": data.fio(),
        "notes": data.notes,
    }


def _finite(o):
    """NaN / inf are not JSON: write them as null."""
    if isinstance(o, float) and (o != o or o in (float("inf"), float("-inf"))):
        return None
    if isinstance(o, dict):
        return {k: _finite(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_finite(v) for v in o]
    return o


def export(data, path=None, files=None) -> str:
    return json.dumps(_finite(to_dict(data)), indent=2, default=str, allow_nan=False) + "\n"
