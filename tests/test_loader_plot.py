"""The loader's live plot: throughput windows and the AU gauge, final frame as PNG."""

import time


def test_loader_plot_final_frame_has_the_windows_and_the_gauge():
    from nbbench.probes.pipeline.loader import bench_loader
    from nbbench.ui.loaderplot import LoaderPlot

    plot = LoaderPlot.start(target="none")
    res = bench_loader(
        [b"x" * 64] * 400,
        duration=1.3,
        warmup=1,
        batch_size=4,
        step=lambda b: time.sleep(0.004),
        monitor=plot.monitor,
        on_window=plot.on_window,
    )
    png = plot.finish(res)
    assert png.startswith(b"\x89PNG")
    ts, vs = plot.plot.series("loader.samples_per_s")
    assert len(vs) >= 1 and vs[0] > 0
    assert plot.gauge.bar.get_height() == res.metrics["au_pct"]
    assert plot.monitor is not None and not plot.monitor.running
    assert "AU" in plot._status()


def test_the_plots_empty_start_is_said_where_it_shows():
    from nbbench.ui.loaderplot import warmup_note

    assert warmup_note({"startup_s": 0.754, "warmup_s": 0.999}) == (
        "no throughput for the first 1.75 s: worker start-up and warm-up are not measured"
    )
    assert warmup_note({"startup_s": 0.1, "warmup_s": 0.1}) == ""
