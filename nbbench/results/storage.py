"""Result classes of the storage probes (kinds ``dd``, ``io``, ``randread``, ``disk``, ``files``)."""

from __future__ import annotations

import math
from typing import Any

from .base import Result, register
from .hist import PERCENTILES, LatencyHistogram, percentile_key

__all__ = ["DiskResult", "IoJobResult", "RandreadResult", "DiskPresetResult", "FilesResult"]


class _StorageMixin:
    def headline(self) -> str:
        return f"{self.kind} {self.params.get('path', '')}".strip()


@register("dd")
class DiskResult(_StorageMixin, Result):
    """dd-style sequential write then read.  ``samples['write_bw']`` / ``['read_bw']``
    hold the bandwidth in 500 ms windows (``t_s``, ``*_bytes_per_s``)."""

    SUMMARY = ("write_bytes_per_s", "read_bytes_per_s")

    @property
    def write_bytes_per_s(self) -> float | None:
        return self.metrics.get("write_bytes_per_s")

    @property
    def read_bytes_per_s(self) -> float | None:
        return self.metrics.get("read_bytes_per_s")


@register("io")
class IoJobResult(_StorageMixin, Result):
    """One stream of I/O (a row of a preset, a randread): bandwidth, IOPS, latency."""

    SUMMARY = ("iops", "read_bytes_per_s", "write_bytes_per_s", "lat_mean_ns", "lat_p99_ns")

    @property
    def percentiles(self) -> dict[float, float]:
        return {p: self.metrics.get(percentile_key(p)) for p in PERCENTILES}

    def histogram(self) -> LatencyHistogram | None:
        d = self.samples.get("lat_hist")
        return LatencyHistogram.from_dict(d) if d else None

    def text_table(self) -> str:
        """Headline, labels, the main figures, then the 17 latency percentiles in rows of six."""
        from ._text import text_table

        return text_table(self)


@register("randread")
class RandreadResult(IoJobResult):
    """Random reads: ``iops``, ``read_bytes_per_s``, ``lat_mean_ns``/``lat_stddev_ns`` and fio's
    17 percentiles (``lat_p1_ns`` … ``lat_p99_99_ns``), ``qd_reached``."""

    SUMMARY = ("iops", "read_bytes_per_s", "lat_mean_ns", "lat_p99_ns")


@register("disk")
class DiskPresetResult(_StorageMixin, Result):
    """A preset table (CrystalDiskMark-like).  ``rows`` are the sub-results."""

    SUMMARY = None

    def summary_metrics(self) -> list[str]:
        keys = [k for k in self.metrics if k.endswith("_bytes_per_s")][:2]
        rnd = [k for k in self.metrics if k.startswith("rnd") and k.endswith("_read_iops")][:1]
        return keys + rnd

    def headline(self) -> str:
        return f"disk {self.params.get('preset', '')} {self.params.get('path', '')}".strip()

    @property
    def rows(self) -> list[Result]:
        return [Result.from_dict(d) for d in self.samples.get("rows", [])]

    def table(self) -> list[dict[str, Any]]:
        """[{test, read_bytes_per_s, write_bytes_per_s, read_iops, write_iops, ...}] in preset order."""
        out: dict[str, dict[str, Any]] = {}
        for r in self.samples.get("rows", []):
            name = r["params"]["test"]
            row = out.setdefault(name, {"test": name})
            op = r["params"]["op"]
            row[f"{op}_bytes_per_s"] = r["metrics"].get(f"{op}_bytes_per_s")
            row[f"{op}_iops"] = r["metrics"].get("iops")
            row[f"{op}_lat_mean_ns"] = r["metrics"].get("lat_mean_ns")
            if "samples_per_s" in r["metrics"]:
                row[f"{op}_samples_per_s"] = r["metrics"]["samples_per_s"]
        return list(out.values())

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame(self.table())

    def text_table(self) -> str:
        rows = self.table()
        has_w = any("write_bytes_per_s" in r for r in rows)
        lines = [str(self)]
        if self.labels:
            lines.append("  " + "  ".join(f"{k}={v}" for k, v in self.labels.items()))
        head = f"  {'':<16}{'Read [MB/s]':>13}" + (f"{'Write [MB/s]':>14}" if has_w else "") + f"{'Read IOPS':>12}"
        lines.append(head)
        for r in rows:
            rd = r.get("read_bytes_per_s")
            wr = r.get("write_bytes_per_s")
            line = f"  {r['test']:<16}{_mbs(rd):>13}"
            if has_w:
                line += f"{_mbs(wr):>14}"
            line += f"{_num(r.get('read_iops')):>12}"
            lines.append(line)
        for w in self.warnings:
            lines.append(f"  warning: {w}")
        lines += [f"  advice: {a}" for a in self.advice_lines()]
        return "\n".join(lines)

    def _repr_pretty_(self, p, cycle):
        p.text(self.text_table())

    def _repr_html_(self) -> str:
        import html

        rows = self.table()
        has_w = any("write_bytes_per_s" in r for r in rows)
        esc = html.escape
        colour = {"ok": "#2e7d32", "interrupted": "#ef6c00", "failed": "#c62828"}[self.status]
        out = [f"<div class='nbbench-result'><b>{esc(self.headline())}</b> "
               f"<span style='color:{colour};font-weight:bold'>{esc(self.status)}</span>"]
        if self.reason:
            out.append(f" — {esc(self.reason)}")
        out.append("<div style='font-size:90%'>" + " · ".join(
            f"{esc(str(k))}: <code>{esc(str(v))}</code>" for k, v in self.labels.items()) + "</div>")
        th = "<th style='text-align:right'>"
        out.append("<table class='nbbench-metrics'><tr><th></th>" + th + "Read [MB/s]</th>"
                   + (th + "Write [MB/s]</th>" if has_w else "") + th + "Read IOPS</th>"
                   + (th + "Write IOPS</th>" if has_w else "") + "</tr>")
        for r in rows:
            out.append(f"<tr><td style='text-align:left;font-weight:bold'>{esc(r['test'])}</td>"
                       f"<td style='text-align:right'>{_mbs(r.get('read_bytes_per_s'))}</td>"
                       + (f"<td style='text-align:right'>{_mbs(r.get('write_bytes_per_s'))}</td>" if has_w else "")
                       + f"<td style='text-align:right'>{_num(r.get('read_iops'))}</td>"
                       + (f"<td style='text-align:right'>{_num(r.get('write_iops'))}</td>" if has_w else "")
                       + "</tr>")
        out.append("</table>")
        if self.warnings:
            out.append("<ul style='color:#ef6c00'>" + "".join(f"<li>{esc(w)}</li>" for w in self.warnings) + "</ul>")
        out.append(self.advice_html())
        out.append("</div>")
        return "".join(out)


def _mbs(v) -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v / 1e6:.2f}"


def _num(v) -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:,.0f}"


@register("files")
class FilesResult(Result):
    """files/s, bytes/s, per-file latency percentiles; ``samples['size_hist']`` is the
    tree's file-size distribution (bucket bytes, counts)."""

    SUMMARY = ("files_per_s", "read_bytes_per_s", "lat_p50_ns", "lat_p99_ns")

    def headline(self) -> str:
        return f"files {self.params.get('path', '')}".strip()

    def text_table(self) -> str:
        from ._text import text_table

        return text_table(self)

    def size_histogram(self) -> LatencyHistogram | None:
        d = self.samples.get("size_hist")
        return LatencyHistogram.from_dict(d) if d else None
