"""The front ends' one plumbing (nbbench.commands): parse, finish, outcome, Context wording, advice."""

from __future__ import annotations

import argparse
import ast
import json
import sqlite3
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from IPython.core.error import UsageError
from IPython.core.magic_arguments import MagicArgumentParser

from nbbench import cli, commands
from nbbench.cli import TerminalContext
from nbbench.commands import Context, HelpRequested, Invocation, UsageProblem
from nbbench.magics import NotebookContext
from nbbench.results import ProbeError, Result
from nbbench.store import Store

ROOT = Path(__file__).resolve().parents[1] / "nbbench"


def panel_context():
    pytest.importorskip("ipywidgets")
    from nbbench.panel.runner import PanelContext

    return PanelContext()


# ------------------------------------------------------------------- parse
def test_parse_gives_an_invocation_with_each_front_ends_parser_and_prog():
    for ctx, cls, prog in (
        (NotebookContext(), MagicArgumentParser, "%iobench gpu"),
        (TerminalContext(), argparse.ArgumentParser, "nbbench gpu"),
        (panel_context(), argparse.ArgumentParser, "gpu"),
    ):
        parser = commands.build_parser(commands.get_command("gpu"), ctx)
        assert isinstance(parser, cls) and parser.prog == prog
        assert isinstance(parser, MagicArgumentParser) == (cls is MagicArgumentParser)
        inv = commands.parse(["gpu", "--no-bench", "--size", "512"], ctx)
        assert isinstance(inv, Invocation) and inv.name == "gpu" and inv.command.name == "gpu"
        assert inv.args.bench is False and inv.args.size == 512
    assert commands.build_parser(commands.get_command("monitor"), NotebookContext(cell="x")).prog == "%%iobench monitor"


def test_parse_raises_one_usage_problem_type_everywhere():
    for ctx in (NotebookContext(), TerminalContext(), panel_context()):
        with pytest.raises(UsageProblem, match="unrecognized arguments: --frobnicate") as info:
            commands.parse(["gpu", "--frobnicate"], ctx)
        assert info.value.prog.endswith("gpu") and "usage:" in info.value.usage
        with pytest.raises(UsageProblem, match="not a whole number"):
            commands.parse(["gpu", "--size", "big"], ctx)
        with pytest.raises(UsageProblem, match="unknown subcommand 'nope'"):
            commands.parse(["nope"], ctx)
        with pytest.raises(HelpRequested) as help_:
            commands.parse(["gpu", "--help"], ctx)
        assert "--no-bench" in help_.value.text
        with pytest.raises(HelpRequested) as help_:
            commands.parse([], ctx)
        assert "  sweep " in help_.value.text


def test_magic_usage_error_is_one_line(ipshell):
    from nbbench.magics import parse

    for line in ("gpu --frobnicate", "gpu --size big", "no-such-thing", "dd"):
        with pytest.raises(UsageError) as info:
            parse(line.split(), NotebookContext())
        assert "\n" not in str(info.value) and str(info.value)
    with pytest.raises(UsageError, match="not a whole number"):
        ipshell.run_line_magic("iobench", "gpu --size big")


def test_cli_usage_error_is_argparses_two_lines_and_exit_2(capsys):
    assert cli.main(["gpu", "--frobnicate"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert (
        err[0].startswith("usage: nbbench gpu ")
        and err[-1] == "nbbench gpu: error: unrecognized arguments: --frobnicate"
    )
    assert cli.main(["nope"]) == 2
    assert "nbbench: error: unknown subcommand 'nope': try nbbench help" in capsys.readouterr().err


def test_panel_words_a_usage_problem_as_prog_and_message():
    pytest.importorskip("ipywidgets")
    from nbbench.panel.runner import parse_command

    with pytest.raises(ProbeError) as info:
        parse_command(["dd", "/tmp", "--bs", "lots"])
    assert str(info.value).startswith("dd: argument --bs: ") and "lots" in str(info.value)


def test_o_exists_where_the_front_end_returns_values():
    assert commands.parse(["gpu", "-o"], NotebookContext()).args.return_result is True
    with pytest.raises(UsageProblem, match="unrecognized arguments: -o"):
        commands.parse(["gpu", "-o"], TerminalContext())
    assert "return_result" not in commands.defaults("gpu", TerminalContext())


def test_monitor_declares_the_same_options_in_every_front_end():
    seen = []
    for ctx in (NotebookContext(cell=""), NotebookContext(), TerminalContext(), panel_context()):
        d = commands.defaults("monitor", ctx)
        seen.append({k for k in d if k != "return_result"})
        assert {"no_plot", "command", "duration", "interval", "gpus", "path"} <= set(d)
    assert all(s == seen[0] for s in seen)
    inv = commands.parse(["monitor", "--no-plot", "--", "sleep", "1"], TerminalContext())
    assert inv.args.no_plot and inv.args.command[-2:] == ["sleep", "1"]


def test_a_cell_body_for_a_command_without_one_is_a_usage_problem():
    with pytest.raises(UsageProblem, match="%%iobench gpu takes no cell body; use %iobench gpu"):
        commands.parse(["gpu"], NotebookContext(cell="x = 1"))


def _calls(tree, names):
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "attr", None) in names]


def test_one_module_parses_a_subcommand():
    """Only nbbench/commands/__init__.py makes a subcommand's parser (add_arguments) and calls parse_args."""
    parsing, declaring = set(), set()
    for path in sorted(ROOT.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        rel = str(path.relative_to(ROOT.parent))
        if _calls(tree, {"parse_args", "parse_known_args", "parse_argstring", "parse_intermixed_args"}):
            parsing.add(rel)
        if _calls(tree, {"add_arguments"}):
            declaring.add(rel)
    assert parsing == {"nbbench/commands/__init__.py"}
    assert declaring == {"nbbench/commands/__init__.py"}


def test_no_command_branches_on_the_front_end_or_the_parsers_name():
    for path in sorted((ROOT / "commands").glob("*.py")):
        text = path.read_text()
        assert "frontend ==" not in text and "frontend !=" not in text and "frontend in" not in text, path
        if path.name not in ("__init__.py", "context.py"):  # the commands themselves
            assert "parser.prog" not in text and '"prog"' not in text, path
        tree = ast.parse(text)
        imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert not any(m.startswith(("IPython", "ipywidgets")) for m in imported), path


# ----------------------------------------------------------- command_text
def test_command_text_per_front_end():
    assert Context().command_text("sweep", "--workers 0,2,4") == "nbbench sweep --workers 0,2,4"
    assert TerminalContext().command_text("sweep", "--workers 0,2,4") == "nbbench sweep --workers 0,2,4"
    nb = NotebookContext()
    assert nb.command_text("sweep", "--workers 0,2,4") == "%iobench sweep --workers 0,2,4"
    assert nb.command_text("monitor", cell=True) == "%%iobench monitor"
    assert NotebookContext(cell="x").command_text("gpu") == "%iobench gpu"
    pc = panel_context()
    assert pc.command_text("sweep", "--workers 0,2,4") == "the DataLoader tab's sweep"
    assert pc.command_text("gpu") == "the GPU tab's check"
    assert pc.command_text("env", "--export requirements") == "%iobench env --export requirements"


# ----------------------------------------------------------------- advice
def _advised() -> Result:
    r = Result(kind="advice-test", metrics={"iops": 5.0})
    r.warn("the step waited for data 80 % of the time")
    r.advise("find the num_workers that keeps up", "sweep", "DATASET")
    r.advise("run {command} to see why", "gpu")
    return r.finish()


def test_advice_round_trips_through_dict_json_and_the_store(tmp_path):
    r = _advised()
    d = r.to_dict()
    assert d["advice"] == [
        {"text": "find the num_workers that keeps up", "command": "sweep", "args": "DATASET"},
        {"text": "run {command} to see why", "command": "gpu", "args": ""},
    ]
    assert Result.from_dict(json.loads(r.to_json())) == r and Result.from_dict(d).advice == r.advice
    st = Store(tmp_path / "r.sqlite")
    rid = st.save(r, environment={})
    assert st.get(rid).advice == r.advice
    # a run stored before advice existed still loads, with none
    old = dict(d)
    del old["advice"]
    assert Result.from_dict(old).advice == []
    con = sqlite3.connect(st.path)
    con.execute("UPDATE runs SET data=? WHERE run_id=?", (json.dumps(old), rid))
    con.commit()
    con.close()
    assert st.get(rid).advice == [] and st.get(rid).metrics == {"iops": 5.0}


def test_advice_is_worded_by_the_front_end_that_shows_it(capsys):
    r = _advised()
    # no front end: neutral
    assert "advice: find the num_workers that keeps up: `sweep DATASET`" in r.text_table()
    assert "advice: run `gpu` to see why" in r.text_table()
    # the terminal
    TerminalContext().display(r)
    out = capsys.readouterr().out
    assert "find the num_workers that keeps up: nbbench sweep DATASET" in out and "run nbbench gpu to see why" in out
    # a notebook: the same words as the old "%iobench sweep" hints
    NotebookContext().worded(r)
    assert "<code>%iobench sweep DATASET</code>" in r._repr_html_() and "%iobench gpu" in r.text_table()
    # the panel names its tabs
    pc = panel_context()
    shown = []
    pc.host.show = shown.append
    pc.display(r)
    html = shown[0]._repr_html_().replace("&#x27;", "'")
    assert "<code>the DataLoader tab's sweep</code>" in html and "run <code>the GPU tab's check</code>" in html


def test_errors_advice_is_worded_too(ipshell, capsys):
    with pytest.raises(UsageError, match=r"no stored run has id or label 'nope' \(see %iobench history\)"):
        ipshell.run_line_magic("iobench", "compare nope nada")
    assert cli.main(["compare", "nope", "nada"]) == 1
    assert "(see nbbench history)" in capsys.readouterr().err
    err = ProbeError("no stored run", advice=[{"text": "see {command}", "command": "history", "args": ""}])
    assert str(err) == "no stored run (see `history`)"


def test_doctor_gpu_fix_is_advice():
    from nbbench.doctor.gpu import from_verdicts
    from nbbench.results.system.doctor import Check, DoctorResult

    (c,) = from_verdicts([{"check": "driver", "status": "fail", "message": "too old"}])
    assert c.advice and "see the GPU check for the details; run `gpu`" in str(c)
    assert Check.from_dict(c.to_dict()) == c
    res = DoctorResult(samples={"checks": [c.to_dict()]})
    NotebookContext().worded(res)
    # a width given: the wording is what is tested, not where a terminal (or a test worker's) wraps it
    assert "see the GPU check for the details; run %iobench gpu" in res.text_table(width=160)
    assert "run %iobench gpu" in res._repr_html_()


def test_an_input_bound_loader_advises_a_sweep(capsys):
    pytest.importorskip("torch")
    from torch.utils.data import DataLoader

    from nbbench.probes.pipeline.loader import bench_loader

    class Slow:
        def __len__(self):
            return 200

        def __getitem__(self, i):
            import torch

            time.sleep(0.02)
            return torch.zeros(4, 4)

    res = bench_loader(
        DataLoader(Slow(), batch_size=None, num_workers=0), duration=0.5, warmup=1, step=lambda batch: time.sleep(0.002)
    )
    assert res.labels["input_bound"] == "highly input-bound"
    assert res.advice == [{"text": "find the num_workers that keeps up", "command": "sweep", "args": "DATASET"}]
    NotebookContext().worded(res)
    assert "%iobench sweep" in res.text_table()


# ------------------------------------------------------------ the end step
class Shown(Context):
    def __init__(self, store):
        super().__init__()
        self.store, self.events = store, []

    def display(self, obj):
        self.events.append(("show", obj.run_id, obj.labels.get("label"), self.store.count()))


class Echo(commands.Command):
    name = "echo-test"

    def run(self, args, ctx):
        return Result(kind="echo-test", metrics={"iops": 1.0}).finish()


def test_finish_shows_first_then_saves(tmp_path):
    st = Store(tmp_path / "r.sqlite")
    ctx = Shown(st)
    inv = Invocation("echo-test", Echo(), argparse.Namespace(label="lab", no_save=False, quiet=False, json=False))
    value = commands.execute(inv, ctx, store=st)
    # shown with its label, before it was stored; then stored
    assert ctx.events == [("show", None, "lab", 0)]
    assert st.count() == 1 and value.run_id is not None and st.get(value.run_id).labels["label"] == "lab"

    class Broken:
        def save(self, *a, **k):
            raise OSError("disk full")

    ctx = Shown(st)
    with pytest.raises(OSError, match="disk full"):
        commands.execute(inv, ctx, store=Broken())
    assert ctx.events == [("show", None, "lab", 1)]  # a failed save comes after the result was shown


# ------------------------------------------------------------- the outcome
def test_outcome_is_the_one_status_rule():
    ok, bad, stop = (Result(kind="k").finish(s) for s in ("ok", "failed", "interrupted"))
    assert [commands.outcome(v) for v in (ok, bad, stop, [ok, stop], [stop, bad, ok], [], None, "text")] == [
        "ok",
        "failed",
        "interrupted",
        "interrupted",
        "failed",
        "ok",
        "ok",
        "ok",
    ]
    assert [commands.outcome(v) for v in (0, 3, 130, SimpleNamespace(exit_code=0), SimpleNamespace(exit_code=2))] == [
        "ok",
        "failed",
        "interrupted",
        "ok",
        "failed",
    ]
    assert commands.outcome(True) == "ok"
    # the CLI's exit code follows it (a program's own code passes through)
    assert [cli.exit_code(v) for v in (ok, bad, stop, [ok, stop], SimpleNamespace(exit_code=3), 7)] == [
        0,
        1,
        130,
        130,
        3,
        7,
    ]


def test_the_panels_status_follows_the_outcome(tmp_path):
    pytest.importorskip("ipywidgets")
    from nbbench.panel.runner import Job, PanelRunner

    r = PanelRunner(store=Store(tmp_path / "r.sqlite"))
    for status in ("ok", "interrupted", "failed"):
        rec = r.start(Job(status, fn=lambda ctx, s=status: [Result(kind="k").finish(), Result(kind="k").finish(s)]))
        r.wait(10)
        assert rec.status == status == commands.outcome(rec.value)


# ---------------------------------------------------------------- monitor
def test_monitor_duration_from_the_cli(capsys):
    rc = cli.main(["monitor", "--duration", "0.3", "--interval", "0.05", "--gpu", "none", "--json", "--no-save"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0 and data["status"] == "ok" and data["params"]["duration_s"] == 0.3
    assert data["metrics"]["wall_s"] >= 0.3
    assert cli.main(["monitor", "--duration", "1", "--", "true"]) == 1
    assert "not a command and --duration" in capsys.readouterr().err


def test_the_line_magic_monitors_a_program(ipshell):
    from nbbench.magics import IOBenchMagics

    res = IOBenchMagics(shell=ipshell).iobench("monitor -o -q --no-save --gpu none --interval 0.05 -- sleep 0.2")
    assert res.kind == "monitor" and res.status == "ok" and res.exit_code == 0
    assert res.params["command"] == ["sleep", "0.2"]
