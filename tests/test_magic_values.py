"""What the magic gives back and shows: ``history`` and ``compare`` are expressions
(``h = %iobench history`` without ``-o``; displayed once when they are the cell's
value), and a ``%%iobench monitor`` cell that raises shows its traceback once."""

from __future__ import annotations

import pandas as pd
import pytest

from nbbench import cli
from nbbench.compare import Comparison
from nbbench.results import Result
from nbbench.store import default_store


def dd(w, r):
    return Result(
        kind="dd",
        params={"path": "/data", "bs": "1M"},
        metrics={"write_bytes_per_s": w, "read_bytes_per_s": r},
        labels={"cache": "direct"},
    ).finish()


@pytest.fixture
def runs():
    st = default_store()
    st.save(dd(500e6, 800e6), label="first-run")
    st.save(dd(600e6, 600e6), label="second-run")


def test_history_is_a_value_without_o_and_prints_nothing_itself(ipshell, runs, capsys):
    capsys.readouterr()
    ipshell.run_cell("h = %iobench history")
    out, err = capsys.readouterr()
    assert out == "" and err == ""  # an assignment: nothing shown
    h = ipshell.user_ns["h"]
    assert isinstance(h, pd.DataFrame) and len(h) == 2
    assert h["label"].tolist() == ["first-run", "second-run"] and "read_bytes_per_s" in h.columns
    # as the cell's value it is displayed once, by IPython
    ipshell.run_cell("%iobench history --kind dd")
    out = capsys.readouterr().out
    assert out.count("[2 rows x") == 1 and out.count("600000000.0") == 2, out  # one frame, its 2 rows


def test_compare_is_a_value_without_o_and_is_shown_once(ipshell, runs, capsys):
    capsys.readouterr()
    ipshell.run_cell("cmp = %iobench compare first-run second-run")
    out, err = capsys.readouterr()
    assert out == "" and err == ""
    cmp = ipshell.user_ns["cmp"]
    assert isinstance(cmp, Comparison)
    assert cmp.frame.loc[("dd", "write_bytes_per_s"), "Δ% second-run"] == pytest.approx(20.0)
    ipshell.run_cell("%iobench compare first-run second-run")
    out = capsys.readouterr().out
    assert out.count("Δ% second-run") == 1, out  # the table, once


def test_json_and_the_terminal_are_as_before(ipshell, runs, capsys):
    capsys.readouterr()
    assert ipshell.run_line_magic("iobench", "history --json") is None  # --json prints the JSON only
    assert '"second-run"' in capsys.readouterr().out
    assert cli.main(["history"]) == 0 and "second-run" in capsys.readouterr().out
    assert cli.main(["compare", "first-run", "second-run"]) == 0
    assert "Δ% second-run" in capsys.readouterr().out


def test_a_monitored_cell_that_raises_shows_its_traceback_once(ipshell, capsys):
    capsys.readouterr()
    r = ipshell.run_cell(
        "%%iobench monitor --no-plot --gpu none --interval 0.05\n"
        "def inner():\n    raise ValueError('boom-once')\ninner()\n"
    )
    out, err = capsys.readouterr()
    text = out + err
    assert isinstance(r.error_in_exec, ValueError)  # the cell still fails
    assert [ln for ln in text.splitlines() if ln.startswith("ValueError:")] == ["ValueError: boom-once"], text
    assert text.count("Traceback") == 1 and "inner()" in text  # the cell's own traceback, with its frames
    assert "monitor cell" in text and "FAILED" in text  # the monitor's result is shown
    stored = default_store().history(kind="monitor")
    assert stored["status"].tolist() == ["failed"]  # and saved as failed


def test_an_interrupted_monitored_cell_still_shows_its_interrupt(ipshell, capsys):
    capsys.readouterr()
    r = ipshell.run_cell("%%iobench monitor --no-plot --gpu none --interval 0.05\nraise KeyboardInterrupt\n")
    out, err = capsys.readouterr()
    assert r.error_in_exec is None and "KeyboardInterrupt" in out + err and "INTERRUPTED" in out + err
    assert default_store().history(kind="monitor")["status"].tolist() == ["interrupted"]


def test_with_o_it_is_shown_and_returned_as_before(ipshell, runs, capsys):
    capsys.readouterr()
    ipshell.run_cell("cmp = %iobench compare first-run second-run -o")
    out = capsys.readouterr().out
    assert isinstance(ipshell.user_ns["cmp"], Comparison) and out.count("Δ% second-run") == 1
