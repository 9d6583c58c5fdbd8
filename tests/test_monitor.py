"""The sampler core: ring buffer, subscribers, windows, broken sources, results."""

import sys
import time

import pytest

import nbbench
from nbbench.monitor import Monitor, MonitorResult
from nbbench.results import Result


class Counter:
    """A source whose value is the sample number; optional failure after n samples."""

    name = "fake"

    def __init__(self, fail_after=None):
        self.n = 0
        self.fail_after = fail_after
        self.closed = False
        self.opened = False
        self.notes = ["fake note"]
        self.na = {"fake.missing_pct": "not here"}
        self.labels = {"fake_label": "x"}

    def open(self):
        self.opened = True

    def sample(self, now):
        self.n += 1
        if self.fail_after is not None and self.n > self.fail_after:
            raise RuntimeError("sensor fell off")
        return {"fake.value_pct": float(self.n), "fake.none_pct": None}

    def summary(self):
        return {"fake_total_count": self.n}

    def close(self):
        self.closed = True


def test_module_is_callable_and_returns_a_monitor():
    m = nbbench.monitor(interval=0.5, gpus="none", sources=[Counter()])
    assert isinstance(m, Monitor)
    assert m.interval == 0.5
    assert nbbench.monitor.Monitor is Monitor
    assert not m.running


def test_bad_intervals_are_refused():
    for bad in (0, -1, float("nan"), 0.001):
        with pytest.raises(ValueError):
            Monitor(interval=bad, sources=[])


def test_gpus_spec_parsing():
    assert Monitor(sources=[], gpus="0,2").gpus == [0, 2]
    assert Monitor(sources=[], gpus="none").gpus == []
    assert Monitor(sources=[], gpus=1).gpus == [1]
    assert Monitor(sources=[], gpus="all").gpus == "all"
    with pytest.raises(ValueError):
        Monitor(sources=[], gpus="zero")


def test_samples_in_background_with_monotonic_times_and_subscribers():
    src = Counter()
    got = []
    m = Monitor(interval=0.02, sources=[src])
    unsub = m.subscribe(got.append)
    with m:
        assert src.opened
        deadline = time.monotonic() + 5
        while len(got) < 5 and time.monotonic() < deadline:
            time.sleep(0.01)
    assert src.closed
    recs = m.records()
    ts = [r["t"] for r in recs]
    assert ts == sorted(ts) and len(set(ts)) == len(ts)
    assert len(recs) >= 6  # baseline + >= 5 in the thread + the final one
    assert [r["fake.value_pct"] for r in recs] == [float(i) for i in range(1, len(recs) + 1)]
    assert len(got) == len(recs) and all(g is r for g, r in zip(got, recs))
    unsub()
    assert m._subs == []


def test_ring_buffer_is_bounded_but_stats_cover_the_whole_run():
    src = Counter()
    m = Monitor(interval=0.01, sources=[src], capacity=5)
    m.start()
    while m.n_samples < 20:
        time.sleep(0.01)
    m.stop()
    assert len(m.records()) == 5
    n = m.n_samples
    st = m.stats("fake.value_pct")
    assert st["n"] == n
    assert st["min"] == 1.0 and st["max"] == float(n)
    assert st["mean"] == pytest.approx((n + 1) / 2)
    res = m.result()
    assert any("ring buffer" in w for w in res.warnings)
    assert res.metrics["samples_count"] == n
    assert len(res.samples["timeline"]["t_s"]) == 5


def test_windowed_mean_takes_records_closing_the_window():
    src = Counter()
    m = Monitor(interval=0.05, sources=[src])
    m.start()
    time.sleep(0.3)
    m.stop()
    recs = m.records()
    t0, t1 = recs[1]["t"], recs[3]["t"]
    # (t0, t1] plus the record that closes the window (up to one interval after t1)
    vals = [r["fake.value_pct"] for r in recs if t0 < r["t"] <= t1 + 0.05 * 0.999]
    assert m.mean("fake.value_pct", t0, t1) == pytest.approx(sum(vals) / len(vals))
    assert m.stats("fake.value_pct", t0, t1)["n"] == len(vals)
    assert m.mean("fake.nothing_pct", t0, t1) is None
    assert m.mean("fake.value_pct", recs[-1]["t"] + 10, recs[-1]["t"] + 20) is None


def test_wait_for_blocks_until_a_covering_sample():
    m = Monitor(interval=0.05, sources=[Counter()])
    with m:
        target = time.monotonic() + 0.1
        assert m.wait_for(target, timeout=2.0)
        assert m.latest()["t"] >= target
        assert m.mean("fake.value_pct", target - 0.1, target, wait=True) is not None


def test_broken_source_is_dropped_with_a_note_and_others_keep_going():
    bad, good = Counter(fail_after=2), Counter()
    good.name = "good"
    m = Monitor(interval=0.01, sources=[bad, good])
    with m:
        while m.n_samples < 8:
            time.sleep(0.01)
    assert any("failed and was stopped" in n and "sensor fell off" in n for n in m.all_notes())
    assert m.records()[-1]["fake.value_pct"] is not None  # the good one (same field name) still sampled
    assert good.n >= 8


def test_broken_subscriber_is_removed():
    calls = []

    def bad(rec):
        calls.append(rec)
        raise ValueError("nope")

    m = Monitor(interval=0.01, sources=[Counter()])
    m.subscribe(bad)
    with m:
        while m.n_samples < 5:
            time.sleep(0.01)
    assert len(calls) == 1
    assert any("raised ValueError" in n for n in m.notes)


def test_frame_has_time_columns_and_fields():
    m = Monitor(interval=0.02, sources=[Counter()])
    with m:
        time.sleep(0.1)
    df = m.frame()
    assert list(df.columns[:2]) == ["t", "t_s"]
    assert "fake.value_pct" in df.columns
    assert df["t_s"].iloc[0] == pytest.approx(0.0)
    assert df["t_s"].is_monotonic_increasing


def test_result_metrics_labels_and_store_round_trip(tmp_path):
    m = Monitor(interval=0.02, sources=[Counter()])
    with m:
        time.sleep(0.1)
    res = m.result(params={"what": "test"})
    assert isinstance(res, MonitorResult) and res.kind == "monitor"
    assert res.metrics["wall_s"] > 0.09
    assert res.metrics["fake_total_count"] == m.n_samples
    assert res.labels["sources"] == "fake" and res.labels["fake_label"] == "x"
    assert "fake note" in res.notes and res.na == {"fake.missing_pct": "not here"}
    assert res.metrics["gpu_util_mean_pct"] is None  # no GPU source: N/A, not 0
    assert res.status == "ok" and res.ended_at >= res.started_at
    assert "note: fake note" in res.text_table()
    assert "fake note" in res._repr_html_()
    # stored and loaded back as a MonitorResult
    from nbbench.store import Store

    st = Store(tmp_path / "r.sqlite")
    rid = st.save(res, environment={"id": "e1"})
    back = st.get(rid)
    assert type(back) is MonitorResult
    assert back.frame.shape[0] == len(m.records())
    assert back.mean("fake.value_pct") == pytest.approx(m.stats("fake.value_pct")["mean"])
    assert Result.from_json(res.to_json()) == res


def test_sampler_thread_cpu_time_is_measured():
    m = Monitor(interval=0.02, sources=[Counter()])
    with m:
        time.sleep(0.2)
    assert m.sampler_cpu_s > 0
    assert 0 < m.sampler_cpu_pct < 100


def test_default_sources_are_cpu_disk_procs_net_and_gpu_and_import_is_light():
    m = Monitor(interval=0.05, path=".")
    with m:
        time.sleep(0.15)
    names = [s.name for s in m.sources]
    assert names == ["cpu", "disk", "proc", "stall", "net", "gpu"]
    assert [s.name for s in Monitor(net="none").open().sources] == ["cpu", "disk", "proc", "stall", "gpu"]
    res = m.result()
    assert res.metrics["cpu_mean_pct"] is not None
    # no GPU on this machine (or a fake-free CI): N/A with a reason, never an exception
    import subprocess

    code = (
        "import sys, nbbench.monitor; "
        "print(sorted(m for m in ('psutil','pynvml','pandas','matplotlib','torch','ipywidgets') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_stopped_monitor_does_not_restart():
    m = Monitor(interval=0.05, sources=[Counter()])
    with m:
        pass
    with pytest.raises(RuntimeError, match="make a new one"):
        m.start()
    m.stop()  # stopping twice is harmless


def test_pause_stops_recording_and_resume_continues():
    src = Counter()
    m = Monitor(interval=0.02, sources=[src])
    with m:
        time.sleep(0.1)
        m.pause()
        time.sleep(0.02)
        n = m.n_samples
        time.sleep(0.15)
        assert m.n_samples == n and m.paused
        cpu = m.sampler_cpu_s
        assert cpu > 0  # readable while running
        m.resume()
        time.sleep(0.1)
        assert m.n_samples > n


def test_window_is_open_at_t0_closed_at_t1_and_skips_gaps():
    from nbbench.results.series import FieldStats, window

    pts = [(0.0, 1.0), (1.0, 2.0), (2.0, None), (3.0, 4.0), (4.0, 8.0)]
    assert window(pts, 1.0, 3.0) == ([3.0], [4.0])  # (1, 3]: t=1 out, t=2 a gap, t=3 in
    assert window(pts) == ([0.0, 1.0, 3.0, 4.0], [1.0, 2.0, 4.0, 8.0])
    assert window(pts, t1=1.0) == ([0.0, 1.0], [1.0, 2.0])
    st = FieldStats.of(*window(pts, 0.0))
    assert st.describe() == {"n": 3, "mean": pytest.approx(14 / 3), "min": 2.0, "max": 8.0}
    assert FieldStats.of([], []).describe() == {"n": 0, "mean": None, "min": None, "max": None}
    assert st.to_dict()["below_idle_share"] == pytest.approx(2 / 3)  # 2.0 and 4.0 are below 5 %


def test_live_and_stored_windows_agree():
    # the same window, once over the live records (monotonic s), once over the stored timeline (s since start)
    m = Monitor(interval=0.02, sources=[Counter()])
    with m:
        time.sleep(0.25)
    res = m.result()
    recs = m.records()
    t0, t1 = recs[2]["t"], recs[6]["t"]
    ts, vs = m.values("fake.value_pct", t0, t1)
    assert vs == [r["fake.value_pct"] for r in recs[3:7]]
    s0, s1 = res.samples["timeline"]["t_s"][2], res.samples["timeline"]["t_s"][6]
    assert res.mean("fake.value_pct", s0, s1) == pytest.approx(sum(vs) / len(vs))


def test_the_monitor_result_and_the_sampler_do_not_import_each_other():
    import ast
    import pathlib

    import nbbench.monitor.result as result_mod

    tree = ast.parse(pathlib.Path(result_mod.__file__).read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "sampler" not in imported and "nbbench.monitor.sampler" not in imported


def test_the_monitor_answers_about_the_tree_with_one_verdict_from_its_figures():
    """The headline is the monitored tree's (cores, read(), from storage) with one verdict
    drawn from those same figures; the machine's figures follow, labelled as the machine's."""
    from nbbench.results.system.monitor import MonitorResult, monitor_verdict

    base = {"wall_s": 10.0, "gpu_count": 0, "net_rx_bytes": 0, "net_tx_bytes": 0}
    assert monitor_verdict({**base, "proc_cpu_s": 9.8, "proc_read_bytes": 0}) == "CPU-bound (1 core)"
    assert monitor_verdict({**base, "proc_cpu_s": 31.0, "proc_read_bytes": 0}) == "CPU-bound (3 cores)"
    assert monitor_verdict({**base, "proc_cpu_s": 2.0, "proc_read_bytes": 900e6}) == "waiting on storage"
    assert (
        monitor_verdict({**base, "proc_cpu_s": 1.0, "proc_read_bytes": 0, "net_rx_bytes": 500e6})
        == "waiting on the network"
    )
    assert monitor_verdict({**base, "proc_cpu_s": 0.1, "proc_read_bytes": 0}) == "idle"
    assert monitor_verdict({**base, "proc_cpu_s": 9.0, "gpu_count": 1, "gpu_util_mean_pct": 90.0}) == "GPU busy"
    assert (
        monitor_verdict({**base, "proc_cpu_s": 9.0, "gpu_count": 1, "gpu_util_mean_pct": 1.0})
        == "CPU-bound (1 core), GPU idle"
    )
    r = MonitorResult(
        params={"what": "cell"},
        labels={"cpus_logical": 2, "disk_device": "vda"},
        metrics={
            **base,
            "proc_cpu_s": 9.8,
            "proc_read_bytes": 0,
            "proc_read_syscall_bytes": 2.0e6,
            "cpu_mean_pct": 71.1,
            "disk_read_bytes": 297e6,
            "disk_write_bytes": 1.5e6,
        },
    ).finish()
    first, rest = r.text_table(width=120).split("\n", 1)
    assert first == "0.98 cores CPU · 2.00 MB read() (0 B from storage) · 10.0 s · CPU-bound (1 core)"
    assert "the machine: 71.1 % of its 2 CPUs · device vda 297 MB read, 1.50 MB written (every process)" in rest
    assert "idle: no network traffic · no GPU" in rest  # a line, not an empty plot


def test_a_tree_short_of_cpu_on_a_full_machine_is_waiting_for_cpu():
    from nbbench.results.system.monitor import monitor_verdict

    m = {"wall_s": 10.0, "proc_cpu_s": 2.0, "cpu_mean_pct": 100.0, "gpu_count": 0}
    assert monitor_verdict(m, {"cpus_logical": 2}) == "waiting for CPU (the machine's CPUs are full)"
    assert monitor_verdict({**m, "cpu_mean_pct": 40.0}, {"cpus_logical": 2}) == "partly busy"


def test_the_status_line_names_the_tree_first_in_cores_then_the_machine():
    from nbbench.monitor.text import format_status

    line = format_status({"t": 12.3, "cpu.util_pct": 45.0, "proc.cpu_pct": 98.0}, t0=0.0)
    assert "tree 0.98 cores" in line and "machine CPU  45%" in line
    assert line.index("tree") < line.index("machine")
