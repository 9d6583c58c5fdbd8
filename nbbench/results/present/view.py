"""How every result is shown: the one presentation rule's methods, which :class:`~nbbench.results.Result` has.

Layer: the bottom (inside :mod:`nbbench.results`); pure strings (no IPython, widgets or
matplotlib).  The model and its two renderers are :mod:`nbbench.results.present.rule`; this
mixin fills the model from a result: the answer first (:meth:`ResultView.answer_line`),
then what qualifies it (the subject, :meth:`ResultView.headline`, and the labels in
:attr:`ResultView.QUALIFIERS`), then the details folded (:meth:`ResultView.sections`).

A new result kind plugs in by overriding two methods:

* :meth:`~ResultView.answer_line` — what came out, in one line with units
  ("392 MB/s read · 69.7 MB/s write", "feeds 3 × h100-resnet50 (storage fetch limits it)",
  "CUDA not usable: CPU-only build of torch");
* :meth:`~ResultView.sections` — its own tables as :class:`~nbbench.results.present.rule.Section`
  (open: its main content; folded: details), usually ``[mine] + super().sections()``;

and, where it helps: :meth:`~ResultView.story` (sentences under the answer),
:attr:`~ResultView.QUALIFIERS` (labels shown beside it), :meth:`~ResultView.metric_name`
(better names for its metrics), :meth:`~ResultView.tone`.  Everything else — ``str()``
and the store's summary (:meth:`~ResultView.summary`), :meth:`~ResultView.text_table`
(the terminal), :meth:`~ResultView.details`, ``_repr_html_`` (the notebook, the panel,
the HTML report) — is drawn from :meth:`~ResultView.present`.
"""

from __future__ import annotations

import datetime as _dt
from typing import ClassVar

from ...units import format_many, format_metric, metric_label, metric_phrase, percentile_name, unit_of
from .. import advice as _advice
from .rule import ANSWER_SEP, SEP, Presentation, Rendered, Section, render_html, render_text, tone_of
from .summaries import fit_summary

__all__ = ["ResultView", "table_figures"]

#: metric units (:func:`~nbbench.units.unit_of`) that take an SI prefix: the unit
#: :func:`~nbbench.units.format_many` writes and the factor to it (durations in seconds)
_PREFIXED = {
    "bytes": ("B", 1.0),
    "bytes/s": ("B/s", 1.0),
    "iops": ("IOPS", 1.0),
    "flop/s": ("FLOP/s", 1.0),
    "samples/s": ("samples/s", 1.0),
    "files/s": ("files/s", 1.0),
    "batches/s": ("batches/s", 1.0),
    "requests/s": ("requests/s", 1.0),
    "keys/s": ("keys/s", 1.0),
    "1/s": ("/s", 1.0),
    "ns": ("s", 1e-9),
    "us": ("s", 1e-6),
    "ms": ("s", 1e-3),
    "s": ("s", 1.0),
}


def table_figures(items) -> list[str]:
    """The texts of metrics that stand in one table, ``[(key, value), …]``: the figures whose keys
    share a unit in one SI prefix (:func:`~nbbench.units.format_many`: '0.537 GB/s' beside
    '1.20 GB/s'), each other one as :func:`~nbbench.units.format_metric` (percentages, counts,
    text; memory sizes in binary units)."""
    items = list(items)
    out = [format_metric(k, v) for k, v in items]
    groups: dict[str, list[int]] = {}
    for i, (k, v) in enumerate(items):
        unit = unit_of(k)
        if (
            unit in _PREFIXED
            and isinstance(v, (int, float))
            and not isinstance(v, bool)
            and out[i] != "N/A"
            and not (unit == "bytes" and (k.endswith("_mem_bytes") or "memory" in k))
        ):
            groups.setdefault(unit, []).append(i)
    for unit, idx in groups.items():
        name, factor = _PREFIXED[unit]
        for i, text in zip(idx, format_many([items[i][1] * factor for i in idx], name)):
            out[i] = text
    return out


def _secs(ns):
    return None if ns is None else ns * 1e-9


def _known(v) -> bool:
    """A figure worth naming in an answer (not None, not NaN)."""
    return v is not None and not (isinstance(v, float) and v != v)


class ResultView:
    """The presentation methods of :class:`~nbbench.results.Result` (see the module doc)."""

    #: metrics the default answer names, in order (None: the first four figures)
    SUMMARY: ClassVar[tuple[str, ...] | None] = None
    #: labels that qualify the answer, shown beside it in this order; every label is also
    #: in the folded "how it was measured" section
    QUALIFIERS: ClassVar[tuple[str, ...]] = ("engine", "cache", "mode")
    #: labels a one-line summary names in brackets ("[builtin, direct]")
    TAGS: ClassVar[tuple[str, ...]] = ("engine", "cache", "mode")
    #: what :meth:`findings` counts, as a count line names it ("its checks: 2 fail, 4 warn")
    FINDINGS: ClassVar[str] = "checks"
    #: the answer line names its figures with :meth:`phrase`, so each carries its own ± there;
    #: False for a kind that words its answer itself: the spread is then named after it
    INLINE_SPREAD: ClassVar[bool] = True

    def spread(self) -> dict | None:
        """How far the headline figures spread (``extra["spread"]``, :func:`nbbench.results.runs.spread_of`):
        over the runs of ``--repeat N``, or the windows of one run; None when not known."""
        sp = self.extra.get("spread")
        return sp if isinstance(sp, dict) and (sp.get("figures") or sp.get("headline")) else None

    def _pm(self, key: str) -> str:
        # kept out of `import nbbench` (runs loads the statistics module)
        from ..runs import pm_text

        sp = self.spread()
        fig = (sp or {}).get("figures", {}).get(key)
        return pm_text(fig.get("pm")) if fig else ""

    def summary_metrics(self) -> list[str]:
        """The metrics the default answer names (:attr:`SUMMARY`, else the first four figures)."""
        if self.SUMMARY is not None:
            return [k for k in self.SUMMARY if k in self.metrics]
        return [k for k, v in self.metrics.items() if isinstance(v, (int, float)) and not isinstance(v, bool)][:4]

    def headline(self) -> str:
        """What the result is about — its subject, e.g. 'dd /dataset' (the answer is :meth:`answer_line`)."""
        target = self.params.get("path") or self.labels.get("device") or ""
        return f"{self.kind} {target}".strip()

    def metric_name(self, key: str) -> str:
        """The human name of one of this result's metrics (:func:`nbbench.units.metric_label`;
        a kind may say better, e.g. feed's "one h100-resnet50's AU")."""
        return metric_label(key)

    def phrase(self, key: str) -> str:
        """One metric as people read it, the figure first: '2.01 GB/s read', '74.8 kIOPS'."""
        own = self.metric_name(key)
        text = metric_phrase(key, self.metrics.get(key), None if own == metric_label(key) else own)
        pm = self._pm(key) if self.INLINE_SPREAD else ""
        return f"{text} {pm}" if pm else text

    def spread_note(self) -> str:
        """What the headline's ± is, after the answer: '(min…max of 5 runs)'; for a kind that words
        its answer itself, the figures too: '(samples/s ± 3 %, min…max of 5 runs)'; '' without spread."""
        # kept out of `import nbbench` (runs loads the statistics module)
        from ..runs import spread_clause

        sp = self.spread()
        clause = spread_clause(sp)
        if not clause or self.INLINE_SPREAD or not sp.get("figures"):
            return clause
        figs = [f"{self.metric_name(k)} {self._pm(k)}" for k in sp["figures"]]
        return f"({', '.join(figs)}: {clause[1:-1]})"

    def answer_line(self) -> str:
        """The answer in one line, with units — what a person reads first.  Override it in a
        result kind ("feeds 3 × h100-resnet50 (storage fetch limits it)"); this default names
        :meth:`summary_metrics`: "392 MB/s read · 69.7 MB/s write"."""
        figs = [self.phrase(k) for k in self.summary_metrics() if _known(self.metrics.get(k))]
        return SEP.join(figs) if figs else "no figures"

    def tone(self) -> str:
        """ok / warn / fail / interrupted / neutral (:func:`nbbench.results.present.rule.tone_of`)."""
        return tone_of(self.status, self.verdict)

    def lead(self) -> str:
        """:meth:`answer_line` with how the run ended when it did not end well ("FAILED: …")."""
        if self.status == "failed":
            return f"FAILED: {self.reason or self.answer_line()}"
        text = self.answer_line()
        note = self.spread_note() if text not in ("no figures", "") else ""
        text = f"{text} {note}" if note else text
        return f"{text} (INTERRUPTED)" if self.status == "interrupted" else text

    def qualifiers(self) -> list[tuple[str, str]]:
        """(name, value) pairs shown beside the subject: the labels named in :attr:`QUALIFIERS`."""
        return [(k, str(self.labels[k])) for k in self.QUALIFIERS if self.labels.get(k) not in (None, "")]

    def story(self) -> list[str]:
        """Sentences that explain the answer, shown right under it (none by default)."""
        return []

    def findings(self) -> dict[str, int] | None:
        """What this result's checks found, counted by status ({"fail": 2, "warn": 4, "ok": 10});
        None for a result without checks.  A count line (:func:`~nbbench.results.present.summaries.count_line`)
        counts them apart from the results."""
        return None

    def warnings_shown(self) -> list[str]:
        """The warnings shown under the answer (all of them; a kind whose tables already say
        them — the doctor's fixes — shows none twice)."""
        return list(self.warnings)

    def sections(self) -> list[Section]:
        """The tables under the answer; by default folded: every figure (those of one unit in one
        prefix: :func:`table_figures`), the latency
        percentiles in fio's compact rows, and how it was measured (every label).  A kind
        adds its own (``[my_table] + super().sections()``)."""
        # kept out of `import nbbench`: only a result with latency percentiles needs it
        from ..hist import PERCENTILES, percentile_key

        pkeys = {percentile_key(p) for p in PERCENTILES}
        shown = [(k, v) for k, v in self.metrics.items() if k not in pkeys]
        figs = [[self.metric_name(k), t] for (k, _), t in zip(shown, table_figures(shown))]  # one prefix a unit
        out = []
        if figs:
            out.append(
                Section(f"all {len(figs)} metrics" if len(figs) > 1 else "its metric", figs, css="nbbench-metrics")
            )
        have = [p for p in PERCENTILES if percentile_key(p) in self.metrics]
        figs = format_many([_secs(self.metrics[percentile_key(p)]) for p in have], "s")  # one unit for the row
        cells = [f"{percentile_name(p)} {f}" for p, f in zip(have, figs)]
        if cells:
            out.append(
                Section(
                    "latency percentiles",
                    [cells[i : i + 6] for i in range(0, len(cells), 6)],
                    align="l",
                    sep=SEP,
                    css="nbbench-percentiles",
                )
            )
        if self.labels:
            out.append(
                Section(
                    "how it was measured",
                    [[str(k), str(v)] for k, v in self.labels.items()],
                    align="ll",
                    css="nbbench-labels",
                )
            )
        return out

    def meta(self) -> str:
        """Where the result came from: 'run 12 · 2026-03-01T10:00:00 · env 1a2b3c4d5e6f · 12.3 s'."""
        when = _dt.datetime.fromtimestamp(self.started_at).isoformat(timespec="seconds")
        bits = [
            f"run {self.run_id}" if self.run_id is not None else "",
            when,
            f"env {self.env_id[:12]}" if self.env_id else "",
            format_metric("x_s", self.duration_s)
            if self.duration_s is not None and format_metric("x_s", self.duration_s) not in self.lead()
            else "",
        ]  # said once
        return SEP.join(b for b in bits if b)

    def present(self) -> Presentation:
        """This result in the one presentation rule's model (:mod:`nbbench.results.present.rule`)."""
        status = ""
        if self.status != "ok":
            status = self.status + (f": {self.reason}" if self.reason else "")
        story, sections = self.story(), self.sections()
        ranked = self.extra.get("answer") if "ranks" in self.labels else None
        if ranked and ranked not in story:  # many ranks: what they got together, said once
            story = [ranked] + story
        hosts = self.hosts_section()
        if hosts is not None:
            sections = [hosts] + sections
        runs = self.runs_section()
        if runs is not None:
            sections = sections + [runs]
        return Presentation(
            answer=self.lead(),
            tone=self.tone(),
            subject=self.headline(),
            qualifiers=self.qualifiers(),
            status=status,
            verdict=self.verdict,
            story=story,
            warnings=self.warnings_shown(),
            advice=self.advice_lines(),
            advice_html=[_advice.word_html(a, self.wording) for a in self.advice],
            sections=sections,
            meta=self.meta(),
        )

    def hosts_section(self) -> Section | None:
        """A many-rank result's per-host rows (elbencho's per-host view), open: host, ranks,
        the primary rate(s), CPU %, disk busy %; None for a one-process result."""
        rows = self.extra.get("hosts") or []
        if "ranks" not in self.labels or not rows:
            return None
        keys = [k for k in rows[0] if k.endswith("_per_s") or k == "iops"]
        head = ["host", "ranks"] + [metric_label(k) for k in keys] + ["CPU", "disk busy"]
        body = [
            [str(r.get("host")), str(r.get("ranks"))]
            + [format_metric(k, r.get(k)) for k in keys]
            + [
                format_metric("cpu_util_pct", r.get("cpu_util_pct")),
                format_metric("disk_busy_pct", r.get("disk_busy_pct")),
            ]
            for r in rows
        ]
        return Section("per host", body, head=head, folded=False, css="nbbench-hosts")

    def runs_section(self) -> Section | None:
        """The runs of ``--repeat N`` (folded): each run's headline figures; None for one run."""
        runs = getattr(self, "runs", None) or []
        if len(runs) < 2:
            return None
        # kept out of `import nbbench` (runs loads the statistics module)
        from ..runs import headline_keys

        keys = headline_keys(self)
        head = ["run"] + [self.metric_name(k) for k in keys]
        body = [[str(i + 1)] + [format_metric(k, r.get(k)) for k in keys] for i, r in enumerate(runs)]
        body.append(["median"] + [format_metric(k, self.metrics.get(k)) for k in keys])
        return Section(f"{len(runs)} runs", body, head=head, css="nbbench-runs")

    def summary(self, width: int | None = None) -> str:
        """One line, the answer first: '392 MB/s read · 69.7 MB/s write — dd /data/x [builtin, direct]
        (1 warning)'; with ``width``, cut to it without cutting a figure (:func:`fit_summary`)."""
        tags = [str(self.labels[k]) for k in self.TAGS if self.labels.get(k) not in (None, "")]
        s = self.lead() + ANSWER_SEP + self.headline()
        if tags:
            s += " [" + ", ".join(tags) + "]"
        n = len(self.warnings_shown())
        if n:
            s += f" ({n} warning{'s' if n > 1 else ''})"
        return fit_summary(s, width)

    def __str__(self) -> str:
        return self.summary()

    def __repr__(self) -> str:
        rid = f" run_id={self.run_id}" if self.run_id is not None else ""
        return f"<{type(self).__name__} {self}{rid}>"

    def _repr_pretty_(self, p, cycle):
        if cycle:
            p.text(f"{type(self).__name__}(...)")
            return
        p.text(self.text_table())

    def text_table(self, width: int | None = None, details: bool = False, ansi: bool = False) -> str:
        """The terminal's view: the answer, what qualifies it, warnings, advice, the open
        sections; the folded ones named on one line, shown with ``details`` (``--details``)."""
        if width is None:
            import shutil

            width = min(120, shutil.get_terminal_size((100, 24)).columns)
        return render_text(self.present(), width=width, details=details, ansi=ansi)

    def details(self) -> Rendered:
        """Everything, unfolded: the full text (``print(r.details())``) and the HTML with every
        ``<details>`` open (a notebook shows it as the cell's value)."""
        p = self.present()
        return Rendered(render_text(p, width=100, details=True), render_html(p, open_details=True))

    def html(self, open_details: bool = False) -> str:
        """The HTML view (:func:`nbbench.results.present.rule.render_html`)."""
        return render_html(self.present(), open_details=open_details)

    def _repr_html_(self) -> str:
        return self.html()
