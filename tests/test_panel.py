"""The control panel without a browser: widget values, callbacks, the runner and Stop."""

from __future__ import annotations

import threading
import time

import pytest

from nbbench import commands
from nbbench.commands import Command
from nbbench.panel.runner import Job, PanelRunner, RunnerHost, parse_command
from nbbench.results import ProbeError, Result
from nbbench.store import Store

pytest.importorskip("ipywidgets")


# ----------------------------------------------------------------- fakes
class SlowResult(Result):
    KIND = "slow-test"


def slow_probe(seconds: float, progress=None, cancel=None) -> Result:
    """Counts for ``seconds`` or until cancelled, reporting progress; like the storage probes."""
    res = SlowResult(kind="slow-test", params={"seconds": seconds})
    t0 = time.monotonic()
    n = 0
    while time.monotonic() - t0 < seconds:
        if cancel is not None and cancel.is_set():
            res.metrics["count"] = n
            return res.finish("interrupted", "stopped")
        n += 1
        if progress is not None:
            progress((time.monotonic() - t0) / seconds, {"read_bytes_per_s": 1.5e8})
        time.sleep(0.01)
    res.metrics["count"] = n
    res.metrics["read_bytes_per_s"] = 1.5e8
    return res.finish()


class SlowCommand(Command):
    name = "slow"

    def add_arguments(self, p):
        p.add_argument("--seconds", type=float, default=0.2)
        p.add_argument("--boom", action="store_true")
        p.add_argument("--usage", action="store_true")
        p.add_argument("--fail", action="store_true")

    def run(self, args, ctx):
        if args.boom:
            raise RuntimeError("kaboom")
        if args.usage:
            raise ProbeError("no space left: use a smaller --size")
        if args.fail:
            return SlowResult(kind="slow-test").fail("the device went away")
        from nbbench.runner import run_cancellable

        p = ctx.progress("slow")
        res = run_cancellable(lambda cancel: slow_probe(args.seconds, progress=p, cancel=cancel), ctx.cancel)
        p.close(res.status)
        return res


@pytest.fixture
def slow_command(monkeypatch):
    real = commands.get_command
    monkeypatch.setitem(commands.REGISTRY, "slow", ("tests:SlowCommand", "a test command"))
    monkeypatch.setattr(commands, "get_command", lambda name: SlowCommand() if name == "slow" else real(name))
    return "slow"


class Host(RunnerHost):
    def __init__(self):
        self.events = []
        self.finished = threading.Event()

    def run_started(self, record):
        self.events.append("started")

    def run_stopping(self, record):
        self.events.append("stopping")

    def run_finished(self, record):
        self.events.append("finished")
        self.finished.set()

    def show(self, obj):
        self.events.append(("show", obj))


@pytest.fixture
def store(tmp_path_factory):
    from nbbench.env import fingerprint

    fingerprint()  # computed once per process (seconds): the first save must not count as Stop latency
    return Store(tmp_path_factory.mktemp("store") / "results.sqlite")


# ---------------------------------------------------------------- runner
def test_parse_command_uses_the_subcommands_parser(slow_command):
    inv = parse_command(["slow", "--seconds", "3"])
    cmd, args = inv.command, inv.args
    assert isinstance(cmd, SlowCommand) and args.seconds == 3.0 and args.no_save is False
    with pytest.raises(ProbeError, match="invalid float value"):
        parse_command(["slow", "--seconds", "soon"])
    with pytest.raises(ProbeError, match="unknown subcommand"):
        parse_command(["no-such-thing"])


def test_runner_saves_a_command_result_with_its_label(slow_command, store):
    host = Host()
    r = PanelRunner(host, store=store)
    rec = r.start(Job("slow", argv=["slow", "--seconds", "0.05", "--label", "base"]))
    assert r.wait(10) is rec and not r.running
    assert rec.status == "ok" and rec.error is None
    assert host.events[0] == "started" and host.events[-1] == "finished"
    hist = store.history(kind="slow-test")
    assert list(hist["label"]) == ["base"] and list(hist["status"]) == ["ok"]
    assert rec.value.run_id == int(hist["run_id"].iloc[0])


def test_one_run_at_a_time(slow_command, store):
    r = PanelRunner(Host(), store=store)
    r.start(Job("slow", argv=["slow", "--seconds", "5"]))
    try:
        with pytest.raises(ProbeError, match="still running"):
            r.start(Job("again", argv=["slow"]))
    finally:
        r.stop()
        r.wait(5)
    assert store.count() == 1


def test_stop_interrupts_within_half_a_second_and_keeps_the_partial_result(slow_command, store):
    host = Host()
    r = PanelRunner(host, store=store)
    rec = r.start(Job("slow", argv=["slow", "--seconds", "30"]))
    time.sleep(0.3)
    assert r.running
    assert r.stop() is True
    assert host.finished.wait(5), "the run did not end after Stop"
    r.wait(5)
    assert rec.status == "interrupted"
    assert rec.stop_latency_s is not None and rec.stop_latency_s < 2.0  # 0.5 s target; generous on a shared machine
    assert "stopping" in host.events
    (row,) = store.history(kind="slow-test").to_dict("records")
    assert row["status"] == "interrupted"
    assert store.get(row["run_id"]).metrics["count"] > 0
    assert r.stop() is False  # nothing left to stop


def test_errors_are_kept_not_swallowed(slow_command, store):
    r = PanelRunner(Host(), store=store)
    rec = r.start(Job("boom", argv=["slow", "--boom"]))
    r.wait(5)
    assert rec.status == "error" and rec.error == "RuntimeError: kaboom" and "Traceback" in rec.details
    rec = r.start(Job("usage", argv=["slow", "--usage"]))
    r.wait(5)
    assert rec.status == "error" and rec.error.startswith("no space left") and rec.details is None
    assert store.count() == 0


def test_fn_job_saved_when_asked(store):
    r = PanelRunner(Host(), store=store)
    rec = r.start(Job("fn", fn=lambda ctx: slow_probe(0.02, cancel=ctx.cancel), save=True, label="x"))
    r.wait(5)
    assert rec.status == "ok" and store.history(label="x")["kind"].tolist() == ["slow-test"]


# ----------------------------------------------------------------- panel
@pytest.fixture
def panel(tmp_path, store):
    from nbbench.panel import panel as make

    return make(str(tmp_path), store=store)


def test_panel_has_its_tabs_and_checks_the_path(panel, tmp_path):
    tabs = ["GPU", "Storage", "DataLoader", "Object storage", "Monitor", "History"]
    assert [t.title for t in panel.tab_list] == tabs
    assert list(panel.tabs.titles) == tabs
    info = panel.path_field.info
    assert info.ok and info.kind == "dir" and info.free_bytes > 0 and info.direct in (True, False)
    assert "directory" in panel.path_field.status.value and "free of" in panel.path_field.status.value
    # the O_DIRECT try leaves nothing behind
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".nbbench")] == []


def test_path_field_validates_as_you_type(panel, tmp_path):
    panel.path = str(tmp_path / "missing")
    info = panel.path_field.wait(5)
    assert not info.ok and "does not exist" in info.error
    assert "nbbench-path-bad" in panel.path_field.status.value and "does not exist" in panel.path_field.status.value
    f = tmp_path / "data.bin"
    f.write_bytes(b"x" * 8192)
    panel.path = str(f)
    info = panel.path_field.wait(5)
    assert info.ok and info.kind == "file" and info.size_bytes == 8192
    assert "read-only probes" in panel.path_field.status.value


def test_path_field_debounces_and_keeps_the_last_value(tmp_path):
    from nbbench.panel.pathfield import PathField, PathInfo

    seen = []

    def checker(value):
        seen.append(value)
        return PathInfo(path=value, ok=True, kind="dir")

    f = PathField("", checker=checker)
    seen.clear()
    for i in range(1, 6):
        f.value = "/tm"[:i] if i <= 3 else "/tmp"[:i]
    assert f.wait(5).path == "/tmp"
    assert seen == ["/tmp"]  # one check for the burst of keystrokes


def test_gpu_tab_runs_the_gpu_command_and_shows_the_result(panel, store, monkeypatch):
    from nbbench.probes import gpu

    calls = []

    def fake_check(**kw):
        calls.append(kw)
        res = gpu.GpuCheckResult(
            extra={
                "available": False,
                "verdicts": [
                    {"check": "torch build", "status": "fail", "message": "a CPU-only build: install a CUDA build"}
                ],
            }
        )
        return res.finish("ok", "no CUDA here")

    monkeypatch.setattr(gpu, "check", fake_check)
    panel.select("GPU")
    assert panel.run_button.description == "Run GPU check" and not panel.run_button.disabled
    panel.tab("GPU").bench.value = False
    panel.label.value = "lab"
    panel.run_button.click()
    rec = panel.wait(10)
    assert rec.status == "ok" and rec.verdict == "fail"  # it ran; its check failed
    assert calls and calls[0]["benchmark"] is False
    assert "CPU-only build" in panel.results.value
    # never green "done" over a failed check: the status line is red and says so
    assert "nbbench-status-fail" in panel.status.value and "a check failed" in panel.status.value
    assert "done in" not in panel.status.value and "#2e7d32" not in panel.status.value
    assert store.history(kind="gpu")["label"].tolist() == ["lab"]
    assert panel.stop_button.disabled and not panel.run_button.disabled


def test_panel_shows_errors_in_red(panel, slow_command, store):
    panel.run(Job("boom", argv=["slow", "--boom"]))
    panel.wait(5)
    assert "nbbench-error" in panel.error.value and "kaboom" in panel.error.value
    assert "traceback" in panel.error.value
    assert "error" in panel.status.value
    # a probe that returns a failed result: its reason in red too, and the result kept
    panel.run(Job("fails", argv=["slow", "--fail"]))
    panel.wait(5)
    assert "the device went away" in panel.error.value and "nbbench-status-failed" in panel.status.value
    assert store.history(kind="slow-test")["status"].tolist() == ["failed"]
    # a path the probe cannot use: red at once, nothing started
    panel.select("Storage")
    panel.path = "/no/such/dir"
    panel.path_field.wait(5)
    assert panel.run() is None
    assert "does not exist" in panel.error.value


def test_panel_stop_button_marks_interrupted(panel, slow_command, store):
    panel.run(Job("slow", argv=["slow", "--seconds", "30"]))
    deadline = time.monotonic() + 5
    while panel.progress is None or panel.progress.fraction in (None, 0.0):
        assert time.monotonic() < deadline, "no progress reported"
        time.sleep(0.02)
    assert panel.run_button.disabled and not panel.stop_button.disabled
    assert "MB/s" in panel.progress.label.value  # the live rate, formatted by units.format_metric
    panel.stop_button.click()
    rec = panel.wait(5)
    assert rec.status == "interrupted" and rec.stop_latency_s < 2.0  # 0.5 s target; generous on a shared machine
    assert "interrupted" in panel.status.value and "after Stop" in panel.status.value
    assert panel.progress.status == "interrupted" and panel.progress.bar.bar_style == "warning"
    assert store.history(kind="slow-test")["status"].tolist() == ["interrupted"]


def test_save_checkbox_off_means_no_save(panel, slow_command, store):
    panel.save.value = False
    panel.run(Job("slow", argv=["slow", "--seconds", "0.01"]))
    assert panel.wait(5).status == "ok"
    assert store.count() == 0


def test_panel_command_returns_at_once_and_saves_nothing(store):
    from nbbench.cli import TerminalContext
    from nbbench.commands import get_command
    from nbbench.magics import NotebookContext
    from nbbench.panel.app import ControlPanel

    cmd = get_command("panel")
    assert cmd.saves is False
    inv = parse_command(["panel", "/tmp", "--tab", "storage"])
    args = inv.args
    t0 = time.monotonic()
    value = commands.execute(inv, NotebookContext())  # the notebook opens the panel
    assert time.monotonic() - t0 < 5
    assert isinstance(value, ControlPanel) and value.current_tab.title == "Storage" and value.path == "/tmp"
    assert "application/vnd.jupyter.widget-view+json" in value._repr_mimebundle_()
    with pytest.raises(ProbeError, match="notebook widget"):
        cmd.run(args, TerminalContext())


def test_iobench_panel_magic_returns_the_panel_at_once(tmp_path):
    from IPython.core.error import UsageError
    from IPython.testing.globalipapp import get_ipython

    from nbbench.panel.app import ControlPanel

    ip = get_ipython()
    ip.run_line_magic("load_ext", "nbbench")
    t0 = time.monotonic()
    p = ip.run_line_magic("iobench", f"panel {tmp_path} --tab History -o")
    assert time.monotonic() - t0 < 5
    assert isinstance(p, ControlPanel) and p.current_tab.title == "History" and p.path_field.info.ok
    with pytest.raises(UsageError, match="no tab 'Nope'"):
        ip.run_line_magic("iobench", "panel --tab Nope")


def test_cli_panel_says_it_needs_a_notebook(capsys):
    from nbbench import cli

    assert cli.main(["panel"]) == 1
    assert "notebook widget" in capsys.readouterr().err


def test_rate_plot_panels_follow_the_reported_units():
    from nbbench.ui.rateplot import PanelProgress, rate_subplots

    titles = [p.title for p in rate_subplots(["read_bytes_per_s", "iops", "lat_mean_ns", "cpu_util_pct"])]
    assert titles == ["bandwidth", "IOPS"]
    assert rate_subplots(["cpu_util_pct"]) == []

    made = []

    class FakePlot:
        def __init__(self, subplots, title):
            self.subplots, self.title, self.points, self.closed = subplots, title, [], False
            made.append(self)

        def add(self, t, values):
            self.points.append(values)

        def close(self):
            self.closed = True

    p = PanelProgress("dd /x", make_plot=lambda **kw: FakePlot(**kw))
    p(0.1, {"write_bytes_per_s": 5e8})
    p(0.2, {"write_bytes_per_s": 6e8})  # within plot_interval: not a new point
    p(0.6, {"read_bytes_per_s": 9e8})  # a new series: drawn at once
    p.close("ok")
    p.wait_plot()
    (plot,) = made
    assert plot.title == "dd /x: live rate" and plot.closed
    assert plot.points == [{"write_bytes_per_s": 5e8}, {"read_bytes_per_s": 9e8}]
    assert plot.subplots[0].labels == {"write_bytes_per_s": "write", "read_bytes_per_s": "read"}
    assert "MB/s" in p.label.value  # the bar's live rate, as the magics show it


def test_panel_draws_the_live_rate_of_a_probe(panel, slow_command):
    panel.run(Job("slow", argv=["slow", "--seconds", "0.5"]))
    assert panel.wait(10).status == "ok"
    panel.progress.wait_plot()
    (img,) = panel.plot.children
    assert img.value[:4] == b"\x89PNG" and panel.live.names() == ["read_bytes_per_s"]
    panel.plot_rates.value = False
    panel.run(Job("slow", argv=["slow", "--seconds", "0.1"]))
    panel.wait(10)
    assert panel.plot.children == ()


def test_path_field_on_a_read_only_tree_is_usable_for_reads(tmp_path, monkeypatch):
    import os

    from nbbench.panel.pathfield import check_path

    real = os.access
    monkeypatch.setattr(
        os,
        "access",
        lambda p, mode, **kw: False if (mode & os.W_OK and str(p) == str(tmp_path)) else real(p, mode, **kw),
    )
    info = check_path(str(tmp_path))
    assert info.ok and info.kind == "dir" and info.can_write is False and not info.writable
    assert info.direct is None  # not tried: nbbench may not create a file there
    assert any("files, feed and sweep can read the tree" in n for n in info.notes)
