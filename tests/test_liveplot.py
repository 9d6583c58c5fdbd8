"""LivePlot: series matching, PNG frames, display-handle updates, throttle, final frame."""

import subprocess
import sys
import time

import pytest

from nbbench.plots.monitor import monitor_figure
from nbbench.plots.subplot import nice_ceil
from nbbench.ui.liveplot import LivePlot, Subplot, for_monitor

PNG = b"\x89PNG\r\n\x1a\n"


def panels():
    return [
        Subplot("throughput", ["loader.samples_per_s"], unit="samples/s"),
        Subplot("GPU", ["gpu*.util_pct"], unit="%", ylim=(0, 100), labels={"gpu0.util_pct": "GPU0"}),
    ]


def test_only_series_the_panels_show_are_kept():
    p = LivePlot(panels(), target="none")
    p.add(10.0, {"loader.samples_per_s": 100.0, "gpu0.util_pct": 50, "gpu1.util_pct": None, "cpu.util_pct": 9.0})
    p.add(11.0, {"loader.samples_per_s": 200.0, "gpu0.util_pct": 70, "gpu1.util_pct": 30.0})
    assert sorted(p.names()) == ["gpu0.util_pct", "gpu1.util_pct", "loader.samples_per_s"]
    assert p.series("loader.samples_per_s") == ([0.0, 1.0], [100.0, 200.0])
    assert p.series("gpu1.util_pct") == ([1.0], [30.0])  # None is a gap, not a zero


def test_render_is_a_png_and_the_figure_is_not_pyplot():
    p = LivePlot(panels(), title="t", target="none")
    for i in range(50):
        p.add(float(i), {"loader.samples_per_s": 10.0 * i, "gpu0.util_pct": i % 100})
    p.mark(20.0, "workers=8")
    png = p.render_png()
    assert png.startswith(PNG)
    fig = p.figure
    assert type(fig).__name__ == "Figure" and type(fig.canvas).__name__ == "FigureCanvasAgg"
    ax0, ax1 = fig.axes[:2]
    assert ax1.get_ylim() == (0.0, 100.0)
    assert ax0.get_ylim()[1] >= 490  # autoscaled in nice steps
    assert [line.get_label() for line in ax1.get_lines() if not line.get_label().startswith("_")] == ["GPU0"]
    code = (
        "import sys; from nbbench.ui.liveplot import LivePlot, Subplot; "
        "p = LivePlot([Subplot('a', ['x'])], target='none'); p.add(0, {'x': 1.0}); p.add(1, {'x': 2.0}); "
        "p.render_png(); print('matplotlib.pyplot' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_blitted_frames_match_a_full_redraw():
    p = LivePlot(panels(), target="none")
    for i in range(10):
        p.add(float(i), {"loader.samples_per_s": 5.0, "gpu0.util_pct": 40})
    p.render_png()  # full draw, background cached
    p.add(10.0, {"loader.samples_per_s": 5.0, "gpu0.util_pct": 60})
    fast = p.render_png()
    q = LivePlot(panels(), target="none", blit=False)
    for i in range(10):
        q.add(float(i), {"loader.samples_per_s": 5.0, "gpu0.util_pct": 40})
    q.add(10.0, {"loader.samples_per_s": 5.0, "gpu0.util_pct": 60})
    import io

    from PIL import Image, ImageChops

    a = Image.open(io.BytesIO(fast)).convert("RGB")
    b = Image.open(io.BytesIO(q.render_png())).convert("RGB")
    assert a.size == b.size
    diff = ImageChops.difference(a, b).convert("L").point(lambda v: 255 if v else 0)
    changed = diff.histogram()[255]
    # the same picture; lines may sit over an axis spine pixel (drawn after it when blitted)
    assert changed <= 0.002 * a.size[0] * a.size[1]


def test_nice_ceil_steps():
    assert [nice_ceil(x) for x in (0.7, 1.0, 1.2, 2.1, 3, 7, 11, 430)] == [1.0, 1.0, 2.0, 2.5, 5.0, 10.0, 20.0, 500.0]


class FakeHandle:
    def __init__(self, sink):
        self.sink = sink

    def update(self, obj, raw=False):
        self.sink.append(("update", obj, threading_name()))


def threading_name():
    import threading

    return threading.current_thread().name


def test_display_handle_gets_live_frames_then_a_final_one_from_the_caller(monkeypatch):
    sink = []

    def fake_display(obj, raw=False, display_id=None):
        sink.append(("display", obj, threading_name()))
        return FakeHandle(sink)

    import IPython.display

    monkeypatch.setattr(IPython.display, "display", fake_display)
    p = LivePlot(panels(), target="display", max_fps=20, cpu_budget=0.9)
    p.start()
    assert sink[0][0] == "display" and sink[0][1]["image/png"]  # first frame drawn before the clock starts
    t0 = time.monotonic()
    while p.frames < 2 and time.monotonic() - t0 < 10:
        p.add(time.monotonic(), {"loader.samples_per_s": 1.0, "gpu0.util_pct": 10})
        time.sleep(0.02)
    png = p.close()
    assert p._thread is None  # joined
    assert p.frames >= 2
    live = [s for s in sink if s[0] == "update" and s[2] == "nbbench-liveplot"]
    assert live, "frames pushed from the drawing thread"
    last = sink[-1]
    assert last[0] == "update" and last[2] == "MainThread"
    import base64

    assert base64.b64decode(last[1]["image/png"]) == png
    assert "throughput" in last[1]["text/plain"]
    n = len(sink)
    assert p.close() == png and len(sink) == n  # idempotent


def test_adaptive_throttle_respects_the_cpu_budget(monkeypatch):
    import IPython.display

    monkeypatch.setattr(IPython.display, "display", lambda *a, **k: FakeHandle([]))
    p = LivePlot(panels(), target="display", max_fps=4, cpu_budget=0.001)
    p.start()
    for i in range(3):
        p.add(time.monotonic(), {"loader.samples_per_s": float(i)})
        time.sleep(0.3)
    p.close()
    # with a 0.1 % budget a frame costing >= 1 ms waits >= 1 s: at most one frame in 0.9 s
    assert p.frames <= 1
    assert p.period_s >= 0.5


def test_a_costly_frame_never_buys_a_rest_longer_than_max_rest(monkeypatch):
    """A frame costing 0.3 s against a 1.2 % budget would buy a 25 s rest: the plot would stand
    still for most of a cell.  The rest is capped (5 s by default), as the watch view's."""
    import IPython.display

    monkeypatch.setattr(IPython.display, "display", lambda *a, **k: FakeHandle([]))
    p = LivePlot(panels(), target="display", max_fps=4, cpu_budget=0.012, max_rest_s=2.0)
    import itertools

    clock = itertools.count(0.0, 0.3)  # every reading 0.3 s of CPU after the one before: each frame costs >= 0.3 s
    monkeypatch.setattr(time, "thread_time", lambda: next(clock))
    p.start()
    p.add(time.monotonic(), {"loader.samples_per_s": 1.0})
    deadline = time.monotonic() + 5
    while p.frames < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    p.close(final=False)
    assert p.frames >= 1 and p.period_s == 2.0
    assert LivePlot(panels(), target="none").max_rest_s == 5.0


def test_widget_target_sets_image_value():
    p = LivePlot(panels(), target="widget", show=False)
    p.start()
    assert p.widget is not None and bytes(p.widget.value).startswith(PNG)
    p.add(1.0, {"gpu0.util_pct": 50})
    p.add(2.0, {"gpu0.util_pct": 60})  # two points: a line, so a final frame
    png = p.close()
    assert bytes(p.widget.value) == png


def test_text_summary_for_terminals():
    p = LivePlot(panels(), title="sweep", target="none")
    for i, v in enumerate((10.0, 30.0, 20.0)):
        p.add(float(i), {"loader.samples_per_s": v})
    text = p.text()
    assert text.splitlines()[0] == "sweep"
    line = next(ln for ln in text.splitlines() if "loader.samples_per_s" in ln)
    assert "20.0" in line and "30.0" in line  # last, max


def test_annotate_and_status_hooks_run_and_cannot_break_drawing():
    seen = {}

    def annotate(fig, axes, data):
        seen["axes"] = sorted(axes)
        seen["data"] = sorted(data)
        raise RuntimeError("hook bug")

    p = LivePlot(panels(), target="none", annotate=annotate, status=lambda: 1 / 0)
    p.add(0.0, {"loader.samples_per_s": 1.0})
    assert p.render_png().startswith(PNG)
    assert seen["axes"] == ["GPU", "throughput"] and seen["data"] == ["loader.samples_per_s"]


def test_for_monitor_and_result_figure():
    from nbbench.monitor import Monitor

    m = Monitor(interval=0.05, gpus="none")
    m.start()
    plot = for_monitor(m, target="none")
    deadline = time.monotonic() + 60
    # the event: enough samples came through for a plot (not the one-sentence "no plot" note)
    while (not plot.names() or plot.timeline.no_plot_text() is not None) and time.monotonic() < deadline:
        time.sleep(0.02)
    png = plot.close()
    m.stop()
    assert png.startswith(PNG)
    assert plot.names()  # cpu and disk series came through the subscription
    assert [p.title for p in plot.subplots][0].startswith("CPU")  # no GPU monitored: no GPU panels
    fig = monitor_figure(m.result())
    lines = [ln for ax in fig.axes for ln in ax.get_lines()]
    assert lines and all(not ln.get_animated() for ln in lines)


def test_bad_target_and_panels():
    with pytest.raises(ValueError):
        LivePlot(target="x")
    with pytest.raises(TypeError):
        LivePlot([42])


def test_annotate_returning_its_artists_keeps_the_cached_background():
    state = {}

    def gauge(fig, axes, data):
        if "bar" not in state:
            ax = fig.add_axes([0.9, 0.1, 0.03, 0.3])
            ax.set_ylim(0, 100)
            state["bar"] = ax.bar([0.5], [0.0])[0]
        state["bar"].set_height(len(data.get("gpu0.util_pct", ((), ()))[1]))
        return [state["bar"]]

    p = LivePlot(panels(), target="none", annotate=gauge)
    p.add(0.0, {"gpu0.util_pct": 10.0})
    p.render_png()
    full = p.timeline._bg_key
    p.add(1.0, {"gpu0.util_pct": 20.0})
    p.render_png()
    assert p.timeline._bg_key == full  # blitted: no full redraw
    assert state["bar"].get_height() == 2 and state["bar"].get_animated()
    assert p.figure is not None  # builds the static figure
    assert not state["bar"].get_animated()  # a static figure draws everything


def test_pause_holds_live_frames(monkeypatch):
    import IPython.display

    monkeypatch.setattr(IPython.display, "display", lambda *a, **k: FakeHandle([]))
    p = LivePlot(panels(), target="display", max_fps=20, cpu_budget=0.9)
    p.start()
    p.pause()
    for i in range(10):
        p.add(time.monotonic(), {"gpu0.util_pct": float(i)})
        time.sleep(0.03)
    assert p.frames == 0
    p.resume()
    deadline = time.monotonic() + 10
    while p.frames == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    p.close()
    assert p.frames >= 1


def test_a_quiet_network_panel_is_left_out_of_the_final_frame_and_said_in_words():
    from nbbench.plots.monitor import monitor_subplots
    from nbbench.plots.subplot import fold_quiet
    from nbbench.plots.timeline import Timeline

    tl = Timeline(monitor_subplots(net_label="eth0"), title="t")
    for i in range(10):
        tl.add(float(i), {"cpu.util_pct": 50.0 + i, "net.rx_bytes_per_s": 40.0, "net.tx_bytes_per_s": 0.0})
    n = len(tl.subplots)
    assert fold_quiet(tl) == ["no network traffic"]
    assert len(tl.subplots) == n - 1 and "no network traffic" in tl.subtitle
    fig = tl.figure
    assert fig is not None and len(fig.axes) == n - 1
    cpu_ax = next(ax for ax in fig.axes if ax.get_title(loc="left").startswith("CPU"))
    assert any(len(line.get_xdata()) == 10 for line in cpu_ax.lines)  # the panels left still draw their data
    busy = Timeline(monitor_subplots(net_label="eth0"), title="t")
    for i in range(10):
        busy.add(float(i), {"cpu.util_pct": 50.0, "net.rx_bytes_per_s": 5e6})
    assert fold_quiet(busy) == [] and len(busy.subplots) == n
