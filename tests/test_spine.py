"""One declaration per probe: every option a ranked subcommand's parser declares reaches the job each
rank runs, and the job hands it to the probe — not only ``--buffers`` (which the ranked path once
dropped). Also: the parser's defaults are the probe function's own, so ``nbbench.dd(...)`` and
``nbbench dd`` mean the same thing."""

from __future__ import annotations

import argparse
import inspect

import pytest

from nbbench import commands
from nbbench.commands import ranks
from nbbench.commands.context import Context
from nbbench.probes import catalog


class Captured(Exception):
    def __init__(self, params):
        super().__init__("captured")
        self.params = params


def ranked_commands() -> list[str]:
    out = []
    for name in commands.names():
        cmd = commands.get_command(name)
        scratch = argparse.ArgumentParser(add_help=False)
        cmd.add_arguments(scratch)
        if any(a.dest == "ranks" for a in scratch._actions):
            out.append(name)
    return out


def _actions(name: str) -> dict[str, argparse.Action]:
    cmd = commands.get_command(name)
    scratch = argparse.ArgumentParser(add_help=False)
    cmd.add_arguments(scratch)
    return {a.dest: a for a in scratch._actions if a.dest in cmd.own_options()}


#: values tried in turn until one parses to something other than the default
CANDIDATES = ["3M", "3", "2.5", "0.5", "2,3", "false,true", "a100-unet3d", "mod:fn", "x", "1", "0", "all_reduce"]


def _other_value(action: argparse.Action) -> list[str]:
    """A command line that gives ``action`` a value other than its default."""
    flag = action.option_strings[0]
    if action.nargs == 0:  # store_true / store_false / store_const
        return [flag]
    tries = [str(c) for c in action.choices or ()] or CANDIDATES
    for value in tries:
        try:
            parsed = action.type(value) if action.type else value
        except (argparse.ArgumentTypeError, ValueError, TypeError):
            continue
        default = action.type(action.default) if isinstance(action.default, str) and action.type else action.default
        if parsed != default:
            return [flag, value]
    raise AssertionError(f"no value for {flag} other than its default")


def _cases():
    for name in ranked_commands():
        for dest, action in _actions(name).items():
            if action.option_strings:
                yield pytest.param(name, dest, id=f"{name}-{dest}")


@pytest.fixture
def capture(monkeypatch):
    def fake_dispatch(name, kind, args, ctx, params, desc, on_figures=None):
        raise Captured(params)

    monkeypatch.setattr(ranks, "dispatch", fake_dispatch)


def test_every_ranked_command_is_found():
    found = set(ranked_commands())
    assert {"dd", "randread", "files", "checkpoint", "shards", "loader", "sweep", "feed"} <= found


@pytest.mark.parametrize("name,dest", list(_cases()))
def test_each_option_arrives_in_the_ranks_job(name, dest, tmp_path, capture):
    action = _actions(name)[dest]
    positional = any(not a.option_strings for a in _actions(name).values())  # collectives takes no path
    argv = [name, *([str(tmp_path)] if positional else []), *_other_value(action), "--ranks", "2"]
    ctx = Context(frontend="cli")
    try:
        inv = commands.parse(argv, ctx)
    except commands.UsageProblem as exc:  # pragma: no cover - the generator must make valid lines
        pytest.fail(f"{argv}: {exc}")
    given = getattr(inv.args, dest)
    assert given != action.default or action.default is None and given is not None, (argv, given)
    with pytest.raises(Captured) as got:
        inv.command.run(inv.args, ctx)
    params = got.value.params
    assert dest in params, f"{name} --ranks: {dest} ({action.option_strings[0]}) is not in the ranks' job: {params}"
    assert params[dest] == given


STORAGE_JOBS = ("dd", "randread", "files", "checkpoint", "shards")


@pytest.mark.parametrize("name", STORAGE_JOBS)
def test_the_job_hands_every_parameter_to_the_probe(name, tmp_path, monkeypatch):
    from nbbench.ranks.jobs import job_for

    ctx = Context(frontend="cli")
    inv = commands.parse([name, str(tmp_path)], ctx)
    params = inv.command.params(inv.args)
    seen = {}

    def recorder(**kwargs):
        seen.update(kwargs)
        return "result"

    monkeypatch.setattr(catalog.Probe, "function", lambda self: recorder)
    job = job_for(name, params)
    job.rank, job.world_size = 0, 2
    job.run(None, None)
    rank_only = set(catalog.get(name).rank_only)
    missing = set(params) - rank_only - set(seen)
    assert not missing, f"{name}: the rank's probe call lacks {missing}"


@pytest.mark.parametrize("name", [n for n in commands.names() if commands.get_command(n).probe])
def test_parser_defaults_are_the_probes_own(name):
    """What the CLI's help says is the default is what nbbench.NAME(...) does when the keyword is left out."""
    cmd = commands.get_command(name)
    sig = inspect.signature(catalog.get(cmd.probe).function())
    defaults = commands.defaults(name, Context(frontend="cli"))
    differ = {}
    for dest in cmd.own_options():
        p = sig.parameters.get(dest)
        if p is None or p.default is inspect.Parameter.empty:
            continue
        want = defaults[dest]
        have = p.default
        from nbbench.units import parse_size

        # "1M" as the parser or the function writes it, 1048576 parsed
        if isinstance(have, str) and isinstance(want, int):
            have = parse_size(have)
        if isinstance(want, str) and isinstance(have, int):
            want = parse_size(want)
        if have != want:
            differ[dest] = (want, p.default)
    assert not differ, f"{name}: parser default vs the probe's: {differ}"


def test_every_probe_option_is_a_keyword_of_its_function():
    for name in commands.names():
        cmd = commands.get_command(name)
        if not cmd.probe:
            continue
        probe = catalog.get(cmd.probe)
        sig = inspect.signature(probe.function())
        takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values())
        unknown = [d for d in cmd.own_options() if d not in sig.parameters and d not in probe.rank_only]
        assert takes_any or not unknown, f"{name}: options the probe {probe.target} does not take: {unknown}"


def test_the_python_api_is_the_catalog():
    import nbbench

    # the list `import nbbench` keeps (importing the catalog there would load nbbench.probes) is the catalog's
    assert set(nbbench.PROBE_NAMES) == set(catalog.PUBLIC)
    for name in nbbench.PROBE_NAMES:
        fn = getattr(nbbench, name)
        assert fn is catalog.function(name), name
        assert callable(fn) and fn.__doc__, name
    # every subcommand that runs a probe is reachable from the top under its own name
    for name in commands.names():
        probe = commands.get_command(name).probe
        if probe:
            assert probe in nbbench.PROBE_NAMES
    for name in nbbench.HELPERS:
        assert getattr(nbbench, name).__name__ == name


def test_old_deep_paths_still_import_with_a_warning():
    import importlib
    import sys

    for old, new in (
        ("nbbench.probes.disk", "nbbench.probes.storage.disk"),
        ("nbbench.dist.jobs", "nbbench.ranks.jobs"),
    ):
        sys.modules.pop(old, None)
        with pytest.warns(DeprecationWarning, match=new.replace(".", r"\.")):
            mod = importlib.import_module(old)
        assert mod is importlib.import_module(new)
        assert mod.__spec__.name == new  # the module keeps its own identity


def test_the_python_api_runs_a_probe(tmp_path):
    import nbbench

    r = nbbench.dd(tmp_path, size="4M", bs="1M")
    assert r.kind == "dd" and r.status == "ok"
    assert r.params["size"] == 4 << 20
    assert list(tmp_path.iterdir()) == []  # its temp file removed
