"""Bad command lines never trace back (property-based, hypothesis).

Every subcommand's options are read from its parser (tests/argvgen.py), so new
subcommands and options are covered as they come.  Two properties:

* any argv, parsed through the one parser (the CLI's ``main`` with the run replaced,
  and the magic's ``parse``): help (exit 0), a run handed on (exit 0), or a usage
  error in one line (exit 2) — never a traceback.  In-process, many examples.
* a runnable argv (bounded values, paths in a temporary directory, loopback only),
  run as ``python -m nbbench`` in a temporary working directory and NBBENCH_HOME:
  exit 0, 1, 2, 3 or 130 (after a SIGINT when it outlasts its soft limit), stderr
  without a traceback, the error in one line — and it ends within its hard limit.

CI draws a fixed set of examples (derandomized); ``NBBENCH_STRESS=1`` draws many more.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from unittest import mock

import pytest

pytest.importorskip("hypothesis")
import argvgen  # noqa: E402
from hypothesis import HealthCheck, event, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

STRESS = os.environ.get("NBBENCH_STRESS") == "1"
ROOT = Path(__file__).resolve().parents[1]
UNI = argvgen.universe()
#: a safe run gets SOFT_S seconds, then SIGINT; it must have ended HARD_S seconds after that
SOFT_S = 8.0
HARD_S = 60.0


def _settings(ci: int, stress: int):
    return settings(
        max_examples=stress if STRESS else ci,
        derandomize=not STRESS,
        deadline=None,
        database=None,
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.function_scoped_fixture],
    )


def _no_traceback(text: str, argv) -> None:
    assert "Traceback (most recent call last)" not in text, f"argv {argv!r} traced back:\n{text}"


_BAR = re.compile(r"\d+%\|")


def _error_lines(stderr: str) -> list[str]:
    """The error lines of stderr: not argparse's usage block, not warnings or notes."""
    out, in_usage = [], False
    for line in stderr.splitlines():
        if _BAR.search(line):
            continue  # a progress bar's last state (stderr, as tqdm draws it)
        if line.startswith("usage:"):
            in_usage = True
            continue
        if in_usage and line.startswith(" "):
            continue
        in_usage = False
        if line.strip():
            out.append(line)
    return out


# ------------------------------------------------------------------------------------ parse only
def test_the_universe_is_read_from_the_parsers():
    """Every registered subcommand is in the universe with its options (a new one joins by itself)."""
    from nbbench import commands

    assert set(UNI) == {n for n in commands.names() if commands.available(n)}
    dd = UNI["dd"]
    strings = {s for o in dd.options for s in o.strings}
    assert {"--size", "--bs", "--ranks", "--json"} <= strings
    assert any(o.choices for o in dd.options)
    assert [p.dest for p in dd.positionals] == ["path"]


@_settings(ci=300, stress=5000)
@given(argv=argvgen.wild_argv(UNI))
def test_any_argv_is_help_a_run_or_one_usage_line(argv):
    from nbbench import cli, commands

    out, err = io.StringIO(), io.StringIO()
    ran = []
    with (
        mock.patch.object(commands, "execute", lambda inv, ctx: ran.append(inv)),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        try:
            rc = cli.main(list(argv))
        except SystemExit as exc:  # --version from argparse
            rc = exc.code
    _no_traceback(out.getvalue() + err.getvalue(), argv)
    assert rc in (0, 2), (argv, rc, err.getvalue())
    if rc == 2:
        lines = _error_lines(err.getvalue())
        assert len(lines) == 1 and ": error: " in lines[0], (argv, err.getvalue())
        assert not ran
    else:
        assert not err.getvalue().strip() or ran, (argv, err.getvalue())


@_settings(ci=150, stress=3000)
@given(argv=argvgen.wild_argv(UNI))
def test_the_magic_parses_any_argv_to_an_invocation_help_or_one_usage_error(argv):
    from IPython.core.error import UsageError

    from nbbench import commands, magics

    with contextlib.redirect_stdout(io.StringIO()):
        try:
            inv = magics.parse(list(argv), magics.NotebookContext())
        except UsageError as exc:
            assert str(exc).strip() and "\n" not in str(exc), (argv, str(exc))
            return
    assert inv is None or isinstance(inv, commands.Invocation)


# ------------------------------------------------------------------------------------ safe runs
def _tree(root: Path) -> tuple[list[str], list[str]]:
    """A small world to run in: an empty folder, a file, a tiny image tree, names that do not exist."""
    (root / "home").mkdir()
    (root / "empty").mkdir()
    data = root / "data"
    for c in range(2):
        (data / f"c{c}").mkdir(parents=True)
        for i in range(3):
            (data / f"c{c}" / f"{i}.jpg").write_bytes(os.urandom(2048))
    (root / "file.bin").write_bytes(os.urandom(1 << 20))
    paths = [
        str(root / "empty"),
        str(data),
        str(root / "file.bin"),
        str(root / "new"),
        str(root),
        "empty",
        "data",
        "./data/c0",
        str(root / "new" / "deeper"),
    ]
    outs = [
        str(root / "out.html"),
        str(root / "out.md"),
        str(root / "out.png"),
        str(root / "empty"),
        str(root / "file.bin"),
        str(root / "new" / "out.json"),
    ]
    return paths, outs


def _shell_code(rc: int) -> int:
    """The exit status a shell sees: a process that ended by SIGINT is 130 there (128 + 2), as
    Python ends itself after some interrupts (the KeyboardInterrupt went through a C extension)."""
    return 128 - rc if rc < 0 else rc


def _before_main(rc: int, err: str) -> bool:
    """An interrupt that landed before ``nbbench.cli.main`` ran: Python's start-up (site, importing the
    package) ends in its own traceback or in the bare signal, as for any Python program; from ``main``
    on, an interrupt is 130 and one line (test_an_interrupt_after_start_up_is_130_and_one_line)."""
    if rc in (-signal.SIGINT, 1) and not err.strip():
        return rc == -signal.SIGINT
    lines = err.strip().splitlines()
    if not (rc in (-signal.SIGINT, 1) and lines and lines[-1] == "KeyboardInterrupt"):
        return False
    ours = [
        ln
        for ln in lines
        if ln.strip().startswith("File ")
        and "/nbbench/" in ln
        and "nbbench/__init__.py" not in ln
        and "nbbench/results" not in ln
    ]
    # none of nbbench's own frames but the package's import, or only main's first line (its `def`)
    return all("nbbench/cli.py" in ln and ", in main" in ln for ln in ours) and "def main(" in err if ours else True


def _run(argv: list[str], root: Path) -> tuple[int, str, str]:
    marker = f"{os.getpid()}-{root.name}"
    env = dict(
        os.environ,
        NBBENCH_HOME=str(root / "home"),
        MPLBACKEND="Agg",
        PYTHONPATH=str(ROOT),
        # object storage: dummy credentials and no instance-metadata look-up (169.254.169.254)
        AWS_ACCESS_KEY_ID="nbbench-fuzz",
        AWS_SECRET_ACCESS_KEY="nbbench-fuzz",
        AWS_EC2_METADATA_DISABLED="true",
        NO_COLOR="1",
        CUDA_VISIBLE_DEVICES=os.environ.get("CUDA_VISIBLE_DEVICES", ""),
        NBBENCH_FUZZ_RUN=marker,
    )
    for var in (
        "RANK",
        "WORLD_SIZE",
        "LOCAL_RANK",
        "MASTER_ADDR",
        "MASTER_PORT",
        "TORCHELASTIC_RUN_ID",
        "SLURM_PROCID",
        "OMPI_COMM_WORLD_RANK",
    ):
        env.pop(var, None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "nbbench", *argv],
        cwd=root,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=SOFT_S)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)  # as Ctrl-C would: it must end, as interrupted or done
        try:
            out, err = proc.communicate(timeout=HARD_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            pytest.fail(f"argv {argv!r} still ran {HARD_S:g} s after SIGINT:\n{err[-2000:]}")
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        _kill_marked(marker)  # nothing of the run outlives it, not even what left its process group
    return proc.returncode, out, err


def _kill_marked(marker: str) -> None:
    """Kill every process whose environment carries this run's marker (a launcher's ranks start
    sessions of their own; an orphan is no one's child any more)."""
    import psutil

    for p in psutil.process_iter(["pid"]):
        try:
            if p.pid != os.getpid() and p.environ().get("NBBENCH_FUZZ_RUN") == marker:
                p.kill()
        except (psutil.Error, OSError):
            pass


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(UNI))
@_settings(ci=2, stress=int(os.environ.get("NBBENCH_FUZZ_RUNS", 20)))
@given(data=st.data())
def test_a_runnable_argv_ends_in_an_exit_code_and_at_most_one_error_line(name, data):
    with tempfile.TemporaryDirectory(prefix="nbbench-fuzz-") as tmp:
        root = Path(tmp)
        paths, outs = _tree(root)
        argv = data.draw(argvgen.safe_argv(UNI, paths, outs, name=name), label="argv")
        argvgen.check_safe(argv, str(root), UNI)
        rc, out, err = _run(argv, root)
        event(f"{argv[0]} exit {rc}")
        if _before_main(rc, err):
            return  # the SIGINT came while Python itself was still starting: Python's, not ours
        _no_traceback(out + err, argv)
        rc = _shell_code(rc)
        assert rc in (0, 1, 2, 3, 130), (argv, rc, err[-2000:])
        lines = [ln for ln in _error_lines(err) if not ln.startswith(("warning:", "note:", "not saved:"))]
        if rc == 2:  # a usage error: in one line on stderr
            assert len(lines) == 1, (argv, rc, err)
        elif rc in (1, 130):  # failed or interrupted: a line on stderr, or the result saying so (--json)
            assert lines or out.strip(), (argv, rc, err)


def test_the_generators_keep_a_run_safe():
    """The bounds of safe_argv: never many hosts, a program, a non-loopback listener, an outside --out."""
    root = "/tmp/nbbench-fuzz-x"
    paths, outs = [root + "/a"], [root + "/out.html"]

    @settings(max_examples=300, derandomize=True, database=None, deadline=None)
    @given(argv=argvgen.safe_argv(UNI, paths, outs))
    def check(argv):
        argvgen.check_safe(argv, root, UNI)
        assert "--nnodes" not in argv and "--rdzv-host" not in argv
        if "--size" in argv and argv[0] in ("dd", "disk", "randread", "make-dataset", "checkpoint"):
            from nbbench import units

            v = argv[argv.index("--size") + 1]
            try:
                assert units.parse_size(v) <= argvgen.MAX_SIZE
            except ValueError:
                pass

    check()


@pytest.mark.slow
@pytest.mark.parametrize("argv", [["env"], ["history"], ["dd", "--size", "1M", "--bs", "64k", "data"]])
def test_an_interrupt_after_start_up_is_130_and_one_line(argv, tmp_path):
    """Ctrl-C at any moment from the start of ``main`` (importing a subcommand, parsing, running, saving):
    exit 130 with one line, never a traceback.  ``main`` is entered once nbbench's package has imported;
    the test waits for that (``python -X importtime`` would be a timing; the import of ``nbbench.cli``
    is the event: a wrapper prints a line once it is done) and then interrupts at varied delays."""
    import time

    (tmp_path / "data").mkdir()
    (tmp_path / "home").mkdir()
    code = (
        "import sys, signal\n"
        "from nbbench import cli\n"
        "print('ready', flush=True)\n"
        "sys.stdin.readline()\n"  # the test's go: SIGINT follows at once, during main
        "sys.exit(cli.main(sys.argv[1:]))\n"
    )
    env = dict(os.environ, NBBENCH_HOME=str(tmp_path / "home"), MPLBACKEND="Agg", PYTHONPATH=str(ROOT))
    delays = [0.0, 0.01, 0.03, 0.1, 0.3] * (8 if STRESS else 1)
    interrupted = 0
    for delay in delays:
        proc = subprocess.Popen(
            [sys.executable, "-c", code, *argv],
            cwd=tmp_path,
            env=env,
            text=True,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert proc.stdout.readline().strip() == "ready"
        proc.stdin.write("go\n")
        proc.stdin.flush()
        time.sleep(delay)  # not synchronisation: the moment of the interrupt is what varies
        proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=HARD_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            pytest.fail(f"{argv} ran on {HARD_S:g} s after SIGINT")
        if _before_main(proc.returncode, err):
            continue  # it landed on main's first line, before its try: Python's
        _no_traceback(out + err, argv)
        rc = _shell_code(proc.returncode)
        assert rc in (0, 130), (argv, delay, proc.returncode, err)
        if rc == 130:
            # one line says so: an error line, or — where the SIGINT landed in the probe's own loop, which
            # stops and returns what it measured — the result's own "interrupted: …" line on stdout
            said = _error_lines(err) + [ln for ln in out.splitlines() if ln.strip().startswith("interrupted:")]
            assert len(said) == 1 and "interrupted" in said[0], (argv, delay, out, err)
        interrupted += rc == 130
    assert interrupted, f"no SIGINT of {len(delays)} landed in {argv}'s run: the test tested nothing"
