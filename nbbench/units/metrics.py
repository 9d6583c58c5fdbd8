"""Metric keys: the unit a key carries, its figure, and its name for people.

Metrics are stored in base units with the unit in the key (``read_bytes_per_s``,
``lat_p99_ns``, ``iops``). :func:`unit_of` reads the unit back from the key,
:func:`format_metric` turns a value into a readable figure and :func:`metric_label`
names the key ('lat_p99_9_ns' -> 'latency p99.9'; :data:`LABELS` where the rule is not good enough).
"""

from __future__ import annotations

import math
import re

from .figures import _sig, format_bytes, format_duration_ns, format_rate, format_si

__all__ = ["unit_of", "format_metric", "metric_label", "metric_phrase", "percentile_name", "LABELS"]


# unit suffixes recognised in metric keys, longest first
_UNITS = [
    ("_flop_per_s", "flop/s"),
    ("_bytes_per_s", "bytes/s"),
    ("_samples_per_s", "samples/s"),
    ("_files_per_s", "files/s"),
    ("_requests_per_s", "requests/s"),
    ("_keys_per_s", "keys/s"),
    ("_batches_per_s", "batches/s"),
    ("_per_s", "1/s"),
    ("_bytes", "bytes"),
    ("_ns", "ns"),
    ("_us", "us"),
    ("_ms", "ms"),
    ("_s", "s"),
    ("_pct", "%"),
    ("_ratio", "ratio"),
    ("_mhz", "MHz"),
    ("_w", "W"),
    ("_c", "°C"),
    ("_count", "count"),
]
_BARE = {
    "iops": "iops",
    "samples_per_s": "samples/s",
    "files_per_s": "files/s",
    "requests_per_s": "requests/s",
    "batches_per_s": "batches/s",
    "bytes_per_s": "bytes/s",
    "au_pct": "%",
}


#: qualifiers after a metric's own key: ``read_bytes_per_s_last_done`` is in bytes/s, "read (last done)"
_QUALIFIERS = (("_last_done", "last done"),)


def _qualified(key: str) -> tuple[str, str]:
    for suffix, words in _QUALIFIERS:
        if key.endswith(suffix) and len(key) > len(suffix):
            return key[: -len(suffix)], words
    return key, ""


def unit_of(key: str) -> str:
    """The unit encoded in a metric key ('' when none)."""
    key = _qualified(key)[0]
    if key in _BARE:
        return _BARE[key]
    if key.endswith("_iops") or key == "iops":
        return "iops"
    for suffix, unit in _UNITS:
        if key.endswith(suffix):
            return unit
    return ""


def format_metric(key: str, value) -> str:
    """Readable figure for a metric value, the unit taken from its key."""
    if value is None:
        return "N/A"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return value
    if isinstance(value, float) and math.isnan(value):
        return "N/A"
    unit = unit_of(key)
    if unit in ("bytes/s", "iops", "flop/s"):
        return format_rate(value, unit)
    if unit in ("samples/s", "files/s", "batches/s", "requests/s", "keys/s", "1/s"):
        return format_si(value, "/s" if unit == "1/s" else unit)
    if unit == "bytes":
        return format_bytes(value, binary=key.endswith("_mem_bytes") or "memory" in key)
    if unit == "ns":
        return format_duration_ns(value)
    if unit == "us":
        return format_duration_ns(value * 1e3)
    if unit == "ms":
        return format_duration_ns(value * 1e6)
    if unit == "s":
        return format_duration_ns(value * 1e9)
    if unit == "%":
        return f"{_sig(float(value), 3)} %"
    if unit == "ratio":
        return f"{value:.3f}"
    if unit in ("MHz", "W", "°C"):
        return f"{value:.0f} {unit}"
    if unit == "count":
        return f"{int(value):,}"
    if isinstance(value, int):
        return f"{value:,}"
    return _sig(float(value), 3)


#: human names where the automatic rule (:func:`metric_label`) is not good enough; a result
#: kind may name its own metrics better still (:meth:`nbbench.results.Result.metric_name`)
LABELS: dict[str, str] = {
    "samples_per_s": "throughput",
    "files_per_s": "throughput",
    "batches_per_s": "batches",
    "bytes_per_s": "bandwidth",
    "au_pct": "AU",
    "au_one_accelerator_pct": "AU of one accelerator fed this rate",
    "accelerator_samples_per_s": "the accelerator consumes",
    "needed_samples_per_s": "needed for the AU target",
    "accelerators_fed_count": "accelerators fed",
    "accelerators_fed_warm_count": "accelerators fed from memory (warm cache)",
    "cold_samples_per_s": "from storage (cold cache)",
    "cold_bytes_per_s": "from storage (cold cache), bandwidth",
    "warm_samples_per_s": "from memory (warm cache)",
    "warm_bytes_per_s": "from memory (warm cache), bandwidth",
    "cold_vs_warm_pct": "cold cache against warm",
    "proc_cpu_s": "process CPU time",
    "sampler_cpu_pct": "the sampler's own CPU",
    "qd_reached": "queue depth reached",
    "qd_mean": "queue depth (mean)",
    "startup_s": "worker start-up",
    "warmup_s": "warm-up",
    "batch_bytes": "batch size (bytes)",
    "device_count": "devices",
    "dataset_bytes": "dataset size",
    "wall_s": "wall time",
    "runtime_s": "run time",
}
#: words of metric keys as people write them
_WORDS = {
    "lat": "latency",
    "gpu": "GPU",
    "cpu": "CPU",
    "au": "AU",
    "qd": "QD",
    "proc": "process",
    "mem": "memory",
    "sys": "system",
    "h2d": "host→device",
    "d2h": "device→host",
    "rss": "RSS",
    "ios": "I/Os",
    "startup": "start-up",
    "stddev": "std dev",
    "ttfb": "TTFB",
    "get": "GET",
    "list": "LIST",
}
#: keys whose figure names itself ("74.8 kIOPS", "165 samples/s"): a phrase gives the figure alone
_SELF_NAMED = ("iops", "samples_per_s", "files_per_s", "batches_per_s", "requests_per_s")
_PCT_WORD = re.compile(r"^p(\d+)$")


def percentile_name(p: float) -> str:
    """99.9 -> 'p99.9', 50 -> 'p50': how a percentile is written, everywhere."""
    return f"p{p:g}"


def metric_label(key: str) -> str:
    """Human name of a metric key: 'read_bytes_per_s' -> 'read', 'lat_p99_9_ns' -> 'latency p99.9',
    'read_bytes_per_s_last_done' -> 'read (last done)'.

    The unit is left out (the figure carries it); :data:`LABELS` names the keys the
    rule does not get right; percentiles are written ``p1`` … ``p99.99``.
    """
    if key in LABELS:
        return LABELS[key]
    key, words = _qualified(key)
    if words:
        return f"{metric_label(key)} ({words})"
    unit = unit_of(key)
    name = key
    for suffix, u in _UNITS:
        if u == "count":
            continue
        if u == unit and key.endswith(suffix) and key != suffix.lstrip("_"):
            name = key[: -len(suffix)]
            break
    words = name.split("_")
    out: list[str] = []
    i = 0
    while i < len(words):
        w = words[i]
        if _PCT_WORD.match(w) and i + 1 < len(words) and words[i + 1].isdigit():
            out.append(f"{w}.{words[i + 1]}")  # p99_9 -> p99.9
            i += 2
            continue
        out.append(_WORDS.get(w, w))
        i += 1
    return " ".join(x for x in out if x) or key


def metric_phrase(key: str, value, name: str | None = None) -> str:
    """A figure with its name, the figure first: '2.01 GB/s read', '74.8 kIOPS', '1.20 ms latency p99'.

    ``name`` overrides :func:`metric_label` (a result kind's own name for it)."""
    fig = format_metric(key, value)
    if key in _SELF_NAMED and name is None:
        return fig
    label = metric_label(key) if name is None else name
    return f"{fig} {label}".strip()
