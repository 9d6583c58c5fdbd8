"""Sizes and durations as people type them: ``4k``, ``1.5G``, ``4GiB``, ``500MB``; ``500ms``, ``2m``.

Decimal prefixes are decimal and binary prefixes are binary, written as such:
MB = 10**6 bytes, MiB = 2**20 bytes.  Sizes typed by users follow dd: ``K``, ``M``,
``G``, ``T`` alone mean powers of 1024 (``1M`` = 1 MiB, as ``dd bs=1M``), ``KB``/``MB``
mean powers of 1000, and ``KiB``/``MiB`` are explicit powers of 1024.
"""

from __future__ import annotations

import math
import re

__all__ = ["parse_size", "parse_duration"]

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
        raise ValueError(f"not a size: {text!r} (use a number with an optional unit: 4k, 1M, 1.5G, 4GiB, 500MB)")
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
