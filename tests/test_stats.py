"""nbbench.stats on seeded synthetic data: the interval finds real shifts, stays quiet on noise,
and covers the true ratio at about its stated rate."""

from __future__ import annotations

import math
import random

import pytest

from nbbench import stats


def runs(rng: random.Random, true: float, noise: float, n: int) -> list[float]:
    """``n`` run figures around ``true`` with multiplicative noise of relative sd ``noise``."""
    return [true * math.exp(rng.gauss(0.0, noise)) for _ in range(n)]


# ------------------------------------------------------------------ Student's t
@pytest.mark.parametrize(
    "p, df, want",
    [
        (0.975, 1, 12.706205),
        (0.975, 2, 4.302653),
        (0.975, 3, 3.182446),
        (0.975, 4, 2.776445),
        (0.975, 8, 2.306004),
        (0.975, 30, 2.042272),
        (0.95, 5, 2.015048),
        (0.995, 10, 3.169273),
        (0.975, 1000, 1.962339),
        (0.975, 2.5, 3.574655),
    ],
)
def test_t_quantile_matches_tables(p, df, want):
    assert stats.t_ppf(p, df) == pytest.approx(want, rel=1e-5)
    assert stats.t_ppf(1 - p, df) == pytest.approx(-want, rel=1e-5)
    assert stats.t_cdf(want, df) == pytest.approx(p, abs=1e-6)


def test_t_quantile_refuses_nonsense():
    with pytest.raises(ValueError):
        stats.t_ppf(1.0, 3)
    with pytest.raises(ValueError):
        stats.t_cdf(1.0, 0)


# ------------------------------------------------------------------ spread
def test_median_and_spread():
    assert stats.median([3, 1, 2]) == 2
    assert stats.median([4, 1, 3, 2]) == 2.5
    assert math.isnan(stats.median([]))
    sp = stats.spread([90, 100, 110, None, float("nan")])
    assert sp["n"] == 3 and sp["median"] == 100 and sp["min"] == 90 and sp["max"] == 110
    assert sp["rel_range"] == pytest.approx(0.2)
    assert sp["cv"] == pytest.approx(10 / 100)
    one = stats.spread([5])
    assert one["n"] == 1 and one["rel_range"] is None and one["cv"] is None


def test_spread_text():
    assert stats.spread_text([96, 100, 104, 100, 98]) == "± 4 % (min…max of 5 runs)"
    assert stats.spread_text([100]) == "1 run"
    assert stats.spread_text([99, 101], what="windows of one run") == "± 1 % (min…max of 2 windows of one run)"


# ------------------------------------------------------------------ power
def test_ten_percent_shift_five_runs_two_percent_noise_is_significant():
    found = 0
    for seed in range(100):
        rng = random.Random(seed)
        r = stats.ratio_interval(runs(rng, 100, 0.02, 5), runs(rng, 110, 0.02, 5))
        assert r.method == "welch-log" and r.n_baseline == 5 and r.n_candidate == 5
        found += r.significant and r.low > 1
    assert found >= 98


def test_three_against_three_twofold_shift_five_percent_noise_is_significant():
    found = 0
    for seed in range(100):
        rng = random.Random(1000 + seed)
        r = stats.ratio_interval(runs(rng, 1.0, 0.05, 3), runs(rng, 2.0, 0.05, 3))
        found += r.significant and r.low > 1
        assert r.low < r.ratio < r.high
    assert found >= 98


def test_slower_candidate_is_worse_and_says_by_how_much():
    rng = random.Random(7)
    r = stats.ratio_interval(runs(rng, 100, 0.01, 5), runs(rng, 80, 0.01, 5), higher_is_better=True)
    assert r.significant and r.high < 1 and r.worse and r.direction == "worse"
    assert r.worse_by() == pytest.approx(0.2, abs=0.02)
    lat = stats.ratio_interval([10, 10.1, 9.9], [8, 8.1, 7.9], higher_is_better=False)
    assert lat.significant and lat.direction == "better" and not lat.worse


# ------------------------------------------------------------------ false alarms and coverage
@pytest.mark.parametrize("n", [3, 5])
def test_no_shift_is_rarely_significant(n):
    rng = random.Random(42 + n)
    hits = sum(stats.ratio_interval(runs(rng, 100, 0.05, n), runs(rng, 100, 0.05, n)).significant for _ in range(400))
    assert hits / 400 <= 0.075, hits


@pytest.mark.parametrize("level", [0.95, 0.8])
def test_intervals_cover_the_true_ratio_at_their_rate(level):
    rng = random.Random(int(level * 100))
    covered = 0
    for _ in range(400):
        r = stats.ratio_interval(runs(rng, 50, 0.04, 4), runs(rng, 60, 0.08, 5), level=level)
        covered += r.low <= 60 / 50 <= r.high
    assert abs(covered / 400 - level) <= 0.04, covered


# ------------------------------------------------------------------ one run a side
def test_one_run_each_without_windows_is_inconclusive():
    r = stats.ratio_interval([100], [120])
    assert not r.significant and r.inconclusive and r.method == "none"
    assert r.ratio == pytest.approx(1.2)
    assert r.caveat == stats.INCONCLUSIVE_ONE_RUN


def test_one_run_each_uses_the_windows_with_a_caveat():
    rng = random.Random(3)
    wb, wc = runs(rng, 100, 0.02, 20), runs(rng, 150, 0.02, 20)
    r = stats.ratio_interval([100], [150], baseline_windows=wb, candidate_windows=wc)
    assert r.method == "windows" and r.significant and r.low < 1.5 < r.high
    assert "within-run" in r.caveat
    # noisy windows around the same figure cannot decide
    wb, wc = runs(rng, 100, 0.3, 6), runs(rng, 100, 0.3, 6)
    r = stats.ratio_interval([100], [103], baseline_windows=wb, candidate_windows=wc)
    assert r.method == "windows" and not r.significant
    # too few windows: inconclusive
    r = stats.ratio_interval([100], [150], baseline_windows=[1, 2], candidate_windows=[1, 2, 3, 4])
    assert r.inconclusive and r.caveat == stats.INCONCLUSIVE_ONE_RUN


def test_batch_means_group_consecutive_windows():
    assert stats.batch_means(list(range(16)), max_batches=8) == [0.5, 2.5, 4.5, 6.5, 8.5, 10.5, 12.5, 14.5]
    assert stats.batch_means([1, 2, 3]) == [1, 2, 3]


def test_one_run_on_one_side_borrows_the_other_sides_spread():
    rng = random.Random(11)
    r = stats.ratio_interval(runs(rng, 100, 0.02, 5), [130])
    assert r.method == "t-log-one-side" and r.significant and r.caveat


def test_identical_figures_and_zeros():
    same = stats.ratio_interval([5, 5, 5], [5, 5, 5])
    assert same.method == "exact" and not same.significant and same.ratio == 1
    z = stats.ratio_interval([0, 1, 2, 1], [5, 6, 5, 7], seed=1)
    assert z.method == "bootstrap-median" and z.significant
    assert stats.ratio_interval([0, 1, 2, 1], [5, 6, 5, 7], seed=1).to_dict() == z.to_dict()  # seeded
    assert stats.ratio_interval([], [1, 2]).inconclusive


def test_stats_module_imports_nothing_heavy():
    import subprocess
    import sys

    code = "import nbbench.stats, sys; print('numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr
