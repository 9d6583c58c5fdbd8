"""Many ranks with real processes on this machine (gloo, CPU): --ranks, a bare torchrun, two
"hosts" through a c10d rendezvous, the DataLoader under DDP, a rank killed mid-write, Ctrl-C,
and the one-line refusals.  Small sizes; every launch imports torch in 2-3 processes."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rankproc import clean_env, run_nbbench

PY = sys.executable
ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 180


def _env(**extra) -> dict:
    return clean_env(**extra)


def _nbbench(*args, **kw):
    return run_nbbench(*args, timeout=TIMEOUT, **kw)


def _torchrun(*args):
    return [PY, "-m", "torch.distributed.run", *map(str, args)]


def _leftovers(d) -> list[str]:
    return [n for n in os.listdir(d) if n.startswith(".nbbench-")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_ranks_2_one_result_saved_no_state_left(tmp_path):
    own_tmp = tmp_path / "tmp"  # the run's TMPDIR: its private directory would be left here
    own_tmp.mkdir()
    data = tmp_path / "data"
    data.mkdir()
    out = subprocess.run(
        [PY, "-m", "nbbench", "dd", data, "--size", "16M", "--ranks", "2", "--json", "--label", "two-ranks"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        stdin=subprocess.DEVNULL,
        env=_env(TMPDIR=str(own_tmp)),
    )
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)  # exactly one JSON document on stdout
    assert res["kind"] == "dd" and res["status"] == "ok"
    assert res["labels"]["ranks"] == 2 and res["labels"]["hosts"] == 1
    ranks = res["extra"]["ranks"]
    assert sorted(r["rank"] for r in ranks) == [0, 1] and all(r["status"] == "ok" for r in ranks)
    assert all(r["metrics"]["write_total_bytes"] == 16 << 20 for r in ranks)
    assert res["metrics"]["write_total_bytes"] == 32 << 20 and res["metrics"]["read_bytes_per_s_last_done"] > 0
    assert res["extra"]["hosts"][0]["ranks"] == 2
    assert _leftovers(data) == []
    assert [n for n in os.listdir(own_tmp) if "nbbench" in n or n.startswith("torchelastic_")] == []
    from nbbench.store import default_store  # the launching process saved it, once

    saved = default_store().find("two-ranks")
    assert len(saved) == 1 and saved[0].labels["ranks"] == 2 and len(saved[0].extra["ranks"]) == 2


@pytest.mark.slow
def test_bare_torchrun_rank0_prints_the_only_result(tmp_path):
    logs = tmp_path / "logs"
    d = tmp_path / "data"
    d.mkdir()
    out = subprocess.run(
        _torchrun(
            "--nproc-per-node", 2, "--log-dir", logs, "-m", "nbbench", "dd", d, "--size", "16M", "--json", "--no-save"
        ),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=_env(),
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    res = json.loads(out.stdout)  # rank 1 printed nothing
    assert res["labels"]["ranks"] == 2 and len(res["extra"]["ranks"]) == 2
    assert res["labels"]["launcher"] == "torchrun"
    assert {r["local_rank"] for r in res["extra"]["ranks"]} == {0, 1}
    assert _leftovers(d) == []


@pytest.mark.slow
def test_two_hosts_through_a_c10d_rendezvous(tmp_path):
    d = tmp_path / "data"
    d.mkdir()
    for i in range(40):
        (d / f"c{i % 4}").mkdir(exist_ok=True)
        (d / f"c{i % 4}" / f"f{i}.bin").write_bytes(os.urandom(8192))
    port = _free_port()
    procs = []
    for node, host in ((0, "host-a"), (1, "host-b")):
        cmd = _torchrun(
            "--nnodes",
            2,
            "--nproc-per-node",
            1,
            "--node-rank",
            node,
            "--rdzv-backend",
            "c10d",
            "--rdzv-endpoint",
            f"127.0.0.1:{port}",
            "--rdzv-id",
            "t2h",
            "--log-dir",
            tmp_path / f"l{node}",
            "-m",
            "nbbench",
            "files",
            d,
            "--sample",
            50,
            "--threads",
            2,
            "--json",
            "--no-save",
        )
        procs.append(
            subprocess.Popen(
                cmd,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=_env(NBBENCH_HOSTNAME=host),
                stdin=subprocess.DEVNULL,
            )
        )
    outs = [p.communicate(timeout=TIMEOUT) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outs]
    printed = [o[0] for o in outs if o[0].strip()]
    assert len(printed) == 1  # one result, from rank 0's host
    res = json.loads(printed[0])
    assert res["labels"]["hosts"] == 2 and res["labels"]["ranks"] == 2
    assert {h["host"] for h in res["extra"]["hosts"]} == {"host-a", "host-b"}
    assert {r["host"] for r in res["extra"]["ranks"]} == {"host-a", "host-b"}
    # the shards split the tree: every file read once, by one rank
    assert sum(r["metrics"]["files_count"] for r in res["extra"]["ranks"]) == 40 == res["metrics"]["files_count"]


@pytest.mark.slow
def test_loader_under_ddp_per_rank_wait_and_global_au(tmp_path):
    from nbbench.datasets import make_image_folder

    make_image_folder(tmp_path / "ds", files=160, size="8k", classes=4)
    out = _nbbench(
        "loader",
        tmp_path / "ds",
        "--ranks",
        "2",
        "--emulate",
        "h100-resnet50",
        "--batch-size",
        8,
        "--steps",
        8,
        "--warmup",
        1,
        "--workers",
        0,
        "--json",
        "--no-save",
    )
    assert out.returncode == 0, out.stderr[-3000:]
    res = json.loads(out.stdout)
    assert res["kind"] == "loader" and res["labels"]["ranks"] == 2
    per = res["extra"]["ranks"]
    assert len(per) == 2
    for r in per:
        m = r["metrics"]
        assert m["steps_count"] == 8  # every rank met every step
        assert 0 <= m["data_wait_pct"] <= 100 and 0 < m["au_pct"] <= 100 and "sync_wait_pct" in m
    aus = [r["metrics"]["au_pct"] for r in per]
    assert res["metrics"]["au_pct"] == pytest.approx(sum(aus) / 2)
    assert res["metrics"]["samples_per_s_last_done"] > 0 and res["labels"]["stalled_most"].startswith("rank ")
    assert res["metrics"]["step_time_s"] == max(r["metrics"]["step_time_s"] for r in per)


def _holders(directory) -> dict[int, str]:
    """pid -> the ``.nbbench-*`` temp file in ``directory`` it holds open.  The builtin engine
    unlinks its file right after opening it, so it is found through the open descriptors
    ("… (deleted)"), not by listing the directory."""
    prefix = os.path.join(str(directory), ".nbbench-")
    found: dict[int, str] = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith(prefix):
                    found[int(pid)] = target
        except OSError:
            continue
    return found


@pytest.mark.slow
def test_a_rank_killed_mid_write_fails_the_run_and_leaves_no_file(tmp_path):
    proc = subprocess.Popen(
        [
            PY,
            "-m",
            "nbbench",
            "dd",
            tmp_path,
            "--size",
            "256M",
            "--bs",
            "4k",
            "--mode",
            "write",
            "--ranks",
            "2",
            "--json",
            "--no-save",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
        stdin=subprocess.DEVNULL,
    )
    victim = None
    deadline = time.monotonic() + TIMEOUT
    while victim is None and time.monotonic() < deadline and proc.poll() is None:
        held = _holders(tmp_path)
        if len(held) == 2:
            victim = max(held)  # one of the two ranks writing
        time.sleep(0.05)
    assert victim is not None, "the ranks never had their files open"
    os.kill(victim, signal.SIGKILL)
    out, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 1, err[-2000:]
    res = json.loads(out)
    assert res["status"] == "failed"
    assert "killed by SIGKILL" in res["reason"] and " on " in res["reason"]
    dead = [r for r in res["extra"]["ranks"] if r["reason"] == "killed by SIGKILL"]
    assert len(dead) == 1 and dead[0]["host"]
    assert _leftovers(tmp_path) == []  # the killed rank's file too


@pytest.mark.slow
def test_randread_ranks_on_a_directory_share_one_file_rank_0_wrote(tmp_path):
    """The shared file rank 0 writes is opened by name by every rank (on other hosts too): its
    name must stay until rank 0 removes it at the end (the builtin engine's early unlink of its
    own files made every rank fail with 'does not exist')."""
    out = _nbbench(
        "randread", tmp_path, "--size", "16M", "--runtime", "0.5", "--ramp", "0", "--ranks", "2", "--json", "--no-save"
    )
    assert out.returncode == 0, out.stderr[-2000:]
    res = json.loads(out.stdout)
    assert res["status"] == "ok" and res["labels"]["ranks"] == 2
    assert [r["status"] for r in res["extra"]["ranks"]] == ["ok", "ok"]
    assert all(r["metrics"]["ios_count"] > 0 for r in res["extra"]["ranks"])
    assert _leftovers(tmp_path) == []


@pytest.mark.slow
def test_ctrl_c_stops_every_rank_and_keeps_their_partial_results(tmp_path):
    proc = subprocess.Popen(
        [
            PY,
            "-m",
            "nbbench",
            "randread",
            tmp_path,
            "--size",
            "16M",
            "--runtime",
            "60",
            "--ramp",
            "0",
            "--file-per-rank",
            "--ranks",
            "2",
            "--json",
            "--no-save",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
        stdin=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline and len(_holders(tmp_path)) < 2:
        time.sleep(0.05)
    time.sleep(1.0)  # both ranks are reading now
    proc.send_signal(signal.SIGINT)  # Ctrl-C in the launching process only
    out, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 130, err[-2000:]
    res = json.loads(out)
    assert res["status"] == "interrupted" and res["labels"]["ranks"] == 2
    assert [r["status"] for r in res["extra"]["ranks"]] == ["interrupted", "interrupted"]  # both answered
    assert all(r["metrics"]["ios_count"] > 0 for r in res["extra"]["ranks"])
    assert _leftovers(tmp_path) == []


# ------------------------------------------------------------ refusals, in one line
def test_without_torch_ranks_fail_in_one_line(tmp_path):
    code = (
        "import sys; sys.modules['torch'] = None\nfrom nbbench.cli import main\n"
        f"sys.exit(main(['dd', {str(tmp_path)!r}, '--size', '16M', '--ranks', '2']))"
    )
    out = subprocess.run([PY, "-c", code], capture_output=True, text=True, timeout=60, env=_env())
    assert out.returncode == 1
    assert out.stderr.strip().splitlines() == [
        "nbbench dd: --ranks needs PyTorch (torch.distributed): pip install torch"
    ]


def test_a_notebook_variable_is_refused_with_ranks():
    from nbbench import commands
    from nbbench.commands import Context
    from nbbench.results import ProbeError

    ctx = Context(user_ns={"train_loader": object()})
    inv = commands.parse(["loader", "train_loader", "--ranks", "2"], ctx)
    with pytest.raises(ProbeError, match="cannot be sent to other processes.*--dataset module:function"):
        inv.command.run(inv.args, ctx)


def test_several_hosts_print_the_lines_to_run(tmp_path, capsys):
    from nbbench.cli import main

    assert (
        main(["dd", str(tmp_path), "--size", "1G", "--ranks", "4", "--nnodes", "2", "--rdzv-host", "10.0.0.5:29400"])
        == 0
    )
    text = capsys.readouterr().out
    assert "--node-rank 1 --rdzv-backend c10d --rdzv-endpoint 10.0.0.5:29400" in text
    assert f"-m nbbench dd {tmp_path} --size 1G" in text and "--ranks" not in text.split("host 0:")[1]
    assert "srun --nodes 2 --ntasks-per-node 4 python -m nbbench dd" in text
    assert "warning: the rendezvous server on 10.0.0.5:29400" in text
    assert main(["dd", str(tmp_path), "--nnodes", "2"]) == 1
    assert capsys.readouterr().err.strip() == "nbbench dd: --nnodes M goes with --ranks N (the ranks on each host)"


def test_preflight_names_the_hosts_that_lack_the_path(monkeypatch):
    from nbbench.ranks import group, rank
    from nbbench.ranks.jobs import FilesJob
    from nbbench.ranks.rankenv import RankEnv
    from nbbench.results import ProbeError

    answers = [
        {"rank": 0, "host": "a", "error": None},
        {"rank": 1, "host": "b", "error": "/data does not exist"},
        {"rank": 2, "host": "b", "error": "/data does not exist"},
    ]
    monkeypatch.setattr(group, "all_gather", lambda obj, n: answers)
    env0 = RankEnv(0, 3, 0, 1, "h", 1, "torchrun")
    with pytest.raises(ProbeError) as e:
        rank._preflight(FilesJob({"path": "/"}), env0, None, "a", False)
    assert str(e.value) == (
        "preflight refused on every rank, nothing was written: /data does not exist — on host b (ranks 1, 2)"
    )
    with pytest.raises(rank._Quiet):  # the other ranks refuse too, quietly
        rank._preflight(FilesJob({"path": "/"}), RankEnv(1, 3, 0, 1, "h", 1, "torchrun"), None, "b", False)


def test_panel_ranks_field_becomes_the_option(tmp_path):
    pytest.importorskip("ipywidgets")
    from nbbench.panel import panel as make
    from nbbench.panel.runner import parse_command
    from nbbench.store import Store

    p = make(str(tmp_path), store=Store(tmp_path / "results.sqlite"))
    S = p.tab("Storage")
    info = p.path_field.current()
    assert "--ranks" not in S.job(info, None).argv  # 0: this process alone
    S.ranks.value = 2
    assert parse_command(S.job(info, None).argv).args.ranks == 2
    S.probe.value = "disk"  # the presets do not run as ranks
    assert "--ranks" not in S.job(info, None).argv and S.ranks.layout.display == "none"
    L = p.tab("DataLoader")
    L.ranks.value = 3
    assert parse_command(L.job(info, None).argv).args.ranks == 3


@pytest.mark.slow
def test_repeat_with_ranks_repeats_the_whole_ranked_run(tmp_path):
    """--repeat N with --ranks M: the launcher launches the M ranks N times (the ranks run once each)."""
    out = _nbbench("dd", tmp_path, "--size", "4M", "--ranks", "2", "--repeat", "2", "--json", "--no-save")
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)
    assert res["labels"]["ranks"] == 2 and len(res["runs"]) == 2
    assert all(r["write_total_bytes"] == 8 << 20 for r in res["runs"])  # each run: both ranks, 4 MiB each
    # the spread is over the runs; a figure only some runs have (the first-done rate of phases that did not
    # overlap) carries none
    spread = res["extra"]["spread"]
    assert spread["over"] == "runs" and _leftovers(tmp_path) == []
    if spread["figures"]:
        assert "min…max of 2 runs" in res["summary"]
