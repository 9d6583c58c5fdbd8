"""The report as Markdown.  Markdown cannot embed images portably, so with a file path
the plots are written as PNGs into ``<name>_files/`` next to it and linked; without
one (``--out -``) the report has no images and says so.
"""

from __future__ import annotations

import json
import os

from ..plots import figure_png
from ..plots.compare import bar_chart
from ..plots.samples import sample_plot
from ..units import format_metric, metric_label
from ..version import __version__

__all__ = ["export"]


def _cell(s) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def _table(head, rows) -> list[str]:
    out = ["| " + " | ".join(_cell(h) for h in head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(_cell(c) for c in r) + " |" for r in rows]
    return out + [""]


def _result(r) -> list[str]:
    """One result by the one presentation rule: the answer as the heading, what qualifies it,
    the story, warnings and advice, open tables, folded ones in ``<details>``."""
    p = r.present()
    L = [f"### {p.answer}", ""]
    quals = [p.subject] + [f"{k} `{v}`" if k else str(v) for k, v in p.qualifiers]
    L += [" · ".join(q for q in quals if q) + (f" — run {r.run_id}" if r.run_id is not None else ""), ""]
    if p.status:
        L += [f"**{r.status}**" + (f": {r.reason}" if r.reason else ""), ""]
    if p.verdict is not None:  # what its checks found (the status above says whether it ran)
        L += [f"verdict: **{p.verdict}**", ""]
    L += [x for s in p.story for x in (s, "")]
    L += [f"- warning: {w}" for w in p.warnings] + [f"- advice: {a}" for a in p.advice]
    if p.warnings or p.advice:
        L.append("")
    for sec in p.sections:
        if not sec.rows:
            continue
        head = sec.head or [""] * max(len(row) for row in sec.rows)
        table = _table(head, sec.rows)
        if sec.folded:
            L += [f"<details><summary>{sec.title}</summary>", ""] + table + ["</details>", ""]
        else:
            L += [f"**{sec.title}**", ""] + table
    return L


def export(data, path=None, files=None) -> str:
    fig_dir = None
    if path is not None:
        stem = os.path.splitext(os.path.basename(path))[0]
        fig_dir = os.path.join(os.path.dirname(path), f"{stem}_files")

    def save(fig, name: str) -> str | None:
        if fig_dir is None:
            return None
        os.makedirs(fig_dir, exist_ok=True)
        p = os.path.join(fig_dir, name)
        with open(p, "wb") as f:
            f.write(figure_png(fig))
        if files is not None:
            files.append(p)
        return f"{os.path.basename(fig_dir)}/{name}"

    L = [
        f"# {data.title}",
        "",
        f"Generated {data.created_iso} by nbbench {__version__}; "
        f"{len(data.results)} result{'s' if len(data.results) != 1 else ''}.",
        "",
    ]
    L += [data.summary(doctor=False), ""]
    scope = data.doctor_scope()
    if scope is not None:  # the doctor's counts over the checks that bear on these results
        total = len(scope.checks) + len(scope.others)
        if scope.checks:
            found = ", ".join(f"{n} {st}" for st, n in scope.counts().items() if n)
            L += [f"**Doctor**, {scope.what()}: {found} — all {total} checks in the Doctor section below.", ""]
        else:
            L += [f"**Doctor**: none of its {total} checks bears on these results — its table is below.", ""]
    if fig_dir is None:
        L += ["_Written without a file path, so the plots are left out (use --out FILE.md or --format html)._", ""]

    L += ["## Results", ""]
    if not data.results:
        L += ["No stored results were selected.", ""]
    for n, r in enumerate(data.results, 1):
        L += _result(r)
        try:
            fig, why = sample_plot(r)
        except Exception:  # noqa: BLE001
            fig, why = None, None
        if fig is not None:
            link = save(fig, f"result-{r.run_id or n}.png")
            if link:
                L += [f"![{r.headline()} samples]({link})", ""]
        elif why:  # too short to plot: the sentence instead of a plot of dots
            L += [f"_{why}_", ""]

    if data.comparisons:
        L += ["## Comparisons", ""]
        for ci, c in enumerate(data.comparisons, 1):
            for gi, g in enumerate(c.groups, 1):
                L += [f"### {g.kind}: " + " vs ".join(g.names), ""]
                head = ["metric"] + g.names + [f"Δ% {x}" for x in g.names[1:]]
                rows = []
                for m in g.metrics:
                    row = [metric_label(m)] + [format_metric(m, g.value(m, i)) for i in range(len(g.runs))]
                    row += [g.delta_cell(m, i) for i in range(1, len(g.runs))]
                    rows.append(row)
                L += _table(head, rows)
                L += [f"- note: {x}" for x in g.noise_notes()]
                L += [f"- warning: {w}" for w in g.warnings] + [f"- note: {x}" for x in g.notes]

                chart = bar_chart(g)
                link = save(chart, f"compare-{ci}-{gi}.png") if chart is not None else None
                if link:
                    L += ["", f"![{g.kind} comparison]({link})"]
                L.append("")

    envs = dict(data.environments)
    here = data.environment
    if here.get("id") not in envs:
        envs = {here.get("id"): here, **envs}
    ids = list(envs)
    L += ["## Environment", ""]
    head = [""] + [f"{envs[i].get('host')}" + (" (this machine)" if i == here.get("id") else "") for i in ids]
    cols = [dict(data.env_rows(envs[i])) for i in ids]
    L += _table(head, [[lab] + [c.get(lab, "") for c in cols] for lab, _ in data.env_rows(here)])

    doc = data.doctor
    if doc is not None:
        verdict = f" Verdict: **{doc.verdict}**." if doc.verdict else ""
        L += [
            "## Doctor",
            "",
            f"All {len(doc.checks)} checks of `{doc.params.get('path')}` on this machine: "
            f"{doc.answer_line()}.{verdict}",
            "",
        ]
        order = {"fail": 0, "warn": 1, "ok": 2, "n/a": 3}

        def fix(c):  # a shared document names the terminal command
            text = c.fix_text(lambda name, args: " ".join(p for p in ("nbbench", name, args) if p))
            return f"`{text}`" if text and c.status in ("warn", "fail") else ""

        rows = [
            [f"**{c.status}**", c.name, c.evidence, fix(c)] for c in sorted(doc.checks, key=lambda c: order[c.status])
        ]
        L += _table(["status", "check", "evidence", "fix"], rows)

    fio = data.fio()
    if fio is not None:
        L += ["## Disk results as fio JSON", "", "```json", json.dumps(fio, indent=2, default=str), "```", ""]
    L += [f"- note: {x}" for x in data.notes]
    return "\n".join(L).rstrip() + "\n"
