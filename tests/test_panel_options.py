"""The panel's options are declared once, in the subcommands' parsers: the Storage tab's fields
take their names, defaults, choices, limits and help from there, so the panel, the CLI and
``%iobench`` cannot disagree — and an option added to a parser (``--repeat``, ``--jobs``) fails
here until the panel shows it or says it leaves it out.  The limits are the same in all three."""

from __future__ import annotations

import argparse

import pytest

pytest.importorskip("ipywidgets")

from nbbench import commands  # noqa: E402
from nbbench.commands import options  # noqa: E402
from nbbench.panel.tabs import gpu as gpu_tab  # noqa: E402
from nbbench.panel.tabs import loader as loader_tab  # noqa: E402
from nbbench.panel.tabs import monitor as monitor_tab  # noqa: E402
from nbbench.panel.tabs import objects as objects_tab  # noqa: E402
from nbbench.panel.tabs import storage as storage_tab  # noqa: E402
from nbbench.panel.tabs.base import command_options, option_field, options_argv  # noqa: E402
from nbbench.probes import limits  # noqa: E402
from nbbench.results import ProbeError  # noqa: E402


def _accels():
    from nbbench.accelerators import names

    return list(names())


#: every tab's option fields and what it leaves out, by subcommand
OPTION_FIELDS = {
    **storage_tab.OPTION_FIELDS,
    **loader_tab.option_spec(_accels()),
    **objects_tab.OPTION_FIELDS,
    **gpu_tab.OPTION_FIELDS,
    **monitor_tab.OPTION_FIELDS,
}
NOT_FIELDS = {
    **{k: storage_tab.NOT_FIELDS for k in storage_tab.OPTION_FIELDS},
    **{k: loader_tab.NOT_FIELDS for k in ("feed", "sweep")},
    "s3": objects_tab.NOT_FIELDS,
    "gpu": gpu_tab.NOT_FIELDS,
    "monitor": monitor_tab.NOT_FIELDS,
}
#: the subcommands whose panel tabs say why each option left out is left out
WITH_REASONS = ("gpu", "monitor")


def _field(name, flag, *rest):
    kw = rest[-1] if rest and isinstance(rest[-1], dict) else {}
    rest = rest[:-1] if kw else rest
    return option_field(name, flag, "x", *rest[1:], **kw), kw


@pytest.mark.parametrize("name", sorted(OPTION_FIELDS))
def test_each_field_is_the_parsers_option_with_its_default_choices_and_limits(name):
    import ipywidgets as w

    actions = command_options(name)
    for flag, *rest in OPTION_FIELDS[name]:
        a = actions[flag]  # a renamed option fails here
        f, kw = _field(name, flag, *rest)
        if a.choices or kw.get("choices"):
            values = [v for _, v in f.options]
            assert isinstance(f, w.Dropdown) and values == list(kw.get("choices") or a.choices)
            assert f.value == (a.default if a.default is not None else "")
            for v in values:
                if v:
                    assert (a.type(v) if a.type else v) is not None  # each choice is one the parser takes
        elif isinstance(a.type, options.IntRange):
            assert isinstance(f, w.BoundedIntText)
            assert (f.min, f.max, f.value) == (a.type.lo, a.type.hi, a.default if a.default is not None else a.type.lo)
        elif a.nargs == 0:
            assert isinstance(f, w.Checkbox) and f.value == bool(a.default)
        else:
            assert isinstance(f, w.Text)
            typed = [] if f.value == "" else [f.value]  # what the field shows parses back to the default
            assert (a.type(typed[0]) if typed else None) == (
                a.type(a.default) if isinstance(a.default, str) else a.default
            )
        help_ = (a.help or "").replace("%%", "%")
        if isinstance(a, argparse._StoreFalseAction):  # ticked means on: the tooltip says so before the CLI's help
            assert f.tooltip.startswith("ticked: on") and f.tooltip.endswith(help_) and flag in f.tooltip
        else:
            assert f.tooltip == help_


@pytest.mark.parametrize("name", sorted(OPTION_FIELDS))
def test_every_option_is_a_field_or_left_out_on_purpose(name):
    """An option added to the parser later shows up here: the panel must show it or say why not."""
    shown = {flag for flag, *_ in OPTION_FIELDS[name]}
    missing = set(command_options(name)) - shown - set(NOT_FIELDS[name])
    assert not missing, f"{name}: options neither in the panel nor in NOT_FIELDS: {sorted(missing)}"
    if name in WITH_REASONS:
        assert not shown & set(NOT_FIELDS[name]), "an option both shown and left out"
        assert all(isinstance(why, str) and why for why in NOT_FIELDS[name].values())
        assert not set(NOT_FIELDS[name]) - set(command_options(name)), "left out, but no longer an option"


def test_the_defaults_argv_parses_to_the_parsers_defaults():
    from nbbench.panel.runner import PanelContext

    for name in OPTION_FIELDS:
        fields = {flag: _field(name, flag, *rest)[0] for flag, *rest in OPTION_FIELDS[name]}
        where = {"s3": ["s3://bench/objects/"], "gpu": [], "monitor": []}.get(name, ["/tmp"])
        inv = commands.parse([name, *where, *options_argv(fields)], PanelContext())
        want = commands.defaults(name, PanelContext())
        for flag, *_ in OPTION_FIELDS[name]:
            dest = command_options(name)[flag].dest
            d = want[dest]
            t = command_options(name)[flag].type
            d = t(d) if isinstance(d, str) and t else d  # argparse runs a string default through its type
            if d is None and isinstance(t, options.IntRange):
                d = t.lo  # a bounded field always holds a number: the least ("--jobs" None means 1)
            assert getattr(inv.args, dest) == d, (name, flag)


@pytest.mark.parametrize(
    "name,flag,bounds",
    [
        ("randread", "--jobs", limits.JOBS),
        ("dd", "--jobs", limits.JOBS),
        ("randread", "--qd", limits.RANDREAD_QD),
        ("files", "--threads", limits.FILES_THREADS),
    ],
)
def test_the_same_limits_in_the_widget_the_parser_and_the_probe(name, flag, bounds, tmp_path):
    lo, hi = bounds
    f = option_field(name, flag, "x")
    assert (f.min, f.max) == (lo, hi)  # the panel
    commands.parse([name, str(tmp_path), flag, str(hi)])
    with pytest.raises(commands.UsageProblem, match=f"between {lo} and {hi}"):  # the CLI and %iobench
        commands.parse([name, str(tmp_path), flag, str(hi + 1)])
    with pytest.raises(ProbeError, match=f"between {lo} and {hi}"):  # the probe
        limits.check(flag.lstrip("-"), hi + 1, bounds)
    if name == "randread":
        from nbbench.probes.storage import disk

        with pytest.raises(ProbeError, match=f"between {lo} and {hi}"):
            disk.randread(tmp_path, **{flag.lstrip("-"): hi + 1})
    if name == "dd":
        return  # dd's probe refuses through the same check (io_args.check_jobs)


@pytest.mark.parametrize("flag,bounds", [("--size", limits.GPU_MATMUL_SIZE), ("--iters", limits.GPU_ITERS)])
def test_the_gpu_benchmarks_limits_are_the_same_in_the_widget_the_parser_and_the_probe(flag, bounds):
    from nbbench.probes import gpu

    lo, hi = bounds
    f = option_field("gpu", flag, "x")
    assert (f.min, f.max) == (lo, hi)
    assert getattr(commands.parse(["gpu", flag, str(hi)]).args, command_options("gpu")[flag].dest) == hi
    with pytest.raises(commands.UsageProblem, match=f"between {lo} and {hi}"):
        commands.parse(["gpu", flag, str(hi + 1)])
    kw = {"--size": "matmul_size", "--iters": "repeats"}[flag]
    with pytest.raises(ProbeError, match=f"between {lo} and {hi}"):
        gpu.check(torch=None, benchmark=False, **{kw: hi + 1})


def test_a_no_switch_reads_as_what_it_turns_off():
    """``--no-bench`` (store_false): the field is "sanity benchmark", ticked by default; unticked
    passes the flag — never the other way round."""
    fields = {"--no-bench": option_field("gpu", "--no-bench", "benchmark")}
    assert fields["--no-bench"].value is True and options_argv(fields) == []
    fields["--no-bench"].value = False
    assert options_argv(fields) == ["--no-bench"]
    assert commands.parse(["gpu", *options_argv(fields)]).args.bench is False


def test_the_monitor_intervals_limits_come_from_the_probes_limits():
    lo, hi = limits.MONITOR_INTERVAL_S
    assert commands.parse(["monitor", "--duration", "1", "--interval", f"{lo:g}"]).args.interval == lo
    for bad in (lo / 2, hi * 2):
        with pytest.raises(commands.UsageProblem, match="interval"):
            commands.parse(["monitor", "--duration", "1", "--interval", f"{bad:g}"])
