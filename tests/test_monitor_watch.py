"""The dashboard that stays: bounded memory over a kernel's life (a fake clock), the one background
monitor (%iobench watch / mark / watch --stop, nbbench.watch()), its view, and `nbbench watch` in a terminal."""

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from IPython.core.error import UsageError

import nbbench
from nbbench import commands
from nbbench.commands import Context
from nbbench.monitor import Monitor, background
from nbbench.monitor.records import TIERS
from nbbench.store import default_store


class Ramp:
    """A fast synthetic source: value i % 100 at the i-th sample, and a tuple field."""

    name = "ramp"

    def __init__(self):
        self.i = 0

    def sample(self, now):
        v = self.i % 100
        self.i += 1
        return {"ramp.value_pct": v, "cpu.cores_pct": (float(v), 2.0 * v)}

    def close(self):
        pass


def test_a_monitor_that_lives_for_days_keeps_memory_bounded_and_the_summary_exact():
    interval, recent = 5.0, 600.0
    m = Monitor(interval=interval, sources=[Ramp()], recent_s=recent)
    m.open()
    m.t_start = 0.0
    n = int(9 * 86400 / interval)  # nine days on a fake clock, faster than real time
    bound = recent / interval + 2 + sum(keep + 1 for _, keep in TIERS)
    peak = 0
    for i in range(n):
        m._take(i * interval)
        if i % 5000 == 0:
            peak = max(peak, m.n_kept)
    assert max(peak, m.n_kept) <= bound
    assert m.n_dropped > 0  # older than 10 min + 6 h + 7 days: gone from the timeline …
    st = m.stats("ramp.value_pct")
    assert st["n"] == n and st["max"] == 99 and st["min"] == 0  # … but the summary covers every sample
    assert st["mean"] == pytest.approx(sum(i % 100 for i in range(n)) / n, abs=1e-9)
    recs = m.records()
    ts = [r["t"] for r in recs]
    assert ts == sorted(ts) and ts[-1] == (n - 1) * interval
    # the recent window at full rate, then 10 s means, then 1 min means
    recent_recs = [r for r in recs if r["t"] > ts[-1] - recent]
    assert len(recent_recs) == pytest.approx(recent / interval, abs=2)
    gaps = [b - a for a, b in zip(ts, ts[1:])]
    assert gaps[-1] == interval and 60.0 in gaps and 10.0 in gaps
    old = recs[0]
    assert 0 <= old["ramp.value_pct"] <= 99 and isinstance(old["cpu.cores_pct"], tuple)
    res = m.result()
    assert "10 s means" in res.extra["retention"] and any("7 days" in w for w in res.warnings)
    assert len(res.samples["timeline"]["t_s"]) == len(recs)


def test_a_short_watch_keeps_every_sample():
    m = Monitor(interval=1.0, sources=[Ramp()], recent_s=600)
    m.open()
    m.t_start = 0.0
    for i in range(300):
        m._take(float(i))
    assert m.n_kept == 300 and m.n_dropped == 0
    assert [r["ramp.value_pct"] for r in m.records()] == [i % 100 for i in range(300)]


@pytest.fixture
def no_watch():
    yield
    if background.current() is not None:
        background.stop()


def test_one_background_monitor_marks_and_its_result(no_watch):
    bg = background.start(interval=0.05, gpus="none", net="none", origin="cell [7]", window_s=60)
    with pytest.raises(background.AlreadyWatching) as info:
        background.start(interval=0.05, gpus="none")
    assert "started in cell [7] at" in str(info.value) and info.value.background is bg
    time.sleep(0.3)
    background.mark("epoch 1")
    time.sleep(0.2)
    bg2, res = background.stop()
    assert bg2 is bg and not bg.running and background.current() is None
    assert res.params["what"] == "watch" and res.params["origin"] == "cell [7]" and res.params["window_s"] == 60
    assert res.marks and res.marks[0][1] == "epoch 1" and 0.2 < res.marks[0][0] < res.metrics["wall_s"]
    # the stored figure draws the mark as a vertical line on every panel
    fig = res.figure()
    x = res.marks[0][0]
    for ax in fig.axes:
        assert any(list(line.get_xdata()) == [x, x] for line in ax.get_lines()), ax.get_title()
    with pytest.raises(background.NotWatching):
        background.mark("late")


class LastingContext(Context):
    """A front end that lives on (like a kernel) and makes the real watch view (its widgets shown nowhere)."""

    def __init__(self, **kw):
        super().__init__(frontend="api", lasting=True, **kw)
        self.views = []

    def origin(self):
        return "cell [3]"

    def watch_view(self, monitor, **kw):
        from nbbench.ui.watchview import WatchView

        view = WatchView(monitor, max_rest_s=0.5, **kw)
        self.views.append(view)
        return view


def test_watch_command_view_gets_the_records_the_table_and_the_marks_and_is_closed_by_stop(no_watch, capsys):
    ctx = LastingContext()
    inv = commands.parse(["watch", "--interval", "0.05", "--gpu", "none", "--window", "30s"], ctx)
    bg = commands.execute(inv, ctx)
    assert isinstance(bg, background.Background) and bg.running
    out = capsys.readouterr().out
    assert "watching in the background (started in cell [3]" in out and "watch --stop" in out
    view = ctx.views[-1]
    assert view.timeline.window_s == 30 and view.max_fps == 1.0 and view in bg.views
    first = view.image.value
    assert first[:4] == b"\x89PNG"
    time.sleep(2.5)
    commands.execute(commands.parse(["mark", "lr", "0.1"], ctx), ctx)
    assert "mark 'lr 0.1' at" in capsys.readouterr().out
    assert view.timeline._marks[-1][1] == "lr 0.1" and "cpu.util_pct" in view.timeline.names()
    assert view.frames >= 1 and view.image.value != first  # new frames while it runs
    assert f"<td style='text-align:left;padding:0 6px'>{os.getpid()}</td>" in view.table.value
    before = default_store().count("monitor")
    res = commands.execute(commands.parse(["watch", "--stop", "--label", "w1"], ctx), ctx)
    assert view.closed and res.labels["label"] == "w1" and res.params["what"] == "watch"
    assert default_store().count("monitor") == before + 1
    assert not [t for t in threading.enumerate() if t.name in ("nbbench-monitor", "nbbench-watchview")]


def test_magic_watch_twice_mark_and_stop(ipshell, no_watch, capsys):
    before = default_store().count("monitor")
    first = ipshell.run_cell("%iobench watch --interval 0.05 --gpu none --no-plot", store_history=True)
    assert first.error_in_exec is None and first.execution_count
    assert default_store().count("monitor") == before  # starting saves nothing
    second = ipshell.run_cell("%iobench watch", store_history=True)
    msg = str(second.error_in_exec)
    assert isinstance(second.error_in_exec, UsageError) and "\n" not in msg
    assert f"already running (started in cell [{first.execution_count}] at" in msg and "%iobench watch --stop" in msg
    ipshell.run_line_magic("iobench", "mark epoch 2")
    time.sleep(0.2)
    res = ipshell.run_line_magic("iobench", "watch --stop -o -q")
    assert res.kind == "monitor" and res.params["what"] == "watch" and res.marks[0][1] == "epoch 2"
    assert res.run_id is not None and default_store().count("monitor") == before + 1
    with pytest.raises(UsageError, match="no background monitor is running"):
        ipshell.run_line_magic("iobench", "mark too late")
    with pytest.raises(UsageError, match="no background monitor is running"):
        ipshell.run_line_magic("iobench", "watch --stop")
    assert default_store().count("monitor") == before + 1  # mark and a failed stop save nothing


def test_nbbench_watch_from_python(no_watch):
    bg = nbbench.watch(interval=0.05, gpus="none", window="1m", serve=0, quiet=True)
    assert bg.running and bg.server.running and bg.window_s == 60
    url = bg.server.url
    t, text = nbbench.mark("from python")
    assert text == "from python"
    with pytest.raises(nbbench.ProbeError, match="already running"):
        nbbench.watch()
    res = nbbench.watch(stop=True, quiet=True)
    assert res.status == "ok" and res.marks[0][1] == "from python" and res.run_id is not None
    assert not bg.server.running and url.endswith("/metrics")
    with pytest.raises(RuntimeError, match=r"nbbench\.watch\(\)"):
        nbbench.mark("nobody listens")


def test_cli_watch_runs_in_the_foreground_until_ctrl_c(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.getcwd() + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.Popen(
        [sys.executable, "-m", "nbbench", "watch", "--interval", "0.1", "--gpu", "none", "--json", "--window", "1m"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    time.sleep(4.0)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err.decode()
    data = json.loads(out)
    assert data["kind"] == "monitor" and data["status"] == "ok" and data["params"]["what"] == "watch"
    assert data["metrics"]["samples_count"] >= 5 and "10 s means" in data["extra"]["retention"]
