"""fio's latency histogram: log-linear buckets, 64 per power of two (error < 1/64).

The bucket layout is fio's (``FIO_IO_U_PLAT_BITS = 6``, 29 groups, 1856 buckets of
nanoseconds; ``plat_val_to_idx`` / ``plat_idx_to_val`` in fio's stat.c), so
percentiles come out the way fio computes them.  Histograms of several workers
merge by adding counts.  Exact mean and standard deviation are kept alongside.
"""

from __future__ import annotations

import math

__all__ = ["LatencyHistogram", "PERCENTILES", "percentile_key", "PLAT_NR"]

PLAT_BITS = 6
PLAT_VAL = 1 << PLAT_BITS
PLAT_GROUP_NR = 29
PLAT_NR = PLAT_GROUP_NR * PLAT_VAL

#: fio's default percentile list
PERCENTILES = (1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99)


def percentile_key(p: float) -> str:
    """99.9 -> 'lat_p99_9_ns', 50 -> 'lat_p50_ns'."""
    s = f"{p:g}".replace(".", "_")
    return f"lat_p{s}_ns"


def val_to_idx(val: int) -> int:
    if val <= 0:
        return 0
    msb = val.bit_length() - 1
    if msb <= PLAT_BITS:
        return val
    error_bits = msb - PLAT_BITS
    base = (error_bits + 1) << PLAT_BITS
    offset = (PLAT_VAL - 1) & (val >> error_bits)
    return min(base + offset, PLAT_NR - 1)


def idx_to_val(idx: int) -> float:
    if idx < (PLAT_VAL << 1):
        return float(idx)
    error_bits = (idx >> PLAT_BITS) - 1
    base = 1 << (error_bits + PLAT_BITS)
    k = idx % PLAT_VAL
    return base + (k + 0.5) * (1 << error_bits)


class LatencyHistogram:
    """Counts per fio bucket plus exact count / sum / sum of squares / min / max (ns)."""

    def __init__(self):
        self.counts = [0] * PLAT_NR
        self.n = 0
        self.total = 0.0
        self.total_sq = 0.0
        self.min = math.inf
        self.max = 0

    # ---------------------------------------------------------------- adding
    def add(self, ns: int) -> None:
        ns = int(ns)
        self.counts[val_to_idx(ns)] += 1
        self.n += 1
        self.total += ns
        self.total_sq += float(ns) * ns
        self.min = min(self.min, ns)
        self.max = max(self.max, ns)

    def add_many(self, values) -> None:
        """Add a buffer of int64 nanoseconds (array('q'), list, numpy array) at once — the bulk
        insert: vectorised (numpy), the same buckets, counts, sums, min and max as :meth:`add`
        on each value (tests/test_results.py holds them equal)."""
        if len(values) == 0:
            return
        import numpy as np

        v = np.asarray(values, dtype=np.int64)
        v = np.maximum(v, 0)
        vf = v.astype(np.float64)
        # the most significant bit, exactly: frexp gives v = m * 2**e with 0.5 <= m < 1
        # (exact for v < 2**53; larger values land in the last bucket either way; 0 gives -1)
        msb = np.frexp(np.minimum(v, (1 << 53) - 1).astype(np.float64))[1].astype(np.int64) - 1
        error_bits = np.maximum(msb - PLAT_BITS, 0)
        idx = np.where(
            msb <= PLAT_BITS, v, ((error_bits + 1) << PLAT_BITS) + ((PLAT_VAL - 1) & np.right_shift(v, error_bits))
        )
        idx = np.minimum(idx, PLAT_NR - 1)
        binc = np.bincount(idx, minlength=PLAT_NR)
        for i in np.nonzero(binc)[0].tolist():
            self.counts[i] += int(binc[i])
        self.n += int(v.size)
        self.total += float(vf.sum())
        self.total_sq += float(np.einsum("i,i->", vf, vf))  # not BLAS: no thread pool woken
        self.min = min(self.min, int(v.min()))
        self.max = max(self.max, int(v.max()))

    def merge(self, other: LatencyHistogram) -> LatencyHistogram:
        for i, c in enumerate(other.counts):
            if c:
                self.counts[i] += c
        self.n += other.n
        self.total += other.total
        self.total_sq += other.total_sq
        self.min = min(self.min, other.min)
        self.max = max(self.max, other.max)
        return self

    # ------------------------------------------------------------- statistics
    @property
    def mean(self) -> float:
        return self.total / self.n if self.n else math.nan

    @property
    def stddev(self) -> float:
        if self.n < 2:
            return math.nan if self.n == 0 else 0.0
        var = (self.total_sq - self.total * self.total / self.n) / (self.n - 1)
        return math.sqrt(max(var, 0.0))

    def percentiles(self, plist=PERCENTILES) -> dict[float, float]:
        """fio's calc_clat_percentiles: the first bucket whose running sum reaches p% of n."""
        out: dict[float, float] = {}
        if not self.n:
            return {p: math.nan for p in plist}
        plist = sorted(plist)
        j = 0
        s = 0
        for i, c in enumerate(self.counts):
            if not c:
                continue
            s += c
            while j < len(plist) and s >= plist[j] / 100.0 * self.n:
                out[plist[j]] = idx_to_val(i)
                j += 1
            if j == len(plist):
                break
        for p in plist[j:]:  # pragma: no cover - rounding at the very top
            out[p] = idx_to_val(max(i for i, c in enumerate(self.counts) if c))
        return out

    def metrics(self, prefix: str = "lat") -> dict[str, float]:
        m = {
            f"{prefix}_mean_ns": self.mean,
            f"{prefix}_stddev_ns": self.stddev,
            f"{prefix}_min_ns": float(self.min) if self.n else math.nan,
            f"{prefix}_max_ns": float(self.max) if self.n else math.nan,
        }
        for p, v in self.percentiles().items():
            m[percentile_key(p).replace("lat_", prefix + "_", 1)] = v
        return m

    # ---------------------------------------------------------- serialisation
    def to_dict(self) -> dict:
        """Sparse: bucket mid-values (ns) and counts of the non-empty buckets."""
        idx = [i for i, c in enumerate(self.counts) if c]
        return {"bucket_ns": [idx_to_val(i) for i in idx], "count": [self.counts[i] for i in idx], "bucket_index": idx}

    def to_state(self) -> dict:
        """Everything, exactly (JSON-safe): sparse counts plus n, sums, min and max — what a job
        in another process sends back so that merged percentiles and means stay exact."""
        idx = [i for i, c in enumerate(self.counts) if c]
        return {
            "index": idx,
            "count": [self.counts[i] for i in idx],
            "n": self.n,
            "total": self.total,
            "total_sq": self.total_sq,
            "min": None if self.min == math.inf else self.min,
            "max": self.max,
        }

    @classmethod
    def from_state(cls, d: dict) -> LatencyHistogram:
        h = cls()
        for i, c in zip(d["index"], d["count"]):
            h.counts[int(i)] = int(c)
        h.n, h.total, h.total_sq, h.max = int(d["n"]), float(d["total"]), float(d["total_sq"]), d["max"]
        h.min = math.inf if d["min"] is None else d["min"]
        return h

    @classmethod
    def from_dict(cls, d: dict) -> LatencyHistogram:
        h = cls()
        for i, c in zip(d.get("bucket_index", []), d.get("count", [])):
            h.counts[int(i)] += int(c)
            h.n += int(c)
            v = idx_to_val(int(i))
            h.total += v * c
            h.total_sq += v * v * c
            h.min = min(h.min, v)
            h.max = max(h.max, v)
        return h
