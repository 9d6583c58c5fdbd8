"""The panel reads like every other output (issue 12): each tab keeps its own run, the status
line's colour says what the checks found, only useful controls show, option texts fit,
errors name the panel's fields, the answer comes first, and a static snapshot of the panel
is displayed with it — built in-process here with ipywidgets, no browser."""

from __future__ import annotations

import re

import pytest

from nbbench.panel.runner import Job
from nbbench.results import ProbeError, Result
from nbbench.store import Store

pytest.importorskip("ipywidgets")


@pytest.fixture
def store(tmp_path_factory):
    from nbbench.env import fingerprint

    fingerprint()
    return Store(tmp_path_factory.mktemp("store") / "results.sqlite")


@pytest.fixture
def panel(tmp_path, store):
    from nbbench.panel import panel as make

    return make(str(tmp_path), store=store)


@pytest.fixture
def fake_gpu(monkeypatch):
    """The GPU check returns what ``fake_gpu.statuses`` says (verdicts), instantly."""
    from nbbench.probes import gpu

    class Fake:
        statuses = ("ok",)

    def check(**kw):
        res = gpu.GpuCheckResult(
            extra={
                "available": True,
                "verdicts": [
                    {"check": f"c{i}", "status": s, "message": f"check {i}: {s}"} for i, s in enumerate(Fake.statuses)
                ],
            }
        )
        return res.finish("ok")

    monkeypatch.setattr(gpu, "check", check)
    return Fake


def _run(panel, tab=None, **kw):
    if tab:
        panel.select(tab)
    panel.run(**kw)
    rec = panel.wait(60)
    assert rec is not None and rec.ended is not None
    return rec


def _dd_small(panel, size="1M"):
    panel.select("Storage")
    S = panel.tab("Storage")
    S.probe.value = "dd"
    S.dd_size.value = size
    S.dd_bs.value = "256k"
    panel.plot_rates.value = False
    return _run(panel)


# ------------------------------------------------------------------ one area per tab
def test_each_tab_keeps_its_own_status_and_result(panel, fake_gpu):
    rec = _run(panel, "GPU")
    assert rec.status == "ok"
    gpu_result = panel.results.value
    assert "check 0" in gpu_result and "nbbench-status-ok" in panel.status.value
    panel.select("Storage")  # not the GPU's run under the Storage tab
    assert panel.results.value == "" and panel.error.value == "" and panel.plot.children == ()
    assert "not run yet" in panel.status.value and "gpu" not in panel.status.value
    assert panel.controls.children[-1].children == (panel.tab("Storage").area.status,)
    panel.select("GPU")  # and back: the GPU's run is still there
    assert panel.results.value == gpu_result and "nbbench-status-ok" in panel.status.value


def test_a_new_run_clears_the_tabs_old_one(panel, fake_gpu):
    rec = _run(panel, "GPU")
    assert rec.status == "ok" and "check 0" in panel.results.value
    _run(panel, job=Job("boom", fn=lambda ctx: 1 / 0))
    assert "check 0" not in panel.results.value  # the old result is gone
    assert "ZeroDivisionError" in panel.error.value and "nbbench-status-error" in panel.status.value


def test_a_run_on_another_tab_draws_there_even_when_the_tab_shown_changes(panel, fake_gpu):
    import threading

    gate = threading.Event()

    def slow(ctx):
        gate.wait(10)
        return Result(kind="slow-test", metrics={"read_bytes_per_s": 1e8}).finish()

    panel.select("Monitor")
    panel.run(Job("slow", fn=slow))
    panel.select("GPU")  # while it runs: the GPU tab shows no trace of it
    assert "running" not in panel.status.value and panel.run_button.disabled
    assert "Monitor is running" in panel.run_button.tooltip
    gate.set()
    panel.wait(10)
    assert panel.results.value == "" and "not run yet" in panel.status.value
    panel.select("Monitor")
    assert "100 MB/s" in panel.results.value and "nbbench-status-ok" in panel.status.value


# --------------------------------------------------------------------- verdict colours
def test_no_green_above_a_refused_run(panel, tmp_path):
    """A green 'done' must not stay above a new red error: a Run that does not start clears the
    tab's old run and says so in red; fixing the field takes the error away."""
    from nbbench.panel.views import COLOURS

    rec = _dd_small(panel)
    assert rec.status == "ok" and "nbbench-status-ok" in panel.status.value
    S = panel.tab("Storage")
    S.dd_size.value = "16Q"
    assert panel.run() is None
    assert "nbbench-error" in panel.error.value
    assert "nbbench-status-ok" not in panel.status.value and COLOURS["ok"] not in panel.status.value
    assert "nbbench-status-error" in panel.status.value and "not started" in panel.status.value
    assert panel.results.value == ""  # the old run no longer answers these fields
    S.dd_size.value = "1M"  # fixed: the refusal goes
    assert panel.error.value == "" and "not run yet" in panel.status.value


def test_type_a_path_error_goes_once_a_path_is_typed(panel, tmp_path):
    panel.select("Storage")
    panel.path = ""
    panel.path_field.wait(5)
    assert panel.run() is None and "type a PATH" in panel.error.value
    panel.path = str(tmp_path)
    assert panel.path_field.wait(5).ok
    assert panel.error.value == "" and "nbbench-status-error" not in panel.status.value


def test_a_failed_check_turns_the_bar_red_not_green(panel):
    from nbbench.probes.gpu import GpuCheckResult

    def checked(ctx):
        p = ctx.progress("check")
        p(0.5, {"read_bytes_per_s": 1e8})
        p.close("ok")
        return GpuCheckResult(
            extra={"available": True, "verdicts": [{"check": "c", "status": "fail", "message": "bad"}]}
        ).finish("ok")

    rec = _run(panel, "GPU", job=Job("check", fn=checked))
    assert rec.status == "ok" and rec.verdict == "fail"
    assert "nbbench-status-fail" in panel.status.value
    assert panel.progress.bar.bar_style == "danger"  # the bar says it ran; not that it passed


# ---------------------------------------------------------------- controls that do something
def _shown(widget) -> bool:
    return widget.layout.display != "none"


def test_controls_shown_only_where_they_do_something(panel, tmp_path):
    # History runs nothing: no Run, Stop, label, save or live plot, no run area
    panel.select("History")
    assert not _shown(panel.controls) and panel.area_box.children == ()
    # the GPU check reports no rates: no live-plot box; its benchmark fields only with a benchmark
    panel.select("GPU")
    assert _shown(panel.controls) and not _shown(panel.plot_rates)
    g = panel.tab("GPU")
    assert _shown(g.bench_box)
    g.bench.value = False
    assert not _shown(g.bench_box)
    panel.select("Storage")
    assert _shown(panel.plot_rates) and _shown(panel.label)
    panel.save.value = False  # a label is only stored with the result
    assert not _shown(panel.label)
    # the monitor's duration means nothing "until Stop"
    m = panel.tab("Monitor")
    m.until_stop.value = True
    assert not _shown(m.duration)


def test_storage_fields_follow_the_path_and_the_cache(panel, tmp_path):
    S = panel.tab("Storage")
    S.probe.value = "randread"
    S.rr_cache.value = "direct"
    assert not _shown(S.rr_warm)  # O_DIRECT has no page cache to warm
    S.rr_cache.value = "buffered"
    assert _shown(S.rr_warm)
    assert _shown(S.dd_mode) and _shown(S.dk_nowrite)  # a directory: writes to choose
    assert [v for _, v in S.dd_mode.options] == ["", "write"]  # "read only" in a directory is both
    f = tmp_path / "data.bin"
    f.write_bytes(b"x" * 65536)
    panel.path = str(f)
    assert panel.path_field.wait(5).kind == "file"
    assert not _shown(S.dd_mode) and not _shown(S.dk_nowrite)  # a file is only read
    S.probe.value = "dd"
    S.dd_mode.value = "write"
    assert "--mode" not in S.job(panel.path_field.current(), None).argv


def test_monitor_live_plot_box_sets_no_plot(panel):
    m = panel.tab("Monitor")
    info = panel.path_field.current()
    assert "--no-plot" not in m.job(info, None).argv
    panel.plot_rates.value = False
    assert "--no-plot" in m.job(info, None).argv


# ----------------------------------------------------------------------- full option texts
_CHAR_PX = 7.5  # a generous average width of the panel's 13 px font


def _texts(widget) -> list[str]:
    import ipywidgets as w

    if isinstance(widget, (w.Dropdown, w.ToggleButtons)):
        return (
            [str(label) for label, _ in widget._options_full]
            if hasattr(widget, "_options_full")
            else [str(o[0] if isinstance(o, tuple) else o) for o in widget.options]
        )
    if isinstance(widget, w.Checkbox):
        return [widget.description]
    return []


def test_no_option_text_is_cut_by_a_fixed_width(panel):
    """A dropdown or checkbox either sizes itself to its text (max-content) or has room for its
    description and its longest option."""
    import ipywidgets as w

    def walk(roots):
        seen, todo = set(), list(roots)
        while todo:
            wdg = todo.pop()
            if id(wdg) not in seen:
                seen.add(id(wdg))
                yield wdg
                todo.extend(getattr(wdg, "children", ()) or ())

    roots = [panel.widget] + [b for t in panel.tab_list for b in getattr(t, "boxes", {}).values()]
    checked = 0
    for wdg in walk(roots):
        if not isinstance(wdg, (w.Dropdown, w.Checkbox)):
            continue
        width = wdg.layout.width
        if width in (None, "", "auto", "max-content", "fit-content"):
            checked += 1
            continue
        m = re.fullmatch(r"(\d+)px", str(width))
        assert m, (wdg.description, width)
        texts = _texts(wdg)
        need = (
            _CHAR_PX * (len(wdg.description if isinstance(wdg, w.Dropdown) else "") + max(len(t) for t in texts)) + 40
        )
        assert int(m.group(1)) >= need, f"{wdg.description!r} is {width}, its text needs ~{need:.0f}px: {texts}"
        checked += 1
    assert checked >= 15


# ------------------------------------------------------------------ the panel's own words
def test_errors_name_the_field_not_the_flag(panel, tmp_path):
    S = panel.tab("Storage")
    panel.select("Storage")
    S.probe.value = "dd"
    S.dd_size.value = "16Q"
    assert panel.run() is None
    text = re.sub(r"<[^>]+>", "", panel.error.value)
    assert "size: unknown size unit" in text and "--size" not in text and "argument" not in text
    S.probe.value = "randread"
    S.rr_size.value = "100T"  # more than any disk here has free
    S.rr_runtime.value = "1s"
    rec = _run(panel)
    text = re.sub(r"<[^>]+>", "", panel.error.value)
    assert rec.status == "error" and "not enough free space" in text
    assert "“region”" in text and "--size" not in text  # randread's --size is the field "region"
    panel.select("DataLoader")
    L = panel.tab("DataLoader")
    L.action.value = "sweep"
    L.sw_pin.value = "maybe"
    assert panel.run() is None
    text = re.sub(r"<[^>]+>", "", panel.error.value)
    assert text.startswith("Error: pin_memory: not true/false") and "--pin-memory" not in text


def test_panel_words_rewrites_flags():
    from nbbench.panel.wording import panel_words

    f = {"--size": "region", "--bs": "block size"}
    assert panel_words("randread: argument --bs: bad", f) == "block size: bad"
    assert panel_words("use a smaller --size or --direct", f) == "use a smaller “region” or --direct"
    assert panel_words("argument --qd: bad", f) == "argument --qd: bad"


# ---------------------------------------------------------------------- the answer first
def test_the_answer_comes_before_any_table_and_the_plot(panel):
    from nbbench.results.present.rule import Section

    class Tabled(Result):
        KIND = "tabled-test"

        def answer_line(self):
            return "42 widgets/s"

        def sections(self):
            return [Section("every widget", [["a", "1"]], folded=False)] + super().sections()

    _run(panel, "Storage", job=Job("t", fn=lambda ctx: Tabled(kind="tabled-test", metrics={"x": 1.0}).finish()))
    html = panel.results.value
    assert 0 <= html.index("42 widgets/s") < html.index("<table")
    kids = panel.area.widget.children
    assert kids.index(panel.area.results) < kids.index(panel.area.plot)  # the answer above the plot


# ------------------------------------------------------------------------ the snapshot
def test_snapshot_is_static_html_of_each_tabs_last_run(panel, fake_gpu):
    fake_gpu.statuses = ("ok", "fail")
    _run(panel, "GPU")
    snap = panel.snapshot_html()
    assert "<script" not in snap and "widget" not in re.sub(r"<style>.*?</style>", "", snap).split("head")[0]
    assert "nbbench-snapshot" in snap and "GPU" in snap and "check 1: fail" in snap
    assert "nbbench-status-fail" in snap and "a check failed" in snap  # the red status line, kept
    assert "not run in this session: Storage, DataLoader, Object storage, Monitor" in snap
    assert re.sub(r"<[^>]+>", "", snap).count("check 1: fail") >= 1
    rec = _dd_small(panel)
    assert rec.status == "ok"
    snap = panel.snapshot_html()
    body = snap[snap.index("nbbench-snapshot-body") :]
    assert body.index(">GPU<") < body.index(">Storage<")
    assert "B/s write" in snap and "not run in this session: DataLoader, Object storage, Monitor" in snap


def test_displaying_the_panel_leaves_the_snapshot_and_refreshes_it(panel, fake_gpu):
    from IPython.utils.capture import capture_output

    with capture_output() as cap:
        panel._ipython_display_()
    widget, snap = cap.outputs
    assert "application/vnd.jupyter.widget-view+json" in widget.data
    assert widget.data["text/plain"].startswith("<nbbench control panel: tab ")  # not a VBox of every child
    assert "nbbench-snapshot" in snap.data["text/html"] and "not run in this session" in snap.data["text/html"]
    assert snap.transient["display_id"] == panel.snapshot.display_id
    with capture_output() as cap:
        _run(panel, "GPU")
        panel.snapshot.refresh()
    updates = [o for o in cap.outputs if o.update]
    assert updates and all(o.transient["display_id"] == panel.snapshot.display_id for o in updates)
    assert "check 0: ok" in updates[-1].data["text/html"]


# ------------------------------------------------------------------ the live plot's look
def test_live_plot_legend_text_wraps_instead_of_being_cut():
    from nbbench.plots.subplot import Subplot
    from nbbench.plots.timeline import Timeline

    tl = Timeline(
        [Subplot("samples/s", ["warm_samples_per_s"], labels={"warm_samples_per_s": "from memory (warm cache)"})]
    )
    tl.add(0.0, {"warm_samples_per_s": 1.0})
    tl.add(1.0, {"warm_samples_per_s": 2.0})
    assert tl.png()[:4] == b"\x89PNG"
    (ax,) = tl._axes
    (text,) = [t.get_text() for t in ax.get_legend().get_texts()]
    assert text.replace("\n", " ") == "from memory (warm cache)" and "\n" in text
    # and it fits the figure: the legend's right edge is inside the canvas
    renderer = tl._fig.canvas.get_renderer()
    assert ax.get_legend().get_window_extent(renderer).x1 <= tl._fig.bbox.x1


def test_a_figure_first_seen_in_the_last_report_gets_no_lone_legend_entry():
    from nbbench.ui.rateplot import PanelProgress

    made = []

    class FakePlot:
        def __init__(self, subplots, title):
            self.subplots, self.points = subplots, []
            made.append(self)

        def add(self, t, values):
            self.points.append(values)

        def close(self):
            pass

    p = PanelProgress("feed /x", make_plot=lambda **kw: FakePlot(**kw))
    p(0.3, {"samples_per_s": 800.0})
    p(1.0, {"samples_per_s": 411.0, "warm_samples_per_s": 733.0})  # the summary
    p.close("ok")
    p.wait_plot()
    (plot,) = made
    assert all("warm_samples_per_s" not in pt for pt in plot.points)
    assert all("warm_samples_per_s" not in panel.labels for panel in plot.subplots)


def test_table_headers_are_padded_like_their_cells():
    """Column names in the panel's (and notebook's) tables do not run together ("pidrole name")."""
    from nbbench.results.present.rule import Section, _table_html

    html = _table_html(Section("t", [["1", "2"]], head=["samples/s", "bandwidth"], folded=False))
    heads = re.findall(r"<th style='([^']*)'>", html)
    cells = re.findall(r"<td style='([^']*)'>", html)
    assert len(heads) == 2 and all("padding:1px 8px 1px 0" in h for h in heads)
    assert all("padding:1px 8px 1px 0" in c for c in cells)


def test_the_dataloader_tabs_final_frame_draws_what_the_accelerators_need():
    """feed's result says the samples/s one accelerator needs: the panel's final frame draws it
    as a target line on the samples/s panel (the live plot had only the throughput)."""
    from nbbench.ui.rateplot import PanelProgress

    made = []

    class FakePlot:
        def __init__(self, subplots, title):
            self.subplots, self.targets_at_close = subplots, None
            made.append(self)

        def add(self, t, values):
            pass

        def close(self):
            self.targets_at_close = [dict(p.targets) for p in self.subplots]

    p = PanelProgress("feed /x", make_plot=lambda **kw: FakePlot(**kw))
    p(0.5, {"samples_per_s": 300.0})
    p.close("ok", final={"samples_per_s": 297.0, "needed_samples_per_s": 1610.0, "au_target_pct": 90.0})
    p.wait_plot()
    (plot,) = made
    (targets,) = [t for t in plot.targets_at_close if t]
    assert targets == {"needed at AU 90 %: 1.61 ksamples/s": 1610.0}
    q = PanelProgress("dd /x", make_plot=lambda **kw: FakePlot(**kw))  # nothing needed: no line
    q(0.5, {"write_bytes_per_s": 3e8})
    q.close("ok", final={"write_bytes_per_s": 3e8})
    q.wait_plot()
    assert all(not t for t in made[-1].targets_at_close)


def test_a_run_record_keeps_ran_and_its_checks_apart():
    """Notebook 05 printed "ok: CUDA not available …" (the status beside a failed check's answer)."""
    from nbbench.panel.runner import RunRecord

    class _Value:
        def answer_line(self):
            return "CUDA not available: this torch (2.13.0+cpu) is a CPU-only build"

    r = RunRecord("gpu check", status="ok", verdict="fail", value=_Value())
    assert str(r) == "gpu check: ran · checks: fail — CUDA not available: this torch (2.13.0+cpu) is a CPU-only build"
    assert RunRecord("dd /data", status="ok").outcome() == "ran"
    assert RunRecord("dd /data", status="failed", error="no space").outcome() == "failed"


def test_the_gpu_and_monitor_tabs_run_the_fields_as_the_parser_reads_them(panel):
    from nbbench import commands
    from nbbench.panel.runner import PanelContext

    g = panel.tab("GPU")
    g.bench.value = False
    g.iters.value = 3
    inv = commands.parse(g.job(None, None).argv, PanelContext())
    assert (inv.args.bench, inv.args.iters, inv.args.size) == (False, 3, 4096)
    m = panel.tab("Monitor")
    m.interval.value, m.gpus.value = "0.5", "none"
    inv = commands.parse(m.job(None, None).argv, PanelContext())
    assert (inv.args.interval, inv.args.duration, inv.args.gpus, inv.args.procs) == (0.5, 30.0, "none", 1.0)
    m.until_stop.value = True
    assert commands.parse(m.job(None, None).argv, PanelContext()).args.duration == 0.0
    m.until_stop.value = False
    m.duration.value = ""
    with pytest.raises(ProbeError, match="for"):
        m.job(None, None)
