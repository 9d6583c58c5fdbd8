"""--repeat N on the measuring subcommands, the spread of their headline figures, run quality in
words, and ``vs`` (settings of one probe interleaved and compared)."""

from __future__ import annotations

import json

import pytest

from nbbench import cli, commands
from nbbench.commands import Command, Context, UsageProblem, parse
from nbbench.commands.ranks import child_argv
from nbbench.results import Result
from nbbench.results.quality import assess, suggest, too_short
from nbbench.results.runs import merge, spread_of
from nbbench.results.storage import DiskResult
from nbbench.store import default_store

MEASURING = ("dd", "randread", "files", "disk", "shards", "checkpoint", "loader", "feed", "gpu", "s3")


def _quiet_ctx() -> Context:
    return Context(quiet=True)


# ------------------------------------------------------------------ the option
@pytest.mark.parametrize("name", MEASURING)
def test_every_measuring_subcommand_takes_repeat(name):
    d = commands.defaults(name)
    assert d["repeat"] == 1


@pytest.mark.parametrize("name", ("history", "env", "doctor", "monitor", "sweep", "compare"))
def test_other_subcommands_do_not(name):
    assert "repeat" not in commands.defaults(name)


@pytest.mark.parametrize("bad", ["0", "101", "-3", "five", "2.5"])
def test_repeat_out_of_range_is_a_usage_error(bad, tmp_path, capsys):
    with pytest.raises(UsageProblem, match="--repeat"):
        parse(["dd", str(tmp_path), "--repeat", bad])
    assert cli.main(["dd", str(tmp_path), "--repeat", bad]) == 2
    assert "--repeat" in capsys.readouterr().err


def test_gpu_iters_and_its_hidden_old_name():
    assert parse(["gpu", "--iters", "3"]).args.iters == 3
    assert parse(["gpu", "--repeats", "4"]).args.iters == 4  # the old name still works
    inv = parse(["gpu", "--repeat", "2"])  # whole runs, not read as --repeats
    assert inv.args.repeat == 2 and inv.args.iters == 10
    text = commands.build_parser(inv.command, Context()).format_help()
    assert "--iters" in text and "--repeats" not in text


def test_ranks_get_the_command_line_without_repeat():
    inv = parse(["dd", "/tmp", "--size", "4M", "--repeat", "3", "--ranks", "2"])
    assert child_argv("dd", inv.args) == ["dd", "/tmp", "--size", "4M", "--ranks", "2"]
    inv = parse(["dd", "/tmp", "--repeat=3"])
    assert child_argv("dd", inv.args) == ["dd", "/tmp"]


# ------------------------------------------------------------------ a real dd, repeated
def test_dd_repeat_keeps_every_run_and_reports_medians_with_spread(tmp_path, capsys):
    code = cli.main(["dd", str(tmp_path), "--size", "4M", "--repeat", "3", "--json"])
    assert code == 0
    d = json.loads(capsys.readouterr().out)
    assert len(d["runs"]) == 3
    for key in ("write_bytes_per_s", "read_bytes_per_s"):
        vals = sorted(r[key] for r in d["runs"])
        assert d["metrics"][key] == pytest.approx(vals[1])  # the median of three
    assert "(min…max of 3 runs)" in d["summary"] and "write ±" in d["summary"] and "read ±" in d["summary"]
    assert "repeat" not in d["params"]  # not a parameter: compare finds 3 runs and 1 run alike
    # 4 MiB lasts milliseconds: said in words, with the size that would do
    assert any("too short to trust — use --size" in w for w in d["warnings"])
    assert not list(tmp_path.iterdir())  # every run removed its file
    st = default_store()
    stored = st.get(int(st.history(kind="dd")["run_id"].iloc[-1]))  # stored as shown
    assert len(stored.to_dict()["runs"]) == 3 and stored.metrics == d["metrics"]


def test_one_run_has_one_entry_in_runs(tmp_path):
    inv = parse(["dd", str(tmp_path), "--size", "4M", "--no-save"], _quiet_ctx())
    r = commands.execute(inv, _quiet_ctx())
    d = r.to_dict()
    assert len(d["runs"]) == 1 and d["runs"][0] == d["metrics"] and d["summary"] == r.summary()


# ------------------------------------------------------------------ merging and spread (synthetic)
def _dd(write, read=None, windows=None, elapsed=5.0):
    r = DiskResult(
        params={"size": 1 << 30},
        metrics={
            "write_bytes_per_s": write,
            "write_elapsed_s": elapsed,
            "read_bytes_per_s": read or write,
            "read_elapsed_s": elapsed,
        },
    )
    w = windows or [write] * 10
    r.samples = {
        "write_bw": {"t_s": [0.5 * (i + 1) for i in range(len(w))], "write_bytes_per_s": list(w)},
        "read_bw": {"t_s": [0.5 * (i + 1) for i in range(len(w))], "read_bytes_per_s": list(w)},
    }
    return r.finish()


def test_merge_takes_medians_and_names_the_spread_kind():
    runs = [_dd(100e6), _dd(104e6), _dd(96e6), _dd(102e6), _dd(98e6)]
    m = merge(runs)
    assert m.metrics["write_bytes_per_s"] == 100e6 and len(m.runs) == 5
    assert m.runs[1]["write_bytes_per_s"] == 104e6
    sp = m.extra["spread"]
    assert sp["over"] == "runs" and sp["figures"]["write_bytes_per_s"]["pm"] == pytest.approx(0.04)
    line = m.answer_line()
    assert line.startswith("100 MB/s write ± 4 %") and m.lead().endswith("(min…max of 5 runs)")
    assert "± 4 %" in m.html() and "(min…max of 5 runs)" in m.html()  # the card says the same
    again = Result.from_dict(json.loads(m.to_json()))
    assert isinstance(again, DiskResult) and again.runs == m.runs and again.summary() == m.summary()


def test_one_run_states_its_within_run_spread_from_its_windows():
    r = merge([_dd(100e6, windows=[90e6, 110e6] * 6)])
    sp = spread_of(r)
    assert sp["over"] == "windows" and sp["figures"]["write_bytes_per_s"]["n"] == 12
    assert "(CV of 12 windows, within one run)" in r.summary()
    assert "± " in r.answer_line()
    # a run without two windows invents no spread: it says none is known
    bare = DiskResult(metrics={"write_bytes_per_s": 1e8}).finish()
    assert spread_of(bare)["figures"] == {}
    assert merge([bare]).lead() == "100 MB/s write (one run: no spread — use --repeat 5)"
    one = _dd(1e8, windows=[1e8])
    assert merge([one]).lead().endswith("(one run, 1 window: no spread — use --repeat 5)")


def test_a_failed_run_ends_the_series_and_is_named():
    bad = _dd(1e8)
    bad.fail("disk full")
    m = merge([_dd(1e8), bad])
    assert m.status == "failed" and m.reason == "run 2 of 2 failed: disk full" and len(m.runs) == 1


# ------------------------------------------------------------------ quality in words
def test_too_short_is_one_wording_with_what_would_do():
    text = too_short("write", 0.00988, 1, suggest(("--size", 64 << 20, "size"), 1 / 0.00988))
    assert text == "write lasted 9.88 ms (1 window): too short to trust — use --size 8G or more"
    assert suggest(("--runtime", 0.3, "duration"), 1 / 0.3) == "use --runtime 2s or more"
    assert suggest(("--sample", 100, "count"), 3.0) == "use --sample 500 or more"
    assert suggest(None, 2.0) == "run it longer"


def test_quality_finds_short_unstable_and_warm_up():
    short = [_dd(1e8, elapsed=0.2), _dd(1e8, elapsed=0.2)]
    m = merge(short)
    kinds = [f["kind"] for f in assess(m, short, ("--size", 1 << 30, "size"))]
    assert kinds.count("too_short") == 2 and "unstable" not in kinds

    shaky = [_dd(100e6), _dd(101e6), _dd(130e6)]
    m = merge(shaky)
    found = assess(m, shaky)
    un = [f for f in found if f["kind"] == "unstable"]
    assert len(un) == 1 and un[0]["outlier_run"] == 3
    assert m.warnings[0].startswith(
        "unstable: runs differ by 30 % in write, 30 % in read — run 3 of 3 is the outlier "
        "(130 MB/s against a median of 101 MB/s)"
    )

    cold = [_dd(100e6, windows=[40e6] + [100e6] * 9)]
    m = merge(cold)
    found = assess(m, cold)
    assert [f["kind"] for f in found] == ["warmup", "warmup"]
    assert "warm-up transient in write: its first window is 60 % below the median of the other 9" in m.warnings[0]

    steady = [_dd(100e6), _dd(101e6), _dd(99e6)]
    assert assess(merge(steady), steady) == []


# ------------------------------------------------------------------ vs: interleaved settings
class FakeResult(Result):
    KIND = "fakeprobe"
    SUMMARY = ("read_bytes_per_s",)


class FakeProbe(Command):
    """A measuring command whose figure is given on its command line (--rate), with 1 % noise."""

    measures = True
    calls: list[str] = []

    def add_arguments(self, parser):
        parser.add_argument("--rate", type=float, required=True)
        parser.add_argument("--fail-at", dest="fail_at", type=int, default=0)

    def run(self, args, ctx):
        n = len(FakeProbe.calls)
        FakeProbe.calls.append(str(args.rate))
        noise = 1 + 0.01 * ((n * 7) % 5 - 2)
        r = FakeResult(metrics={"read_bytes_per_s": args.rate * noise, "read_elapsed_s": 2.0})
        if args.fail_at and len(FakeProbe.calls) == args.fail_at:
            return r.fail("the device went away")
        return r.finish()


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setitem(commands.REGISTRY, "fakeprobe", ("tests.test_repeat:FakeProbe", "a fake probe"))
    import importlib

    cls = importlib.import_module("tests.test_repeat").FakeProbe  # the class the registry loads
    cls.calls = []
    return cls


def test_vs_runs_settings_interleaved_and_finds_a_real_difference(fake):
    inv = parse(["vs", "fakeprobe --rate 100", "fakeprobe --rate 200", "--rounds", "3", "--no-save"])
    r = commands.execute(inv, _quiet_ctx())
    assert fake.calls == ["100.0", "200.0"] * 3  # A B A B A B
    assert r.kind == "vs" and [s["setting"] for s in r.settings] == ["A", "B"]
    assert all(len(s["runs"]) == 3 for s in r.settings)
    (ratio,) = r.ratios
    assert ratio["of"] == "B/A" and ratio["significant"] and ratio["low"] > 1.8 and ratio["high"] < 2.2
    line = r.answer_line()
    assert line.startswith("B vs A: read +") and "(95 % CI +" in line and "no significant" not in line
    again = Result.from_dict(json.loads(r.to_json()))
    assert type(again).__name__ == "InterleaveResult" and again.answer_line() == r.answer_line()


def test_vs_says_no_significant_change_for_equal_settings(fake):
    inv = parse(["vs", "fakeprobe --rate 100", "fakeprobe --rate 100", "--rounds", "5", "--no-save"])
    r = commands.execute(inv, _quiet_ctx())
    (ratio,) = r.ratios
    assert not ratio["significant"] and "no significant change" in r.answer_line()


@pytest.mark.parametrize(
    "settings, words",
    [
        (["dd /tmp"], "two or more settings"),
        (["dd /tmp", "randread /tmp"], "different probes"),
        (["dd /tmp --repeat 3", "dd /tmp"], "--rounds"),
        (["history", "history"], "does not measure; vs compares settings of gpu, collectives, copies, dd, randread"),
        (["dd /tmp --json", "dd /tmp"], "belongs to vs"),
        (["dd /tmp --frobnicate", "dd /tmp"], "setting 'dd /tmp --frobnicate'"),
        (["dd -h", "dd /tmp"], "nbbench dd --help"),
        (["", "dd /tmp"], "give a probe's command line"),
    ],
)
def test_vs_usage_errors(settings, words):
    inv = parse(["vs", *settings, "--no-save"])
    with pytest.raises(UsageProblem, match=words.replace("(", r"\(")):
        inv.command.run(inv.args, _quiet_ctx())


def test_vs_with_real_dd_and_the_magic_form(ipshell, tmp_path):
    a, b = f"dd {tmp_path} --size 4M --direct", f"dd {tmp_path} --size 4M --buffered"
    r = ipshell.run_line_magic("iobench", f'vs "{a}" "{b}" --rounds 2 -o -q')
    assert r.kind == "vs" and len(r.ratios) == 2 and r.run_id is not None
    assert any("cache: A direct" in d for d in r.extra["differ"])
    assert isinstance(default_store().get(r.run_id), type(r))
    assert not list(tmp_path.iterdir())


def test_gpu_benchmark_iterations_give_its_within_run_spread():
    from nbbench.results.system.gpu import GpuCheckResult

    r = GpuCheckResult(
        metrics={"device_count": 1, "matmul_bf16_flop_per_s": 100e12}, samples={"matmul_bf16_ms": [1.0, 1.1, 0.9, 1.0]}
    )
    sp = merge([r.finish()]).extra["spread"]["figures"]["matmul_bf16_flop_per_s"]
    assert sp["n"] == 4 and sp["max"] == pytest.approx(100e12 / 0.9) and 0.05 < sp["pm"] < 0.12


def test_vs_usage_errors_exit_2_from_the_cli(capsys, tmp_path):
    assert cli.main(["vs", f"dd {tmp_path}", "--no-save"]) == 2
    assert "two or more settings" in capsys.readouterr().err
    assert cli.main(["vs", f"dd {tmp_path} --size 4Q", f"dd {tmp_path}", "--no-save"]) == 2
    assert "unknown size unit" in capsys.readouterr().err


def test_vs_colours_only_changes_beyond_the_noise(fake):
    r = commands.execute(
        parse(
            ["vs", "fakeprobe --rate 100", "fakeprobe --rate 200", "fakeprobe --rate 100", "--rounds", "3", "--no-save"]
        ),
        _quiet_ctx(),
    )
    (sec,) = [s for s in r.sections() if s.css == "nbbench-ratios"]
    assert [row[0] for row in sec.rows] == ["B/A", "C/A"] and sec.marks == ["ok", "neutral"]


def test_vs_with_one_round_and_no_windows_is_inconclusive_and_says_rounds(fake):
    r = commands.execute(
        parse(["vs", "fakeprobe --rate 100", "fakeprobe --rate 300", "--rounds", "1", "--no-save"]), _quiet_ctx()
    )
    assert r.answer_line() == "B vs A: read inconclusive: one run each — use --rounds 5"
    assert r.ratios[0]["significant"] is False and r.ratios[0]["method"] == "none"


def test_repeat_runs_the_probe_n_times_and_a_failure_ends_the_series(fake):
    r = commands.execute(parse(["fakeprobe", "--rate", "100", "--repeat", "4", "--no-save"]), _quiet_ctx())
    assert len(fake.calls) == 4 and len(r.runs) == 4 and r.status == "ok"
    fake.calls.clear()
    r = commands.execute(
        parse(["fakeprobe", "--rate", "100", "--fail-at", "2", "--repeat", "5", "--no-save"]), _quiet_ctx()
    )
    assert len(fake.calls) == 2 and r.status == "failed" and len(r.to_dict()["runs"]) == 1
    assert r.reason == "run 2 of 5 failed: the device went away"
    assert commands.exit_code(r) == commands.EXIT_FAILED


def test_an_interrupt_between_runs_keeps_the_runs_that_ended(fake, monkeypatch):
    real = fake.run

    def run(self, args, ctx):
        if len(fake.calls) == 2:
            raise KeyboardInterrupt
        return real(self, args, ctx)

    monkeypatch.setattr(fake, "run", run)
    r = commands.execute(parse(["fakeprobe", "--rate", "100", "--repeat", "5", "--no-save"]), _quiet_ctx())
    assert r.status == "interrupted" and len(r.runs) == 2 and r.reason == "interrupted in run 3 of 5"
