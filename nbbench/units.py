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
    "metric_label",
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
    av = abs(value)
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if av >= scale:
            return f"{_sig(value / scale, digits)} {prefix}{unit}"
    return f"{_sig(value, digits)} {unit}".rstrip()


def _sig(x: float, digits: int) -> str:
    if x == 0:
        return "0"
    ax = abs(x)
    if ax >= 100:
        return f"{x:.0f}"
    if ax >= 10:
        return f"{x:.1f}" if digits > 2 else f"{x:.0f}"
    if ax >= 1:
        return f"{x:.2f}" if digits > 2 else f"{x:.1f}"
    return f"{x:.{digits}g}"


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
    a = abs(ns)
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
    if unit in ("samples/s", "files/s", "batches/s", "1/s"):
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
        return f"{value:.1f} %"
    if unit == "ratio":
        return f"{value:.3f}"
    if unit in ("MHz", "W", "°C"):
        return f"{value:.0f} {unit}"
    if unit == "count":
        return f"{int(value):,}"
    if isinstance(value, int):
        return f"{value:,}"
    return _sig(float(value), 3)


def metric_label(key: str) -> str:
    """Human name of a metric key: 'read_bytes_per_s' -> 'read'; 'read_bytes_per_s_last_done' ->
    'read (last done)'."""
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
    return name.replace("_", " ") or key
