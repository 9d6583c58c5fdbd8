"""The panel's History tab: filters, selection, comparison against the first run."""

from __future__ import annotations

import pytest

from nbbench.results import Result
from nbbench.store import Store

pytest.importorskip("ipywidgets")


@pytest.fixture
def store(tmp_path):
    st = Store(tmp_path / "results.sqlite")
    env = {"id": "env-test"}
    a = Result(
        kind="ddtest",
        params={"bs": 1048576, "size": 2**24, "path": "/a"},
        metrics={"read_bytes_per_s": 800e6, "write_bytes_per_s": 500e6},
        labels={"cache": "direct"},
    )
    b = Result(
        kind="ddtest",
        params={"bs": 1048576, "size": 2**24, "path": "/b"},
        metrics={"read_bytes_per_s": 943e6, "write_bytes_per_s": 450e6},
        labels={"cache": "direct"},
    )
    c = Result(kind="othertest", metrics={"iops": 1000.0})
    st.save(a.finish(), label="baseline", environment=env)
    st.save(b.finish(), label="new-disk", environment=env)
    st.save(c.finish("interrupted", "stopped"), environment=env)
    return st


@pytest.fixture
def panel(store):
    from nbbench.panel import panel as make

    return make(None, store=store, tab="History")


def test_history_lists_runs_newest_first_and_filters(panel):
    h = panel.tab("History")
    assert panel.current_tab is h and panel.run_button.disabled  # nothing to Run on this tab
    assert [v for _, v in h.runs.options] == [3, 2, 1]
    rows = [text for text, _ in h.runs.options]
    assert "INTERRUPTED" in rows[0] and "  ddtest     baseline  ok           800 MB/s read" in rows[2]
    # a header names the columns, aligned over them (a monospace list); the answer leads each summary
    import html
    import re

    head = html.unescape(re.sub(r"<[^>]+>", "", h.header.value))
    assert head.split() == ["run", "started", "kind", "label", "outcome", "summary"]
    col = head.index("summary")
    assert [r[col:].split(" — ")[0] for r in rows] == [
        "1.00 kIOPS (INTERRUPTED)",
        "943 MB/s read · 450 MB/s write",
        "800 MB/s read · 500 MB/s write",
    ]
    assert rows[2][col:].endswith("— /a [direct]") and rows[0][col:] == "1.00 kIOPS (INTERRUPTED)"
    assert set(h.kind.options) == {"all kinds", "ddtest", "othertest"}
    h.kind.value = "ddtest"
    assert [v for _, v in h.runs.options] == [2, 1]
    h.label_filter.value = "baseline"
    assert [v for _, v in h.runs.options] == [1]
    assert "baseline" in h.label_filter.options and "new-disk" in h.label_filter.options


def test_compare_needs_two_and_shows_deltas_against_the_first(panel):
    h = panel.tab("History")
    h.runs.value = (1,)
    assert h.compare_button.disabled and not h.show_button.disabled
    h.show_button.click()
    assert "nbbench-result" in h.out.value and "800 MB/s" in h.out.value
    h.runs.value = (2, 1)  # selection order does not matter: the older run is the baseline
    assert not h.compare_button.disabled
    h.compare_button.click()
    out = h.out.value
    assert "<b>new-disk</b>: read 943 MB/s, <span" in out and "+17.9 %" in out
    assert "against the baseline (baseline: 800 MB/s)" in out
    assert "-10.0 %" in out  # write got slower
    (img,) = h.charts.children
    assert img.value[:8] == b"\x89PNG\r\n\x1a\n"


def test_compare_of_unlike_runs_says_why_in_red(panel):
    h = panel.tab("History")
    h.runs.value = (1, 3)
    h.compare_button.click()
    assert "nbbench-error" in h.out.value and "different kinds" in h.out.value
    assert h.charts.children == ()


def test_history_refreshes_after_a_run(panel, store):
    h = panel.tab("History")
    store.save(Result(kind="ddtest", metrics={"read_bytes_per_s": 1e9}).finish(), environment={"id": "e"})
    from nbbench.panel.runner import RunRecord

    panel.run_finished(RunRecord(title="x", status="ok"))
    assert [v for _, v in h.runs.options][0] == 4


def test_headline_skips_a_metric_the_baseline_lacks(store):
    from nbbench.compare import compare
    from nbbench.panel.tabs.history import headline_html

    a = Result(kind="k", metrics={"iops": 100.0}, run_id=None).finish()
    b = Result(kind="k", metrics={"iops": 150.0, "read_bytes_per_s": 5e8}).finish()
    out = headline_html(compare([a, b]))
    assert "iops" in out.lower() and "+50.0 %" in out and "500 MB/s" not in out
