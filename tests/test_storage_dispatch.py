"""One engine interface: the engine registry (names and what each runs, declared once), the one
dispatcher every storage probe's job goes through, and one sentence for what an engine cannot run."""

import os
import shutil

import pytest

from nbbench.probes._engines import registry
from nbbench.probes._engines.registry import RAND, SEQ, IoJob
from nbbench.probes.storage import disk, io_args, io_job
from nbbench.results import ProbeError

MIB = 1 << 20


def test_every_declared_engine_has_a_runner_and_one_list_of_names():
    assert set(io_job._RUNNERS) == set(registry.ENGINES)
    assert io_args.ENGINES == disk.ENGINES == tuple(registry.ENGINES)
    assert registry.DEFAULT in registry.ENGINES and registry.get(None).name == registry.DEFAULT
    assert registry.get("FIO") is registry.FIO
    with pytest.raises(ProbeError, match=r"unknown engine 'nope': choose from builtin, dd, fio"):
        registry.get("nope")


def _shapes():
    for pattern in (SEQ, RAND):
        for timed in (False, True):
            for qd in (1, 8):
                for jobs in (1, 2):
                    yield IoJob(
                        pattern=pattern, qd=qd, jobs=jobs, runtime=1.0 if timed else None, total=None if timed else MIB
                    )


@pytest.mark.parametrize("name", list(registry.ENGINES))
def test_check_and_engine_names_say_the_same(name):
    """engine_names (a command's --engine choices) lists an engine exactly where check lets it run a
    QD1 single job of that pattern and timing; what check refuses is one line naming the engine and
    the engines that can."""
    for job in _shapes():
        job.engine = name
        names = registry.engine_names(job.pattern, timed=job.timed, queue=job.qd > 1)
        try:
            registry.check(job, "probe")
        except ProbeError as exc:
            msg = str(exc)
            assert "\n" not in msg and msg.startswith(f"probe --engine {name}: "), msg
            if job.jobs == 1:
                assert name not in names, (job, names)
            assert "use --engine " in msg and name not in msg.split("use --engine ", 1)[1].split(" or ")
        else:
            assert name in names, (job, names)


def test_engine_names_follow_the_declarations(monkeypatch):
    assert registry.engine_names(SEQ) == ["builtin", "dd", "fio"]
    assert registry.engine_names(RAND, timed=True, queue=True) == ["builtin", "fio"]
    assert registry.engine_names(None, timed=True, queue=True) == ["builtin", "fio"]
    toy = registry.Engine("toy", "a sequential-only engine", patterns=(SEQ,), timed=True, queue=False)
    monkeypatch.setitem(registry.ENGINES, "toy", toy)
    assert "toy" in registry.engine_names(SEQ, timed=True)
    assert "toy" not in registry.engine_names(RAND, timed=True, queue=True)
    assert "toy" not in registry.engine_names(SEQ, timed=True, queue=True)


def test_commands_read_their_engine_choices_from_the_registry(monkeypatch):
    from nbbench.commands import UsageProblem, parse

    toy = registry.Engine("toy", "sequential passes only", patterns=(SEQ,), timed=False, queue=False)
    monkeypatch.setitem(registry.ENGINES, "toy", toy)
    assert parse(["dd", "/tmp", "--engine", "toy"]).args.engine == "toy"
    for argv in (["randread", "/tmp", "--engine", "toy"], ["disk", "/tmp", "--engine", "toy"]):
        with pytest.raises((SystemExit, UsageProblem), match="invalid choice"):
            parse(argv)
    with pytest.raises((SystemExit, UsageProblem), match="invalid choice"):
        parse(["randread", "/tmp", "--engine", "dd"])


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda p: disk.randread(p, engine="dd"), ("randread --engine dd", "no random I/O", "builtin or fio")),
        (lambda p: disk.dd(p, size="4M", engine="fio", jobs=2), ("dd --engine fio", "jobs=2 needs the builtin")),
        (lambda p: disk.dd(p, size="4M", engine="dd", jobs=2), ("dd --engine dd", "one sequential pass")),
        (lambda p: disk.dd(p, size="4M", engine="fio", buffers="huge"), ("builtin engine's option", "fio uses")),
        (lambda p: disk.preset(p, engine="dd"), ("disk --preset cdm --engine dd", "time-based", "builtin or fio")),
    ],
)
def test_an_unsupported_combination_is_one_line_before_any_file(tmp_path, call, words):
    with pytest.raises(ProbeError) as info:
        call(tmp_path)
    msg = str(info.value)
    assert "\n" not in msg and all(w in msg for w in words), msg
    assert os.listdir(tmp_path) == []  # refused before a temp file was made


def test_dd_randread_and_presets_run_through_the_one_dispatcher(tmp_path, monkeypatch):
    seen = []
    real = io_job._RUNNERS["builtin"]

    def spy(s, job):
        seen.append(job)
        return real(s, job)

    monkeypatch.setitem(io_job._RUNNERS, "builtin", spy)
    r = disk.dd(tmp_path, bs="1M", size="4M", direct=False)
    assert r.ok and [(j.op, j.pattern, j.total, j.qd, j.timed, j.fsync_end) for j in seen] == [
        ("write", SEQ, 4 * MIB, 1, False, True),
        ("read", SEQ, 4 * MIB, 1, False, False),
    ]
    seen.clear()
    r = disk.dd(tmp_path, bs="1M", size="4M", jobs=2)
    assert r.ok and [(j.op, j.jobs) for j in seen] == [("write", 2), ("read", 2)] and len(r.samples["write_jobs"]) == 2
    seen.clear()
    r = disk.randread(tmp_path, size="4M", runtime=0.1, ramp=0, qd=2, seed=7)
    assert r.ok and len(seen) == 1
    j = seen[0]
    assert (j.op, j.pattern, j.qd, j.runtime, j.region, j.seed, j.timed) == ("read", RAND, 2, 0.1, 4 * MIB, 7, True)
    assert j.cache_mode == r.labels["cache"]


def test_the_dd_card_says_how_its_write_differs_from_dd_s(tmp_path):
    """write_vs_dd: what bench/dd_write_vs_dd.py measured, with this run's own block and pool (64 buffers
    of 64 KiB at most 16 MiB: 4 MiB); dd's own run has no such line, and what it writes is zeros."""
    r = disk.dd(tmp_path, bs="64K", size="4M", mode="write")
    line = r.labels["write_vs_dd"]
    assert r.ok and r.labels["write_data"] == "random"
    assert line.startswith("either can be the higher") and "one 64 KiB buffer" in line
    assert "cycles 4 MiB of random buffers" in line and "bench/dd_write_vs_dd.py" in line
    if shutil.which("dd"):
        d = disk.dd(tmp_path, bs="64K", size="4M", mode="write", engine="dd")
        assert "write_vs_dd" not in d.labels and d.labels["write_data"].startswith("zeros")


def test_no_engine_name_is_compared_outside_the_registry():
    """Engine names are declared in one place: code elsewhere asks the registry what an engine does
    (``registry.get(engine).in_process``, ``eng.writes_zeros``…), never compares its name."""
    import re
    from pathlib import Path

    root = Path(registry.__file__).resolve().parents[2]
    names = "|".join(registry.ENGINES)
    pattern = re.compile(rf"""(==|!=|\bin\b)\s*\(?\s*["']({names})["']|["']({names})["']\s*(==|!=)""")
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.name == "registry.py" and path.parent.name == "_engines":
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if "engine" in code and pattern.search(code):
                found.append(f"{path.relative_to(root)}:{n}: {line.strip()}")
    assert found == []
