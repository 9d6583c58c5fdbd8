"""Many ranks without processes: rank detection, Slurm host lists, the aggregate arithmetic
(first done / last done / spread / buckets / hosts) on synthetic per-rank series, the
spawner's failure report, the printed command lines, the option plumbing."""

from __future__ import annotations

import math

import pytest

from nbbench.ranks import aggregate as ag
from nbbench.ranks.rankenv import detect, expand_nodelist, hostname


# ------------------------------------------------------------------ detection
def test_torchrun_environment_is_a_rank():
    env = detect(
        {
            "WORLD_SIZE": "4",
            "RANK": "3",
            "LOCAL_RANK": "1",
            "LOCAL_WORLD_SIZE": "2",
            "MASTER_ADDR": "10.0.0.1",
            "MASTER_PORT": "29400",
            "TORCHELASTIC_RUN_ID": "x",
        },
        modules={},
    )
    assert (env.rank, env.world_size, env.local_rank, env.local_world_size) == (3, 4, 1, 2)
    assert (env.master_addr, env.master_port, env.source, env.init_method) == ("10.0.0.1", 29400, "torchrun", "env://")


def test_not_a_rank_alone_in_a_kernel_or_with_no_dist():
    ranked = {"WORLD_SIZE": "2", "RANK": "0", "MASTER_ADDR": "h"}
    assert detect({"WORLD_SIZE": "1", "RANK": "0", "MASTER_ADDR": "h"}, modules={}) is None
    assert detect({"WORLD_SIZE": "2", "RANK": "0"}, modules={}) is None  # no MASTER_ADDR
    assert detect(ranked, modules={"ipykernel": object()}) is None  # a notebook kernel never is
    assert detect(ranked, modules={}, no_dist=True) is None
    assert detect(ranked, modules={}).source == "env"  # a PyTorchJob: no torchelastic


def test_srun_step_is_a_rank_with_the_first_host_as_master():
    env = detect(
        {
            "SLURM_STEP_ID": "0",
            "SLURM_NTASKS": "8",
            "SLURM_PROCID": "5",
            "SLURM_LOCALID": "1",
            "SLURM_STEP_TASKS_PER_NODE": "4(x2)",
            "SLURM_JOB_NODELIST": "gpu[07-08]",
        },
        modules={},
    )
    assert (env.rank, env.world_size, env.local_rank, env.local_world_size) == (5, 8, 1, 4)
    assert (env.master_addr, env.master_port, env.init_method) == ("gpu07", 29500, "tcp://gpu07:29500")
    # a batch script (no step) and a one-task step are not ranks
    assert detect({"SLURM_NTASKS": "8", "SLURM_PROCID": "0"}, modules={}) is None
    assert detect({"SLURM_STEP_ID": "0", "SLURM_NTASKS": "1"}, modules={}) is None


def test_nodelist_forms():
    assert expand_nodelist("node[01-04],other", scontrol=False) == ["node01", "node02", "node03", "node04", "other"]
    assert expand_nodelist("gpu[1,3-4]-ib,login", scontrol=False) == ["gpu1-ib", "gpu3-ib", "gpu4-ib", "login"]
    assert expand_nodelist("a[9-11]", scontrol=False) == ["a9", "a10", "a11"]
    assert expand_nodelist("", scontrol=False) == []


def test_hostname_override(monkeypatch):
    monkeypatch.setenv("NBBENCH_HOSTNAME", "fake-host-b")
    assert hostname() == "fake-host-b"


# ------------------------------------------------------------------ arithmetic
def _steady(start, rate, dur, key="read_bytes_per_s", win=0.5):
    """A rank's 500 ms series at a constant rate, the last window partial."""
    t, v, x = [], [], 0.0
    while x + win < dur - 1e-9:
        x += win
        t.append(round(x, 6))
        v.append(rate)
    t.append(dur)
    v.append(rate)
    return ag.track_from_windows(start, t, {key: v}, end=dur, totals={key: rate * dur})


def test_first_done_and_last_done_on_synthetic_ranks():
    # rank 0: 100 B/s for 10 s; rank 1: 50 B/s, finishes at 4 s
    tracks = {0: _steady(0.0, 100.0, 10.0), 1: _steady(0.0, 50.0, 4.0)}
    fig = ag.phase_figures(tracks, "read_bytes_per_s")
    assert fig["window"] == (0.0, 4.0)
    assert fig["first_done"] == pytest.approx((400 + 200) / 4)  # 150 B/s while both ran
    assert fig["last_done"] == pytest.approx((1000 + 200) / 10)  # 120 B/s until the last finished
    assert fig["per_rank"] == {0: pytest.approx(100.0), 1: pytest.approx(50.0)}
    assert ag.spread_pct([100.0, 50.0]) == pytest.approx(50.0)


def test_staggered_starts_use_the_window_where_all_ran():
    tracks = {0: _steady(0.0, 100.0, 10.0), 1: _steady(2.0, 100.0, 4.0)}  # rank 1 runs 2 s .. 6 s
    fig = ag.phase_figures(tracks, "read_bytes_per_s")
    assert fig["window"] == (2.0, 6.0)
    assert fig["first_done"] == pytest.approx(200.0)
    assert fig["last_done"] == pytest.approx(1400 / 10)
    # no overlap at all: no first-done figure, last done still there
    apart = {0: _steady(0.0, 100.0, 1.0), 1: _steady(5.0, 100.0, 1.0)}
    fig = ag.phase_figures(apart, "read_bytes_per_s")
    assert fig["first_done"] is None and fig["last_done"] == pytest.approx(200 / 6)


def test_track_interpolates_inside_windows_and_keeps_the_dropped_tail():
    # windows of 0.5 s at 10, 30 B/s; the probe's elapsed 1.02 s and total 21 bytes (a tail it left out)
    tr = ag.track_from_windows(1.0, [0.5, 1.0], {"k": [10.0, 30.0]}, end=1.02, totals={"k": 21.0})
    assert ag.amount_at(tr, "k", 1.25) == pytest.approx(2.5)
    assert ag.amount_at(tr, "k", 1.75) == pytest.approx(5 + 7.5)
    assert ag.amount_at(tr, "k", 9.0) == pytest.approx(21.0)
    assert ag.amount_at(tr, "k", 0.5) == 0.0


def test_buckets_sum_the_ranks_on_the_common_clock():
    tracks = [_steady(0.0, 100.0, 2.0), _steady(0.5, 100.0, 1.0)]
    b = ag.buckets(tracks, ["read_bytes_per_s"])
    assert b["t_s"] == [0.5, 1.0, 1.5, 2.0]
    assert b["read_bytes_per_s"] == pytest.approx([100.0, 200.0, 200.0, 100.0])


def _rec(rank, host, tracks, status="ok", reason=None, stats=None):
    return {
        "rank": rank,
        "host": host,
        "local_rank": rank % 2,
        "status": status,
        "reason": reason,
        "metrics": {},
        "tracks": tracks,
        "host_stats": stats,
    }


def test_combine_names_slowest_fastest_hosts_and_status():
    ph = [ag.Phase("read", ("read_bytes_per_s",), "bw")]
    recs = [
        _rec(0, "a", {"read": _steady(0, 100.0, 4)}, stats={"cpu_util_pct": 40.0, "disk_busy_pct": 90.0}),
        _rec(1, "a", {"read": _steady(0, 60.0, 4)}),
        _rec(2, "b", {"read": _steady(0, 80.0, 4)}, stats={"cpu_util_pct": 10.0, "disk_busy_pct": 30.0}),
    ]
    c = ag.combine(recs, ph, world_size=3)
    assert c.status == "ok" and c.labels["ranks"] == 3 and c.labels["hosts"] == 2
    assert c.metrics["read_bytes_per_s"] == pytest.approx(240.0)
    assert c.metrics["read_bytes_per_s_last_done"] == pytest.approx(240.0)
    assert c.metrics["slowest_rank_read_bytes_per_s"] == pytest.approx(60.0)
    assert c.labels["slowest_rank"] == "rank 1 (a)" and c.labels["fastest_rank"] == "rank 0 (a)"
    assert c.metrics["rank_spread_pct"] == pytest.approx(40.0)
    hosts = {h["host"]: h for h in c.hosts}
    assert hosts["a"]["ranks"] == 2 and hosts["a"]["read_bytes_per_s"] == pytest.approx(160.0)
    assert hosts["a"]["cpu_util_pct"] == 40.0 and hosts["b"]["disk_busy_pct"] == 30.0
    assert [r["rank"] for r in c.ranks] == [0, 1, 2] and c.ranks[1]["series"]["read"]["t_s"][0] == 0.5
    # a failed rank and a rank that never reported make the run failed, naming them
    recs[1] = _rec(1, "a", {}, status="failed", reason="disk full")
    c = ag.combine(recs[:2], ph, world_size=3)
    assert c.status == "failed"
    assert "rank 1 (a) failed: disk full" in c.reason and "no result from rank 2" in c.reason


def test_two_phases_get_their_own_names():
    ph = [ag.Phase("write", ("write_bytes_per_s",), "write_bw"), ag.Phase("read", ("read_bytes_per_s",), "read_bw")]
    recs = [
        _rec(r, "h", {"write": _steady(0, 10.0 * (r + 1), 2, "write_bytes_per_s"), "read": _steady(3, 20.0, 2)})
        for r in range(2)
    ]
    c = ag.combine(recs, ph)
    assert c.metrics["write_bytes_per_s"] == pytest.approx(30.0)
    assert c.metrics["write_rank_spread_pct"] == pytest.approx(50.0)
    assert c.metrics["read_rank_spread_pct"] == pytest.approx(0.0)
    assert c.metrics["rank_spread_pct"] == pytest.approx(50.0)
    assert set(c.samples) == {"write_bw", "read_bw"}
    assert not math.isnan(c.metrics["read_last_done_span_s"])


# ------------------------------------------------------------------ launcher text
class _Proc:
    def __init__(self, code, pid):
        self.code, self.pid = code, pid

    def poll(self):
        return self.code


def test_spawner_failure_report_names_the_first_rank_to_fail(tmp_path):
    from nbbench.ranks.spawn import Ranks, exit_reason

    assert exit_reason(-9) == "killed by SIGKILL" and exit_reason(-15) == "killed by SIGTERM"
    assert exit_reason(1, "nbbench dd: no room") == "exited with code 1: nbbench dd: no room"
    ranks = Ranks(["dd", "/d"], 3, str(tmp_path), "tok")
    ranks.procs = [_Proc(None, 10), _Proc(None, 11), _Proc(None, 12)]
    (tmp_path / "rank0.log").write_text("starting\nnbbench dd: rank 0 on h: the run failed: x\n\n")
    ranks.procs[0].code = 1
    ranks.procs[2].code = -9  # seen in the same look: the killed one is the cause
    assert ranks.poll() == [0, 2] and ranks.running() == [1]
    f = ranks.failures()
    assert [x["rank"] for x in f] == [2, 0] and f[0]["reason"] == "killed by SIGKILL" and f[0]["pid"] == 12
    assert f[1]["reason"] == "exited with code 1: nbbench dd: rank 0 on h: the run failed: x"
    ranks.signalled[1] = 15  # stopped by the launcher: never a cause
    ranks.procs[1].code = -15
    ranks.poll()
    assert [x["rank"] for x in ranks.failures()] == [2, 0]


def test_progress_of_all_ranks_sums_rates_and_averages_shares():
    from nbbench.ranks.launch import sum_progress

    frac, figs = sum_progress(
        {
            0: {"f": 0.5, "m": {"read_bytes_per_s": 1e8, "au_pct": 80.0}},
            1: {"f": 0.25, "m": {"read_bytes_per_s": 3e8, "au_pct": 60.0}},
        },
        2,
    )
    assert frac == pytest.approx(0.375)
    assert figs == {"read_bytes_per_s": pytest.approx(4e8), "au_pct": pytest.approx(70.0)}


def test_command_lines_for_several_hosts():
    from nbbench.ranks.cmdlines import PLACEHOLDER, command_lines

    text = command_lines(["dd", "/mnt/shared dir", "--size", "1G"], 4, 2, None, run_id="nbbench-x")
    lines = text.splitlines()
    assert (
        "  host 1:  torchrun --nnodes 2 --nproc-per-node 4 --node-rank 1 --rdzv-backend c10d --rdzv-endpoint "
        f"{PLACEHOLDER}:29500 --rdzv-id nbbench-x -m nbbench dd '/mnt/shared dir' --size 1G"
    ) in lines
    assert "  srun --nodes 2 --ntasks-per-node 4 python -m nbbench dd '/mnt/shared dir' --size 1G" in lines
    assert "warning" not in text
    assert "warning: the rendezvous server on 10.1.2.3:29411" in command_lines(["dd", "/d"], 1, 2, "10.1.2.3:29411")
    assert "warning" not in command_lines(["dd", "/d"], 1, 2, "127.0.0.1")


def test_child_argv_keeps_what_was_typed():
    from argparse import Namespace

    from nbbench.commands.ranks import child_argv

    args = Namespace(
        _nbbench_argv=["/d", "--ranks", "2", "-o", "--nnodes=3", "--rdzv-host", "h", "--size", "1G"],
        return_result=True,  # the notebook's -o: return the result (the launcher's business, not the ranks')
    )
    assert child_argv("dd", args) == ["dd", "/d", "--ranks", "2", "--nnodes=3", "--rdzv-host", "h", "--size", "1G"]
    assert child_argv("dd", args, strip_ranks=True) == ["dd", "/d", "--size", "1G"]


def test_a_commands_own_o_with_a_value_reaches_the_ranks():
    """On the CLI collectives takes nccl-tests' -o OP; dropping -o there left its value, and every rank
    failed on 'unrecognized arguments: max'. (Found in review.)"""
    from nbbench import commands
    from nbbench.commands.context import Context
    from nbbench.commands.ranks import child_argv

    inv = commands.parse(["collectives", "--ranks", "2", "-o", "max"], Context(frontend="cli"))
    argv = child_argv("collectives", inv.args)
    assert argv == ["collectives", "--ranks", "2", "-o", "max"]
    assert commands.parse(argv, Context(frontend="cli")).args.redop == "max"


def test_units_of_last_done_figures():
    from nbbench.units import format_metric, metric_label, unit_of

    assert unit_of("read_bytes_per_s_last_done") == "bytes/s"
    assert metric_label("read_bytes_per_s_last_done") == "read (last done)"
    assert format_metric("iops_last_done", 2.5e4) == format_metric("iops", 2.5e4)


def test_nbbench_launcher_marks_a_single_rank():
    single = {"WORLD_SIZE": "1", "RANK": "0", "MASTER_ADDR": "127.0.0.1"}
    assert detect(single, modules={}) is None
    assert detect(dict(single, NBBENCH_LAUNCH_STORE="127.0.0.1:1"), modules={}).world_size == 1


def test_the_ranks_never_get_no_dist_or_they_would_launch_ranks_of_their_own():
    import argparse

    from nbbench.commands.ranks import child_argv

    ns = argparse.Namespace(
        _nbbench_argv=["--ranks", "2", "--no-dist", "/data", "--no-di", "--no-save", "-o"], return_result=True
    )
    assert child_argv("files", ns) == ["files", "--ranks", "2", "/data", "--no-save"]


def test_a_failed_launch_names_the_rank_s_own_reason_over_a_bare_exit_code():
    from nbbench.ranks.launch import _root_cause

    bare = [{"rank": 0, "exitcode": 1, "reason": "exited with code 1"}]
    recs = {0: {"status": "ok"}, 1: {"status": "failed", "reason": "RuntimeError: Timed out waiting 120000ms"}}
    assert _root_cause(bare, recs) == {"rank": 1, "reason": "RuntimeError: Timed out waiting 120000ms"}
    said = [{"rank": 0, "exitcode": 1, "reason": "exited with code 1: no space left"}]
    assert _root_cause(said, recs) is said[0]  # its own last line says why: kept
    killed = [{"rank": 0, "exitcode": -9, "reason": "killed by SIGKILL"}]
    assert _root_cause(killed, recs) is killed[0]  # a killed rank is the cause
    assert _root_cause([], recs)["rank"] == 1 and _root_cause([], {}) is None
