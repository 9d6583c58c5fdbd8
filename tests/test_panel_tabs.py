"""Each tab turns its widgets into the subcommand line the magic and CLI would run."""

from __future__ import annotations

import time

import pytest

from nbbench.panel.runner import parse_command
from nbbench.results import ProbeError
from nbbench.store import Store

pytest.importorskip("ipywidgets")


@pytest.fixture
def store(tmp_path_factory):
    from nbbench.env import fingerprint

    fingerprint()  # computed once per process (seconds): the first save must not count as Stop latency
    return Store(tmp_path_factory.mktemp("store") / "results.sqlite")


@pytest.fixture
def panel(tmp_path, store):
    from nbbench.panel import panel as make

    return make(str(tmp_path), store=store)


def test_gpu_tab_options(panel):
    g = panel.tab("GPU")
    g.bench.value = False
    g.size.value = 1024
    job = g.job(panel.path_field.current(), "lbl")
    assert job.argv == ["gpu", "--no-bench", "--size", "1024", "--iters", "10", "--label", "lbl"]
    args = parse_command(job.argv).args
    assert args.bench is False and args.size == 1024 and args.label == "lbl"


def test_loader_tab_feed_and_sweep_lines_parse(panel, tmp_path):
    panel.select("DataLoader")
    L = panel.tab("DataLoader")
    assert panel.run_button.description == "Run feed"
    info = panel.path_field.current()
    job = L.job(info, None)
    assert job.argv[:2] == ["feed", str(tmp_path)]
    args = parse_command(job.argv).args
    assert args.accelerator == "h100-resnet50" and args.workers is None
    L.action.value = "sweep"
    assert panel.run_button.description == "Run sweep"
    L.sw_workers.value = "0,2"
    L.sw_batch.value = "16,64"
    L.sw_emulate.value = "a100-resnet50"
    args = parse_command(L.job(info, None).argv).args
    assert args.workers == [0, 2] and args.batch_size == [16, 64] and args.emulate == "a100-resnet50"
    L.sw_workers.value = "two"
    with pytest.raises(ProbeError, match="comma-separated"):
        parse_command(L.job(info, None).argv)


def test_loader_tab_refuses_a_file(panel, tmp_path):
    f = tmp_path / "x.bin"
    f.write_bytes(b"1" * 4096)
    panel.path = str(f)
    panel.path_field.wait(5)
    panel.select("DataLoader")
    panel.run()
    assert "is not a directory" in panel.error.value and not panel.runner.running


def test_bad_option_value_is_shown_red_and_nothing_runs(panel, store):
    panel.select("DataLoader")
    L = panel.tab("DataLoader")
    L.action.value = "sweep"
    L.sw_batch.value = "lots"
    assert panel.run() is None
    assert "nbbench-error" in panel.error.value and "lots" in panel.error.value
    assert store.count() == 0


def test_monitor_tab_samples_plots_and_saves(panel, store):
    panel.select("Monitor")
    m = panel.tab("Monitor")
    m.duration.value = "0.6"
    m.interval.value = "0.1"
    m.gpus.value = "none"
    panel.label.value = "mon"
    panel.run()
    rec = panel.wait(30)
    assert rec.status == "ok", rec.error
    (img,) = panel.plot.children
    assert img.value[:4] == b"\x89PNG"
    (row,) = store.history(kind="monitor").to_dict("records")
    assert row["label"] == "mon" and row["status"] == "ok"
    assert "CPU" in panel.progress.label.value


def test_monitor_until_stop_ends_ok_on_stop(panel, store):
    panel.select("Monitor")
    m = panel.tab("Monitor")
    m.until_stop.value = True
    assert m.duration.disabled
    m.gpus.value = "none"
    panel.run()
    time.sleep(0.5)
    panel.stop()
    rec = panel.wait(10)
    assert rec.status == "ok" and rec.stop_latency_s < 2.0  # 0.5 s target; generous on a shared machine
    assert store.history(kind="monitor")["status"].tolist() == ["ok"]


def test_storage_tab_lines_parse_with_the_storage_parsers(panel):
    panel.select("Storage")
    S = panel.tab("Storage")
    info = panel.path_field.current()
    S.probe.value = "randread"
    S.rr_engine.value = "fio"
    S.rr_cache.value = "buffered"
    S.rr_warm.value = True
    args = parse_command(S.job(info, None).argv).args
    assert (args.engine, args.direct, args.warm, args.qd, args.runtime) == ("fio", False, True, 1, 10.0)
    S.probe.value = "disk"
    S.dk_preset.value = "mlperf-resnet50"
    S.dk_nowrite.value = True
    args = parse_command(S.job(info, None).argv).args
    assert args.preset == "mlperf-resnet50" and args.write is False
    S.probe.value = "files"
    S.fl_cold.value = True
    args = parse_command(S.job(info, None).argv).args
    assert args.cold is True and args.sample == 1000
    S.probe.value = "dd"
    S.dd_size.value = "16Q"
    assert panel.run() is None
    assert "unknown size unit" in panel.error.value  # the dd parser's own message, in red


def test_storage_dd_then_randread_stopped(panel, store, tmp_path):
    """A real dd and a real randread through the panel, as the buttons run them."""
    panel.select("Storage")
    S = panel.tab("Storage")
    S.dd_size.value = "4M"
    assert panel.run_button.description == "Run dd"
    panel.run_button.click()
    rec = panel.wait(60)
    assert rec.status == "ok", rec.error
    assert rec.value.metrics["write_bytes_per_s"] > 0 and rec.value.metrics["read_bytes_per_s"] > 0
    assert "B/s" in panel.results.value and "nbbench-metrics" in panel.results.value
    S.probe.value = "randread"
    S.rr_runtime.value = "60s"
    S.rr_size.value = "4M"
    panel.run_button.click()
    deadline = time.monotonic() + 30
    while panel.progress is None or "IOPS" not in panel.progress.label.value:
        assert time.monotonic() < deadline and panel.runner.running, panel.error.value
        time.sleep(0.05)
    panel.stop_button.click()
    rec = panel.wait(10)
    assert rec.status == "interrupted" and rec.stop_latency_s < 2.0  # target 0.5 s; generous on a shared machine
    statuses = dict(zip(store.history()["kind"], store.history()["status"]))
    assert statuses == {"dd": "ok", "randread": "interrupted"}
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".nbbench")] == []


def test_measuring_tabs_have_a_runs_field_that_becomes_repeat(panel):
    """The runs field of the measuring tabs is --repeat N (1: left out); sweep has none."""
    info = panel.path_field.current()
    S = panel.tab("Storage")
    for probe in ("dd", "randread", "files", "disk"):
        S.probe.value = probe
        S.repeat.value = 1
        assert "--repeat" not in S.job(info, None).argv
        S.repeat.value = 3
        assert parse_command(S.job(info, None).argv).args.repeat == 3
    L = panel.tab("DataLoader")
    L.action.value = "feed"
    L.repeat.value = 4
    assert parse_command(L.job(info, None).argv).args.repeat == 4
    L.action.value = "sweep"
    assert L.repeat.layout.display == "none" and "--repeat" not in L.job(info, None).argv
    G = panel.tab("GPU")
    G.repeat.value = 2
    assert parse_command(G.job(info, None).argv).args.repeat == 2
