"""``%%iobench monitor`` through the Command with a fake context, and ``nbbench monitor -- CMD``."""

import json
import sys
import time

import pytest

from nbbench import cli, commands
from nbbench.commands import Context
from nbbench.monitor import MonitorResult
from nbbench.store import default_store


class FakePlot:
    instances = []

    def __init__(self, **kw):
        self.kw = kw
        self.events = []
        self.frames = 0
        self.draw_cpu_s = 0.0
        self.t0 = None
        FakePlot.instances.append(self)

    def start(self):
        self.events.append("start")
        return self

    def attach(self, mon):
        self.events.append("attach")
        return self

    def close(self):
        self.events.append("close")


class CellContext(Context):
    def __init__(self, body_fn, cell="x = 1\n", **kw):
        super().__init__(frontend="magic", cell=cell, run_cell=self._run, **kw)
        self.body_fn = body_fn
        self.shown = []
        self.ran = []

    def _run(self, body):
        self.ran.append(body)
        return self.body_fn()

    def live_plot(self, **kw):
        return FakePlot(**kw)

    def display(self, obj):
        self.shown.append(obj)


def parse(*argv, frontend="magic"):
    """``monitor ARGV`` parsed as %%iobench monitor (or the CLI) parses it: an Invocation."""
    if frontend == "magic":
        from nbbench.magics import NotebookContext
        from nbbench.magics import parse as magic_parse

        return magic_parse(["monitor", *argv], NotebookContext(cell=""))
    return commands.parse(["monitor", *argv], cli.TerminalContext())


def test_registered_as_a_cell_only_command():
    cmd = commands.get_command("monitor")
    assert cmd.cell and cmd.cell_required
    assert type(cmd).__name__ == "MonitorCommand"


def test_cell_runs_under_the_monitor_and_plot_is_final_before_return():
    FakePlot.instances.clear()
    ctx = CellContext(lambda: time.sleep(0.15), cell="import time\ntime.sleep(0.15)\n")
    inv = parse("--interval", "50ms", "--gpu", "none")
    res = commands.execute(inv, ctx)
    assert isinstance(res, MonitorResult) and res.status == "ok"
    assert ctx.ran == ["import time\ntime.sleep(0.15)\n"]
    assert res.metrics["wall_s"] >= 0.15 and res.metrics["samples_count"] >= 3
    assert res.params["interval_s"] == 0.05 and res.params["cell"] == "import time"
    plot = FakePlot.instances[-1]
    assert plot.events == ["start", "attach", "close"]
    assert default_store().count("monitor") == 1  # saved by execute


def test_exception_in_cell_is_reraised_after_plot_final_and_saved_as_failed():
    FakePlot.instances.clear()

    def boom():
        raise ZeroDivisionError("division by zero")

    ctx = CellContext(boom)
    inv = parse("--gpu", "none")
    with pytest.raises(ZeroDivisionError) as info:
        commands.execute(inv, ctx)
    assert FakePlot.instances[-1].events[-1] == "close"
    stored = default_store().find(1)[0] if default_store().count("monitor") else None
    assert stored is not None and stored.status == "failed"
    assert "ZeroDivisionError" in stored.reason
    # the command passes the cell's own error on untouched: how its traceback is shown (once)
    # is the front end's (nbbench.magics keeps the cell's own; tests/test_frontends.py)
    assert not hasattr(info.value, "_render_traceback_")
    assert ctx.shown and ctx.shown[0].status == "failed"


def test_interrupt_stops_cleanly_and_keeps_samples():
    def interrupted():
        time.sleep(0.12)
        raise KeyboardInterrupt

    ctx = CellContext(interrupted)
    inv = parse("--interval", "0.05", "--gpu", "none", "--no-save")
    res = commands.execute(inv, ctx)
    assert res.status == "interrupted"
    assert res.metrics["samples_count"] >= 3 and len(res.frame) == res.metrics["samples_count"]
    assert default_store().count("monitor") == 0  # --no-save


def test_empty_cell_and_bad_options():
    from IPython.core.error import UsageError

    from nbbench.results import ProbeError

    inv = parse()
    with pytest.raises(ProbeError):
        inv.command.run(inv.args, CellContext(lambda: None, cell="  \n"))
    for bad in (["--interval", "0"], ["--interval", "abc"], ["--gpu", "first"]):
        with pytest.raises(UsageError):
            parse(*bad)
    inv = parse("--path", "/no/such/dir")
    with pytest.raises(ProbeError):
        inv.command.run(inv.args, CellContext(lambda: None))


def test_line_magic_without_cell_is_a_usage_error():
    from IPython.core.error import UsageError
    from IPython.testing.globalipapp import get_ipython

    from nbbench.magics import IOBenchMagics

    ip = get_ipython()
    magics = IOBenchMagics(shell=ip)
    with pytest.raises(UsageError, match="needs a cell"):
        magics.iobench("monitor")


def test_magic_runs_a_real_cell_in_the_shell():
    from IPython.testing.globalipapp import get_ipython

    from nbbench.magics import IOBenchMagics

    ip = get_ipython()
    magics = IOBenchMagics(shell=ip)
    res = magics.iobench("monitor -o -q --no-save --gpu none --interval 0.05", "monitored_value = 6 * 7\n")
    assert ip.user_ns["monitored_value"] == 42
    assert isinstance(res, MonitorResult) and res.status == "ok"


# ----------------------------------------------------------------------- CLI
def test_cli_json_summary_with_cpu_figures_exits_zero(capsys):
    rc = cli.main(["monitor", "--json", "--interval", "0.05", "--no-save", "--", "sleep", "0.3"])
    out = capsys.readouterr().out
    data = json.loads(out)
    assert rc == 0
    assert data["kind"] == "monitor" and data["status"] == "ok"
    assert data["params"]["command"] == ["sleep", "0.3"]
    assert 0 <= data["metrics"]["cpu_mean_pct"] <= 100
    assert data["metrics"]["wall_s"] >= 0.3
    assert data["extra"]["exit_code"] == 0


def test_cli_passes_the_command_exit_code_through(capsys):
    rc = cli.main(["monitor", "-q", "--", sys.executable, "-c", "raise SystemExit(3)"])
    assert rc == 3
    stored = default_store().find(1)[0]
    assert stored.status == "failed" and stored.reason == "the command exited with code 3"
    assert stored.exit_code == 3


def test_cli_signal_is_128_plus_n(capsys):
    rc = cli.main(
        [
            "monitor",
            "-q",
            "--no-save",
            "--",
            sys.executable,
            "-c",
            "import os, signal; os.kill(os.getpid(), signal.SIGTERM)",
        ]
    )
    assert rc == 128 + 15


def test_cli_errors(capsys):
    assert cli.main(["monitor"]) == 1
    assert "after --" in capsys.readouterr().err
    assert cli.main(["monitor", "--", "no-such-program-xyz"]) == 1
    assert "command not found" in capsys.readouterr().err
    assert cli.main(["monitor", "--interval", "-1", "--", "true"]) == 2


def test_cli_text_summary(capsys):
    rc = cli.main(["monitor", "--no-save", "--interval", "0.05", "--", "true"])
    out = capsys.readouterr().out
    assert rc == 0
    first, second = out.splitlines()[:2]  # the answer first, then what it is about
    # the monitored command's own figures first (cores, read()), one verdict; the machine's after
    assert first.split(" · ")[0].endswith("cores CPU") and "read()" in first
    assert first.split(" · ")[-1].startswith(("idle", "partly busy", "CPU-bound", "waiting "))  # one verdict
    assert second.strip().startswith("monitor true")
    assert "the machine: " in out and "the machine: " not in first


def test_cli_json_stdout_is_only_json_even_when_the_program_prints(capfd):
    rc = cli.main(["monitor", "--json", "--no-save", "--", sys.executable, "-c", "print('hello from the program')"])
    out, err = capfd.readouterr()
    assert rc == 0
    assert json.loads(out)["kind"] == "monitor"
    assert "hello from the program" in err


def test_ctrl_c_winds_the_program_down(monkeypatch):
    import subprocess

    from nbbench.commands.monitors import monitor as mod

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    t = time.monotonic()
    code = mod._wind_down(child, grace=2.0)
    assert time.monotonic() - t < 6
    assert code != 0 and child.poll() is not None
