"""Result of the s3 probe (kind ``s3``): GETs from object storage at N concurrent streams.

Metrics (base units): ``get_bytes_per_s`` and ``requests_per_s`` (the measured phase, all
streams together: the headline), ``ttfb_p50_ns`` / ``ttfb_p90_ns`` / ``ttfb_p99_ns`` (request
sent to response headers received), ``lat_p*_ns`` (to the last byte), ``streams_count``,
``knee_streams_count`` (the concurrency sweep's knee), ``sweep_best_bytes_per_s``,
``whole_get_bytes_per_s`` / ``ranged_get_bytes_per_s`` (the same large objects read whole
and in ranges), ``list_keys_per_s``, ``retries_count``.  ``samples["sweep"]`` holds the
sweep's rows, ``samples["classes"]`` one row per object-size class, ``samples["bw"]`` the
measured phase in 500 ms windows, ``samples["ttfb_hist"]`` / ``["lat_hist"]`` fio's histograms.
"""

from __future__ import annotations

from ...units import format_bytes, format_metric
from .. import drawing
from ..base import Result, register
from ..hist import LatencyHistogram
from ..present.rule import Section

__all__ = ["S3Result", "knee_sentence"]


def knee_sentence(m: dict, rows: list[dict]) -> str | None:
    """'32 streams reach the sweep's best; 16 streams reach within 5 % of it', or None without a
    sweep (the figures are the sweep's table: said once)."""
    if not rows or m.get("sweep_best_bytes_per_s") is None:
        return None
    best, k = m.get("sweep_best_streams_count"), m.get("knee_streams_count")
    s = f"{best} streams reach the sweep's best"
    last = rows[-1]["streams"]
    if k is not None and k < last:
        s += f"; {k} stream{'s' if k != 1 else ''} reach within 5 % of it"
    elif k == last:
        s += f"; still rising at {last} streams (try --max-streams {last * 2})"
    return s


@register("s3")
class S3Result(Result):
    """GET throughput, TTFB and latency from an S3 bucket, with the concurrency sweep."""

    SUMMARY = ("get_bytes_per_s", "requests_per_s", "ttfb_p50_ns", "ttfb_p99_ns")
    INLINE_SPREAD = False  # its answer is worded by itself: the spread is named after it
    QUALIFIERS = ("endpoint", "region")
    TAGS = ("endpoint",)

    def headline(self) -> str:
        return f"s3 {self.params.get('path', '')}".strip()

    def metric_name(self, key: str) -> str:
        names = {
            "get_bytes_per_s": "GET",
            "requests_per_s": "requests/s",
            "ttfb_p50_ns": "TTFB p50",
            "ttfb_p90_ns": "TTFB p90",
            "ttfb_p99_ns": "TTFB p99",
            "streams_count": "streams",
            "knee_streams_count": "the sweep's knee (streams)",
            "whole_get_bytes_per_s": "whole-object GETs",
            "ranged_get_bytes_per_s": "ranged GETs",
            "list_keys_per_s": "LIST",
            "sweep_best_bytes_per_s": "the sweep's best",
            "list_s": "LIST time",
            "sweep_best_streams_count": "the sweep's best (streams)",
            "list_keys_count": "keys listed",
            "list_pages_count": "LIST pages",
            "objects_bytes": "objects' total size",
            "objects_count": "objects",
            "requests_count": "requests",
            "retries_count": "retries",
            "errors_count": "failed requests",
            "put_bytes_per_s": "PUT",
            "put_requests_per_s": "PUT requests/s",
            "put_lat_p50_ns": "PUT latency p50",
            "put_lat_p99_ns": "PUT latency p99",
            "put_count": "PUTs",
            "multipart_bytes_per_s": "multipart upload",
            "multipart_parts_count": "multipart parts",
            "deleted_count": "keys deleted",
        }
        return names.get(key) or super().metric_name(key)

    def answer_line(self) -> str:
        m = self.metrics
        if m.get("get_bytes_per_s") is None:
            return "no figures"
        s = f"{format_metric('get_bytes_per_s', m['get_bytes_per_s'])} GET"
        if m.get("requests_per_s") is not None:
            s += f" · {format_metric('requests_per_s', m['requests_per_s'])}"
        if m.get("ttfb_p50_ns") is not None:
            s += (
                f" · TTFB {format_metric('ttfb_p50_ns', m['ttfb_p50_ns'])} p50, "
                f"{format_metric('ttfb_p99_ns', m.get('ttfb_p99_ns'))} p99"
            )
        if m.get("streams_count"):
            s += f" · {m['streams_count']} streams"
        return s

    def story(self) -> list[str]:
        out = []
        k = knee_sentence(self.metrics, self.samples.get("sweep") or [])
        if k:
            out.append(k[0].upper() + k[1:] + ".")
        m = self.metrics
        if m.get("ranged_get_bytes_per_s") and m.get("whole_get_bytes_per_s"):
            r = m["ranged_get_bytes_per_s"] / m["whole_get_bytes_per_s"]
            out.append(
                f"Ranged GETs of {format_bytes(self.params.get('part_size'), binary=True)} read "
                f"{format_metric('x_bytes_per_s', m['ranged_get_bytes_per_s'])} against "
                f"{format_metric('x_bytes_per_s', m['whole_get_bytes_per_s'])} for whole objects "
                f"({r:.2f}× at the same streams)."
            )
        if m.get("put_bytes_per_s") is not None:
            s = f"PUTs wrote {format_metric('x_bytes_per_s', m['put_bytes_per_s'])}"
            if m.get("multipart_bytes_per_s") is not None:
                s += f", a multipart upload {format_metric('x_bytes_per_s', m['multipart_bytes_per_s'])}"
            out.append(s + f"; all {m.get('deleted_count', 0)} keys written were deleted.")
        return out

    def plot(self, ax=None):
        """GET throughput against streams, the knee marked (the "s3_sweep" drawer:
        :mod:`nbbench.results.drawing`); None without a sweep."""
        return drawing.draw("s3_sweep", self, ax)

    figure = plot

    def ttfb_histogram(self) -> LatencyHistogram | None:
        d = self.samples.get("ttfb_hist")
        return LatencyHistogram.from_dict(d) if d else None

    def sections(self) -> list[Section]:
        out = []
        rows = self.samples.get("sweep") or []
        if rows:
            k = self.metrics.get("knee_streams_count")
            figs = (("x_bytes_per_s", "get_bytes_per_s"), ("requests_per_s", "requests_per_s"), ("x_ns", "ttfb_p50_ns"))
            table = [[f"{r['streams']}{' (knee)' if r['streams'] == k else ''}", *_cells(r, figs)] for r in rows]
            out.append(
                Section(
                    "concurrency sweep", head=["streams", "GET", "requests/s", "TTFB p50"], rows=table, folded=False
                )
            )
        cls = self.samples.get("classes") or []
        if cls:
            figs = (
                ("x_ns", "ttfb_p50_ns"),
                ("x_ns", "lat_p50_ns"),
                ("x_ns", "lat_p99_ns"),
                ("x_bytes_per_s", "request_bytes_per_s"),
            )
            head = ["objects", "requests", "TTFB p50", "latency p50", "latency p99", "one request's rate"]
            out.append(
                Section(
                    "by object size", head=head, rows=[[c["class"], str(c["requests"]), *_cells(c, figs)] for c in cls]
                )
            )
        return out + super().sections()


def _cells(row: dict, figures) -> list[str]:
    """``row``'s figures as a table shows them: (how it is formatted, its key) each."""
    return [format_metric(how, row.get(key)) for how, key in figures]
