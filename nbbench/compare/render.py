"""A comparison as a terminal table and as HTML: the figures (median over runs, with how many),
then each delta as :mod:`.noise` words it — the change with its interval when significant, green
or red by which way is better; "no significant change" or "inconclusive" in grey otherwise.

Layer: core (inside :mod:`nbbench.compare`); the HTML's bar chart is drawn through the
comparison's :meth:`~nbbench.compare.Comparison.figure` convenience.
"""

from __future__ import annotations

import html

from ..results import Result, drawing
from ..stats import spread_text
from ..units import format_metric, shorten_middle
from .likeness import MODE_LABELS
from .model import _row_label, table_metrics
from .noise import change_text, run_metrics

__all__ = ["group_text", "comparison_html", "run_desc", "TEXT_WIDTH"]

# a terminal's text table: each line of run descriptions fits (a long path shortened in the middle)
TEXT_WIDTH = 100


def run_desc(r: Result, path: str | None = None, pool=None) -> str:
    bits = []

    pool = pool or [r]
    ids = [x.run_id for x in pool if x.run_id is not None]
    if len(ids) > 1:
        bits.append(f"runs {', '.join(map(str, ids))}")
    elif r.run_id is not None:
        bits.append(f"run {r.run_id}")
    n = sum(len(run_metrics(x)) for x in pool)
    if n > len(pool):  # results made with --repeat N
        bits.append(f"({n} runs)")
    tags = [str(r.labels[k]) for k in MODE_LABELS if k in r.labels]
    if r.params.get("path"):
        tags.insert(0, path or str(r.params["path"]))
    if tags:
        bits.append(" ".join(tags))
    return " ".join(bits) or r.kind


def _run_line(g, i: int, width: int = TEXT_WIDTH) -> str:
    """'  nvme = run 3 /tmp/nbbench-…/disk direct': one reference of a text table, its path
    shortened in the middle to fit ``width``."""
    name, r, pool = g.names[i], g.runs[i], g.pool(i)
    line = f"  {name} = {run_desc(r, pool=pool)}"
    path = str(r.params.get("path") or "")
    if len(line) > width and path:
        short = shorten_middle(path, max(12, len(path) - (len(line) - width)))
        line = f"  {name} = {run_desc(r, short, pool)}"
    return line


def _value_cell(g, m: str, i: int) -> str:
    """The figure; with several runs, its spread after it: '612 MB/s ± 2.1 %'."""
    v = format_metric(m, g.value(m, i))
    figs = g.figures(m, i)
    if len(figs) > 1 and g.value(m, i) is not None:
        sp = spread_text(figs)
        v += " " + sp.split(" (")[0] if sp.startswith("±") and not sp.startswith("± 0 %") else ""
    return v


def group_text(g) -> str:
    head = ["metric"] + g.names + [f"Δ% {n}" for n in g.names[1:]]
    body = []
    shown = table_metrics(g.metrics)
    for m in shown:
        row = [_row_label(m, g.metrics, g.kind)]
        row += [_value_cell(g, m, i) for i in range(len(g.runs))]
        row += [g.delta_cell(m, i) for i in range(1, len(g.runs))]
        body.append(row)
    widths = [max(len(str(r[c])) for r in [head] + body) for c in range(len(head))]
    line = lambda r: "  ".join(
        str(x).ljust(w) if j == 0 else str(x).rjust(w)  # noqa: E731
        for j, (x, w) in enumerate(zip(r, widths))
    )
    out = [f"{g.kind}:"] + [_run_line(g, i) for i in range(len(g.runs))]
    out += [line(head), line(["-" * w for w in widths])] + [line(r) for r in body]
    if any(g.n_runs(i) > 1 for i in range(len(g.runs))):
        out += [
            "figures: the median over each reference's runs, ± half their min…max range;",
            "changes: the ratio of the runs' geometric means, 95 % interval of Welch's t on the logarithms",
        ]
    if len(shown) < len(g.metrics):
        out.append(f"({len(g.metrics) - len(shown)} more latency percentiles in .frame / --json)")
    out += [f"note: {n}" for n in g.noise_notes(shown)]
    out += [f"warning: {w}" for w in g.warnings] + [f"note: {n}" for n in g.notes]
    return "\n".join(out)


def comparison_html(cmp, images: bool = True) -> str:
    esc = html.escape
    out = ["<div class='nbbench-compare'>"]
    for g in cmp.groups:
        out.append(
            f"<h4>{esc(g.kind)}: "
            + ", ".join(
                f"<b>{esc(n)}</b> = {esc(run_desc(r, pool=g.pool(i)))}" for i, (n, r) in enumerate(zip(g.names, g.runs))
            )
            + "</h4>"
        )
        head = "".join(f"<th>{esc(n)}</th>" for n in g.names) + "".join(f"<th>Δ {esc(n)}</th>" for n in g.names[1:])
        rows = []
        shown = table_metrics(g.metrics)
        for m in shown:
            cells = "".join(
                f"<td style='text-align:right'>{esc(_value_cell(g, m, i))}</td>" for i in range(len(g.runs))
            )
            for i in range(1, len(g.runs)):
                ri = g.interval(m, i)
                colour = g.delta_paint(m, i, "#444")
                weight = "bold" if ri is not None and ri.significant else "normal"
                title = esc(rows_change(ri))
                cells += (
                    f"<td style='text-align:right;color:{colour};font-weight:{weight}' title='{title}'>"
                    f"{esc(g.delta_cell(m, i))}</td>"
                )
            rows.append(f"<tr><td style='text-align:left'>{esc(_row_label(m, g.metrics, g.kind))}</td>{cells}</tr>")
        out.append(
            f"<table class='nbbench-compare-table'><thead><tr><th style='text-align:left'>metric</th>"
            f"{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        )
        if any(g.n_runs(i) > 1 for i in range(len(g.runs))):
            out.append(
                "<div style='color:#666;font-size:85%'>figures: the median over each reference's runs, "
                "± half their min…max range; changes: the ratio of the runs' geometric means with its "
                "95 % interval (Welch's t on the logarithms; hover a change for it)</div>"
            )
        if len(shown) < len(g.metrics):
            out.append(
                f"<div style='color:#666;font-size:85%'>{len(g.metrics) - len(shown)} more latency "
                "percentiles in <code>.frame</code> / <code>--json</code></div>"
            )
        if images:
            import base64

            chart = cmp.figure(cmp.groups.index(g))  # None: no metric has a value
            png = base64.b64encode(drawing.draw("png", chart)).decode("ascii") if chart is not None else ""
            out += [f"<img alt='{esc(g.kind)} comparison' src='data:image/png;base64,{png}'>"] if png else []
        out += [f"<div style='color:#666'>note: {esc(n)}</div>" for n in g.noise_notes(shown)]
        out += [f"<div style='color:#ef6c00'>warning: {esc(w)}</div>" for w in g.warnings]
        out += [f"<div style='color:#666'>note: {esc(n)}</div>" for n in g.notes]
    out += [f"<div style='color:#ef6c00'>warning: {esc(w)}</div>" for w in cmp.warnings]
    out += [f"<div style='color:#666'>note: {esc(n)}</div>" for n in cmp.notes]
    if cmp.gated is not None:
        colour = "#c62828" if cmp.gated.verdict == "fail" else "#444"
        out.append(f"<div style='color:{colour};font-weight:bold'>{esc(cmp.gated.sentence())}</div>")
    out.append("</div>")
    return "".join(out)


def rows_change(ri) -> str:
    return change_text(ri) if ri is not None else ""
