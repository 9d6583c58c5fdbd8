"""The report as one self-contained HTML file: inline CSS, PNGs embedded as base64, no scripts."""

from __future__ import annotations

import base64
import html
import json
import re

from ..plots import figure_png
from ..plots.samples import sample_plot
from ..version import __version__

__all__ = ["export", "png_img"]

esc = html.escape

_CSS = """
body{font-family:-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:#222;margin:0;background:#f5f6f8}
main{max-width:1100px;margin:0 auto;padding:24px 28px 48px;background:#fff;min-height:100vh;box-sizing:border-box}
h1{font-size:24px;margin:0 0 4px}h2{font-size:18px;margin:32px 0 10px;padding-bottom:4px;border-bottom:2px solid #e3e6ea}
h3{font-size:15px;margin:18px 0 6px}h4{font-size:14px;margin:12px 0 6px}
.meta{color:#666;font-size:13px}
.summary{margin:14px 0 6px;max-width:980px}.summary p{font-size:15px;line-height:1.55;margin:0 0 8px}
.chips{margin:14px 0 0}.chip{display:inline-block;border-radius:12px;padding:3px 10px;margin:0 6px 6px 0;font-size:13px;font-weight:600;color:#fff}
table{border-collapse:collapse;font-size:13px;margin:6px 0 10px}
th,td{border:1px solid #e3e6ea;padding:4px 8px;vertical-align:top}th{background:#f0f2f5;text-align:left}
td code,.fix code{font-size:12px;white-space:pre-wrap;word-break:break-word}
.env td:first-child{color:#555;white-space:nowrap}
.card{border:1px solid #e3e6ea;border-radius:6px;padding:10px 14px;margin:12px 0;background:#fff}
.card .head{font-size:15px;font-weight:600}.card .status{color:#fff;border-radius:3px;padding:1px 6px;font-size:12px;margin-left:6px}
.card .labels{font-size:12px;color:#555;margin:4px 0 8px;line-height:1.7}.card .labels code{background:#f3f4f6;padding:0 4px;border-radius:3px}
.metrics{display:grid;grid-template-columns:repeat(auto-fill,minmax(150px,1fr));gap:6px;margin:6px 0}
.metric{border:1px solid #eceef1;border-radius:4px;padding:4px 8px}.metric .k{font-size:11px;color:#666}.metric .v{font-size:15px;font-weight:600}
.card ul{margin:6px 0;padding-left:20px}
.card img,.nbbench-compare img{max-width:100%;height:auto;display:block;margin:8px 0}
.nbbench-doctor-table td:nth-child(3){max-width:520px}
details pre{background:#f7f7f9;border:1px solid #e3e6ea;padding:10px;overflow:auto;font-size:12px;max-height:480px}
.note{color:#666;font-size:13px}.warn{color:#b35c00;font-size:13px}
footer{margin-top:40px;color:#888;font-size:12px}
"""

_CHIP = {"fail": "#c62828", "warn": "#ef6c00", "ok": "#2e7d32", "n/a": "#757575"}


def png_img(fig, alt: str) -> str:
    data = base64.b64encode(figure_png(fig)).decode("ascii")
    return f"<img alt='{esc(alt)}' src='data:image/png;base64,{data}'>"


def result_card(r) -> str:
    """One result as the one presentation rule draws it (:meth:`nbbench.results.Result.html`):
    the answer first, then what qualifies it, then the details folded."""
    return r.html()


def _env_table(data) -> str:
    envs = dict(data.environments)
    here = data.environment
    if here.get("id") not in envs:
        envs = {here.get("id"): here, **envs}
    ids = list(envs)
    head = "".join(
        f"<th>{esc(str(envs[i].get('host')))}"
        + (" <span class='note'>(this machine)</span>" if i == here.get("id") else "")
        + "</th>"
        for i in ids
    )
    rows = []
    labels = [lab for lab, _ in data.env_rows(here)]
    cols = [dict(data.env_rows(envs[i])) for i in ids]
    for lab in labels:
        vals = [c.get(lab, "") for c in cols]
        differ = len(set(vals)) > 1
        style = " style='background:#fff8e1'" if differ else ""
        cells = "".join(f"<td{style}>{esc(v)}</td>" for v in vals)
        rows.append(f"<tr><td>{esc(lab)}</td>{cells}</tr>")
    note = "<div class='note'>Highlighted rows differ between the environments.</div>" if len(ids) > 1 else ""
    return f"<table class='env'><thead><tr><th></th>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>{note}"


def _bold_deltas(text: str) -> str:
    """The significant changes of the summary in bold: the figures a reader looks for.  Only a
    change that opens a clause is one ('+5.00 % write (95 % CI …)', '15.7× faster read'); a delta
    within the noise is worded ('no significant change in …', '… inconclusive at +5.00 %'), never bold."""
    return re.sub(
        r"(?:(?<=^)|(?<=; )|(?<=, ))([+-]\d[\d,]*(?:\.\d+)? %|\d[\d.]*× (?:faster|slower|higher|lower))",
        r"<b>\1</b>",
        text,
    )


def _badge(scope) -> str:
    """The doctor's counts over the checks that bear on the results shown, in their colours,
    and where the full table is."""
    total = len(scope.checks) + len(scope.others)
    if not scope.checks:
        return (
            f"<div class='chips'>Doctor: none of its {total} checks bears on these results — "
            "<a href='#doctor'>full table below</a></div>"
        )
    chips = "".join(
        f"<span class='chip' style='background:{_CHIP[s]}'>{n} {s}</span>" for s, n in scope.counts().items() if n
    )
    verdict = f" — verdict <b>{esc(scope.verdict)}</b>" if scope.verdict else ""
    return (
        f"<div class='chips'>Doctor, {esc(scope.what())}: {chips}{verdict} · "
        f"<a href='#doctor'>all {total} checks below</a></div>"
    )


def export(data, path=None, files=None) -> str:
    parts = [
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<meta name='viewport' content='width=device-width,initial-scale=1'>"
        f"<title>{esc(data.title)}</title><style>{_CSS}</style></head><body><main>"
    ]
    parts.append(
        f"<h1>{esc(data.title)}</h1><div class='meta'>generated {esc(data.created_iso)} by nbbench "
        f"{esc(__version__)} · {len(data.results)} result{'s' if len(data.results) != 1 else ''}</div>"
    )
    # the answer first: one paragraph, then the doctor's badge for the checks that bear on these results
    doc, scope = data.doctor, data.doctor_scope()
    parts.append(
        f"<div class='summary'><p>{_bold_deltas(esc(data.summary(doctor=False)))}</p>"
        + (_badge(scope) if scope is not None else "")
        + "</div>"
    )

    parts.append("<h2>Results</h2>")
    if not data.results:
        parts.append("<p class='note'>No stored results were selected (run a probe first, or pass --runs).</p>")
    for r in data.results:
        parts.append("<div class='card'>")
        try:
            parts.append(result_card(r))
        except Exception as exc:  # noqa: BLE001 - one odd result must not stop the report
            parts.append(f"<pre>{esc(str(r))}</pre><div class='warn'>(its HTML view failed: {esc(str(exc))})</div>")
        try:
            fig, why = sample_plot(r)
            if fig is None and r.kind in ("collectives", "copies"):  # by size / the GPU matrix, not over time
                fig, why = r.figure(), None
        except Exception:  # noqa: BLE001
            fig, why = None, None
        if fig is not None:
            parts.append(png_img(fig, f"{r.headline()} samples"))
        elif why:  # too short to plot: the sentence instead of a plot of dots
            parts.append(f"<div class='note'>{esc(why)}</div>")
        parts.append("</div>")

    if data.comparisons:
        parts.append(
            "<h2>Comparisons</h2><div class='meta'>like for like: runs of the same kind, each change "
            "against the first with its 95 % interval; grey: within the noise or undecided</div>"
        )
        for c in data.comparisons:
            parts.append(f"<div class='card'>{c.html(images=True)}</div>")

    parts.append("<h2>Environment</h2>")
    parts.append(_env_table(data))

    if doc is not None:
        parts.append(
            f"<h2 id='doctor'>Doctor</h2><div class='meta'>all {len(doc.checks)} checks of "
            f"{esc(str(doc.params.get('path')))} on this machine — status, the evidence (value and where "
            "it was read) and the fix</div>"
        )
        parts.append(doc.html_table())

    fio = data.fio()
    if fio is not None:
        parts.append("<h2>Disk results as fio JSON</h2>")
        parts.append(
            f"<details><summary>{len(fio['jobs'])} job{'s' if len(fio['jobs']) != 1 else ''} in "
            "fio's --output-format=json shape</summary><pre>"
            + esc(json.dumps(fio, indent=2, default=str))
            + "</pre></details>"
        )
    for n in data.notes:
        parts.append(f"<div class='note'>note: {esc(n)}</div>")
    parts.append("<footer>Self-contained report: images are embedded, nothing is loaded from the network.</footer>")
    parts.append("</main></body></html>")
    return "\n".join(parts)
