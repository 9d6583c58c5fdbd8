"""The %iobench magic and the nbbench CLI: parsing, errors, saving, returning."""

import json
import subprocess
import sys

import pytest
from IPython.core.error import UsageError

from nbbench import cli, commands
from nbbench.store import default_store


@pytest.fixture
def ip(ipshell):
    return ipshell


def test_help_lists_every_subcommand(ip, capsys):
    ip.run_line_magic("iobench", "")
    out = capsys.readouterr().out
    for name in commands.REGISTRY:
        assert f"  {name} " in out
    ip.run_line_magic("iobench", "help")
    assert "gpu" in capsys.readouterr().out


def test_subcommand_help_shows_its_options(ip, capsys):
    ip.run_line_magic("iobench", "gpu --help")
    out = capsys.readouterr().out
    assert "--no-bench" in out and "--label" in out and "-o" in out


def test_unknown_subcommand_is_a_one_line_usage_error(ip):
    with pytest.raises(UsageError) as exc:
        ip.run_line_magic("iobench", "no-such-thing")
    msg = str(exc.value)
    assert "unknown subcommand 'no-such-thing'" in msg and "\n" not in msg


def test_unknown_subcommand_in_a_cell_shows_no_traceback(ip, capsys):
    res = ip.run_cell("%iobench no-such-thing")
    assert isinstance(res.error_in_exec, UsageError)
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert "UsageError" in text and "Traceback" not in text


def test_bad_option_is_a_usage_error(ip):
    with pytest.raises(UsageError, match="unrecognized arguments"):
        ip.run_line_magic("iobench", "gpu --frobnicate")
    with pytest.raises(UsageError, match="not a whole number"):
        ip.run_line_magic("iobench", "gpu --size big")


def test_gpu_o_returns_a_result_and_saves_it(ip):
    before = default_store().count("gpu")
    r = ip.run_line_magic("iobench", "gpu -o -q --no-bench --label first")
    assert r.kind == "gpu" and "available" in r.to_dict()
    assert r.run_id is not None and default_store().count("gpu") == before + 1
    assert default_store().get(r.run_id).labels["label"] == "first"
    r2 = ip.run_line_magic("iobench", "gpu -o -q --no-bench --no-save")
    assert r2.run_id is None and default_store().count("gpu") == before + 1


def test_without_o_nothing_is_returned(ip):
    assert ip.run_line_magic("iobench", "gpu -q --no-bench --no-save") is None


def test_cli_exit_codes(capsys):
    assert cli.main(["no-such-thing"]) == 2
    assert "unknown subcommand" in capsys.readouterr().err
    assert cli.main(["gpu", "--frobnicate"]) == 2
    assert cli.main(["gpu", "--help"]) == 0
    assert "--no-bench" in capsys.readouterr().out
    assert cli.main([]) == 0
    assert cli.main(["env", "--export", "conda", "--out", "/nonexistent/x"]) in (1,)


def test_cli_json_is_the_result_dict(capsys):
    code = cli.main(["gpu", "--json", "--no-bench"])
    data = json.loads(capsys.readouterr().out)
    assert data["kind"] == "gpu" and isinstance(data["available"], bool)
    # it ran (status ok); whether CUDA is usable is its verdict, and the exit code says it
    assert data["status"] == "ok" and data["verdict"] in ("ok", "warn", "fail")
    assert code == (3 if data["verdict"] == "fail" else 0)
    assert default_store().count("gpu") >= 1


def test_env_export_requirements_is_installable_text(tmp_path):
    out = tmp_path / "req.txt"
    assert cli.main(["env", "--export", "requirements", "--out", str(out)]) == 0
    lines = [ln for ln in out.read_text().splitlines() if ln and not ln.startswith("#")]
    assert lines and all("==" in ln for ln in lines)
    names = {ln.split("==")[0].lower() for ln in lines}
    assert {"pandas", "psutil", "ipython"} <= names
    assert "nbbench" not in names  # an editable checkout is written as a comment, not a pin
    from packaging.requirements import Requirement

    for ln in lines:
        Requirement(ln)  # each line parses as a requirement


def test_env_export_from_the_magic(ip, tmp_path, capsys):
    out = tmp_path / "r.txt"
    ip.run_line_magic("iobench", f"env --export requirements --out {out}")
    assert "exact package versions" in capsys.readouterr().out and out.exists()


def test_console_script_runs():
    p = subprocess.run([sys.executable, "-m", "nbbench", "--version"], capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.startswith("nbbench ")


def test_help_usage_line_reads_like_the_magic(ip, capsys):
    ip.run_line_magic("iobench", "gpu --help")
    assert capsys.readouterr().out.startswith("usage: %iobench gpu ")
    ip.run_cell_magic("iobench", "monitor --help", "pass")
    assert capsys.readouterr().out.startswith("usage: %%iobench monitor ")
