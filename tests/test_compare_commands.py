"""history / compare / report through the CLI and the %iobench magic."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from IPython.core.error import UsageError
from IPython.testing.globalipapp import get_ipython

from nbbench import cli
from nbbench.results import Result
from nbbench.store import default_store


def dd(w, r, cache="direct", bs="1M"):
    return Result(
        kind="dd",
        params={"path": "/data", "bs": bs, "size": "64M"},
        metrics={"write_bytes_per_s": w, "read_bytes_per_s": r},
        labels={"cache": cache},
    ).finish()


@pytest.fixture
def runs():
    st = default_store()
    a = st.save(dd(500e6, 800e6), label="A")
    b = st.save(dd(600e6, 600e6), label="B")
    st.save(Result(kind="randread", metrics={"iops": 1e4}).finish(), label="R")
    return a, b


@pytest.fixture(scope="module")
def ip():
    shell = get_ipython()
    shell.run_line_magic("load_ext", "nbbench")
    return shell


def test_cli_compare_shows_the_delta(runs, capsys):
    assert cli.main(["compare", "A", "B"]) == 0
    out = capsys.readouterr().out
    assert "Δ% B" in out and "+20.0 %" in out and "-25.0 %" in out and "600 MB/s" in out
    assert cli.main(["compare", "A", str(runs[1]), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["refs"] == ["A", f"#{runs[1]}"]
    assert cli.main(["compare", "A", "R"]) == 1
    assert "different kinds" in capsys.readouterr().err
    assert cli.main(["compare", "A", "nope"]) == 1
    assert default_store().count() == 3  # compare saved nothing


def test_cli_compare_warns_when_cache_mode_differs(capsys):
    st = default_store()
    st.save(dd(5e8, 5e8, cache="direct"), label="d")
    st.save(dd(5e8, 3e9, cache="buffered-warm", bs="4M"), label="b")
    assert cli.main(["compare", "d", "b"]) == 0
    out = capsys.readouterr().out
    assert "warning: parameters differ" in out and "warning: cache mode differs" in out


def test_cli_compare_png(runs, tmp_path, capsys):
    png = tmp_path / "c.png"
    assert cli.main(["compare", "A", "B", "--png", str(png)]) == 0
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert cli.main(["compare", "A", "B", "--png", str(png)]) == 1  # never overwrites
    assert "exists" in capsys.readouterr().err


def test_cli_history(runs, capsys):
    assert cli.main(["history"]) == 0
    out = capsys.readouterr().out
    assert "A" in out and "B" in out and "randread" in out and "500 MB/s" in out
    assert cli.main(["history", "--kind", "randread"]) == 0
    out = capsys.readouterr().out
    assert "randread" in out and "500 MB/s" not in out
    assert cli.main(["history", "--label", "none-such"]) == 0
    assert "no stored runs with label 'none-such'" in capsys.readouterr().out
    assert cli.main(["history", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["label"] for r in rows] == ["A", "B", "R"]


def test_cli_report(runs, tmp_path, capsys):
    out = tmp_path / "r.html"
    assert cli.main(["report", "--runs", "A,B", "--no-doctor", "--out", str(out)]) == 0
    assert "report (html)" in capsys.readouterr().out and out.read_text().startswith("<!DOCTYPE html>")
    assert cli.main(["report", "--runs", "A,B", "--no-doctor", "--out", str(out)]) == 1
    assert "--force" in capsys.readouterr().err
    assert cli.main(["report", "--runs", "A", "--no-doctor", "--format", "json", "--out", "-"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["results"][0]["labels"]["label"] == "A" and d["doctor"] is None
    assert cli.main(["report", "--format", "pdf"]) == 2


def test_magic_history_compare_report(ip, runs, tmp_path):
    import pandas as pd

    from nbbench.compare import Comparison
    from nbbench.report import Report

    df = ip.run_line_magic("iobench", "history --kind dd -o")
    assert isinstance(df, pd.DataFrame) and list(df["label"]) == ["A", "B"]
    assert "write_bytes_per_s" in df.columns
    cmp = ip.run_line_magic("iobench", "compare A B -o")
    assert isinstance(cmp, Comparison)
    assert cmp.frame.loc[("dd", "write_bytes_per_s"), "Δ% B"] == pytest.approx(20.0)
    with pytest.raises(UsageError, match="different kinds"):
        ip.run_line_magic("iobench", "compare A R")
    out = tmp_path / "r.md"
    rep = ip.run_line_magic("iobench", f"report --runs A,B --no-doctor --out {out} -o")
    assert isinstance(rep, Report) and rep.format == "md" and out.exists()
    assert "## Comparisons" in out.read_text()


def test_magic_compare_shows_a_png(runs):
    """In a kernel, compare puts the chart out as image/png (executed with nbclient)."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("%load_ext nbbench\n%iobench compare A B")]
    client = nbclient.NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(Path.cwd())}}
    )
    client.execute(env=dict(os.environ))
    outputs = nb.cells[0].outputs
    kinds = [k for o in outputs for k in o.get("data", {})]
    assert "image/png" in kinds and "text/html" in kinds
    html = next(o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {}))
    assert "+20.0 %" in html


@pytest.mark.slow
def test_cli_dd_twice_then_compare_shows_the_delta(tmp_path, capsys):
    """End to end with the real probe: two labelled dd runs in a directory, then compare."""
    pytest.importorskip("nbbench.probes.storage.disk")
    d = tmp_path / "data"
    d.mkdir()
    assert cli.main(["dd", str(d), "--size", "8M", "--label", "A", "-q"]) == 0
    assert cli.main(["dd", str(d), "--size", "8M", "--buffered", "--label", "B", "-q"]) == 0
    assert list(d.iterdir()) == []  # the probe removed its temporary file
    capsys.readouterr()
    assert cli.main(["compare", "A", "B"]) == 0
    out = capsys.readouterr().out
    st = default_store()
    a, b = st.find("A")[0], st.find("B")[0]
    from nbbench.units import format_change

    point = format_change(b.metrics["read_bytes_per_s"] / a.metrics["read_bytes_per_s"])
    assert "Δ% B" in out
    read_line = next(line for line in out.splitlines() if line.startswith("read ↑"))
    # one run each: the change with its interval from the windows, or said to be within the noise
    assert (point in read_line or "no significant change" in read_line) and read_line.endswith("⚠"), read_line
    assert "warning: cache mode differs" in out and f"{a.labels['cache']} (A)" in out
    assert "parameters differ" not in out  # direct=None vs False is the cache mode, said once
