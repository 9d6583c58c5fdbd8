"""Figures for people: three significant figures under a decimal (or binary) prefix, durations,
changes between two runs, and text cut to a width.

``format_si(943e6, "B/s")`` is '943 MB/s'; :func:`format_many` writes a column in one prefix;
:func:`format_change` writes candidate/baseline as a percentage below 2x and a factor from 2x on.
"""

from __future__ import annotations

import math

__all__ = [
    "format_si",
    "format_sig",
    "format_many",
    "format_bytes",
    "format_rate",
    "format_duration_ns",
    "format_change",
    "shorten_middle",
]


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
    [494, 1610] -> ['0.494 ksamples/s', '1.61 ksamples/s']).  None / NaN -> 'N/A'.  A figure too
    small to show at that prefix (below a thousandth of it) keeps its own ([4e3, 5.37e9] -> ['4.00 kB',
    '5.37 GB']): never a 0 for
    what is not zero."""
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
        if "e" in text:  # far below the prefix: plain zeros, no exponent
            text = f"{x:.{digits + 2}f}".rstrip("0").rstrip(".") or "0"
        if 0 < abs(x) < 1e-3 and len(values) > 1:
            # three zeros after the point ("0.000192 MB"), or a 0 for what is not: its own prefix ("192 B")
            out.append(format_many([v], unit, digits)[0])
            continue
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
    if 0 < cut and len(text) - cut <= (2 * width) // 3:  # the path's last part, whole
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


def format_change(
    ratio: float | None,
    low: float | None = None,
    high: float | None = None,
    higher_is_better: bool | None = True,
    level: float = 0.95,
) -> str:
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
