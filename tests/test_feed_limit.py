"""feed answers consistently: what limits it follows whether even the warm (cached) rate
meets the need, the advice follows the limiter, and the progress bar ends on the
result's own figures.  The rule is a pure function of the rates (synthetic figures);
feed's wiring is checked with a stand-in measurement, then on one real small run."""

import io
import time

import pytest

from nbbench.accelerators import get_accelerator
from nbbench.results.pipeline.loader import LoaderResult
from nbbench.units import format_metric

H100 = get_accelerator("h100-resnet50")
NEED = H100.needed_samples_per_s()  # 1.61 ksamples/s per H100 at AU 90 %
STORAGE_ADVICE = "faster storage or caching the dataset in memory helps"


def sps(v):
    return format_metric("samples_per_s", v)


def words(cold, warm, count=1):
    from nbbench.probes.pipeline.feedlimit import feed_limiter, limiter_sentence

    info = feed_limiter(cold, warm, NEED, count)
    return info, limiter_sentence(info, cold, warm, "h100-resnet50")


def test_warm_short_of_the_need_is_cpu_preparation_with_the_figures():
    # the case reported: cold 74 samples/s at 74 % of warm 101, both feeding 0 H100s
    info, s = words(74.3, 101.0)
    assert (info["limiter"], info["case"]) == ("CPU preparation", "warm short")
    assert info["fed_cold"] == info["fed_warm"] == 0 and info["storage_slower"]
    assert s.startswith("CPU preparation limits it")
    assert sps(101.0) in s and sps(74.3) in s and sps(NEED) in s
    assert STORAGE_ADVICE not in s and "faster storage alone would not reach the need" in s
    assert "more CPU cores / workers" in s


def test_cold_short_where_warm_would_do_is_storage_fetch():
    info, s = words(0.6 * NEED, 1.5 * NEED)
    assert (info["limiter"], info["case"]) == ("storage fetch", "cold short")
    assert info["fed_warm"] == 1 and info["fed_cold"] == 0
    assert s.startswith("Storage fetch limits it") and STORAGE_ADVICE in s
    assert sps(0.6 * NEED) in s and sps(1.5 * NEED) in s


def test_both_meet_the_need_storage_only_when_clearly_slower_and_warm_feeds_more():
    info, s = words(2.2 * NEED, 3.4 * NEED)  # 65 %: 2 fed cold, 3 warm
    assert (info["limiter"], info["case"]) == ("storage fetch", "storage ceiling")
    assert "feeds 2" in s and "would feed 3" in s and STORAGE_ADVICE in s
    info, s = words(2.1 * NEED, 2.5 * NEED)  # 84 %: slower, but 2 fed either way
    assert (info["limiter"], info["case"]) == ("CPU preparation", "CPU ceiling") and info["storage_slower"]
    assert "not one more accelerator" in s and STORAGE_ADVICE not in s
    info, s = words(2.9 * NEED, 3.0 * NEED)  # 97 %: storage does not slow it
    assert (info["limiter"], info["case"]) == ("CPU preparation", "CPU ceiling") and not info["storage_slower"]
    assert "did not slow it down" in s and "faster storage does not" in s
    # a clearly slower cold run whose warm twin feeds no more: still not storage's fault
    info, _ = words(2.0 * NEED, 2.3 * NEED)
    assert info["limiter"] == "CPU preparation"


def test_the_count_asked_for_sets_the_need():
    info, s = words(2.4 * NEED, 2.5 * NEED, count=3)  # feeds 2 even warm; 3 were asked for
    assert (info["limiter"], info["case"]) == ("CPU preparation", "warm short")
    assert info["needed"] == pytest.approx(3 * NEED) and "3 h100-resnet50s need" in s
    info, _ = words(1.5 * NEED, 3.5 * NEED, count=3)  # warm feeds 3, cold 1
    assert (info["limiter"], info["case"]) == ("storage fetch", "cold short")


def test_no_cold_rate_no_verdict_and_the_pair_ratio_decides_the_ceiling():
    from nbbench.probes.pipeline.feedlimit import feed_limiter

    assert feed_limiter(None, 500.0, NEED) is None
    assert feed_limiter(100.0, None, NEED) is None
    # both feed 2/3; the pairs' median ratio (not cold/warm of the medians) says whether storage is slower
    assert feed_limiter(2.4 * NEED, 3.1 * NEED, NEED, ratio=0.95)["limiter"] == "CPU preparation"
    assert feed_limiter(2.4 * NEED, 3.1 * NEED, NEED, ratio=0.70)["limiter"] == "storage fetch"


def test_answer_leads_with_what_is_fed_then_the_limiter():
    from nbbench.probes.pipeline.feedlimit import feed_answer, feed_limiter

    info = feed_limiter(74.3, 101.0, NEED)
    a = feed_answer(H100, 74.3, 74.3, 101.0, info, 2, "pil", "fadvise", 90.0)
    assert "so they can feed 0 such accelerators" in a
    assert a.index("can feed 0") < a.index("CPU preparation limits it")
    assert STORAGE_ADVICE not in a and a.endswith("(Cold cache by per-file fadvise.)")
    assert feed_answer(H100, None, None, None, None, 2, "pil", "none", 90.0).startswith("No rate")


# ---------------------------------------------------------------- feed's wiring
@pytest.fixture(scope="module")
def jpeg_tree(tmp_path_factory):
    from nbbench.datasets import make_image_folder

    return make_image_folder(tmp_path_factory.mktemp("feedlimit") / "ds", files=48, size="4k", classes=2, jpeg=True)


def _measured(rate, n=10, batch=8):
    """A LoaderResult whose kept steps deliver ``rate`` samples/s."""
    dt = batch / rate
    r = LoaderResult(params={"step": None})
    r.samples["steps"] = {
        "t_s": [dt * (i + 1) for i in range(n)],
        "wait_s": [dt] * n,
        "compute_s": [0.0] * n,
        "samples": [batch] * n,
        "bytes": [100] * n,
    }
    r.metrics["startup_s"] = 0.01
    return r.derive().finish("ok")


def test_feed_names_cpu_when_even_warm_data_feeds_none(jpeg_tree, monkeypatch):
    import nbbench.probes.pipeline.feed as feedmod

    rates = iter([74.3, 101.0] * 3)  # cold, warm pairs as measured by the reporter
    monkeypatch.setattr(feedmod, "bench_loader", lambda *a, **k: _measured(next(rates)))
    calls = []
    res = feedmod.feed(
        jpeg_tree,
        batch_size=8,
        num_workers=0,
        warmup=1,
        duration=0.2,
        size=32,
        progress=lambda f, m: calls.append((f, m)),
    )
    assert res.metrics["cold_samples_per_s"] == pytest.approx(74.3)
    assert res.metrics["accelerators_fed_warm_count"] == 0
    assert res.limiter == "CPU preparation" and res.labels["limiter_basis"] == "warm short"
    assert "CPU preparation limits it" in res.answer and STORAGE_ADVICE not in res.answer
    assert "Storage fetch limits it" not in res.answer
    # the last progress call is the result's own figures
    f, m = calls[-1]
    assert f == 1.0 and m["samples_per_s"] == res.metrics["samples_per_s"]
    assert m["warm_samples_per_s"] == res.metrics["warm_samples_per_s"]
    assert m["accelerators_fed_count"] == 0


def test_a_real_feed_bar_ends_on_the_results_figures(jpeg_tree, monkeypatch, capsys):
    """One real small run through the CLI: the bar's last line shows the result's samples/s."""
    import nbbench.probes.pipeline.feed as feedmod
    from nbbench.cli import main

    got = []
    real = feedmod.feed
    monkeypatch.setattr(feedmod, "feed", lambda *a, **k: got.append(real(*a, **k)) or got[-1])
    rc = main(
        [
            "feed",
            str(jpeg_tree),
            "--batch-size",
            "8",
            "--workers",
            "0",
            "--duration",
            "0.3",
            "--size",
            "32",
            "--warmup",
            "1",
            "--no-save",
        ]
    )
    err = capsys.readouterr().err
    assert rc == 0 and got
    res = got[0]
    last = [ln for ln in err.splitlines() if ln.strip()][-1]
    assert last.endswith("ok") and f"| {sps(res.metrics['samples_per_s'])}" not in last
    assert f"{sps(res.metrics['samples_per_s'])}, " in last  # the rate, labelled by its unit
    assert f"{sps(res.metrics['warm_samples_per_s'])} from memory (warm cache)" in last
    assert res.limiter in ("storage fetch", "CPU preparation")
    # whatever it measured, the advice follows the limiter
    if res.metrics["accelerators_fed_warm_count"] == 0:
        assert res.limiter == "CPU preparation" and STORAGE_ADVICE not in res.answer


def test_the_loader_bar_ends_on_the_results_figures():
    import numpy as np

    from nbbench.probes.pipeline.loader import bench_loader
    from nbbench.progress import TerminalProgress

    out = io.StringIO()
    bar = TerminalProgress("loader", stream=out)
    calls = []

    def progress(f, m):
        calls.append(m)
        bar(f, m)

    res = bench_loader(
        [np.zeros((4, 2))] * 400, duration=0.6, warmup=1, step=lambda b: time.sleep(0.002), progress=progress
    )
    bar.close(res.status)
    assert calls[-1]["samples_per_s"] == res.metrics["samples_per_s"]
    assert calls[-1]["au_pct"] == res.metrics["au_pct"]
    assert f", {sps(res.metrics['samples_per_s'])}" in out.getvalue().splitlines()[-1]
