"""Result classes of the storage probes (kinds ``dd``, ``io``, ``randread``, ``disk``, ``files``)."""

from __future__ import annotations

import math
from typing import Any

from ...units import format_bytes, format_many, format_metric, format_si, format_sig, percentile_name
from ..base import Result, metric, register
from ..hist import PERCENTILES, LatencyHistogram, percentile_key
from ..present.rule import SEP, Section

__all__ = ["DiskResult", "IoJobResult", "RandreadResult", "DiskPresetResult", "FilesResult", "percentiles_frame"]


class _StorageMixin:
    #: how a storage figure was measured, beside it: the engine, the page cache, where
    QUALIFIERS = ("engine", "cache", "filesystem", "device")

    def sections(self) -> list[Section]:
        """--jobs N: one folded table per phase with a row per job (the figures above are their sums)."""
        out = super().sections()
        for key, op in (("jobs", None), ("read_jobs", "read"), ("write_jobs", "write")):
            rows = self.samples.get(key)
            if not rows:
                continue
            body = [
                [
                    str(r["job"] + 1),
                    format_metric("iops", r.get("iops")),
                    format_metric("read_bytes_per_s", r.get("bytes_per_s")),
                    format_metric("x_ns", r.get("lat_mean_ns")),
                    format_metric("x_ns", r.get("lat_p99_ns")),
                    "—" if r.get("engine_cpu_pct") is None else f"{r['engine_cpu_pct']:.0f} %",
                ]
                for r in rows
            ]
            out.insert(
                len(out) - 1 if out and out[-1].css == "nbbench-labels" else len(out),
                Section(
                    f"per job{f' ({op})' if op else ''}: {len(rows)} processes",
                    body,
                    head=["job", "IOPS", "bytes/s", "latency mean", "latency p99", "I/O thread CPU"],
                    css="nbbench-metrics",
                ),
            )
        return out


def _block(n) -> str:
    """A block or file size as people write it: 4096 -> '4 KiB', 1.5 MiB -> '1.50 MiB'."""
    if not isinstance(n, int) or isinstance(n, bool):
        return format_bytes(n, True) if isinstance(n, float) else str(n)
    for scale, unit in ((2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if n >= scale:
            return f"{n // scale} {unit}" if n % scale == 0 else format_bytes(n, True)
    return f"{int(n)} B"


def percentiles_frame(runs, unit: str | None = None):
    """Latency percentiles side by side, as people read them: one row per run, columns
    ``p1`` … ``p99.99``, values in ``unit`` (ns, µs, ms or s; None: the one unit the largest
    value needs, as :func:`nbbench.units.format_many` picks it — "1.56 … 55.8" ms, never
    "1560.0 … 55800.0" µs), the columns' name saying so ("latency [ms]").  ``runs``: a dict
    ``{name: result}``, a list of results, or one result."""
    import pandas as pd

    if isinstance(runs, Result):
        runs = [runs]
    items = runs.items() if isinstance(runs, dict) else [(r.headline(), r) for r in runs]
    if unit is None:
        every = [r.metrics.get(percentile_key(p)) for _, r in items for p in PERCENTILES]
        unit = format_many([max([v for v in every if v is not None] or [0]) * 1e-9], "s")[0].split(" ")[-1]
    scale = {"ns": 1.0, "µs": 1e3, "us": 1e3, "ms": 1e6, "s": 1e9}[unit]
    cols = [percentile_name(p) for p in PERCENTILES]
    data = {}
    for name, r in items:
        vals = [r.metrics.get(percentile_key(p)) for p in PERCENTILES]
        data[name] = [None if v is None else float(f"{v / scale:.3g}") for v in vals]
    frame = pd.DataFrame.from_dict(data, orient="index", columns=cols)
    frame.columns.name = f"latency [{'µs' if unit == 'us' else unit}]"
    return frame


@register("dd")
class DiskResult(_StorageMixin, Result):
    """dd-style sequential write then read.  ``samples['write_bw']`` / ``['read_bw']``
    hold the bandwidth in 500 ms windows (``t_s``, ``*_bytes_per_s``)."""

    SUMMARY = ("write_bytes_per_s", "read_bytes_per_s")

    def qualifiers(self) -> list[tuple[str, str]]:
        """How much in which blocks ('16 MiB in 1 MiB blocks'), then engine, cache, where."""
        size, bs = self.params.get("size"), self.params.get("bs")
        what = f"{_block(size)} in {_block(bs)} blocks" if size and bs else ""
        return [("", what)] * bool(what) + super().qualifiers()

    write_bytes_per_s = metric()

    read_bytes_per_s = metric()


@register("io")
class IoJobResult(_StorageMixin, Result):
    """One stream of I/O (a row of a preset, a randread): bandwidth, IOPS, latency."""

    SUMMARY = ("iops", "read_bytes_per_s", "write_bytes_per_s", "lat_mean_ns", "lat_p99_ns")

    @property
    def percentiles(self) -> dict[float, float]:
        """fio's 17 latency percentiles in ns, by percentile (99.9 -> ns); for people:
        :meth:`percentiles_frame`."""
        return {p: self.metrics.get(percentile_key(p)) for p in PERCENTILES}

    def percentiles_frame(self, unit: str | None = None):
        """The percentiles as a one-row DataFrame: columns p1 … p99.99, in ``unit`` (None: one
        fitting unit, "latency [ms]")."""
        return percentiles_frame([self], unit)

    def histogram(self) -> LatencyHistogram | None:
        d = self.samples.get("lat_hist")
        return LatencyHistogram.from_dict(d) if d else None

    def qualifiers(self) -> list[tuple[str, str]]:
        """The I/O shape (4 KiB random reads, QD 32 × 1 thread), then engine, cache, where."""
        p = self.params
        bs = p.get("bs")
        what = " ".join(
            x
            for x in (
                _block(bs) if bs else "",
                {"rand": "random", "seq": "sequential"}.get(p.get("pattern"), ""),
                {"read": "reads", "write": "writes"}.get(p.get("op"), ""),
            )
            if x
        )
        if p.get("qd") is not None:
            what += f" at QD {p['qd']}" + (f" × {p['threads']} threads" if (p.get("threads") or 1) > 1 else "")
            what += f" × {p['jobs']} jobs" if (p.get("jobs") or 1) > 1 else ""
        return [("", what.strip())] * bool(what.strip()) + super().qualifiers()


@register("randread")
class RandreadResult(IoJobResult):
    """Random reads: ``iops``, ``read_bytes_per_s``, ``lat_mean_ns``/``lat_stddev_ns`` and fio's
    17 percentiles (``lat_p1_ns`` … ``lat_p99_99_ns``), ``qd_reached``."""

    SUMMARY = ("iops", "read_bytes_per_s", "lat_mean_ns", "lat_p99_ns")


@register("disk")
class DiskPresetResult(_StorageMixin, Result):
    """A preset table (CrystalDiskMark-like).  ``rows`` are the sub-results."""

    SUMMARY = None
    INLINE_SPREAD = False

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

    FINDINGS = "tests"

    def findings(self) -> dict[str, int] | None:
        """The preset's tests (read and write of each) by how they ran: {"ok": 8}."""
        found: dict[str, int] = {}
        for r in self.samples.get("rows", []):
            found[r.get("status", "ok")] = found.get(r.get("status", "ok"), 0) + 1
        return found or None

    def answer_line(self) -> str:
        """The first test's read (and write) bandwidth and the last random test's IOPS:
        'SEQ1M Q8T1 290 MB/s read, 560 MB/s write · RND4K Q1T1 13.2 kIOPS read'."""
        rows = self.table()
        if not rows:
            return "no tests ran"
        first = rows[0]
        parts = [
            f"{format_metric('x_bytes_per_s', first[k])} {k.split('_')[0]}"
            for k in ("read_bytes_per_s", "write_bytes_per_s")
            if first.get(k) is not None
        ]
        out = [f"{first['test']} {', '.join(parts)}"] if parts else []
        rnd = [r for r in rows[1:] if str(r["test"]).upper().startswith("RND") and r.get("read_iops")]
        if rnd:
            out.append(f"{rnd[-1]['test']} {format_metric('iops', rnd[-1]['read_iops'])} read")
        return SEP.join(out) or "no figures"

    def sections(self) -> list[Section]:
        """The preset's table (open), then how it was measured (folded)."""
        rows = self.table()
        has_w = any(r.get("write_bytes_per_s") is not None for r in rows)
        head = ["test", "Read [MB/s]"] + ["Write [MB/s]"] * has_w + ["Read IOPS"] + ["Write IOPS"] * has_w
        body = []
        for r in rows:
            line = [str(r["test"]), _mbs(r.get("read_bytes_per_s"))]
            line += [_mbs(r.get("write_bytes_per_s"))] * has_w + [_num(r.get("read_iops"))]
            line += [_num(r.get("write_iops"))] * has_w
            body.append(line)
        table = Section(
            self.labels.get("preset") or str(self.params.get("preset") or "tests"),
            body,
            head=head,
            folded=False,
            css="nbbench-metrics nbbench-preset",
        )
        return [table] + [s for s in super().sections() if s.css == "nbbench-labels"]


def _mbs(v) -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else format_sig(v / 1e6)


def _num(v) -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else format_si(v, "")


@register("files")
class FilesResult(Result):
    """files/s, bytes/s, per-file latency percentiles; ``samples['size_hist']`` is the
    tree's file-size distribution (bucket bytes, counts)."""

    SUMMARY = ("files_per_s", "read_bytes_per_s", "lat_p50_ns", "lat_p99_ns")
    QUALIFIERS = _StorageMixin.QUALIFIERS

    def headline(self) -> str:
        return f"files {self.params.get('path', '')}".strip()

    def size_histogram(self) -> LatencyHistogram | None:
        d = self.samples.get("size_hist")
        return LatencyHistogram.from_dict(d) if d else None
