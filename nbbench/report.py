"""A shareable report: a paragraph that answers first (the headline deltas, what was
compared, the doctor's findings that bear on it), the selected results with their plots and
comparisons, then the environment fingerprint and the doctor's full table.  :func:`build`
gathers the data, :func:`report` renders it with an exporter (``nbbench.exporters``: html,
md, json) and writes it.
"""

from __future__ import annotations

import datetime as _dt
import html as _html
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .compare import compare
from .doctor import doctor
from .exporters import FORMATS, exporter
from .exporters.fio import is_disk_result, to_fio
from .exporters.summary import doctor_scope, summary
from .results import ProbeError, Result, advice
from .results.present.summaries import count_line
from .results.system.env import ENV_ROWS as _ENV_ROWS
from .results.system.env import env_rows as _env_rows
from .store import default_store

__all__ = ["ReportData", "Report", "build", "report", "default_filename", "ENV_ROWS"]

#: (label, getter over a fingerprint) rows shown for each environment (:data:`nbbench.results.system.env.ENV_ROWS`)
ENV_ROWS = _ENV_ROWS


@dataclass
class ReportData:
    title: str
    created_at: float
    environment: dict[str, Any]  # this machine, now
    environments: dict[str, dict[str, Any]] = field(default_factory=dict)  # env_id -> fingerprint of the results
    doctor: Any = None  # DoctorResult | None
    results: list[Result] = field(default_factory=list)
    comparisons: list[Any] = field(default_factory=list)  # nbbench.compare.Comparison
    notes: list[str] = field(default_factory=list)

    @property
    def created_iso(self) -> str:
        return _dt.datetime.fromtimestamp(self.created_at).astimezone().isoformat(timespec="seconds")

    def env_rows(self, fp: dict[str, Any]) -> list[tuple[str, str]]:
        return _env_rows(fp)

    def summary(self, doctor: bool = True) -> str:
        """The opening paragraph, plain text: the headline deltas (figures first, with units),
        what was compared (kinds, hosts, paths) and what the doctor found among the checks
        that bear on these results (:func:`nbbench.exporters.summary.summary`)."""
        return summary(self, doctor=doctor)

    def doctor_scope(self):
        """The doctor's checks split into those that bear on these results and the others
        (:class:`nbbench.exporters.summary.DoctorScope`); None without a doctor."""
        return doctor_scope(self.doctor, self.results)

    def disk_results(self) -> list[Result]:
        return [r for r in self.results if is_disk_result(r)]

    def fio(self) -> dict[str, Any] | None:
        disk = self.disk_results()
        return to_fio(disk) if disk else None


@dataclass
class Report:
    """A rendered report: ``text`` in ``format``, written to ``path`` (None: not written)."""

    format: str
    text: str
    path: str | None
    data: ReportData
    files: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        """'report (html) /out/r.html: 2 results: 2 ok; the doctor's checks on them: 3 warn, 5 ok
        (10 others in the report)' — the results and the doctor's findings counted apart, the
        findings scoped as the report's badge is (a storage report counts no GPU check)."""
        text = count_line(self.data.results)
        scope = self.data.doctor_scope()
        if scope is not None and (scope.checks or scope.others):
            found = ", ".join(f"{n} {s}" for s, n in scope.counts().items() if n)
            others = f" ({len(scope.others)} others in the report)" if scope.others else ""
            text += (
                f"; the doctor's checks on them: {found}{others}"
                if scope.checks
                else f"; none of the doctor's {len(scope.others)} checks bears on them (all in the report)"
            )
        where = self.path or "(not written)"
        return f"report ({self.format}) {where}: {text}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "path": self.path,
            "files": self.files,
            "run_ids": [r.run_id for r in self.data.results],
            "doctor": dict(self.data.doctor.metrics) if self.data.doctor is not None else None,
        }

    def to_json(self, **kw) -> str:
        import json

        kw.pop("orient", None)
        return json.dumps(self.to_dict(), default=str, **kw)

    def _repr_html_(self) -> str:
        esc = _html.escape
        link = esc(self.path or "")
        if self.path:
            try:
                rel = os.path.relpath(self.path)
            except ValueError:
                rel = self.path
            link = f"<a href='{esc(rel)}' target='_blank'>{esc(rel)}</a>"
        return (
            f"<div class='nbbench-report'><b>nbbench report</b> ({esc(self.format)}) {link} — "
            f"{esc(str(self).split(': ', 1)[-1])}</div>"
        )


def default_filename(fmt: str, when: float | None = None) -> str:
    t = _dt.datetime.fromtimestamp(when) if when else _dt.datetime.now()
    ext = {"html": "html", "md": "md", "markdown": "md", "json": "json"}[fmt]
    return f"nbbench-report-{t:%Y%m%d-%H%M%S}.{ext}"


def _select(store, runs: Sequence[Any] | None, last: int, kind: str | None, label: str | None) -> list[Result]:
    if runs:
        out: list[Result] = []
        seen = set()
        for ref in runs:
            if isinstance(ref, Result):
                found = [ref]
            else:
                try:
                    found = store.find(ref)
                except KeyError:
                    raise ProbeError(
                        f"no stored run has id or label {str(ref)!r}", advice=[advice.entry("see {command}", "history")]
                    ) from None
            for r in found:
                key = r.run_id if r.run_id is not None else id(r)
                if key not in seen:
                    seen.add(key)
                    out.append(r)
        return out
    frame = store.history(kind=kind, label=label)
    if len(frame) == 0:
        return []
    if kind is None:
        frame = frame[frame["kind"] != "doctor"]
    ids = [int(i) for i in frame["run_id"].tolist()][-last:] if last else [int(i) for i in frame["run_id"]]
    return [store.get(i) for i in ids]


def _references(rs: list[Result]) -> list[list[Result]]:
    """A kind's results as a comparison's references: the runs of one label together (pooled as
    repeats where their settings agree, :mod:`nbbench.compare.select`), an unlabelled run alone."""
    refs: dict[str, list[Result]] = {}
    for r in rs:
        key = str(r.labels.get("label")) if r.labels.get("label") else f"#{r.run_id if r.run_id is not None else id(r)}"
        refs.setdefault(key, []).append(r)
    return list(refs.values())


def build(
    runs: Sequence[Any] | None = None,
    last: int = 10,
    kind: str | None = None,
    label: str | None = None,
    path: str | None = None,
    run_doctor: bool = True,
    doctor_checks=None,
    store=None,
    title: str | None = None,
    compare_runs: bool = True,
) -> ReportData:
    """Gather what a report shows.

    ``runs``: ids / labels / Results (default: the latest ``last`` stored runs, doctor runs
    left out, filtered by ``kind`` / ``label``).  ``path``: the directory the doctor checks
    (default: the first selected result's path if it exists here, else the current directory).
    """
    import time

    # the environment's summary (not the report's, imported at the top); tests replace env.fingerprint
    from .env import fingerprint, summary

    if store is None:
        store = default_store()
    results = _select(store, runs, last, kind, label)
    fp = summary(fingerprint())
    data = ReportData(title=title or f"nbbench report — {fp.get('host')}", created_at=time.time(), environment=fp)
    data.results = results
    for r in results:
        if r.env_id and r.env_id not in data.environments:
            if r.env_id == fp.get("id"):
                data.environments[r.env_id] = fp
                continue
            try:
                data.environments[r.env_id] = summary(store.environment(r.env_id))
            except KeyError:
                data.notes.append(f"the environment {r.env_id} of run {r.run_id} is not in the store")
    if run_doctor:
        if path is None:
            for r in results:
                p = r.params.get("path")
                if p and os.path.isdir(str(p)):
                    path = str(p)
                    break
        data.doctor = doctor(path or os.getcwd(), checks=doctor_checks)
    if compare_runs:
        kinds: dict[str, list[Result]] = {}
        for r in results:
            if r.kind != "doctor":
                kinds.setdefault(r.kind, []).append(r)
        for rs in kinds.values():
            refs = _references(rs)
            if len(refs) >= 2:
                try:
                    data.comparisons.append(compare(refs, store=store))
                except ProbeError:
                    pass
    return data


def report(
    fmt: str | None = None,
    out: str | os.PathLike | None = None,
    data: ReportData | None = None,
    overwrite: bool = False,
    **build_kw,
) -> Report:
    """Build (unless ``data`` is given), render as ``fmt`` and write to ``out``.

    ``fmt`` defaults to the suffix of ``out`` (.html / .md / .json), else html.  ``out``:
    a file path; ``"-"`` writes nothing (the text is in the returned Report); default
    ``nbbench-report-YYYYmmdd-HHMMSS.EXT`` in the current directory.  An existing file
    is replaced only with ``overwrite=True``.
    """
    if fmt is None:
        suffix = Path(str(out)).suffix.lower().lstrip(".") if out not in (None, "-") else ""
        fmt = (
            {"htm": "html", "markdown": "md"}.get(suffix, suffix)
            if suffix in ("html", "htm", "md", "markdown", "json")
            else "html"
        )
    if fmt == "markdown":
        fmt = "md"
    if fmt not in FORMATS:
        raise ProbeError(f"unknown report format {fmt!r}: choose from {', '.join(FORMATS)}")
    if data is None:
        data = build(**build_kw)
    path = None
    if out != "-":
        path = os.path.abspath(os.fspath(out) if out is not None else default_filename(fmt, data.created_at))
        parent = os.path.dirname(path)
        if not os.path.isdir(parent):
            raise ProbeError(f"cannot write the report: {parent} is not a directory")
        if os.path.isdir(path):
            raise ProbeError(f"{path} is a directory: give a file name for --out")
        if os.path.exists(path) and not overwrite:
            raise ProbeError(f"{path} exists: give another --out, or --force to replace it")
    files: list[str] = []
    text = exporter(fmt)(data, path=path, files=files)
    if path is not None:
        try:
            Path(path).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise ProbeError(f"cannot write the report to {path}: {exc.strerror or exc}") from None
    return Report(format=fmt, text=text, path=path, data=data, files=files)
