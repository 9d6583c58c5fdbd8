"""What a report says first: one paragraph (what was compared, the headline deltas with
their units, the answers of results nothing was compared with) and the doctor's findings
scoped to the results shown — a storage report counts the storage checks, not the GPU
stack's.  Plain text; the exporters escape and place it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..compare import caveats, chart_metrics
from ..results import worst_verdict
from ..stats import INCONCLUSIVE_ONE_RUN
from ..units import format_change, format_metric, metric_label, shorten_middle

__all__ = ["DOCTOR_SCOPE", "DoctorScope", "doctor_groups", "doctor_scope", "summary"]

_STORAGE = ("storage", "block device", "kernel")
_PIPELINE = ("storage", "block device", "memory", "limits", "cpu")

#: the doctor's check groups (``Check.group``) that bear on a result of each kind; a kind not
#: named here counts every group but ``exposure`` (who can reach the machine bears on no figure)
DOCTOR_SCOPE: dict[str, tuple[str, ...]] = {
    "dd": _STORAGE,
    "io": _STORAGE,
    "randread": _STORAGE,
    "disk": _STORAGE,
    "files": _STORAGE + ("limits",),
    "shards": _STORAGE + ("limits",),
    "checkpoint": _STORAGE + ("memory",),
    "loader": _PIPELINE,
    "sweep": _PIPELINE,
    "feed": _PIPELINE,
    "monitor": ("storage", "block device", "memory", "cpu"),
    "gpu": ("gpu",),
}
_ALL_BUT_EXPOSURE = ("memory", "limits", "storage", "block device", "kernel", "cpu", "gpu")

# how many runs and metrics one paragraph names before saying "more below"
_MAX_DELTA_RUNS = 3
_MAX_DELTA_METRICS = 3
_MAX_ANSWERS = 3
_PATH_WIDTH = 48


def doctor_groups(r) -> tuple[str, ...]:
    """The doctor's check groups that bear on result ``r``: its kind's (:data:`DOCTOR_SCOPE`),
    plus ``gpu`` where the run used one (a loader or sweep with a real training step, a
    checkpoint on CUDA, a monitor that sampled a GPU)."""
    groups = DOCTOR_SCOPE.get(r.kind, _ALL_BUT_EXPOSURE)
    step = r.params.get("step")
    uses_gpu = (
        (r.kind in ("loader", "sweep") and step not in (None, "none") and not str(step).startswith("emulate"))
        or (r.kind == "checkpoint" and str(r.params.get("device") or "").startswith("cuda"))
        or (r.kind == "monitor" and r.metrics.get("gpu_util_mean_pct") is not None)
    )
    return groups + ("gpu",) * (uses_gpu and "gpu" not in groups)


@dataclass
class DoctorScope:
    """The doctor's checks split by whether they bear on the report's results."""

    groups: list[str]  # the check groups that bear on them, in the doctor's order
    kinds: list[str]  # the result kinds they were chosen for
    checks: list = field(default_factory=list)  # the checks in those groups
    others: list = field(default_factory=list)  # the rest (in the full table only)

    def counts(self) -> dict[str, int]:
        """{"fail": 0, "warn": 3, "ok": 8, "n/a": 0} over :attr:`checks`."""
        return {s: sum(c.status == s for c in self.checks) for s in ("fail", "warn", "ok", "n/a")}

    @property
    def verdict(self) -> str | None:
        return worst_verdict(c.status for c in self.checks)

    def what(self) -> str:
        """'the 11 checks that bear on dd results (storage, block device, kernel)'."""
        kinds = _and(self.kinds) if self.kinds else "these"
        n = len(self.checks)
        return (
            f"the {n} check{'s' if n != 1 else ''} that bear{'s' if n == 1 else ''} on {kinds} results "
            f"({', '.join(self.groups)})"
        )


def doctor_scope(doc, results) -> DoctorScope | None:
    """``doc``'s checks split into those that bear on ``results`` and the others (None without
    a doctor).  A report with no results keeps every check in scope."""
    if doc is None:
        return None
    kinds = list(dict.fromkeys(r.kind for r in results if r.kind != "doctor"))
    wanted: set[str] = set()
    for r in results:
        wanted |= set(_ALL_BUT_EXPOSURE + ("exposure",) if r.kind == "doctor" else doctor_groups(r))
    checks = doc.checks
    if not results:
        wanted = {c.group for c in checks}
    order = list(dict.fromkeys(c.group for c in checks if c.group in wanted))
    return DoctorScope(
        groups=order,
        kinds=kinds,
        checks=[c for c in checks if c.group in wanted],
        others=[c for c in checks if c.group not in wanted],
    )


def _and(items) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _counted(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {s}" for s, n in counts.items() if n) or "none"


def _what(data) -> str:
    """'4 dd results from vm, on /tmp/…/disk and /dev/shm/x' — kinds, hosts, paths."""
    results = [r for r in data.results if r.kind != "doctor"]
    if not results:
        return "No stored results were selected."
    kinds: dict[str, int] = {}
    for r in results:
        kinds[r.kind] = kinds.get(r.kind, 0) + 1
    n = len(results)
    if len(kinds) == 1:
        text = f"{n} {results[0].kind} result{'s' if n != 1 else ''}"
    else:
        text = f"{n} results ({_and(f'{c} {k}' for k, c in kinds.items())})"
    here = data.environment or {}
    hosts = list(
        dict.fromkeys(
            str((data.environments.get(r.env_id) or {}).get("host") or here.get("host") or "?") for r in results
        )
    )
    text += f" from {hosts[0]}" if len(hosts) == 1 else f" from {len(hosts)} hosts ({_and(hosts)})"
    paths = list(dict.fromkeys(str(r.params["path"]) for r in results if r.params.get("path")))
    if paths:
        shown = [shorten_middle(p, _PATH_WIDTH) for p in paths[:3]]
        more = f" and {len(paths) - 3} more" if len(paths) > 3 else ""
        text += f", on {_and(shown)}{more}" if not more else f", on {', '.join(shown)}{more}"
    return text + "."


def _delta(g, m: str, i: int) -> str | None:
    """One headline delta, the change first when it is beyond the noise: '+52.3 % write (95 % CI
    +40.1 … +63.2 %; 420 MB/s vs 400 MB/s)'; else 'no significant change in write (…)' or 'write
    inconclusive at +5.00 % (…)' — the words the comparison's table uses, never a bare %."""
    ri = g.interval(m, i)
    if ri is None or ri.ratio is None:
        return None
    name = metric_label(m)
    several = g.n_runs(i) > 1 or g.n_runs(0) > 1  # the figures are medians; a change over runs is not
    figs = ("medians " if several else "") + f"{format_metric(m, g.value(m, i))} vs {format_metric(m, g.value(m, 0))}"
    if ri.method == "exact" and ri.ratio == 1:
        return f"no change in {name} ({figs})"
    if ri.inconclusive:
        return f"{name} inconclusive at {format_change(ri.ratio, higher_is_better=ri.higher_is_better)} ({figs})"
    if not ri.significant:
        return f"no significant change in {name} ({figs})"
    change = format_change(ri.ratio, higher_is_better=ri.higher_is_better)
    if ri.method == "exact":
        return f"{change} {name} ({figs})"
    ci = format_change(ri.ratio, ri.low, ri.high, ri.higher_is_better, ri.level)[len(change) :].strip(" ()")
    star = ", from the windows of one run each" if ri.method == "windows" else ""
    return f"{change} {name} ({ci}{star}; {figs})"


def _runs_each(g, i: int) -> str:
    a, b = g.n_runs(i), g.n_runs(0)
    if a == b:
        return "one run each" if a == 1 else f"{a} runs each"
    return f"{a} runs against {b}"


def _deltas(g) -> str:
    """'+5.00 % write (95 % CI +3.10 … +6.90 %; 420 MB/s vs 400 MB/s), no significant change in read
    (…) for B against A (dd, 5 runs each). Caveat: cache mode differs: …': the figures first, each
    change with its interval or said to be within the noise, then what makes them unlike for like."""
    metrics = chart_metrics(g, max_metrics=_MAX_DELTA_METRICS)
    parts, undecided = [], False
    for i in range(1, min(len(g.runs), _MAX_DELTA_RUNS + 1)):
        figs = [t for t in (_delta(g, m, i) for m in metrics) if t]
        undecided |= any(getattr(g.interval(m, i), "inconclusive", False) for m in metrics)
        if figs:
            parts.append(f"{', '.join(figs)} for {g.names[i]} against {g.names[0]} ({g.kind}, {_runs_each(g, i)})")
    if not parts:
        return ""
    text = "; ".join(parts)
    if len(g.runs) - 1 > _MAX_DELTA_RUNS:
        text += f"; {len(g.runs) - 1 - _MAX_DELTA_RUNS} more runs in the comparison below"

    warn = caveats(g)
    text = f"{text}."
    if undecided:
        text += f" {INCONCLUSIVE_ONE_RUN[0].upper()}{INCONCLUSIVE_ONE_RUN[1:]}."
    return text + (f" Caveat{'s' if len(warn) > 1 else ''}: {'; '.join(warn)}." if warn else "")


def summary(data, doctor: bool = True) -> str:
    """The report's opening paragraph: the headline deltas of each comparison (the figure
    first, with its unit), the answers of results nothing was compared with, what was
    compared (kinds, hosts, paths) and — unless ``doctor`` is False, where the exporter
    draws it as a badge right under — what the doctor found among the checks that bear
    on them."""
    sentences = []
    compared = set()
    for c in data.comparisons:
        for g in c.groups:
            text = _deltas(g)
            if text:
                sentences.append(text)
                compared |= {id(r) for i in range(len(g.runs)) for r in g.pool(i)}
    alone = [r for r in data.results if id(r) not in compared and r.kind != "doctor"]
    if alone:
        shown = [f"{r.lead()} ({r.headline()})" for r in alone[:_MAX_ANSWERS]]
        more = f"; {len(alone) - _MAX_ANSWERS} more below" if len(alone) > _MAX_ANSWERS else ""
        sentences.append("; ".join(shown) + more + ".")
    sentences.append(_what(data))
    scope = doctor_scope(data.doctor, data.results) if doctor else None
    if scope is not None:
        total = len(scope.checks) + len(scope.others)
        if scope.checks:
            sentences.append(
                f"Doctor: {_counted(scope.counts())} among {scope.what()}; "
                f"all {total} checks are in the doctor's table below."
            )
        else:
            sentences.append(f"Doctor: none of its {total} checks bears on these results; its full table is below.")
    return " ".join(sentences)
