"""Like-for-like comparison of stored runs: % deltas against the first, and a bar chart.

:func:`compare` takes run ids, labels or :class:`~nbbench.results.Result` objects.
Runs are compared within one kind (a ``dd`` run with ``dd`` runs); parameters or a
cache mode that differ are compared anyway, with a warning saying so, because the
delta then mixes the settings with the environment.  The plain data is
:attr:`Comparison.rows`; :attr:`Comparison.frame` is a DataFrame of it.  This module
draws nothing: :func:`nbbench.plots.compare.bar_chart` draws a group (matplotlib's
object API); :meth:`Comparison.figure` is the convenience that calls it.  Which way of
a metric is better lives in :mod:`.direction`.

Layer: core (with results, store, units).  The comparison model imports only the core;
its one upward import, allowed as a result's drawing convenience, is
:meth:`Comparison.figure` reaching into :mod:`nbbench.plots`.
"""

from __future__ import annotations

import html
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from ..results import ProbeError, Result, advice
from ..units import format_metric, metric_label, shorten_middle, unit_of
from .likeness import HIDDEN_PARAMS, MODE_LABELS, TARGET_LABELS, unlike
from .direction import DIRECTION_BY_UNIT, NEUTRAL_KEYS, NEUTRAL_KINDS, better, delta_colour

__all__ = ["compare", "Comparison", "ComparisonGroup", "chart_metrics", "table_metrics",
           "better", "delta_colour", "resolve", "HIDDEN_PARAMS", "MODE_LABELS", "DIRECTION_BY_UNIT",
           "NEUTRAL_KINDS", "NEUTRAL_KEYS"]



_PCT_KEY = re.compile(r"lat_p(\d+)(?:_(\d+))?_ns$")
# percentiles shown in tables; the others stay in .rows / .frame
KEY_PERCENTILES = ("50", "90", "99", "99.9")
# a terminal's text table: each line of run descriptions fits (a long path shortened in the middle)
TEXT_WIDTH = 100

def _delta_text(d: float | None) -> str:
    return "—" if d is None else f"{d:+.1f} %"


def _num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and not (isinstance(v, float) and math.isnan(v))


def _fmt_param(v) -> str:
    if isinstance(v, (dict, list)):
        return json.dumps(v, sort_keys=True, default=str)
    return str(v)


@dataclass
class ComparisonGroup:
    """The runs of one kind, one per reference, the first being the baseline."""

    kind: str
    names: list[str]
    runs: list[Result]
    metrics: list[str]
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def value(self, metric: str, i: int):
        v = self.runs[i].metrics.get(metric)
        return v if _num(v) else None

    def unlike(self, i: int) -> bool:
        """Run ``i`` was measured unlike the baseline (:func:`~nbbench.compare.likeness.unlike`)."""
        return unlike(self.runs[0], self.runs[i])

    def delta_pct(self, metric: str, i: int) -> float | None:
        v0, v = self.value(metric, 0), self.value(metric, i)
        if v0 in (None, 0) or v is None:
            return None
        return (v - v0) / abs(v0) * 100.0

    @property
    def rows(self) -> list[dict[str, Any]]:
        out = []
        for m in self.metrics:
            for i, (name, r) in enumerate(zip(self.names, self.runs)):
                out.append({"kind": self.kind, "metric": m, "unit": unit_of(m), "better": better(m, self.kind),
                            "ref": name, "run_id": r.run_id, "value": self.value(m, i),
                            "delta_pct": None if i == 0 else self.delta_pct(m, i),
                            "display": format_metric(m, self.value(m, i))})
        return out

    def frame(self):
        """metric × (value per reference, Δ% per later reference), base units."""
        import pandas as pd

        recs = []
        for m in self.metrics:
            rec: dict[str, Any] = {"metric": m, "unit": unit_of(m)}
            for i, name in enumerate(self.names):
                rec[name] = self.value(m, i)
            for i, name in enumerate(self.names[1:], 1):
                rec[f"Δ% {name}"] = self.delta_pct(m, i)
            recs.append(rec)
        cols = ["metric", "unit"] + self.names + [f"Δ% {n}" for n in self.names[1:]]
        return pd.DataFrame.from_records(recs, columns=cols).set_index("metric")

    def text_table(self) -> str:
        head = ["metric"] + self.names + [f"Δ% {n}" for n in self.names[1:]]
        body = []
        shown = table_metrics(self.metrics)
        for m in shown:
            row = [_row_label(m, self.metrics, self.kind)]
            row += [format_metric(m, self.value(m, i)) for i in range(len(self.runs))]
            row += [_delta_text(self.delta_pct(m, i)) for i in range(1, len(self.runs))]
            body.append(row)
        widths = [max(len(str(r[c])) for r in [head] + body) for c in range(len(head))]
        line = lambda r: "  ".join(str(x).ljust(w) if j == 0 else str(x).rjust(w)  # noqa: E731
                                   for j, (x, w) in enumerate(zip(r, widths)))
        out = [f"{self.kind}:"] + [_run_line(n, r) for n, r in zip(self.names, self.runs)]
        out += [line(head), line(["-" * w for w in widths])] + [line(r) for r in body]
        if len(shown) < len(self.metrics):
            out.append(f"({len(self.metrics) - len(shown)} more latency percentiles in .frame / --json)")
        out += [f"warning: {w}" for w in self.warnings] + [f"note: {n}" for n in self.notes]
        return "\n".join(out)


def _name(m: str) -> str:
    """The metric's human name (:func:`nbbench.units.metric_label`: 'latency p99.9')."""
    return metric_label(m)


def _row_label(m: str, metrics: Sequence[str] = (), kind: str | None = None) -> str:
    """'read ↑': the name, its unit when another metric shares the name ('write [s]'), and which way is better."""
    unit = unit_of(m)
    arrow = {"higher": " ↑", "lower": " ↓"}.get(better(m, kind) or "", "")
    clash = sum(1 for x in metrics if metric_label(x) == metric_label(m)) > 1
    return _name(m) + (f" [{unit}]" if unit and clash else "") + arrow


def table_metrics(metrics: Sequence[str]) -> list[str]:
    """The metrics a table shows: all but the minor latency percentiles (p50, p90, p99, p99.9 stay)."""
    out = []
    for m in metrics:
        mm = _PCT_KEY.search(m)
        if mm:
            p = mm.group(1) + (f".{mm.group(2)}" if mm.group(2) else "")
            if p not in KEY_PERCENTILES:
                continue
        out.append(m)
    return out


def _run_line(name: str, r: Result, width: int = TEXT_WIDTH) -> str:
    """'  nvme = run 3 /tmp/nbbench-…/disk direct': one run of a text table, its path shortened
    in the middle to fit ``width``."""
    line = f"  {name} = {_run_desc(r)}"
    path = str(r.params.get("path") or "")
    if len(line) > width and path:
        line = f"  {name} = {_run_desc(r, shorten_middle(path, max(12, len(path) - (len(line) - width))))}"
    return line


def _run_desc(r: Result, path: str | None = None) -> str:
    bits = []
    if r.run_id is not None:
        bits.append(f"run {r.run_id}")
    tags = [str(r.labels[k]) for k in MODE_LABELS if k in r.labels]
    if r.params.get("path"):
        tags.insert(0, path or str(r.params["path"]))
    if tags:
        bits.append(" ".join(tags))
    return " ".join(bits) or r.kind


@dataclass
class Comparison:
    """One :class:`ComparisonGroup` per kind the references share."""

    refs: list[str]
    groups: list[ComparisonGroup]
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def all_warnings(self) -> list[str]:
        return self.warnings + [w for g in self.groups for w in g.warnings]

    @property
    def rows(self) -> list[dict[str, Any]]:
        return [r for g in self.groups for r in g.rows]

    @property
    def frame(self):
        """All groups' tables stacked, indexed by (kind, metric)."""
        import pandas as pd

        frames = [g.frame().assign(kind=g.kind).set_index("kind", append=True).reorder_levels(["kind", "metric"])
                  for g in self.groups]
        return pd.concat(frames) if frames else pd.DataFrame()

    def figure(self, group: int | str = 0):
        """One group's bar chart (:func:`nbbench.plots.compare.bar_chart`): by index or kind."""
        from ..plots.compare import bar_chart

        g = self.groups[group] if isinstance(group, int) else next(x for x in self.groups if x.kind == group)
        return bar_chart(g)

    def figures(self) -> list:
        """Every group's bar chart (none for a group without values)."""
        from ..plots.compare import bar_chart

        return [f for f in map(bar_chart, self.groups) if f is not None]

    def text_table(self) -> str:
        parts = [g.text_table() for g in self.groups]
        parts += [f"warning: {w}" for w in self.warnings] + [f"note: {n}" for n in self.notes]
        return "\n\n".join(parts)

    __str__ = text_table

    def _repr_pretty_(self, p, cycle):
        p.text(self.text_table())

    def html(self, images: bool = True) -> str:
        esc = html.escape
        out = ["<div class='nbbench-compare'>"]
        for g in self.groups:
            out.append(f"<h4>{esc(g.kind)}: " + ", ".join(
                f"<b>{esc(n)}</b> = {esc(_run_desc(r))}" for n, r in zip(g.names, g.runs)) + "</h4>")
            head = "".join(f"<th>{esc(n)}</th>" for n in g.names) + "".join(
                f"<th>Δ% {esc(n)}</th>" for n in g.names[1:])
            rows = []
            shown = table_metrics(g.metrics)
            for m in shown:
                cells = "".join(f"<td style='text-align:right'>{esc(format_metric(m, g.value(m, i)))}</td>"
                                for i in range(len(g.runs)))
                for i in range(1, len(g.runs)):
                    d = g.delta_pct(m, i)
                    unlike = g.unlike(i)   # not like for like: shown, never as a gain or loss
                    colour = "#444" if unlike else delta_colour(m, d, "#444", g.kind)
                    mark = " ⚠" if unlike and d is not None else ""
                    cells += (f"<td style='text-align:right;color:{colour};font-weight:bold'>"
                              f"{_delta_text(d)}{mark}</td>")
                rows.append(f"<tr><td style='text-align:left'>{esc(_row_label(m, g.metrics, g.kind))}</td>{cells}</tr>")
            out.append(f"<table class='nbbench-compare-table'><thead><tr><th style='text-align:left'>metric</th>"
                       f"{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>")
            if len(shown) < len(g.metrics):
                out.append(f"<div style='color:#666;font-size:85%'>{len(g.metrics) - len(shown)} more latency "
                           "percentiles in <code>.frame</code> / <code>--json</code></div>")
            if images:
                import base64

                from ..plots import figure_png
                from ..plots.compare import bar_chart

                chart = bar_chart(g)   # None: no metric has a value
                png = base64.b64encode(figure_png(chart)).decode("ascii") if chart is not None else ""
                out += [f"<img alt='{esc(g.kind)} comparison' src='data:image/png;base64,{png}'>"] if png else []
            out += [f"<div style='color:#ef6c00'>warning: {esc(w)}</div>" for w in g.warnings]
            out += [f"<div style='color:#666'>note: {esc(n)}</div>" for n in g.notes]
        out += [f"<div style='color:#ef6c00'>warning: {esc(w)}</div>" for w in self.warnings]
        out += [f"<div style='color:#666'>note: {esc(n)}</div>" for n in self.notes]
        out.append("</div>")
        return "".join(out)

    def _repr_html_(self) -> str:
        return self.html(images=True)

    def to_dict(self) -> dict[str, Any]:
        return {"refs": self.refs, "warnings": self.all_warnings, "notes": self.notes,
                "groups": [{"kind": g.kind, "names": g.names, "run_ids": [r.run_id for r in g.runs],
                            "verdicts": [r.verdict for r in g.runs],
                            "metrics": g.metrics, "warnings": g.warnings, "notes": g.notes, "rows": g.rows}
                           for g in self.groups]}

    def to_json(self, **kw) -> str:
        kw.pop("orient", None)
        return json.dumps(self.to_dict(), default=str, **kw)


# ------------------------------------------------------------------ resolving
def resolve(refs: Sequence[Any], store=None) -> list[tuple[str, list[Result]]]:
    """Each reference (id, label or Result) with the runs it names."""
    out = []
    for i, ref in enumerate(refs):
        if isinstance(ref, Result):
            name = str(ref.labels.get("label") or (f"#{ref.run_id}" if ref.run_id is not None else f"run {i + 1}"))
            out.append((name, [ref]))
            continue
        if store is None:
            from ..store import default_store

            store = default_store()
        try:
            runs = store.find(ref)
        except KeyError:
            raise ProbeError(f"no stored run has id or label {str(ref)!r}",
                                 advice=[advice.entry("see {command}", "history")]) from None
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
    keys = ("host", "container", "kernel", "os", "cpu_model", "cpus", "memory", "python", "torch", "gpus",
            "packages_sha256")
    differ = [k for k in keys if len({json.dumps(e.get(k), sort_keys=True, default=str) for e in envs}) > 1]
    if not differ:
        return []
    return [f"the runs come from different environments ({', '.join(differ)} differ): "
            "that is what this comparison measures"]


def compare(refs: Iterable[Any], store=None, metrics: Sequence[str] | None = None) -> Comparison:
    """Compare runs like for like; the first reference is the baseline.

    ``refs``: run ids, labels (all runs with that label; the latest of each kind is
    used) or Result objects.  ``metrics``: only these metric keys.
    """
    refs = list(refs)
    if len(refs) < 2:
        raise ProbeError("compare needs two or more runs or labels, e.g. compare baseline 12")
    if any(not isinstance(r, Result) for r in refs) and store is None:
        from ..store import default_store

        store = default_store()
    resolved = resolve(refs, store)
    cmp = Comparison(refs=[n for n, _ in resolved], groups=[])
    # per reference: the latest run of each kind
    per_ref: list[dict[str, Result]] = []
    for name, runs in resolved:
        by_kind: dict[str, Result] = {}
        counts: dict[str, int] = {}
        for r in runs:
            counts[r.kind] = counts.get(r.kind, 0) + 1
            cur = by_kind.get(r.kind)
            if cur is None or (r.run_id or 0) >= (cur.run_id or 0):
                by_kind[r.kind] = r
        for kind, n in counts.items():
            if n > 1:
                cmp.notes.append(f"{name} names {n} {kind} runs; the latest (run {by_kind[kind].run_id}) is used — "
                                 "give a run id to pick another")
        per_ref.append(by_kind)
    for kind in dict.fromkeys(k for d in per_ref for k in d):  # every kind, in order of first appearance
        idx = [i for i, d in enumerate(per_ref) if kind in d]
        if len(idx) < 2:
            continue
        names = [cmp.refs[i] for i in idx]
        runs = [per_ref[i][kind] for i in idx]
        keys = dict.fromkeys(k for r in runs for k, v in r.metrics.items()
                             if _num(v) and (metrics is None or k in metrics))
        g = ComparisonGroup(kind=kind, names=names, runs=runs, metrics=list(keys))
        missing = [cmp.refs[i] for i in range(len(per_ref)) if i not in idx]
        if missing:
            g.notes.append(f"{', '.join(missing)} {'has' if len(missing) == 1 else 'have'} no {kind} run")
        _like_for_like(g)
        g.notes += _env_diff(runs, store)
        cmp.groups.append(g)
    if not cmp.groups:
        desc = "; ".join(f"{n}: {', '.join(sorted(d)) or 'nothing'}" for n, d in zip(cmp.refs, per_ref))
        raise ProbeError(f"nothing to compare like for like — the runs are of different kinds ({desc}); "
                         "compare runs of the same probe")
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
        g.warnings.append("parameters differ — " + "; ".join(diffs) +
                          ": the deltas mix the effect of the settings with that of the environment; "
                          "rerun with the same parameters for a like-for-like figure")
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
                why = ("direct and buffered I/O take different paths through the kernel (page cache, read-ahead, "
                       "writeback); compare direct with direct")
            g.warnings.append(f"{what} differs — {shown}: {why}")
    for k in TARGET_LABELS:
        vals = [str(r.labels.get(k, "—")) for r in g.runs]
        if len(set(vals)) > 1:
            g.notes.append(f"{k}: " + ", ".join(f"{v} ({n})" for v, n in zip(vals, g.names)))
    verdicts = [r.verdict or "none" for r in g.runs]   # what each run's checks found (none: no checks)
    if len(set(verdicts)) > 1:
        g.notes.append("verdicts differ — " + ", ".join(f"{v} ({n})" for v, n in zip(verdicts, g.names))
                       + ": what the runs' checks found changed")
    for n, r in zip(g.names, g.runs):
        if r.status != "ok":
            g.warnings.append(f"{n} (run {r.run_id}) is {r.status}" + (f": {r.reason}" if r.reason else "")
                              + " — its figures cover only part of the run")


# ---------------------------------------------------------------------- chart
def chart_metrics(g: ComparisonGroup, max_metrics: int = 6) -> list[str]:
    """The metrics worth a bar: the result class's headline (SUMMARY) ones, else those with a
    better direction (rates, latencies, times); the table keeps all."""
    have = [m for m in g.metrics if any(g.value(m, i) is not None for i in range(len(g.runs)))]
    summary = getattr(type(g.runs[0]), "SUMMARY", None) or ()
    head = [m for m in summary if m in have]
    if head:
        return head[:max_metrics]
    return ([m for m in have if better(m, g.kind)] or have)[:max_metrics]
