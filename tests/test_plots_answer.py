"""Plots that earn their place (issue 12): no plot for a run shorter than two windows (a
sentence instead), figures >= 800 px wide with fonts >= 10 pt, time axes scaled to the
run, target lines where a target exists, caveats inside compare images, no gain/loss
colours for metrics without a direction, no line joining two sweep configurations."""

from __future__ import annotations

import io
import math
import time

import pytest

from nbbench.compare import better, compare
from nbbench.plots import figure_png
from nbbench.plots.compare import bar_chart
from nbbench.results import Result

GREEN, RED = "#2e7d32", "#c62828"


def _dd(samples, cache="direct", label=None, path="/data", w=4e8, r=6e8):
    res = Result(
        kind="dd",
        params={"path": path, "bs": 2**20, "size": 2**24},
        metrics={"write_bytes_per_s": w, "read_bytes_per_s": r},
        labels={"cache": cache},
        samples=samples,
    )
    if label:
        res.labels["label"] = label
    return res.finish()


def _texts(fig) -> list:
    from matplotlib.text import Text

    return [t for t in fig.findobj(Text) if t.get_text().strip() and t.get_visible()]


def _png_width(fig) -> int:
    from PIL import Image

    return Image.open(io.BytesIO(figure_png(fig))).size[0]


def _hex(colour) -> str:
    from matplotlib.colors import to_hex

    return to_hex(colour)


# ------------------------------------------------------------ too short to plot
def test_a_30_ms_dd_gets_a_sentence_not_a_plot():
    from nbbench.plots.samples import result_figure, sample_plot

    one = _dd({"bw": {"t_s": [0.02, 0.03], "write_bytes_per_s": [5e8, 6e8]}})
    assert result_figure(one) is None
    fig, why = sample_plot(one)
    assert fig is None and why == "the run lasted 30 ms, shorter than two 500 ms windows: no plot"
    both = _dd(
        {
            "write_bw": {"t_s": [0.03], "write_bytes_per_s": [5e8]},
            "read_bw": {"t_s": [0.01, 0.02], "read_bytes_per_s": [9e8, 9e8]},
        }
    )
    fig, why = sample_plot(both)
    assert fig is None and why.startswith("write lasted 30 ms and read 20 ms") and "no plot" in why
    # two windows and more: a plot, its too-short sibling named in the title
    mixed = _dd(
        {
            "write_bw": {"t_s": [0.5, 1.0, 1.2], "write_bytes_per_s": [5e8, 6e8, 5e8]},
            "read_bw": {"t_s": [0.03], "read_bytes_per_s": [9e8]},
        }
    )
    fig, why = sample_plot(mixed)
    assert why is None and len([ax for ax in fig.axes if ax.get_visible()]) == 1
    assert "read lasted 30 ms" in fig._suptitle.get_text().replace("\n", " ")


def test_reports_say_why_there_is_no_plot(tmp_path):
    from nbbench.report import report
    from nbbench.store import default_store

    default_store().save(_dd({"bw": {"t_s": [0.02, 0.03], "write_bytes_per_s": [5e8, 6e8]}}), label="S")
    html = report("html", out=tmp_path / "r.html", runs=["S"], run_doctor=False).text
    assert "shorter than two 500 ms windows: no plot" in html and "data:image/png" not in html
    md = report("md", out=tmp_path / "r.md", runs=["S"], run_doctor=False).text
    assert "shorter than two 500 ms windows: no plot" in md and "![" not in md


def test_a_live_plot_with_fewer_than_two_points_leaves_no_empty_axes():
    from nbbench.ui.liveplot import LivePlot, Panel

    p = LivePlot([Panel("bandwidth", ["*bytes_per_s"], unit="MB/s", scale=1e-6)], target="widget", show=False)
    p.start()
    assert p.widget.layout.display == "none"  # no empty axes while waiting for data
    p.add(1.0, {"write_bytes_per_s": 5e8})
    assert p.close() is None and "no plot" in p.note
    assert p.widget.layout.display == "none" and p._repr_png_() is None
    q = LivePlot([Panel("bandwidth", ["*bytes_per_s"])], target="none")
    q.add(1.0, {"write_bytes_per_s": 5e8})
    q.add(1.5, {"write_bytes_per_s": 6e8})
    assert q.close().startswith(b"\x89PNG") and q.note is None


def test_a_monitor_run_with_one_sample_has_no_figure():
    from nbbench.plots.monitor import monitor_figure
    from nbbench.results.monitor import MonitorResult

    res = MonitorResult(params={"what": "cell"}, samples={"timeline": {"t_s": [0.1], "cpu.util_pct": [10.0]}})
    assert monitor_figure(res) is None and res.png() is None


# ------------------------------------------------------------ size and fonts
def _figures():
    from nbbench.plots.monitor import monitor_figure
    from nbbench.plots.panel import Panel
    from nbbench.plots.samples import result_figure
    from nbbench.plots.sweep import sweep_figure
    from nbbench.plots.timeline import Timeline
    from nbbench.results.monitor import MonitorResult
    from nbbench.results.sweep import SweepResult

    t = [0.5 * i for i in range(1, 9)]
    dd = _dd({"write_bw": {"t_s": t, "write_bytes_per_s": [4e8 + 1e7 * i for i in range(8)]}})
    tl = {"t_s": [0.1, 0.2, 0.3], "cpu.util_pct": [10.0, 20.0, 30.0], "disk.read_bytes_per_s": [1e6, 2e6, 3e6]}
    mon = MonitorResult(
        params={"what": "cell"},
        samples={"timeline": tl},
        extra={
            "notes": [
                "GPU: N/A: NVML unavailable: libnvidia-ml.so.1: cannot open shared object "
                "file: No such file or directory"
            ]
        },
    )
    configs = [
        {
            "num_workers": w,
            "batch_size": 64,
            "pin_memory": False,
            "prefetch_factor": 2,
            "status": "ok",
            "samples_per_s": 500.0 * (w + 1),
        }
        for w in (0, 1, 2, 4)
    ]
    sw = SweepResult(
        samples={"configs": configs}, metrics={"needed_samples_per_s": 1600.0}, labels={"accelerator": "h100-resnet50"}
    )
    timeline = Timeline([Panel("bandwidth", ["*bytes_per_s"], unit="MB/s", scale=1e-6)], title="dd: live rate")
    for i in range(5):
        timeline.add(float(i), {"read_bytes_per_s": 1e8 * (i + 1)})
    cmp = compare([_dd({}, label="A"), _dd({}, label="B", w=5e8)]).groups[0]
    from nbbench.ui.loaderplot import LoaderPlot

    loader = LoaderPlot(target="none", need=1607.0, accelerator="h100-resnet50", monitor=False)
    for i in range(3):
        loader.plot.add(float(i), {"loader.samples_per_s": 1500.0 + 10 * i, "loader.au_pct": 85.0})
    return {
        "loader_plot": loader.plot.figure,
        "bar_chart": bar_chart(cmp),
        "result_figure": result_figure(dd),
        "sweep_figure": sweep_figure(sw),
        "monitor_figure": monitor_figure(mon),
        "timeline": timeline.figure,
    }


def test_every_figure_is_800_px_wide_with_10_pt_fonts():
    for name, fig in _figures().items():
        assert fig is not None, name
        assert _png_width(fig) >= 800, name
        small = [(t.get_text()[:30], t.get_fontsize()) for t in _texts(fig) if t.get_fontsize() < 10]
        assert small == [], (name, small)


def test_a_long_title_wraps_instead_of_being_cut():
    from nbbench.plots.monitor import monitor_figure
    from nbbench.results.monitor import MonitorResult

    note = "NVML unavailable: libnvidia-ml.so.1: cannot open shared object file: No such file or directory"
    res = MonitorResult(
        params={"what": "cell"},
        samples={"timeline": {"t_s": [0.1, 0.2], "cpu.util_pct": [1.0, 2.0]}},
        extra={"notes": [f"GPU: {note}"]},
    )
    fig = monitor_figure(res)
    title = " ".join(t.get_text() for t in _texts(fig) if "monitor" in t.get_text() or "GPU" in t.get_text())
    # the plot names the reason in short (the card under it says it whole): never cut
    assert "…" not in title and "GPU N/A: NVML unavailable" in title.replace("\n", " ")


def test_a_bold_title_that_says_why_a_panel_is_missing_stays_inside_the_figure():
    from nbbench.plots.samples import sample_plot

    # the write spans three windows, the read lasted 194 ms: the title says so, in bold, and must wrap to fit
    res = _dd(
        {
            "write": {"t_s": [0.5, 1.0, 1.55], "write_bytes_per_s": [6e8, 4e8, 2e8]},
            "read": {"t_s": [0.194], "read_bytes_per_s": [2.7e9]},
        },
        path="/tmp/shotrep/data",
    )
    fig, _ = sample_plot(res)
    fig.canvas.draw()
    box = fig._suptitle.get_window_extent(fig.canvas.get_renderer())
    assert "no plot" in fig._suptitle.get_text()
    assert box.x0 >= 0 and box.x1 <= fig.bbox.width, (box, fig.bbox.width)


# ------------------------------------------------------------ time axis
def test_the_live_time_axis_follows_the_run_length():
    from nbbench.plots.panel import Panel
    from nbbench.plots.timeline import Timeline

    panels = [Panel("IOPS", ["iops"], unit="kIOPS", scale=1e-3)]
    known = Timeline(panels, span_s=3.0)
    for i in range(5):
        known.add(0.2 * i, {"iops": 1e4})
    known.png()
    assert known._axes[0].get_xlim() == (0.0, 3.0)  # a 3 s randread: a 3 s axis
    known.add(3.4, {"iops": 1e4})  # ran over: the axis grows
    known.png()
    assert known._axes[0].get_xlim()[1] > 3.4
    unknown = Timeline(panels)  # a monitored cell: length unknown
    for i in range(4):
        unknown.add(0.8 * i, {"iops": 1e4})
    assert unknown.figure.axes[0].get_xlim() == pytest.approx((0.0, 2.4))  # the final frame fits the run


def test_the_panel_rate_plot_spans_the_expected_run(monkeypatch):
    from nbbench.ui import rateplot
    from nbbench.ui.liveplot import LivePlot

    clock = [1000.0]
    monkeypatch.setattr(rateplot.time, "monotonic", lambda: clock[0])
    made = []

    def make(**kw):
        made.append(LivePlot(target="none", **kw))
        return made[-1]

    p = rateplot.PanelProgress("randread /x", make_plot=make)
    p._t0 = clock[0]
    for i in range(1, 6):
        clock[0] += 0.5
        p(i * 0.5 / 3.0, {"iops": 1e4})  # a 3 s run, reported as it goes
        if p._maker is not None:
            p._maker.join(30)
    assert made and made[0].timeline.span_s == pytest.approx(3.0)
    p.close("ok")
    p.wait_plot()


# ------------------------------------------------------------ target lines
def test_the_loader_plot_and_figure_carry_the_needed_line():
    from nbbench.plots.samples import result_figure
    from nbbench.probes.pipeline.loader import bench_loader
    from nbbench.ui.loaderplot import LoaderPlot

    plot = LoaderPlot.start(target="none", need=1607.0, accelerator="h100-resnet50")
    texts = [t.get_text().replace("\n", " ") for t in _texts(plot.plot.figure)]  # legend entries, wrapped
    assert any(t.startswith("needed by h100-resnet50 at AU 90 %") for t in texts), texts
    assert any("AU target 90 %" in t for t in texts)
    res = bench_loader(
        [b"x" * 64] * 4000,
        duration=2.2,
        warmup=1,
        batch_size=4,
        step="emulate:h100-resnet50",
        monitor=plot.monitor,
        on_window=plot.on_window,
        epochs=None,
    )
    plot.finish(res)
    need = res.metrics["needed_samples_per_s"]
    ax = plot.plot.figure.axes[0]
    assert any(len(set(ln.get_ydata())) == 1 and ln.get_ydata()[0] == pytest.approx(need) for ln in ax.get_lines())
    fig = result_figure(res)
    labels = [ln.get_label() for ax in fig.axes for ln in ax.get_lines()]
    assert any(lab.startswith("needed by h100-resnet50 at AU 90 %") for lab in labels), labels
    assert "AU target 90 %" in labels


# ------------------------------------------------------------ compare images
def test_compare_images_carry_the_caveats_and_units_that_match_the_ticks():
    g = compare(
        [
            _dd({}, cache="direct", label="disk", w=4e8, r=6e8),
            _dd({}, cache="memory", label="tmpfs", path="/dev/shm", w=1.8e9, r=2.6e9),
        ]
    ).groups[0]
    fig = bar_chart(g)
    texts = [t.get_text() for t in _texts(fig)]
    assert any("cache mode differs: direct (disk), memory (tmpfs)" in t for t in texts), texts
    assert any("memory-backed" in t for t in texts)
    titles = [ax.get_title(loc="left") for ax in fig.axes if ax.get_visible() and ax.axison]
    assert any(t.startswith("read [GB/s]") for t in titles) and not any("bytes/s" in t for t in titles), titles
    # a RAM-backed run's 4.33× is no gain of the environment: not green
    delta = next(t for t in _texts(fig) if "4.33×" in t.get_text() and "⚠" in t.get_text())
    assert _hex(delta.get_color()) not in (GREEN, RED)
    # …and the HTML table beside it says the same: the delta uncoloured, marked ⚠
    import re as _re

    cells = _re.findall(
        r"<td style='text-align:right;color:(#[0-9a-f]{3,6});font-weight:\w+' title='[^']*'>([^<]*)</td>", g_html(g)
    )
    assert cells and all(c == "#444" and "⚠" in t for c, t in cells if t.strip() not in ("", "—")), cells


def g_html(g):
    from nbbench.compare import Comparison

    return Comparison(refs=list(g.names), groups=[g]).html(images=False)


def test_metrics_without_a_direction_are_never_green_or_red():
    def mon(wall, disk):
        return Result(
            kind="monitor",
            metrics={
                "wall_s": wall,
                "cpu_mean_pct": 30.0,
                "disk_read_bytes": disk,
                "disk_read_mean_bytes_per_s": disk / wall,
            },
        )

    assert better("wall_s", "monitor") is None and better("wall_s") is None
    assert better("disk_read_mean_bytes_per_s") is None and better("needed_samples_per_s") is None
    assert better("read_bytes_per_s", "dd") == "higher" and better("lat_p99_ns") == "lower"
    g = compare([mon(10.0, 5e9), mon(14.0, 2e9)]).groups[0]
    fig = bar_chart(g, metrics=["wall_s", "disk_read_bytes", "disk_read_mean_bytes_per_s"])
    colours = {_hex(t.get_color()) for t in _texts(fig)}
    colours |= {_hex(b.get_facecolor()) for ax in fig.axes for b in ax.patches}
    assert not colours & {GREEN, RED, "#43a047", "#e53935"}, colours
    html = g.text_table() + compare([mon(10.0, 5e9), mon(14.0, 2e9)]).html(images=False)
    assert GREEN not in html and RED not in html and "↓" not in html


# ------------------------------------------------------------ sweep
def test_the_sweep_live_plot_never_joins_two_configurations():
    from nbbench.ui.liveplot import LivePlot
    from nbbench.ui.rateplot import PanelProgress

    made = []

    def make(**kw):
        made.append(LivePlot(target="none", **kw))
        return made[-1]

    p = PanelProgress("sweep ds", make_plot=make)
    for i, (cfg, v) in enumerate((("num_workers=0", 400.0), ("num_workers=2", 900.0), ("num_workers=4", 1200.0))):
        p((i + 1) / 3, {"config": cfg, "samples_per_s": v})
        time.sleep(0.01)
    p.close("ok")
    p.wait_plot()
    (plot,) = made
    ts, vs = plot.series("samples_per_s")
    finite = [v for v in vs if not math.isnan(v)]
    assert finite == [400.0, 900.0, 1200.0]
    # a gap (NaN) between every two configurations: no segment joins them
    assert [math.isnan(v) for v in vs] == [False, True, False, True, False]
    line = next(ln for ln in plot.figure.axes[0].get_lines() if ln.get_label() != "_nolegend_")
    assert line.get_marker() == "o"


def test_the_sweep_tags_its_progress_with_the_configuration():
    pytest.importorskip("torch")
    from test_sweep import SleepyItems

    from nbbench.probes.pipeline.sweep import sweep

    seen = []
    sweep(
        SleepyItems(n=200, item_s=0.0005),
        num_workers=[0],
        batch_size=[4, 8],
        duration=0.2,
        warmup=1,
        monitor=False,
        progress=lambda f, m=None: seen.append(dict(m or {})),
    )
    tags = [m.get("config") for m in seen if m.get("samples_per_s")]
    assert len(tags) == 2 and len(set(tags)) == 2 and all("batch_size" in t for t in tags)


def test_a_lone_sweep_configuration_and_a_comparison_without_values_have_no_figure():
    from nbbench.plots.sweep import sweep_figure
    from nbbench.results.sweep import SweepResult

    one = [
        {
            "num_workers": 0,
            "batch_size": 64,
            "pin_memory": False,
            "prefetch_factor": 2,
            "status": "ok",
            "samples_per_s": 500.0,
        }
    ]
    assert sweep_figure(SweepResult(samples={"configs": one})) is None  # a lone dot: the table says it all
    empty = compare(
        [Result(kind="k", metrics={"a_bytes_per_s": None}), Result(kind="k", metrics={"a_bytes_per_s": None})]
    )
    assert bar_chart(empty.groups[0]) is None and empty.figures() == []
    assert "<img" not in empty.html(images=True)
