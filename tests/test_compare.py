"""Like-for-like comparison: % deltas against the first run, warnings, frame, chart."""

from __future__ import annotations

import io

import pytest

from nbbench.compare import Comparison, better, compare
from nbbench.plots import figure_png
from nbbench.plots.compare import bar_chart
from nbbench.results import ProbeError, Result
from nbbench.store import Store


def dd(write, read, cache="direct", bs="1M", size="64M", path="/data", label=None, status="ok"):
    r = Result(
        kind="dd",
        params={"path": path, "bs": bs, "size": size},
        metrics={
            "write_bytes_per_s": write,
            "read_bytes_per_s": read,
            "write_s": 64 * 2**20 / write if write else None,
        },
        labels={"cache": cache},
        status=status,
    )
    if label:
        r.labels["label"] = label
    return r


@pytest.fixture
def store(tmp_path):
    return Store(tmp_path / "r.sqlite")


def test_deltas_against_the_first(store):
    store.save(dd(500e6, 1000e6), label="A")
    store.save(dd(750e6, 800e6), label="B")
    store.save(dd(250e6, 1000e6), label="C")
    c = compare(["A", "B", "C"], store=store)
    assert isinstance(c, Comparison) and len(c.groups) == 1 and c.all_warnings == []
    g = c.groups[0]
    assert g.names == ["A", "B", "C"] and g.kind == "dd"
    assert g.delta_pct("write_bytes_per_s", 1) == pytest.approx(50.0)
    assert g.delta_pct("read_bytes_per_s", 1) == pytest.approx(-20.0)
    assert g.delta_pct("write_bytes_per_s", 2) == pytest.approx(-50.0)
    f = c.frame
    assert f.loc[("dd", "write_bytes_per_s"), "Δ% B"] == pytest.approx(50.0)
    assert f.loc[("dd", "read_bytes_per_s"), "A"] == 1000e6
    assert f.loc[("dd", "write_bytes_per_s"), "unit"] == "bytes/s"
    text = str(c)
    assert "+50.0 %" in text and "-20.0 %" in text and "750 MB/s" in text
    rows = c.rows
    assert {r["ref"] for r in rows} == {"A", "B", "C"}
    assert [r["delta_pct"] for r in rows if r["ref"] == "A"] == [None] * 3


def test_ids_and_results_as_references(store):
    a = store.save(dd(400e6, 400e6))
    b = store.save(dd(500e6, 600e6))
    c = compare([a, str(b)], store=store)
    assert c.refs == [f"#{a}", f"#{b}"]
    assert c.groups[0].delta_pct("read_bytes_per_s", 1) == pytest.approx(50.0)
    c2 = compare([dd(1e9, 1e9, label="x"), dd(2e9, 1e9, label="y")])
    assert c2.refs == ["x", "y"] and c2.groups[0].delta_pct("write_bytes_per_s", 1) == pytest.approx(100.0)


def test_parameter_and_cache_mode_warnings(store):
    store.save(dd(500e6, 1e9, cache="direct", bs="1M"), label="A")
    store.save(dd(500e6, 3e9, cache="buffered-warm", bs="4M"), label="B")
    c = compare(["A", "B"], store=store)
    ws = c.all_warnings
    assert any("parameters differ" in w and "bs 1M (A), 4M (B)" in w for w in ws), ws
    assert any(w.startswith("cache mode differs") and "direct (A), buffered-warm (B)" in w for w in ws), ws
    assert not any("path" in w for w in ws)  # two directories is what is being compared


def test_differing_paths_are_a_note_not_a_warning(store):
    store.save(dd(500e6, 1e9, path="/nvme"), label="A")
    store.save(dd(300e6, 6e8, path="/nfs"), label="B")
    c = compare(["A", "B"], store=store)
    assert c.all_warnings == []
    assert any("/nvme (A)" in n and "/nfs (B)" in n for n in c.groups[0].notes)


def test_kinds_never_mix(store):
    store.save(dd(5e8, 5e8), label="A")
    store.save(Result(kind="randread", metrics={"iops": 1e4}), label="B")
    with pytest.raises(ProbeError, match="different kinds"):
        compare(["A", "B"], store=store)


def test_a_label_with_several_kinds_and_runs(store):
    store.save(dd(1e8, 1e8), label="A")
    store.save(dd(5e8, 5e8), label="A")  # the same settings: pooled with the first as repeats
    store.save(dd(9e9, 9e9, bs="4M"), label="A")  # other settings: left out, said so
    store.save(dd(3e8, 3e8), label="A")
    store.save(Result(kind="randread", params={"bs": "4k"}, metrics={"iops": 1e4, "lat_p99_ns": 2e5}), label="A")
    store.save(dd(1e9, 1e9), label="B")
    store.save(Result(kind="randread", params={"bs": "4k"}, metrics={"iops": 3e4, "lat_p99_ns": 1e5}), label="B")
    c = compare(["A", "B"], store=store)
    assert [g.kind for g in c.groups] == ["dd", "randread"]
    g = c.groups[0]
    assert [r.run_id for r in g.pool(0)] == [1, 2, 4] and g.n_runs(0) == 3 and g.runs[0].run_id == 4
    assert g.value("write_bytes_per_s", 0) == 3e8  # the median of the pooled runs
    assert g.delta_pct("write_bytes_per_s", 1) == pytest.approx(100 * (1e9 / 3e8 - 1))
    rr = c.groups[1]
    assert rr.delta_pct("iops", 1) == pytest.approx(200.0) and rr.delta_pct("lat_p99_ns", 1) == pytest.approx(-50.0)
    assert any("A: 3 dd runs with the same settings pooled as repeats (runs 1, 2, 4)" in n for n in c.notes)
    assert any("A also names 1 dd run with other settings" in n and "runs 3" in n for n in c.notes), c.notes


def test_errors_for_people(store):
    with pytest.raises(ProbeError, match="two or more"):
        compare(["A"], store=store)
    store.save(dd(1, 1), label="A")
    with pytest.raises(ProbeError, match="no stored run has id or label 'nope'"):
        compare(["A", "nope"], store=store)


def test_interrupted_run_warns_and_zero_baseline_gives_no_delta():
    a = dd(0.0, 1e9, label="a")
    b = dd(1e9, 1e9, label="b", status="interrupted")
    c = compare([a, b])
    g = c.groups[0]
    assert g.delta_pct("write_bytes_per_s", 1) is None
    assert any("interrupted" in w for w in c.all_warnings)
    assert "—" in g.text_table()


def test_better_direction():
    assert better("read_bytes_per_s") == "higher" and better("iops") == "higher"
    assert better("lat_p99_ns") == "lower" and better("write_s") == "lower"
    assert better("cpu_pct") is None


def test_bar_chart_is_agg_without_pyplot():
    from matplotlib.figure import Figure

    c = compare([dd(5e8, 1e9, label="A"), dd(6e8, 8e8, label="B")])
    fig = bar_chart(c.groups[0])
    assert isinstance(fig, Figure) and len(fig.axes) == 3
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert any("(+20.0 %)" in t for t in texts) and any("(-20.0 %)" in t for t in texts)
    png = figure_png(fig)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    from PIL import Image

    w, h = Image.open(io.BytesIO(png)).size
    assert w == 800 and h > 200


def test_html_and_json():
    import json

    c = compare([dd(5e8, 1e9, label="A"), dd(6e8, 8e8, label="B", cache="buffered-warm")])
    h = c._repr_html_()
    assert "data:image/png;base64," in h and "+20.0 %" in h and "cache mode differs" in h
    d = json.loads(c.to_json(orient="records", indent=2))
    assert d["refs"] == ["A", "B"] and d["groups"][0]["kind"] == "dd"
    assert any(r["delta_pct"] == pytest.approx(20.0) for r in d["groups"][0]["rows"])


def test_chart_keeps_the_headline_metrics():
    from nbbench.compare import chart_metrics
    from nbbench.results import register

    @register("chart-test")
    class Headline(Result):
        SUMMARY = ("read_bytes_per_s", "iops")

    a = Headline(metrics={"read_bytes_per_s": 1e8, "iops": 10.0, "lat_p99_ns": 5e5, "total_bytes": 1})
    b = Headline(metrics={"read_bytes_per_s": 2e8, "iops": 20.0, "lat_p99_ns": 4e5, "total_bytes": 1})
    g = compare([a, b]).groups[0]
    assert chart_metrics(g) == ["read_bytes_per_s", "iops"]
    assert len(bar_chart(g).axes) == 2
    assert len(bar_chart(g, metrics=["lat_p99_ns"]).axes) == 1
    plain = compare(
        [
            Result(kind="k", metrics={"a_bytes_per_s": 1.0, "n_count": 3}),
            Result(kind="k", metrics={"a_bytes_per_s": 2.0, "n_count": 3}),
        ]
    ).groups[0]
    assert chart_metrics(plain) == ["a_bytes_per_s"]  # no direction for a count: table only


def test_tables_keep_key_percentiles_and_settings_have_no_direction():
    from nbbench.compare.model import _name, table_metrics

    keys = ["iops", "lat_p1_ns", "lat_p50_ns", "lat_p95_ns", "lat_p99_ns", "lat_p99_9_ns", "lat_p99_99_ns"]
    assert table_metrics(keys) == ["iops", "lat_p50_ns", "lat_p99_ns", "lat_p99_9_ns"]
    assert _name("lat_p99_9_ns") == "latency p99.9"
    assert better("runtime_s") is None and better("write_elapsed_s") == "lower"
    a = Result(kind="rr", metrics={k: 1.0 for k in keys})
    b = Result(kind="rr", metrics={k: 2.0 for k in keys})
    text = compare([a, b]).groups[0].text_table()
    assert "latency p99.9" in text and "latency p95" not in text and "3 more latency percentiles" in text
