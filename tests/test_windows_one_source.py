"""A figure's per-window samples have one source: ``Result.windows(key)``.

The card's ± (the spread of one run), run quality and compare's one-run interval all read it.
Before, ``results/runs.window_values`` took the series of the figure's phase and skipped a
warm-up, while ``compare/noise.windows`` took the first series holding the key: for a result
whose warm-up series comes first the card and the comparison described different windows.
"""

from __future__ import annotations

import statistics

from nbbench.compare import noise
from nbbench.results.runs import pm_text, spread_of
from nbbench.results.storage import DiskResult
from nbbench.stats import ratio_interval

WARM = [1.0e9, 5.0e9, 0.2e9, 9.0e9]  # a wild warm-up: a CV near 1


def _dd(level: float) -> DiskResult:
    read = [level * f for f in (1.00, 1.02, 0.98, 1.01, 0.99, 1.00)]
    res = DiskResult(
        params={"path": "/tmp/x", "size": 1 << 30, "bs": 1 << 20},
        metrics={"write_bytes_per_s": 1.0e9, "read_bytes_per_s": statistics.median(read)},
        samples={
            # the warm-up comes first and holds the read figure's key too
            "warmup_bw": {"t_s": [0.5, 1.0, 1.5, 2.0], "read_bytes_per_s": list(WARM)},
            "write_bw": {"t_s": [0.5, 1.0], "write_bytes_per_s": [1.0e9, 1.1e9]},
            "read_bw": {"t_s": [0.5 * i for i in range(1, 7)], "read_bytes_per_s": read},
        },
    )
    res.extra["spread"] = spread_of(res)
    return res


def test_windows_pick_the_figures_phase_not_the_first_series():
    res = _dd(2.0e9)
    assert res.windows("read_bytes_per_s") == res.samples["read_bw"]["read_bytes_per_s"]
    assert res.windows("write_bytes_per_s") == [1.0e9, 1.1e9]
    assert res.windows("iops") == []


def test_card_pm_and_compare_interval_read_the_same_windows():
    base, cand = _dd(2.0e9), _dd(2.2e9)
    key = "read_bytes_per_s"
    own = base.samples["read_bw"][key]
    # the card: the CV of the read phase's windows, not of the warm-up's
    fig = base.extra["spread"]["figures"][key]
    assert fig["n"] == len(own)
    assert abs(fig["pm"] - statistics.stdev(own) / statistics.mean(own)) < 0.05 * fig["pm"]
    assert pm_text(fig["pm"]) in base.answer_line()
    # compare: the one-run interval from the very same windows
    got = noise.interval([base], [cand], key, "dd")
    want = ratio_interval(
        [base.metrics[key]],
        [cand.metrics[key]],
        baseline_windows=base.samples["read_bw"][key],
        candidate_windows=cand.samples["read_bw"][key],
    )
    assert got.method == "windows"
    assert (got.low, got.high) == (want.low, want.high)
    # the warm-up's CV (about 1) would have made the change look like noise: it is 10 %, clearly
    assert got.significant and 1.05 < got.low < got.ratio < got.high < 1.15


def test_a_kind_with_its_own_windows_falls_back_to_the_common_rule():
    from nbbench.results.system.gpu import GpuCheckResult

    res = GpuCheckResult(
        metrics={"matmul_bf16_flop_per_s": 1.0e15, "h2d_bytes_per_s": 2.0e10},
        samples={"matmul_bf16_ms": [1.0, 2.0], "copy": {"t_s": [1, 2], "h2d_bytes_per_s": [1.0e10, 3.0e10]}},
    )
    assert res.windows("matmul_bf16_flop_per_s") == [1.5e15, 0.75e15]
    assert res.windows("h2d_bytes_per_s") == [1.0e10, 3.0e10]
