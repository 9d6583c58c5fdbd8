"""Result of the shards probe (kind ``shards``): parallel sequential streams over large files.

Metrics (base units): ``read_bytes_per_s`` (cold pass, all streams together: the headline),
``read_warm_bytes_per_s``, ``stream_min_bytes_per_s`` / ``stream_max_bytes_per_s`` (the
slowest and fastest stream), ``ttfb_p50_ns`` / ``ttfb_p90_ns`` / ``ttfb_p99_ns`` (open to
the first bytes of each shard), for tar shards ``samples_per_s`` / ``warm_samples_per_s``
(WebDataset samples) and ``samples_count`` / ``members_count``; the warm pass's figures
carry ``warm_``.  ``samples["streams"]`` (and ``["warm_streams"]``) hold each stream's
shards, bytes, seconds and rate; ``samples["bw"]`` the aggregate in 500 ms windows;
``samples["ttfb_hist"]`` the time-to-first-byte histogram.
"""

from __future__ import annotations

from ..units import format_bytes, format_metric
from .base import Result, register
from .hist import LatencyHistogram

__all__ = ["ShardsResult"]


@register("shards")
class ShardsResult(Result):
    """Streams of whole shard files read in parallel, cold then warm."""

    SUMMARY = ("read_bytes_per_s", "read_warm_bytes_per_s", "samples_per_s", "ttfb_p50_ns")

    def headline(self) -> str:
        return f"shards {self.params.get('path', '')}".strip()

    @property
    def read_bytes_per_s(self) -> float | None:
        return self.metrics.get("read_bytes_per_s")

    def streams_frame(self, warm: bool = False):
        """One row per stream: shards, bytes, seconds (from the pass's start to its last byte), bytes_per_s."""
        return self.samples_frame("warm_streams" if warm else "streams")

    def ttfb_histogram(self, warm: bool = False) -> LatencyHistogram | None:
        d = self.samples.get("warm_ttfb_hist" if warm else "ttfb_hist")
        return LatencyHistogram.from_dict(d) if d else None

    def answer(self) -> str:
        """The result in one sentence: how fast the shards stream, cold and warm."""
        m, p = self.metrics, self.params
        if self.status == "failed":
            return f"The shards run failed: {self.reason}"
        if "ranks" in self.labels and self.extra.get("answer"):   # many ranks: what they got together
            return self.extra["answer"]
        n, streams = m.get("shards_count"), m.get("streams_count")
        total = m.get("read_total_bytes") or m.get("read_warm_total_bytes")
        what = f"{n} {self.labels.get('shard_format', '')} shards".replace(" tar ", " .tar ")
        if total:
            what += f" ({format_bytes(total, binary=True)})"
        head = f"{streams} parallel streams read {what}"
        parts = []
        if m.get("read_bytes_per_s") is not None:
            cold = f"{format_metric('read_bytes_per_s', m['read_bytes_per_s'])} from storage ({self.labels.get('cache')})"
            if m.get("samples_per_s") is not None:
                cold += f", {format_metric('samples_per_s', m['samples_per_s'])}"
            parts.append(cold)
        if m.get("read_warm_bytes_per_s") is not None:
            warm = f"{format_metric('read_bytes_per_s', m['read_warm_bytes_per_s'])} from the page cache"
            if m.get("warm_samples_per_s") is not None:
                warm += f" ({format_metric('samples_per_s', m['warm_samples_per_s'])})"
            parts.append(warm)
        s = f"{head} at " + " and ".join(parts) if parts else f"{head}: nothing measured"
        if m.get("ttfb_p50_ns") is not None:
            s += (f"; first byte of a shard after {format_metric('ttfb_p50_ns', m['ttfb_p50_ns'])} (p50), "
                  f"{format_metric('ttfb_p99_ns', m['ttfb_p99_ns'])} (p99)")
        if p.get("bs"):
            s += f"; {format_bytes(p['bs'], binary=True)} reads"
        s += "."
        if self.status == "interrupted":
            s += f" Interrupted: {self.reason}."
        return s

    def story(self) -> list[str]:
        """The sentence under the figures (terminal, notebook, panel and report alike)."""
        return [self.answer()]
