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

from ...units import format_bytes, format_metric
from ..base import Result, metric, register
from ..hist import LatencyHistogram

__all__ = ["ShardsResult", "shards_what", "samples_phrase", "warm_phrase", "ttfb_phrase"]


def shards_what(m: dict, labels: dict) -> str:
    """'4 .tar shards (128 MiB)'."""
    n, total = m.get("shards_count"), m.get("read_total_bytes") or m.get("read_warm_total_bytes")
    what = f"{n} {labels.get('shard_format', '')} shards".replace(" tar ", " .tar ")
    return what + (f" ({format_bytes(total, binary=True)})" if total else "")


def samples_phrase(m: dict, key: str, fmt: str = ", {}") -> str:
    """The samples/s beside a byte rate (tar shards only): ', 17.5 ksamples/s'."""
    return fmt.format(format_metric("samples_per_s", m[key])) if m.get(key) is not None else ""


def warm_phrase(m: dict) -> str | None:
    """'7.68 GB/s from the page cache (67.2 ksamples/s)', or None without a warm pass."""
    if m.get("read_warm_bytes_per_s") is None:
        return None
    return f"{format_metric('read_bytes_per_s', m['read_warm_bytes_per_s'])} from the page cache" + samples_phrase(
        m, "warm_samples_per_s", " ({})"
    )


def ttfb_phrase(m: dict) -> str | None:
    """'first byte of a shard after 3.06 ms (p50), 4.49 ms (p99)', or None."""
    if m.get("ttfb_p50_ns") is None:
        return None
    return (
        f"first byte of a shard after {format_metric('ttfb_p50_ns', m['ttfb_p50_ns'])} (p50), "
        f"{format_metric('ttfb_p99_ns', m.get('ttfb_p99_ns'))} (p99)"
    )


@register("shards")
class ShardsResult(Result):
    """Streams of whole shard files read in parallel, cold then warm."""

    SUMMARY = ("read_bytes_per_s", "read_warm_bytes_per_s", "samples_per_s", "ttfb_p50_ns")

    def headline(self) -> str:
        return f"shards {self.params.get('path', '')}".strip()

    read_bytes_per_s = metric()

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
        if "ranks" in self.labels and self.extra.get("answer"):  # many ranks: what they got together
            return self.extra["answer"]
        head = f"{m.get('streams_count')} parallel streams read {shards_what(m, self.labels)}"
        parts = []
        if m.get("read_bytes_per_s") is not None:
            where = (
                "from object storage"
                if str(p.get("path", "")).startswith("s3://")
                else f"from storage ({self.labels.get('cache')})"
            )
            parts.append(
                f"{format_metric('read_bytes_per_s', m['read_bytes_per_s'])} {where}"
                + samples_phrase(m, "samples_per_s")
            )
        warm = warm_phrase(m)
        if warm:
            parts.append(warm)
        s = f"{head} at " + " and ".join(parts) if parts else f"{head}: nothing measured"
        ttfb = ttfb_phrase(m)
        if ttfb:
            s += f"; {ttfb}"
        if p.get("bs"):
            s += f"; {format_bytes(p['bs'], binary=True)} reads"
        s += "."
        if self.status == "interrupted":
            s += f" Interrupted: {self.reason}."
        return s

    def story(self) -> list[str]:
        """What the answer line's figures do not say, once: what was read, from which cache,
        the warm samples/s and the slow first bytes (:meth:`answer` is the whole sentence)."""
        m, p = self.metrics, self.params
        if self.status == "failed" or m.get("read_bytes_per_s") is None:
            return [self.answer()]
        if "ranks" in self.labels and self.extra.get("answer"):
            return []  # the ranked answer is said once by the view
        s = f"{m.get('streams_count')} parallel streams read {shards_what(m, self.labels)} ({self.labels.get('cache')})"
        if m.get("read_warm_bytes_per_s") is not None:
            s += ", then again from the page cache" + samples_phrase(m, "warm_samples_per_s", " ({})")
        if m.get("ttfb_p99_ns") is not None:
            s += f"; first byte of a shard p99 {format_metric('ttfb_p99_ns', m['ttfb_p99_ns'])}"
        if p.get("bs"):
            s += f"; {format_bytes(p['bs'], binary=True)} reads"
        s += "."
        if self.status == "interrupted":
            s += f" Interrupted: {self.reason}."
        return [s]
