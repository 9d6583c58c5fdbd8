"""Statistics of repeated measurements: a figure's spread, and whether two sets differ.

One small module, written once for every probe, compare, the gate, history and reports.

* :func:`median`, :func:`spread` (n, median, min, max, relative range, coefficient of
  variation) and :func:`spread_text` ("± 2.1 % (min…max of 5 runs)").
* :func:`ratio_interval`: the 95 % interval of candidate/baseline and whether it excludes 1.
  The method follows the data:

  - two or more runs a side: Welch's t interval on the logarithms of the run figures
    (``"welch-log"``).  Unlike a rank test it can find 3 runs against 3 significant
    (Mann–Whitney's smallest two-sided p with 3 a side is 0.10); on the log scale a
    ratio is a difference and run-to-run noise is multiplicative, as it is for rates.
  - one run on one side, several on the other: the same interval with the spread of the
    side that has several runs taken for both (``"t-log-one-side"``, with a caveat).
  - one run a side: the per-window samples of each run, grouped into consecutive batches
    (batch means, which tames the windows' autocorrelation), give the spread around the
    two figures' ratio (``"windows"``, caveat: within-run windows understate run-to-run
    spread).  Without enough windows the answer is inconclusive (``method="none"``).
  - figures that are zero or negative (no logarithm): a seeded bootstrap of the ratio of
    medians (``"bootstrap-median"``).

Student's t quantile is computed here (regularised incomplete beta, then bisection), so
scipy is not needed; numpy is imported only by the bootstrap.

Layer: core (the bottom; imports nothing of nbbench).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

__all__ = [
    "median",
    "spread",
    "spread_text",
    "ratio_interval",
    "RatioInterval",
    "t_cdf",
    "t_ppf",
    "batch_means",
    "INCONCLUSIVE_ONE_RUN",
    "WINDOWS_CAVEAT",
    "MIN_WINDOWS",
]

#: what a delta says when one run a side cannot decide
INCONCLUSIVE_ONE_RUN = "inconclusive: one run each — use --repeat 5"
#: the caveat of an interval taken from the windows of one run a side
WINDOWS_CAVEAT = "within-run windows (one run each): they understate run-to-run noise — use --repeat 5"
#: the fewest windows a run needs for a within-run interval
MIN_WINDOWS = 4
#: windows are grouped into at most this many consecutive batches
MAX_BATCHES = 8


def _clean(xs) -> list[float]:
    out = []
    for x in xs or ():
        if isinstance(x, bool) or x is None:
            continue
        try:
            v = float(x)
        except (TypeError, ValueError):
            continue
        if math.isfinite(v):
            out.append(v)
    return out


def median(xs: Sequence[float]) -> float:
    """The median of the finite values (NaN when there are none)."""
    v = sorted(_clean(xs))
    n = len(v)
    if not n:
        return math.nan
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2.0


def _mean_sd(v: Sequence[float]) -> tuple[float, float]:
    n = len(v)
    m = sum(v) / n
    sd = math.sqrt(sum((x - m) ** 2 for x in v) / (n - 1)) if n > 1 else 0.0
    return m, sd


def spread(xs: Sequence[float]) -> dict:
    """``{"n", "median", "min", "max", "rel_range", "cv"}`` of the finite values.

    ``rel_range`` is (max − min) / median and ``cv`` the sample standard deviation over
    the mean, both as fractions (None where undefined: one value, or a zero median/mean)."""
    v = _clean(xs)
    n = len(v)
    if not n:
        return {"n": 0, "median": None, "min": None, "max": None, "rel_range": None, "cv": None}
    med, lo, hi = median(v), min(v), max(v)
    mean, sd = _mean_sd(v)
    return {
        "n": n,
        "median": med,
        "min": lo,
        "max": hi,
        "rel_range": (hi - lo) / abs(med) if n > 1 and med else None,
        "cv": sd / abs(mean) if n > 1 and mean else None,
    }


def _pct(x: float) -> str:
    """A percentage with two significant figures at most: 0.42, 4.2, 42."""
    x = abs(x) * 100
    if x == 0:
        return "0"
    if x >= 10:
        return f"{x:.0f}"
    return f"{x:.2g}" if x < 1 else f"{x:.1f}".rstrip("0").rstrip(".")


def spread_text(sp: dict | Sequence[float], what: str = "runs") -> str:
    """One line for a figure's spread: "± 2.1 % (min…max of 5 runs)" — half the range over
    the median; "1 run" for one value; ``what`` names the samples ("runs", "windows of one run")."""
    if not isinstance(sp, dict):
        sp = spread(sp)
    n = sp.get("n") or 0
    if n == 0:
        return f"no {what}"
    if n == 1:
        return "1 run" if what == "runs" else f"1 of {what}"
    if sp.get("rel_range") is None:
        return f"min…max of {n} {what}"
    return f"± {_pct(sp['rel_range'] / 2)} % (min…max of {n} {what})"


# ------------------------------------------------------------------ Student's t
def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny, eps = 1e-300, 3e-16
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < eps:
            break
    return h


def _betai(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    lbt = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1) / (a + b + 2):
        return math.exp(lbt) * _betacf(a, b, x) / a
    return 1.0 - math.exp(lbt) * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with ``df`` (real, > 0) degrees of freedom."""
    if df <= 0:
        raise ValueError("degrees of freedom must be positive")
    tail = 0.5 * _betai(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


def t_ppf(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (bisection on :func:`t_cdf`)."""
    if not 0 < p < 1:
        raise ValueError("p must lie strictly between 0 and 1")
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_ppf(1 - p, df)
    hi = 2.0
    while t_cdf(hi, df) < p:
        hi *= 2
        if hi > 1e12:
            return math.inf
    lo = 0.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * max(1.0, hi):
            break
    return (lo + hi) / 2


# ------------------------------------------------------------------ the ratio
@dataclass
class RatioInterval:
    """candidate/baseline with its interval; ``low``/``high`` None when nothing could be said."""

    ratio: float | None
    low: float | None
    high: float | None
    significant: bool
    method: str  # "welch-log", "t-log-one-side", "windows", "bootstrap-median", "exact", "none"
    n_baseline: int
    n_candidate: int
    caveat: str | None = None
    level: float = 0.95
    higher_is_better: bool | None = None

    @property
    def inconclusive(self) -> bool:
        """No interval could be formed (one run a side without windows, or no values)."""
        return self.low is None or self.high is None

    @property
    def direction(self) -> str | None:
        """'better' / 'worse' for a significant change of a metric with a direction, else None."""
        if not self.significant or self.higher_is_better is None or self.ratio is None:
            return None
        return "better" if (self.ratio > 1) == bool(self.higher_is_better) else "worse"

    @property
    def worse(self) -> bool:
        """Significantly worse: the whole interval lies on the worse side of 1."""
        return self.direction == "worse"

    def worse_by(self) -> float | None:
        """How much worse the point estimate is, as a fraction of the baseline (0.12 = 12 %
        worse; negative when better): 1 − ratio for higher-is-better, ratio − 1 for lower."""
        if self.ratio is None or self.higher_is_better is None:
            return None
        return (1.0 - self.ratio) if self.higher_is_better else (self.ratio - 1.0)

    def to_dict(self) -> dict:
        return asdict(self)


def batch_means(windows: Sequence[float], max_batches: int = MAX_BATCHES) -> list[float]:
    """The windows grouped into up to ``max_batches`` runs of consecutive windows, each batch's mean."""
    v = _clean(windows)
    k = min(max_batches, len(v))
    if k == 0:
        return []
    out = []
    for i in range(k):
        part = v[i * len(v) // k : (i + 1) * len(v) // k]
        out.append(sum(part) / len(part))
    return out


def _interval(log_ratio: float, se: float, df: float, level: float) -> tuple[float, float]:
    if se == 0:
        return math.exp(log_ratio), math.exp(log_ratio)
    q = t_ppf(0.5 + level / 2, df)
    return math.exp(log_ratio - q * se), math.exp(log_ratio + q * se)


def _bootstrap(b: list[float], c: list[float], level: float, seed: int, n_boot: int = 4000):
    import numpy as np

    mb = median(b)
    if not mb:
        return None, None, None
    rng = np.random.default_rng(seed)
    bb = np.median(rng.choice(np.asarray(b), size=(n_boot, len(b))), axis=1)
    cc = np.median(rng.choice(np.asarray(c), size=(n_boot, len(c))), axis=1)
    ok = bb != 0
    ratios = cc[ok] / bb[ok]
    if ratios.size < n_boot // 2:
        return median(c) / mb, None, None
    a = (1 - level) / 2
    lo, hi = np.quantile(ratios, [a, 1 - a])
    return median(c) / mb, float(lo), float(hi)


def ratio_interval(
    baseline: Sequence[float],
    candidate: Sequence[float],
    *,
    level: float = 0.95,
    higher_is_better: bool | None = True,
    seed: int = 0,
    baseline_windows: Sequence[float] | None = None,
    candidate_windows: Sequence[float] | None = None,
) -> RatioInterval:
    """The ``level`` interval of candidate/baseline from run figures (see the module's text).

    ``baseline`` / ``candidate``: one figure per run.  ``*_windows``: with one run a side,
    that run's per-window samples (e.g. bytes/s per window).  ``higher_is_better`` only
    labels the direction (:attr:`RatioInterval.direction`); the interval does not depend on it."""
    b, c = _clean(baseline), _clean(candidate)
    nb, nc = len(b), len(c)

    def out(ratio, low, high, method, caveat=None):
        sig = low is not None and high is not None and (low > 1 or high < 1)
        return RatioInterval(ratio, low, high, bool(sig), method, nb, nc, caveat, level, higher_is_better)

    if not nb or not nc:
        return out(None, None, None, "none", "no figure on one side")
    if min(b + c) <= 0:
        mb = median(b)
        ratio = median(c) / mb if mb else None
        if nb < 2 or nc < 2:
            return out(
                ratio,
                None,
                None,
                "none",
                INCONCLUSIVE_ONE_RUN
                if nb == nc == 1
                else "zero or negative figures with one run on a side: no interval",
            )
        r, lo, hi = _bootstrap(b, c, level, seed)
        return out(r, lo, hi, "bootstrap-median", None if lo is not None else "no interval: baseline zero")
    lb, lc = [math.log(x) for x in b], [math.log(x) for x in c]
    (mb, sb), (mc, sc) = _mean_sd(lb), _mean_sd(lc)
    if nb >= 2 and nc >= 2:
        vb, vc = sb * sb / nb, sc * sc / nc
        se = math.sqrt(vb + vc)
        if se == 0:  # identical figures on each side: the difference is exact
            return out(
                math.exp(mc - mb), math.exp(mc - mb), math.exp(mc - mb), "exact", "every run gave the same figure"
            )
        df = (vb + vc) ** 2 / ((vb * vb / (nb - 1) if nb > 1 else 0) + (vc * vc / (nc - 1) if nc > 1 else 0))
        lo, hi = _interval(mc - mb, se, df, level)
        return out(math.exp(mc - mb), lo, hi, "welch-log")
    if nb >= 2 or nc >= 2:
        s, n_multi = (sb, nb) if nb >= 2 else (sc, nc)
        se = s * math.sqrt(1 / nb + 1 / nc)
        lo, hi = _interval(mc - mb, se, n_multi - 1, level)
        return out(
            math.exp(mc - mb),
            lo,
            hi,
            "t-log-one-side",
            "one run on one side: its run-to-run spread is taken to be the other side's",
        )
    # one run a side: the windows of each run
    ratio = c[0] / b[0]
    wb, wc = batch_means(baseline_windows or ()), batch_means(candidate_windows or ())
    if len(_clean(baseline_windows)) < MIN_WINDOWS or len(_clean(candidate_windows)) < MIN_WINDOWS or min(wb + wc) <= 0:
        return out(ratio, None, None, "none", INCONCLUSIVE_ONE_RUN)
    lwb, lwc = [math.log(x) for x in wb], [math.log(x) for x in wc]
    (_, swb), (_, swc) = _mean_sd(lwb), _mean_sd(lwc)
    vb, vc = swb * swb / len(lwb), swc * swc / len(lwc)
    if vb + vc == 0:
        return out(ratio, None, None, "none", INCONCLUSIVE_ONE_RUN)
    df = (vb + vc) ** 2 / (vb * vb / (len(lwb) - 1) + vc * vc / (len(lwc) - 1))
    lo, hi = _interval(math.log(ratio), math.sqrt(vb + vc), df, level)
    return out(ratio, lo, hi, "windows", WINDOWS_CAVEAT)
