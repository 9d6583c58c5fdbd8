"""Units: parsing sizes people type, and formatting metrics for people.

Metrics are stored in base units with the unit in the key (``read_bytes_per_s``,
``lat_p99_ns``, ``iops``). :func:`unit_of` reads the unit back from the key and
:func:`format_metric` turns a value into a readable figure.

Decimal prefixes are decimal and binary prefixes are binary, written as such:
MB = 10**6 bytes, MiB = 2**20 bytes.  Sizes typed by users follow dd: ``K``, ``M``,
``G``, ``T`` alone mean powers of 1024 (``1M`` = 1 MiB, as ``dd bs=1M``), ``KB``/``MB``
mean powers of 1000, and ``KiB``/``MiB`` are explicit powers of 1024.
"""

from __future__ import annotations

import math
import re

__all__ = [
    "parse_size",
    "parse_duration",
    "unit_of",
    "format_metric",
    "format_bytes",
    "format_rate",
    "format_duration_ns",
    "format_si",
    "format_sig",
    "format_many",
    "format_change",
    "metric_label",
    "metric_phrase",
    "percentile_name",
    "shorten_middle",
    "LABELS",
]

_SIZE_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([a-zA-Z]*)\s*$")
_BIN = {"": 1, "b": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40, "p": 2**50}
_DEC = {"kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12, "pb": 10**15}
_IEC = {"kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40, "pib": 2**50}


def parse_size(text: str | int | float) -> int:
    """Parse a byte size: ``4k`` -> 4096, ``1.5G`` -> 1610612736, ``4GiB``, ``500MB``.

    Raises :class:`ValueError` with a sentence saying what is accepted.
    """
    if isinstance(text, bool):
        raise ValueError(f"not a size: {text!r}")
    if isinstance(text, (int, float)):
        if text < 0 or not math.isfinite(text):
            raise ValueError(f"a size must be a non-negative number of bytes, not {text!r}")
        return int(text)
    m = _SIZE_RE.match(str(text))
    if not m:
        raise ValueError(
            f"not a size: {text!r} (use a number with an optional unit: 4k, 1M, 1.5G, 4GiB, 500MB)"
        )
    num, suffix = float(m.group(1)), m.group(2).lower()
    for table in (_BIN, _DEC, _IEC):
        if suffix in table:
            return int(round(num * table[suffix]))
    raise ValueError(
        f"unknown size unit {m.group(2)!r} in {text!r} "
        "(K/M/G/T = powers of 1024 as in dd; KB/MB/GB = powers of 1000; KiB/MiB/GiB explicit)"
    )


_DUR_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(ms|s|m|min|h)?\s*$")


def parse_duration(text: str | int | float) -> float:
    """Parse a duration in seconds: ``10``, ``10s``, ``500ms``, ``2m``."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        if text < 0:
            raise ValueError(f"a duration must not be negative: {text!r}")
        return float(text)
    m = _DUR_RE.match(str(text))
    if not m:
        raise ValueError(f"not a duration: {text!r} (use seconds, or 500ms, 10s, 2m)")
    value = float(m.group(1))
    scale = {None: 1.0, "s": 1.0, "ms": 1e-3, "m": 60.0, "min": 60.0, "h": 3600.0}[m.group(2)]
    return value * scale


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


def format_si(value: float, unit: str, digits: int = 3) -> str:
    """Decimal-prefixed figure: 943e6, 'B/s' -> '943 MB/s'."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "N/A"
    av = _rounded(abs(value), digits)
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if av >= scale:
            return f"{_sig(value / scale, digits)} {prefix}{unit}"
    return f"{_sig(value, digits)} {unit}".rstrip()


def _rounded(x: float, digits: int = 3) -> float:
    """``x`` rounded to ``digits`` significant figures (to pick a prefix: 999.6 kB is 1.00 MB)."""
    return float(f"{x:.{digits - 1}e}") if math.isfinite(x) else x


def _sig(x: float, digits: int) -> str:
    """``x`` to ``digits`` significant figures, as people write it: 943, 94.3, 9.43, 0.943
    (99.96 is "100", never "100.0"; 0.9996 is "1.00")."""
    if x == 0 or not math.isfinite(x):
        return "0" if x == 0 else str(x)
    r = _rounded(x, digits)
    if abs(r) >= 1:
        mag = int(math.floor(math.log10(abs(r))))
        return f"{r:.{max(0, digits - 1 - mag)}f}"
    return f"{x:.{digits}g}"


def format_sig(x: float, digits: int = 3) -> str:
    """A plain number to ``digits`` significant figures, no prefix: 1310.5 -> '1310', 54.16 -> '54.2'
    (for a table whose header carries the unit, "Read [MB/s]")."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "N/A"
    return _sig(float(x), digits)


_TIME_SCALES = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))
_SI_SCALES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))


def format_many(values, unit: str, digits: int = 3) -> list[str]:
    """Figures that stand together (a table's column, a sentence) in one prefix, each to
    ``digits`` significant figures without trailing zeros: the prefix the largest needs.

    ``unit``: "s" for seconds (s / ms / µs / ns: [1.56e-3, 55.8e-3] -> ['1.56 ms', '55.8 ms']),
    else a unit under decimal prefixes ("B", "B/s", "samples/s", "IOPS":
    [494, 1610] -> ['0.494 ksamples/s', '1.61 ksamples/s']).  None / NaN -> 'N/A'."""
    values = list(values)
    known = [abs(float(v)) for v in values if v is not None and math.isfinite(float(v))]
    top = _rounded(max(known), digits) if known else 0.0
    scales = _TIME_SCALES if unit == "s" else _SI_SCALES
    scale, prefix = scales[-1]
    for sc, pre in scales:
        if top >= sc:
            scale, prefix = sc, pre
            break
    name = prefix if unit == "s" else prefix + unit
    out = []
    for v in values:
        if v is None or not math.isfinite(float(v)):
            out.append("N/A")
            continue
        x = float(v) / scale
        text = _sig(x, digits) if x == 0 or abs(x) >= 1 else f"{x:.{digits}g}"
        if "e" in text:   # far below the prefix: plain zeros, no exponent
            text = f"{x:.{digits + 2}f}".rstrip("0").rstrip(".") or "0"
        out.append(f"{text} {name}".rstrip())
    return out


def format_bytes(n: float, binary: bool = False) -> str:
    """'1.07 GB' (decimal, default) or '1.00 GiB' (binary)."""
    if n is None or (isinstance(n, float) and math.isnan(n)):
        return "N/A"
    if binary:
        for scale, prefix in ((2**50, "Pi"), (2**40, "Ti"), (2**30, "Gi"), (2**20, "Mi"), (2**10, "Ki")):
            if abs(n) >= scale:
                return f"{_sig(n / scale, 3)} {prefix}B"
        return f"{int(n)} B"
    return format_si(n, "B")


def format_rate(value: float, unit: str = "bytes/s") -> str:
    """Format a rate given its unit name as used in metric keys."""
    if unit == "bytes/s":
        return format_si(value, "B/s")
    if unit == "iops":
        return format_si(value, "IOPS")
    if unit == "flop/s":
        return format_si(value, "FLOP/s")
    return format_si(value, unit)


def format_duration_ns(ns: float) -> str:
    """'850 ns', '12.3 µs', '4.56 ms', '1.20 s'."""
    if ns is None or (isinstance(ns, float) and math.isnan(ns)):
        return "N/A"
    a = _rounded(abs(ns))
    if a == 0:
        return "0 s"
    if a >= 1e9:
        return f"{_sig(ns / 1e9, 3)} s"
    if a >= 1e6:
        return f"{_sig(ns / 1e6, 3)} ms"
    if a >= 1e3:
        return f"{_sig(ns / 1e3, 3)} µs"
    return f"{_sig(ns, 3)} ns"


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
_WORDS = {"lat": "latency", "gpu": "GPU", "cpu": "CPU", "au": "AU", "qd": "QD", "proc": "process",
          "mem": "memory", "sys": "system", "h2d": "host→device", "d2h": "device→host", "rss": "RSS",
          "ios": "I/Os", "startup": "start-up", "stddev": "std dev", "ttfb": "TTFB", "get": "GET",
          "list": "LIST"}
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
            out.append(f"{w}.{words[i + 1]}")   # p99_9 -> p99.9
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


def shorten_middle(text: str, width: int) -> str:
    """``text`` cut in the middle to ``width`` characters with '…': '/tmp/nbbench-…/disk' — both
    ends stay (a path keeps its last part whole where it can).  Unchanged when it fits."""
    text = str(text)
    if width <= 0:
        return ""
    if len(text) <= width:
        return text
    if width == 1:
        return "…"
    cut = text.rfind("/")
    if 0 < cut and len(text) - cut <= (2 * width) // 3:   # the path's last part, whole
        tail = len(text) - cut
    else:
        tail = (width - 1) // 2
    head = width - 1 - tail
    return text[:head] + "…" + (text[-tail:] if tail else "")


#: from this factor on a change is written as a ratio ("15.7× faster"), below it as a percentage
RATIO_FROM = 2.0


def _signed_pct(ratio: float) -> str:
    d = (ratio - 1.0) * 100.0
    if _rounded(abs(d), 3) == 0:
        return "±0"
    return ("+" if d > 0 else "-") + _sig(abs(d), 3)


def format_change(ratio: float | None, low: float | None = None, high: float | None = None,
                  higher_is_better: bool | None = True, level: float = 0.95) -> str:
    """A change candidate/baseline in the one number format, three significant figures, with its
    interval when given: a percentage below 2× ("+52.3 % (95 % CI +40.1 … +63.2 %)") and a factor
    from 2× on either way ("15.7× faster (95 % CI 14.9–16.4×)", "3.10× slower").  ``higher_is_better``
    picks the words faster/slower (None: higher/lower); it never changes the numbers."""
    if ratio is None or not math.isfinite(ratio) or ratio <= 0:
        return "N/A"
    ci = f"{level * 100:.0f} % CI"
    factor = max(ratio, 1.0 / ratio)
    if factor < RATIO_FROM:
        text = f"{_signed_pct(ratio)} %"
        if low is not None and high is not None:
            text += f" ({ci} {_signed_pct(low)} … {_signed_pct(high)} %)"
        return text
    up = ratio > 1
    if higher_is_better is None:
        word = "higher" if up else "lower"
    else:
        word = "faster" if up == bool(higher_is_better) else "slower"
    text = f"{_sig(factor, 3)}× {word}"
    if low is not None and high is not None and low > 0 and high > 0:
        lo, hi = (low, high) if up else (1.0 / high, 1.0 / low)
        text += f" ({ci} {_sig(lo, 3)}–{_sig(hi, 3)}×)"
    return text
