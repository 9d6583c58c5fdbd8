"""The plots layer: matplotlib's object API only, imported when something is drawn."""

import subprocess
import sys

import test_layers as layers


def test_no_module_imports_pyplot():
    bad = [
        f"{layers._rel(path)}:{line}"
        for mod, path in layers.MODULES.items()
        for target, line in layers.imports_of(mod, path)
        if target.startswith("matplotlib.pyplot")
    ]
    assert bad == []


def test_plots_and_live_views_import_without_matplotlib():
    mods = sorted(m for m in layers.MODULES if m.startswith("nbbench.plots")) + [
        "nbbench.ui.liveplot",
        "nbbench.ui.loaderplot",
    ]
    assert "nbbench.plots.timeline" in mods
    code = (
        f"import importlib, sys\nfor m in {mods!r}:\n    importlib.import_module(m)\nprint('matplotlib' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_a_stored_monitor_run_draws_the_live_plots_panels():
    from nbbench.plots.monitor import monitor_figure
    from nbbench.results.system.monitor import MonitorResult

    tl = {
        "t_s": [0.1, 0.2, 0.3],
        "cpu.util_pct": [10.0, 20.0, 30.0],
        "disk.read_bytes_per_s": [1e6, 2e6, 3e6],
        "gpu0.util_pct": [50.0, 60.0, 70.0],
        "gpu0.mem_used_bytes": [2**30] * 3,
    }
    res = MonitorResult(params={"what": "cell"}, samples={"timeline": tl})
    fig = monitor_figure(res, dpi=50)
    titles = [ax.get_title(loc="left") for ax in fig.axes]
    assert titles == [
        "GPU kernel-active % (share of time a kernel ran)",
        "GPU memory used",
        "CPU, whole machine",
        "Disk (disk)",
    ]
    assert fig.dpi == 50 and type(fig.canvas).__name__ == "FigureCanvasAgg"
    (cpu,) = [ln for ln in fig.axes[2].get_lines() if ln.get_label() == "busy"]
    assert list(cpu.get_ydata()) == [10.0, 20.0, 30.0]
    assert res.png(dpi=50)[:4] == b"\x89PNG"


def test_a_line_only_through_five_points_fewer_are_marked_values_and_targets_are_dashed():
    from matplotlib.figure import Figure

    from nbbench.plots.style import MIN_LINE_POINTS, draw_measured, draw_target

    ax = Figure().subplots()
    (few,) = draw_measured(ax, [1, 2, 3], [620e6, 400e6, 210e6], fmt=lambda v: f"{v / 1e6:.0f} MB/s")
    (many,) = draw_measured(ax, range(MIN_LINE_POINTS), range(MIN_LINE_POINTS), linestyle="--")
    target = draw_target(ax, 300e6, "need")
    assert few.get_linestyle() == "None" and few.get_marker() == "o"  # no trend line through 3 points
    assert [t.get_text() for t in ax.texts] == ["620 MB/s", "400 MB/s", "210 MB/s"]  # each with its value
    assert many.get_linestyle() == "-"  # measured: solid, even if asked
    assert target.get_linestyle() == "--"  # the target: dashed


def test_the_loaders_measured_au_is_solid_and_its_target_dashed():
    from nbbench.plots.loader import loader_subplots

    au = loader_subplots()[1]
    assert "linestyle" not in au.styles.get("loader.au_pct", {})
