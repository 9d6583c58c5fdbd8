"""compare knows noise: each delta's 95 % interval, grey when within the noise, and the CI gate
(--fail-if-worse) — through the API, the CLI, the magic, the chart and the report."""

from __future__ import annotations

import json
import math
import random
import re

from nbbench import cli, commands
from nbbench.compare import compare
from nbbench.compare.noise import GREY
from nbbench.plots.compare import bar_chart
from nbbench.results import Result
from nbbench.store import default_store

GREEN, RED = "#2e7d32", "#c62828"


def dd(w, r, cache="direct", bs="1M", windows=None):
    res = Result(
        kind="dd",
        params={"path": "/data", "bs": bs, "size": "64M"},
        metrics={"write_bytes_per_s": w, "read_bytes_per_s": r},
        labels={"cache": cache, "engine": "sync"},
    )
    if windows:
        wr, rd = windows
        res.samples = {
            "write_bw": {"t_s": list(range(len(wr))), "write_bytes_per_s": wr},
            "read_bw": {"t_s": list(range(len(rd))), "read_bytes_per_s": rd},
        }
    return res.finish()


def noisy(rng, v, noise=0.02):
    return v * math.exp(rng.gauss(0, noise))


def save_sets(base, cand, n=5, noise=0.02, seed=1, cand_cache="direct"):
    rng = random.Random(seed)
    st = default_store()
    for _ in range(n):
        st.save(dd(noisy(rng, base[0], noise), noisy(rng, base[1], noise)), label="A")
    for _ in range(n):
        st.save(dd(noisy(rng, cand[0], noise), noisy(rng, cand[1], noise), cache=cand_cache), label="B")


def delta_cells(html):
    return re.findall(
        r"<td style='text-align:right;color:([^;]+);font-weight:(\w+)' title='([^']*)'>([^<]*)</td>", html
    )


def test_two_sets_of_identical_runs_show_no_significant_change_in_grey():
    save_sets((500e6, 800e6), (500e6, 800e6), noise=0.05)
    c = compare(["A", "B"])
    g = c.groups[0]
    assert g.n_runs(0) == g.n_runs(1) == 5 and len(g.pool(1)) == 5
    text = c.text_table()
    assert text.count("no significant change") == 2 and "runs 1, 2, 3, 4, 5" in text
    cells = delta_cells(c.html(images=False))
    assert cells and all(colour == GREY and t == "no significant change" for colour, _, _, t in cells), cells
    rows = [r for r in c.rows if r["ref"] == "B"]
    assert all(
        r["significant"] is False and r["method"] == "welch-log" and r["ci_low"] < 1 < r["ci_high"] for r in rows
    )
    gate = c.gate("50%")
    assert gate.verdict == "ok" and gate.exit_code == 0 and commands.exit_code(c) == 0
    assert gate.sentence().startswith("ok: no headline figure is significantly worse")


def test_a_real_regression_is_red_with_its_interval_and_fails_the_gate():
    save_sets((500e6, 1000e6), (500e6, 700e6))
    c = compare(["A", "B"])
    g = c.groups[0]
    ri = g.interval("read_bytes_per_s", 1)
    assert ri.significant and ri.high < 1 and ri.method == "welch-log"
    cell = g.delta_cell("read_bytes_per_s", 1)
    assert re.fullmatch(r"-\d\d\.\d % \(95 % CI -\d\d\.\d … -\d\d\.\d %\)", cell), cell
    assert g.delta_paint("read_bytes_per_s", 1) == RED
    assert g.delta_cell("write_bytes_per_s", 1) == "no significant change"
    gate = c.gate(5)
    assert gate.verdict == "fail" and commands.exit_code(c) == 3 and commands.verdict(c) == "fail"
    (f,) = gate.failures
    assert f["metric"] == "read_bytes_per_s" and 25 < f["worse_pct"] < 35
    assert re.search(
        r"read \(dd\) of B is [23]\d\.\d % worse than A: -[23]\d\.\d % \(95 % CI -\d\d\.\d … "
        r"-\d\d\.\d %\) \(ratio of the geometric means\); medians \d{3} MB/s against 1\.\d\d GB/s",
        gate.sentence(),
    ), gate.sentence()
    # the same runs, a looser gate: worse, but not by more than 50 %
    assert c.gate("50%").verdict == "ok" and commands.exit_code(c) == 0
    # the API and the CLI agree
    assert compare(["A", "B"], fail_if_worse=5.0).verdict == "fail"


def test_the_gate_judges_unlike_pairs_with_their_caveat():
    save_sets((500e6, 1000e6), (500e6, 500e6), cand_cache="buffered")
    gate = compare(["A", "B"]).gate("5%")
    assert gate.verdict == "fail"
    assert "measured unlike the baseline (cache mode differs: direct (A), buffered (B))" in gate.failures[0]["sentence"]


def test_one_run_each_is_inconclusive_without_windows_and_judged_on_windows_with_a_caveat():
    c = compare([dd(500e6, 800e6), dd(600e6, 600e6)])
    g = c.groups[0]
    assert g.delta_cell("write_bytes_per_s", 1) == "inconclusive (+20.0 %)"
    assert "inconclusive: one run each — use --repeat 5" in c.text_table()
    assert all(colour == GREY for colour, *_ in delta_cells(c.html(images=False)))
    assert c.gate("5%").verdict == "ok" and "could not be judged" in c.gated.sentence()
    rng = random.Random(5)
    win = lambda v: [noisy(rng, v, 0.01) for _ in range(16)]  # noqa: E731
    a = dd(500e6, 800e6, windows=(win(500e6), win(800e6)))
    b = dd(505e6, 400e6, windows=(win(505e6), win(400e6)))
    g = compare([a, b]).groups[0]
    cell = g.delta_cell("read_bytes_per_s", 1)
    assert re.fullmatch(r"\d\.\d\d× slower \(95 % CI \d\.\d\d–\d\.\d\d×\) \*", cell), cell
    assert g.interval("read_bytes_per_s", 1).method == "windows"
    assert any("windows within one run each" in n for n in g.noise_notes())
    assert g.interval("write_bytes_per_s", 1).method == "windows"


def test_a_result_with_repeats_counts_each_run():
    rng = random.Random(9)
    a, b = dd(1e9, 1e9), dd(2e9, 2e9)
    a.runs = [{"write_bytes_per_s": noisy(rng, 1e9, 0.05), "read_bytes_per_s": noisy(rng, 1e9, 0.05)} for _ in range(3)]
    b.runs = [{"write_bytes_per_s": noisy(rng, 2e9, 0.05), "read_bytes_per_s": noisy(rng, 2e9, 0.05)} for _ in range(3)]
    g = compare([a, b]).groups[0]
    assert g.n_runs(0) == 3 and len(g.figures("read_bytes_per_s", 1)) == 3
    ri = g.interval("read_bytes_per_s", 1)
    assert ri.significant and ri.method == "welch-log" and 1.7 < ri.low < 2 < ri.high < 2.3
    assert re.fullmatch(r"(\+\d\d\.\d %|\d\.\d\d× faster) \(95 % CI .*\)", g.delta_cell("read_bytes_per_s", 1))
    assert g.delta_paint("read_bytes_per_s", 1) == GREEN


def test_the_chart_draws_whiskers_and_grey_words():
    save_sets((500e6, 800e6), (500e6, 800e6), noise=0.05)
    g = compare(["A", "B"]).groups[0]
    fig = bar_chart(g)
    texts = [t for ax in fig.axes for t in ax.texts]
    words = [t for t in texts if "no significant change" in t.get_text()]
    assert len(words) == 2 and all(t.get_color() == GREY for t in words)
    assert any("(5 runs)" in t.get_text() for t in texts)
    assert all(len(ax.collections) >= 2 for ax in fig.axes if ax.axison)  # a min…max whisker per reference


def test_cli_gate_exit_codes_and_json(capsys):
    save_sets((500e6, 1000e6), (500e6, 700e6))
    assert cli.main(["compare", "A", "B", "--fail-if-worse", "5%"]) == 3
    out = capsys.readouterr().out
    assert "fail: 1 headline figure significantly worse than the baseline by more than 5 %" in out
    assert cli.main(["compare", "A", "B", "--fail-if-worse", "50"]) == 0
    capsys.readouterr()
    assert cli.main(["compare", "A", "B", "--fail-if-worse", "five"]) == 2
    assert "not a percentage: 'five'" in capsys.readouterr().err
    assert cli.main(["compare", "A", "B", "--json", "--fail-if-worse", "5%"]) == 3
    d = json.loads(capsys.readouterr().out)
    row = next(r for r in d["groups"][0]["rows"] if r["ref"] == "B" and r["metric"] == "read_bytes_per_s")
    assert (
        row["significant"] is True
        and row["method"] == "welch-log"
        and row["ci_low"] < row["ratio"] < row["ci_high"] < 1
    )
    assert d["verdict"] == "fail" and d["gate"]["failures"][0]["metric"] == "read_bytes_per_s"


def test_the_magic_gives_the_same_verdict(ipshell, capsys):
    save_sets((500e6, 1000e6), (500e6, 700e6))
    capsys.readouterr()
    cmp = ipshell.run_line_magic("iobench", "compare A B --fail-if-worse 5% -o")
    assert cmp.verdict == "fail" and commands.exit_code(cmp) == 3
    assert "fail: 1 headline figure significantly worse" in capsys.readouterr().out


def test_the_report_says_no_significant_change_for_identical_sets(tmp_path):
    from nbbench.report import report

    save_sets((500e6, 800e6), (500e6, 800e6), noise=0.05)
    rep = report("html", out=tmp_path / "r.html", runs=["A", "B"], run_doctor=False)
    para = rep.data.summary()
    assert para.startswith("no significant change in write (medians ") and "for B against A (dd, 5 runs each)" in para
    assert "no significant change in read" in para and "more below" not in para
    cells = delta_cells(rep.text)
    assert cells and all(c == GREY for c, *_ in cells)
    assert "<b>" not in rep.text[rep.text.index("class='summary'") : rep.text.index("</p>")]


def test_a_repeated_result_says_how_many_runs_it_holds():
    a, b = dd(1e9, 1e9), dd(1e9, 1e9)
    a.run_id, b.run_id = 4, 5
    a.runs = [{"write_bytes_per_s": 1e9, "read_bytes_per_s": v} for v in (0.9e9, 1e9, 1.1e9)]
    text = compare([a, b]).text_table()
    assert "#4 = run 4 (3 runs) /data direct sync\n" in text and "#5 = run 5 /data direct sync\n" in text
