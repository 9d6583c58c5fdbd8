"""Progress like tqdm, from the one core (nbbench.progress): description, done/total, elapsed,
ETA and rate — the same fields in the terminal's line and the notebook's bar."""

from __future__ import annotations

import io

import pytest

from nbbench.progress import Progress, TerminalProgress


class Clock:
    def __init__(self, t=1000.0):
        self.t = t

    def __call__(self):
        return self.t


def test_the_core_computes_elapsed_eta_rate_and_counts_for_a_fake_clock():
    clock = Clock()
    p = Progress("dd /data/f", clock=clock)
    clock.t += 2.0
    p(0.25, {"write_bytes_per_s": 306e6, "done": 256 * 2**20, "total": 2**30, "unit": "bytes"})
    d = p.format_dict()
    assert d["elapsed_s"] == pytest.approx(2.0) and d["remaining_s"] == pytest.approx(6.0)
    assert (d["done"], d["total"], d["unit"]) == (256 * 2**20, 2**30, "bytes")
    assert d["rates"] == {"write_bytes_per_s": 306e6}  # the counts are not rates
    clock.t += 6.0
    p.close("ok")
    d = p.format_dict()
    assert d["elapsed_s"] == pytest.approx(8.0) and d["remaining_s"] is None and d["done"] == 2**30
    clock.t += 100.0  # after the end the clock stops
    assert p.format_dict()["elapsed_s"] == pytest.approx(8.0)


def test_the_terminal_line_has_every_field_and_keeps_the_description_whole():
    clock = Clock()
    bar = TerminalProgress("randread /data/f", stream=io.StringIO(), clock=clock, columns=100)
    clock.t += 2.1
    bar(0.43, {"iops": 74_800, "read_bytes_per_s": 306e6})
    line = bar.line()
    assert line.startswith("randread /data/f   43%|████▎     | 2.1s<2.8s, 74.8 kIOPS, 306 MB/s read")
    dd = TerminalProgress("dd /data/f", stream=io.StringIO(), clock=clock, columns=100)
    clock.t += 3.0
    dd(0.5, {"write_bytes_per_s": 306e6, "done": 512 * 2**20, "total": 2**30, "unit": "bytes"})
    assert "| 512 MiB/1.00 GiB 3.0s<3.0s, 306 MB/s write" in dd.line()
    files = TerminalProgress("files /data", stream=io.StringIO(), clock=clock, columns=100)
    files(0.2, {"files_per_s": 8100, "done": 1000, "total": 5000, "unit": "files"})
    assert "1,000/5,000 files" in files.line() and "8.10 kfiles/s" in files.line()


def test_a_narrow_terminal_shortens_the_path_in_the_middle_never_the_verb():
    clock = Clock()
    path = "/tmp/nbbench-06-q15srco8/" + "long-directory/" * 6 + "disk"
    bar = TerminalProgress(f"randread {path}", stream=io.StringIO(), clock=clock, columns=70)
    clock.t += 2.1
    bar(0.43, {"iops": 74_800, "read_bytes_per_s": 306e6})
    line = bar.line()
    assert len(line) <= 70 and line.startswith("randread /tmp/nbbench-") and "…" in line and "/disk " in line
    assert "43%" in line and "2.1s<2.8s" in line and "74.8 kIOPS" in line  # the figures stay, whole
    from nbbench.progress import format_interval

    assert format_interval(75) == "1:15" and format_interval(3723) == "1:02:03" and format_interval(None) == "?"


def test_a_log_gets_the_whole_line_once_at_the_end():
    out = io.StringIO()
    bar = TerminalProgress("doctor", stream=out, clock=Clock())
    bar(0.5, {"done": 5, "total": 10, "unit": "checks"})
    bar.close("interrupted")
    assert out.getvalue().strip().endswith("5/10 checks 0.0s  interrupted")


def test_the_notebook_bar_shows_the_same_fields_and_turns_red_or_amber():
    pytest.importorskip("ipywidgets")
    from nbbench.ui.progress import NotebookProgress

    bar = NotebookProgress("randread /a/rather/long/path/to/the/data/file", display_now=False)
    bar.clock = clock = Clock()
    bar.started = clock.t
    clock.t += 2.1
    bar.min_interval = 0
    bar(0.43, {"iops": 74_800, "read_bytes_per_s": 306e6, "done": 430, "total": 1000, "unit": "steps"})
    assert "randread /a/rather/long/path/to/the/data/file" in bar.desc_label.value  # whole, never cut
    assert bar.label.value == "43% · 430/1,000 steps · 2.1s<2.8s · 74.8 kIOPS, 306 MB/s read"
    assert bar.bar.value == pytest.approx(0.43)
    bar.close("failed")
    assert bar.bar.bar_style == "danger" and bar.label.value.endswith("failed")
    other = NotebookProgress("dd /x", display_now=False)
    other.close("interrupted")
    assert other.bar.bar_style == "warning"


def test_probes_report_how_far_in_their_own_terms(tmp_path):
    from nbbench.probes.storage import disk
    from nbbench.progress import figures

    calls = []
    disk.dd(tmp_path, size="8M", bs="1M", progress=lambda f, m: calls.append(dict(m or {})))
    counted = [m for m in calls if "done" in m]
    assert counted and all(m["unit"] == "bytes" and m["total"] == 8 * 2**20 for m in counted)
    assert all(0 <= m["done"] <= m["total"] for m in counted)
    assert figures(counted[0]).keys() <= {"write_bytes_per_s", "read_bytes_per_s"}


def test_the_panels_bar_plots_rates_only():
    pytest.importorskip("ipywidgets")
    from nbbench.ui.rateplot import PanelProgress

    made = []

    class FakePlot:
        def __init__(self, subplots, title):
            self.points = []
            made.append(self)

        def add(self, t, values):
            self.points.append(values)

        def close(self):
            pass

    p = PanelProgress("dd /x", make_plot=lambda **kw: FakePlot(**kw))
    p(0.1, {"write_bytes_per_s": 5e8, "done": 2**20, "total": 2**24, "unit": "bytes"})
    p.close("ok")
    p.wait_plot()
    assert made and made[0].points == [{"write_bytes_per_s": 5e8}]
    assert "16.0 MiB/16.0 MiB" in p.label.value


def test_the_bar_ends_on_the_results_figures_not_a_mid_run_one():
    """A run's last progress report (244 MB/s mid-run, one rank's view) is not its result
    (495 MB/s all ranks together): the bar must end on the result's figure."""
    from nbbench.commands.context import Context
    from nbbench.results import Result

    shown = []

    class Bar(Progress):
        def draw(self):
            shown.append(self.text())

    ctx = Context()
    ctx.progress = lambda desc: Bar(desc)

    def probe(p, cancel):
        p(0.9, {"write_bytes_per_s": 2.44e8, "mid_run_only_per_s": 1.0})
        return Result(kind="dd", metrics={"write_bytes_per_s": 4.95e8}, status="ok")

    ctx.run_probe("dd /x", probe)
    assert "495 MB/s" in shown[-1] and "244" not in shown[-1], shown[-1]
    assert "mid run" not in shown[-1].replace("_", " ")
