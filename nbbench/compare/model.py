"""The comparison model: :class:`ComparisonGroup` (one kind's runs, the first the baseline) and
:class:`Comparison` (one group per kind), their rows, frames and deltas with intervals, and which
metrics a table (:func:`table_metrics`) and a chart (:func:`chart_metrics`) show.

:func:`nbbench.compare.compare` builds one (:mod:`.build`); the tables are drawn by :mod:`.render`,
the bar chart by :func:`nbbench.plots.compare.bar_chart` (:meth:`Comparison.figure`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..results import Result, drawing
from ..stats import RatioInterval, median
from ..units import format_metric, metric_label, unit_of
from . import noise
from .direction import better
from .gate import Gate, judge
from .likeness import unlike

__all__ = ["Comparison", "ComparisonGroup", "chart_metrics", "table_metrics", "KEY_PERCENTILES"]


_PCT_KEY = re.compile(r"lat_p(\d+)(?:_(\d+))?_ns$")
# percentiles shown in tables; the others stay in .rows / .frame
KEY_PERCENTILES = ("50", "90", "99", "99.9")


def _num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and not (isinstance(v, float) and math.isnan(v))


@dataclass
class ComparisonGroup:
    """The runs of one kind, one reference each, the first being the baseline.

    ``runs[i]`` stands for reference ``i`` (its latest run); ``pools[i]`` are the results
    pooled as its repeats (default: that run alone), each one or more runs."""

    kind: str
    names: list[str]
    runs: list[Result]
    metrics: list[str]
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    pools: list[list[Result]] = field(default_factory=list)
    _cache: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def pool(self, i: int) -> list[Result]:
        return self.pools[i] if self.pools else [self.runs[i]]

    def figures(self, metric: str, i: int) -> list[float]:
        """Every run's figure of ``metric`` for reference ``i`` (one per run, over its pool)."""
        return noise.figures(self.pool(i), metric)

    def n_runs(self, i: int) -> int:
        return sum(len(noise.run_metrics(r)) for r in self.pool(i))

    def value(self, metric: str, i: int):
        """Reference ``i``'s figure: the median over its runs (the stored figure for one result)."""
        pool = self.pool(i)
        if len(pool) == 1:
            v = pool[0].metrics.get(metric)
            return v if _num(v) else None
        figs = self.figures(metric, i)
        return median(figs) if figs else None

    def unlike(self, i: int) -> bool:
        """Run ``i`` was measured unlike the baseline (:func:`~nbbench.compare.likeness.unlike`)."""
        return unlike(self.runs[0], self.runs[i])

    def delta_pct(self, metric: str, i: int) -> float | None:
        v0, v = self.value(metric, 0), self.value(metric, i)
        if v0 in (None, 0) or v is None:
            return None
        return (v - v0) / abs(v0) * 100.0

    def interval(self, metric: str, i: int) -> RatioInterval | None:
        """The 95 % interval of reference ``i`` / the baseline for ``metric`` (None for the baseline,
        or without a figure on either side)."""
        if i == 0 or self.value(metric, 0) in (None, 0) or self.value(metric, i) is None:
            return None
        key = (metric, i)
        if key not in self._cache:
            self._cache[key] = noise.interval(self.pool(0), self.pool(i), metric, self.kind)
        return self._cache[key]

    def delta_cell(self, metric: str, i: int) -> str:
        """The table's delta: the change with its interval, 'no significant change' or 'inconclusive (…)'."""
        return noise.cell_text(self.interval(metric, i), self.unlike(i))

    def delta_paint(self, metric: str, i: int, neutral: str = "#444") -> str:
        """The delta's colour: green/red only when significant and like for like, grey within the noise."""
        return noise.colour(metric, self.interval(metric, i), neutral, self.kind, self.unlike(i))

    def noise_notes(self, metrics: Sequence[str] | None = None) -> list[str]:
        ris = [self.interval(m, i) for m in (metrics or self.metrics) for i in range(1, len(self.runs))]
        return noise.group_notes([r for r in ris if r is not None])

    @property
    def rows(self) -> list[dict[str, Any]]:
        out = []
        for m in self.metrics:
            for i, (name, r) in enumerate(zip(self.names, self.runs)):
                ri = self.interval(m, i)
                out.append(
                    {
                        "kind": self.kind,
                        "metric": m,
                        "unit": unit_of(m),
                        "better": better(m, self.kind),
                        "ref": name,
                        "run_id": r.run_id,
                        "run_ids": [x.run_id for x in self.pool(i)],
                        "n_runs": self.n_runs(i),
                        "value": self.value(m, i),
                        "delta_pct": None if i == 0 else self.delta_pct(m, i),
                        "ratio": ri.ratio if ri else None,
                        "ci_low": ri.low if ri else None,
                        "ci_high": ri.high if ri else None,
                        "level": ri.level if ri else None,
                        "significant": ri.significant if ri else None,
                        "method": ri.method if ri else None,
                        "caveat": ri.caveat if ri else None,
                        "change": noise.change_text(ri) if ri else None,
                        "display": format_metric(m, self.value(m, i)),
                    }
                )
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
                ri = self.interval(m, i)
                rec[f"significant {name}"] = ri.significant if ri else None
            recs.append(rec)
        cols = (
            ["metric", "unit"]
            + self.names
            + [f"Δ% {n}" for n in self.names[1:]]
            + [f"significant {n}" for n in self.names[1:]]
        )
        return pd.DataFrame.from_records(recs, columns=cols).set_index("metric")

    def text_table(self) -> str:
        # here, not at the top: .render imports this module (the model's rows)
        from .render import group_text

        return group_text(self)


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


@dataclass
class Comparison:
    """One :class:`ComparisonGroup` per kind the references share."""

    refs: list[str]
    groups: list[ComparisonGroup]
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    gated: Gate | None = None  # set by :meth:`gate`

    @property
    def all_warnings(self) -> list[str]:
        return self.warnings + [w for g in self.groups for w in g.warnings]

    @property
    def rows(self) -> list[dict[str, Any]]:
        return [r for g in self.groups for r in g.rows]

    @property
    def verdict(self) -> str | None:
        """What the gate found ("ok" / "fail"), None when no gate was asked for."""
        return self.gated.verdict if self.gated is not None else None

    def gate(self, fail_if_worse: float | str) -> Gate:
        """The CI gate (:func:`nbbench.compare.gate.judge`): "fail" when a headline figure is
        significantly worse than the baseline by more than ``fail_if_worse`` percent (5.0, "5%");
        kept as :attr:`gated`, so the comparison's verdict and exit code follow it."""
        self.gated = judge(self, fail_if_worse)
        return self.gated

    @property
    def frame(self):
        """All groups' tables stacked, indexed by (kind, metric)."""
        import pandas as pd

        frames = [
            g.frame().assign(kind=g.kind).set_index("kind", append=True).reorder_levels(["kind", "metric"])
            for g in self.groups
        ]
        return pd.concat(frames) if frames else pd.DataFrame()

    def figure(self, group: int | str = 0):
        """One group's bar chart (the "compare" drawer, :mod:`nbbench.results.drawing`): by index or kind."""
        g = self.groups[group] if isinstance(group, int) else next(x for x in self.groups if x.kind == group)
        return drawing.draw("compare", g)

    def figures(self) -> list:
        """Every group's bar chart (none for a group without values)."""
        bar_chart = drawing.drawer("compare")
        return [f for f in map(bar_chart, self.groups) if f is not None]

    def text_table(self) -> str:
        parts = [g.text_table() for g in self.groups]
        tail = [f"warning: {w}" for w in self.warnings] + [f"note: {n}" for n in self.notes]
        parts += ["\n".join(tail)] if tail else []
        if self.gated is not None:
            parts.append("\n".join(self.gated.lines()))
        return "\n\n".join(parts)

    __str__ = text_table

    def _repr_pretty_(self, p, cycle):
        p.text(self.text_table())

    def html(self, images: bool = True) -> str:
        # here, not at the top: .render imports this module (the model's rows)
        from .render import comparison_html

        return comparison_html(self, images)

    def _repr_html_(self) -> str:
        return self.html(images=True)

    def to_dict(self) -> dict[str, Any]:
        out = {
            "refs": self.refs,
            "warnings": self.all_warnings,
            "notes": self.notes,
            "groups": [
                {
                    "kind": g.kind,
                    "names": g.names,
                    "run_ids": [r.run_id for r in g.runs],
                    "pooled_run_ids": [[x.run_id for x in g.pool(i)] for i in range(len(g.runs))],
                    "verdicts": [r.verdict for r in g.runs],
                    "metrics": g.metrics,
                    "warnings": g.warnings,
                    "notes": g.notes,
                    "rows": g.rows,
                }
                for g in self.groups
            ],
        }
        if self.gated is not None:
            out["gate"] = self.gated.to_dict()
            out["verdict"] = self.gated.verdict
        return out

    def to_json(self, **kw) -> str:
        kw.pop("orient", None)
        kw.pop("date_format", None)  # DataFrame.to_json's arguments, as commands.to_json passes them
        return json.dumps(self.to_dict(), default=str, **kw)


def chart_metrics(g: ComparisonGroup, max_metrics: int = 6) -> list[str]:
    """The metrics worth a bar: the result class's headline (SUMMARY) ones, else those with a
    better direction (rates, latencies, times); the table keeps all."""
    have = [m for m in g.metrics if any(g.value(m, i) is not None for i in range(len(g.runs)))]
    summary = getattr(type(g.runs[0]), "SUMMARY", None) or ()
    head = [m for m in summary if m in have]
    if head:
        return head[:max_metrics]
    return ([m for m in have if better(m, g.kind)] or have)[:max_metrics]
