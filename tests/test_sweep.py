"""sweep: more workers recommended for a dataset whose items take a known time (up to the
usable CPUs), a worker killed mid-sweep is that configuration's failure and the sweep goes
on, the preflight skips what would crash, the table / plot / recommendation."""

import os
import signal
import time

import pytest

from nbbench.probes.pipeline.sweep import SweepResult, preflight, sweep
from nbbench.probes.pipeline.sweepconfigs import default_workers
from nbbench.results import Result, result_class


class SleepyItems:
    """Items that take ``item_s`` each (a sleep: no CPU burnt on the shared machine)."""

    def __init__(self, n=2000, item_s=0.008, kill_when_workers=None):
        self.n, self.item_s, self.kill_when_workers = n, item_s, kill_when_workers

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        import torch
        from torch.utils.data import get_worker_info

        info = get_worker_info()
        if info is not None and info.num_workers == self.kill_when_workers and i % 7 == 3:
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(self.item_s)
        return torch.zeros(8), i


@pytest.fixture
def two_cpus(monkeypatch):
    import nbbench.env

    monkeypatch.setattr(
        nbbench.env,
        "usable_cpus",
        lambda root="/": {"logical": 2, "affinity": 2, "cgroup_quota": None, "usable": 2.0, "usable_int": 2},
    )


def test_known_item_cost_makes_it_recommend_more_workers_up_to_the_usable_cpus(two_cpus):
    res = sweep(SleepyItems(), batch_size=[4], duration=0.6, warmup=1)
    assert res.params["num_workers"] == [0, 1, 2]  # the default list stops at the usable CPUs
    assert res.ok, res.reason
    rows = {r["num_workers"]: r for r in res.configs}
    assert all(r["status"] == "ok" for r in rows.values())
    assert rows[2]["samples_per_s"] > 1.5 * rows[0]["samples_per_s"]
    assert res.recommended["num_workers"] == 2
    assert res.metrics["recommended_num_workers"] == 2
    assert "num_workers=2" in res.recommendation
    table = res.table
    assert list(table["num_workers"]) == [0, 1, 2]
    fig = res.plot()
    ax = fig.axes[0]
    assert ax.get_xlabel() == "num_workers"
    assert any(line.get_label() == "batch 4" for line in ax.get_lines())
    assert res.plot_png().startswith(b"\x89PNG")
    assert "<img" in res._repr_html_()
    back = Result.from_dict(res.to_dict())
    assert isinstance(back, SweepResult) and back.recommendation == res.recommendation


def test_a_worker_killed_mid_sweep_is_reported_and_the_sweep_completes(two_cpus):
    res = sweep(
        SleepyItems(item_s=0.002, kill_when_workers=1), num_workers=[0, 1, 2], batch_size=[4], duration=0.4, warmup=1
    )
    rows = {r["num_workers"]: r for r in res.configs}
    assert rows[1]["status"] == "failed"
    assert "worker" in rows[1]["reason"] and "died" in rows[1]["reason"]
    assert rows[0]["status"] == "ok" and rows[2]["status"] == "ok"  # measured after the crash
    assert res.metrics["failed_count"] == 1
    assert any("num_workers=1" in w for w in res.warnings)
    assert res.recommended["num_workers"] != 1
    text = res.text_table()
    assert "failed" in text and "died" in text
    assert "died" in res._repr_html_()


def test_emulated_accelerator_recommends_the_first_config_reaching_au_90():
    res = sweep(
        SleepyItems(item_s=0.001),
        num_workers=[0, 1],
        batch_size=[16],
        duration=0.6,
        warmup=1,
        step="emulate:h100-cosmoflow",
    )  # 56 ms per batch of 16 against 16 ms of loading
    rows = {r["num_workers"]: r for r in res.configs}
    assert rows[1]["au_pct"] >= 90 > rows[0]["au_pct"]
    assert res.recommended["num_workers"] == 1
    assert "AU >= 90" in res.recommendation
    assert res.labels["accelerator"] == "h100-cosmoflow"


def test_preflight_skips_what_would_crash():
    cfgs = [
        {"num_workers": 8, "batch_size": 256, "pin_memory": False, "prefetch_factor": 4},
        {"num_workers": 2, "batch_size": 8, "pin_memory": False, "prefetch_factor": 2},
        {"num_workers": 0, "batch_size": 256, "pin_memory": False, "prefetch_factor": None},
    ]
    preflight(
        cfgs,
        sample_bytes=600_000,
        tensors_per_batch=lambda c: 2,
        shm_free=64 * 2**20,
        nofile=1024,
        usable=2.0,
        sharing="file_descriptor",
    )
    assert cfgs[0]["skip"] and "/dev/shm" in cfgs[0]["reason"] and "--shm-size" in cfgs[0]["reason"]
    assert not cfgs[1].get("skip") and not cfgs[2].get("skip")
    fd = [{"num_workers": 4, "batch_size": 2, "pin_memory": False, "prefetch_factor": 2}]
    preflight(
        fd,
        sample_bytes=10,
        tensors_per_batch=lambda c: 200,
        shm_free=2**30,
        nofile=1024,
        usable=8.0,
        sharing="file_descriptor",
    )
    assert fd[0]["skip"] and "open-file limit" in fd[0]["reason"]
    over = [{"num_workers": 4, "batch_size": 2, "pin_memory": False, "prefetch_factor": 2}]
    preflight(
        over,
        sample_bytes=10,
        tensors_per_batch=lambda c: 2,
        shm_free=2**30,
        nofile=65536,
        usable=2.0,
        sharing="file_descriptor",
    )
    assert not over[0].get("skip") and any("usable CPUs" in w for w in over[0]["warnings"])


def test_skipped_config_is_in_the_table(monkeypatch, two_cpus):
    import nbbench.probes.pipeline.preflight as pf

    monkeypatch.setattr(pf, "shm_free_bytes", lambda path="/dev/shm": 100)  # a tiny /dev/shm
    res = sweep(SleepyItems(item_s=0.0005), num_workers=[0, 2], batch_size=[4], duration=0.3, warmup=1)
    rows = {r["num_workers"]: r for r in res.configs}
    assert rows[2]["status"] == "skipped" and "/dev/shm" in rows[2]["reason"]
    assert rows[0]["status"] == "ok"
    assert res.metrics["skipped_count"] == 1


def test_default_workers_and_bad_values():
    assert default_workers(2) == [0, 1, 2]
    assert default_workers(6) == [0, 1, 2, 4, 6]
    from nbbench.results import ProbeError

    with pytest.raises(ProbeError):
        sweep(SleepyItems(), num_workers=[-1])
    assert result_class("sweep") is SweepResult


def test_cancel_stops_the_sweep_after_the_running_config(two_cpus):
    import threading

    cancel = threading.Event()
    res = sweep(
        SleepyItems(item_s=0.0005),
        num_workers=[0, 1, 2],
        batch_size=[4],
        duration=0.2,
        warmup=1,
        cancel=cancel,
        on_config=lambda row: cancel.set(),
    )
    assert res.status == "interrupted"
    assert [r["num_workers"] for r in res.configs] == [0]
    assert res.recommended["num_workers"] == 0  # what was measured is still summarised
