"""checkpoint and shards as ranks: --ranks 2 with real processes (gloo, CPU, small sizes), a rank
killed mid-save (its file and its DCP directory removed), the launcher's refusals for N ranks (free
space, memory per host, a rank without shards), the ranks meeting before every timed phase, and the
aggregate of synthetic per-rank records."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")

from rankproc import clean_env, run_nbbench  # noqa: E402

from nbbench.ranks.ckptjobs import CheckpointJob, ShardsJob  # noqa: E402
from nbbench.ranks.jobs import JOBS, job_for  # noqa: E402
from nbbench.results import ProbeError  # noqa: E402

PY = sys.executable
ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 240
MIB = 1 << 20


def _env(**extra) -> dict:
    return clean_env(**extra)


def _nbbench(*args):
    return run_nbbench(*args, timeout=TIMEOUT)


# ------------------------------------------------------------ real processes
@pytest.mark.slow
def test_checkpoint_ranks_2_one_result_nothing_left(tmp_path):
    out = _nbbench("checkpoint", tmp_path, "--size", "32M", "--ranks", "2", "--json", "--no-save")
    assert out.returncode == 0, out.stderr[-3000:]
    res = json.loads(out.stdout)  # exactly one JSON document
    assert res["kind"] == "checkpoint" and res["status"] == "ok", res["reason"]
    assert res["labels"]["ranks"] == 2 and res["labels"]["hosts"] == 1
    ranks = res["extra"]["ranks"]
    assert sorted(r["rank"] for r in ranks) == [0, 1] and all(r["status"] == "ok" for r in ranks)
    per = [r["metrics"] for r in ranks]
    assert all(m["state_bytes"] == pytest.approx(32 * MIB, rel=0.01) for m in per)
    m = res["metrics"]
    assert m["write_total_bytes"] == sum(p["file_bytes"] for p in per)  # both ranks' files
    assert m["dcp_write_total_bytes"] == sum(p["dcp_bytes"] for p in per)
    for k in (
        "write_bytes_per_s",
        "read_bytes_per_s",
        "dcp_write_bytes_per_s",
        "dcp_read_bytes_per_s",
        "read_warm_bytes_per_s",
    ):
        assert m[f"{k}_last_done"] > 0, k
    assert m["rank_spread_pct"] == max(m["write_rank_spread_pct"], m["read_rank_spread_pct"])
    assert "rank" not in res["labels"] and res["params"]["ranks"] == 2
    assert res["extra"]["answer"].startswith(
        "2 ranks on 1 host, a 32.0 MiB transformer checkpoint each: torch.save wrote "
    )
    assert os.listdir(tmp_path) == []  # every rank's file and DCP directory removed


def _rank_entries(d, what: str) -> dict[int, str]:
    """rank -> the path of its ``.nbbench-<what><rank>-HOST-PID-…`` entry in ``d``."""
    out = {}
    for n in os.listdir(d):
        m = re.match(rf"\.nbbench-{what}(\d+)-", n)
        if m:
            out[int(m.group(1))] = os.path.join(d, n)
    return out


def _pid_of(path: str) -> int:
    return int(os.path.basename(path).rsplit("-", 2)[-2])


def _writing(path: str) -> bool:
    """The save has bytes on disk: the file, or a data file inside the DCP directory."""
    try:
        if os.path.isdir(path):
            return any(os.path.getsize(os.path.join(path, n)) > 0 for n in os.listdir(path))
        return os.path.getsize(path) > 0
    except OSError:
        return False


@pytest.mark.slow
@pytest.mark.parametrize("what", ["ckptr", "dcpr"])
def test_a_rank_killed_mid_save_fails_the_run_and_leaves_nothing(tmp_path, what):
    proc = subprocess.Popen(
        [PY, "-m", "nbbench", "checkpoint", tmp_path, "--size", "192M", "--ranks", "2", "--json", "--no-save"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
        stdin=subprocess.DEVNULL,
    )
    victim = None
    deadline = time.monotonic() + TIMEOUT
    while victim is None and time.monotonic() < deadline and proc.poll() is None:
        entry = _rank_entries(tmp_path, what).get(1)
        if entry is not None and _writing(entry):
            victim = _pid_of(entry)  # rank 1, saving
        else:
            time.sleep(0.005)
    assert victim is not None, "rank 1 never started its save"
    os.kill(victim, signal.SIGKILL)
    out, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 1, err[-2000:]
    res = json.loads(out)
    assert res["status"] == "failed" and res["labels"]["ranks"] == 2
    assert "killed by SIGKILL" in res["reason"] and "rank 1 on " in res["reason"]
    dead = [r for r in res["extra"]["ranks"] if r["reason"] == "killed by SIGKILL"]
    assert [r["rank"] for r in dead] == [1]
    assert os.listdir(tmp_path) == []  # the killed rank's file or DCP directory too


@pytest.mark.slow
def test_stop_ends_every_rank_after_its_call_and_removes_their_files(tmp_path):
    proc = subprocess.Popen(
        [PY, "-m", "nbbench", "checkpoint", tmp_path, "--size", "192M", "--ranks", "2", "--json", "--no-save"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
        stdin=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline and proc.poll() is None and len(_rank_entries(tmp_path, "ckptr")) < 2:
        time.sleep(0.01)
    assert len(_rank_entries(tmp_path, "ckptr")) == 2, "the ranks never created their files"
    proc.send_signal(signal.SIGINT)  # Ctrl-C in the launching process only
    out, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 130, err[-2000:]
    res = json.loads(out)
    assert res["status"] == "interrupted" and res["labels"]["ranks"] == 2
    assert [r["status"] for r in res["extra"]["ranks"]] == ["interrupted", "interrupted"]  # both answered
    assert os.listdir(tmp_path) == []


@pytest.mark.slow
def test_checkpoint_under_a_bare_torchrun(tmp_path):
    d = tmp_path / "data"
    d.mkdir()
    cmd = [
        PY,
        "-m",
        "torch.distributed.run",
        "--nproc-per-node",
        "2",
        "--log-dir",
        str(tmp_path / "logs"),
        "-m",
        "nbbench",
        "checkpoint",
        str(d),
        "--size",
        "16M",
        "--no-dcp",
        "--json",
        "--no-save",
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, env=_env(), stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr[-3000:]
    res = json.loads(out.stdout)  # rank 1 printed nothing
    assert res["labels"]["launcher"] == "torchrun" and res["labels"]["ranks"] == 2
    assert {r["local_rank"] for r in res["extra"]["ranks"]} == {0, 1}
    assert res["metrics"]["write_bytes_per_s_last_done"] > 0 and "dcp_write_bytes_per_s" not in res["metrics"]
    assert os.listdir(d) == []


def _shard_truth(root):
    """Per shard: (relative path, size, samples), from the tar files themselves."""
    out = []
    for p in sorted(Path(root).glob("*.tar")):
        with tarfile.open(p) as t:
            keys = {m.name.split(".", 1)[0] for m in t.getmembers() if m.isfile()}
        out.append((p.name, p.stat().st_size, len(keys)))
    return out


def _listing(root) -> dict:
    return {
        n: (os.stat(os.path.join(root, n)).st_size, os.stat(os.path.join(root, n)).st_mtime_ns)
        for n in os.listdir(root)
    }


@pytest.mark.slow
def test_shards_ranks_2_every_shard_read_once(tmp_path):
    from nbbench.datasets import make_tar_shards
    from nbbench.probes.shards.probe import shard_rank

    root = make_tar_shards(tmp_path / "ds", shards=4, shard_size="4M", size="64k")
    truth = _shard_truth(root)
    before = _listing(root)
    out = _nbbench("shards", root, "--ranks", "2", "--json", "--no-save")
    assert out.returncode == 0, out.stderr[-3000:]
    res = json.loads(out.stdout)
    assert res["kind"] == "shards" and res["status"] == "ok", res["reason"]
    assert res["labels"]["ranks"] == 2 and len(res["extra"]["ranks"]) == 2
    m = res["metrics"]
    total_samples = sum(s for _, _, s in truth)
    per = {r["rank"]: r["metrics"] for r in res["extra"]["ranks"]}
    assert sum(p["samples_count"] for p in per.values()) == total_samples == m["samples_count"]
    for r, pm in per.items():  # each rank read exactly its own shards, whole
        mine = [(n, s) for n, s, _ in truth if shard_rank(n, 2) == r]
        assert pm["shards_count"] == len(mine) >= 1
        assert pm["read_total_bytes"] == sum(s for _, s in mine)
    assert m["read_total_bytes"] == sum(s for _, s, _ in truth) and m["shards_count"] == len(truth)
    assert m["samples_per_s_last_done"] > 0 and m["read_warm_bytes_per_s_last_done"] > 0
    assert 0 < m["ttfb_p50_ns"] <= m["ttfb_p99_ns"]
    assert sum(res["samples"]["ttfb_hist"]["count"]) == len(truth)  # one first byte per shard, all ranks merged
    assert res["extra"]["answer"].startswith("2 ranks on 1 host, 4 .tar shards")
    assert _listing(root) == before  # read only: nothing added, nothing changed


# ------------------------------------------------------------ refusals for N ranks
def test_the_directory_must_hold_n_checkpoints(tmp_path, monkeypatch):
    vfs = os.statvfs(tmp_path)
    frs = vfs.f_frsize
    total_blocks = (20 << 30) // frs  # 20 GiB: the rule keeps 1 GiB
    free_blocks = ((1 << 30) + 100 * MIB) // frs  # room for one 32 MiB checkpoint (~65 MiB), not two

    def fake(path):
        return SimpleNamespace(
            f_frsize=frs,
            f_bsize=frs,
            f_blocks=total_blocks,
            f_bavail=free_blocks,
            f_bfree=free_blocks,
            f_files=vfs.f_files,
            f_ffree=vfs.f_ffree,
            f_favail=vfs.f_favail,
            f_flag=vfs.f_flag,
            f_namemax=vfs.f_namemax,
        )

    monkeypatch.setattr(os, "statvfs", fake)
    job = job_for("checkpoint", {"path": str(tmp_path), "size": "32M"})
    assert isinstance(job, CheckpointJob) and JOBS["checkpoint"] is CheckpointJob and JOBS["shards"] is ShardsJob
    job.local_checks(1)
    with pytest.raises(ProbeError) as e:
        job.local_checks(2)
    msg = str(e.value)
    assert re.match(
        r"2 ranks × 6\d\.\d MiB each \(its torch\.save file and DCP directory\) = 1[23]\d MiB to write: "
        rf"not enough free space in {re.escape(str(tmp_path))}: writing 1[23]\d MiB would leave",
        msg,
    ), msg
    assert os.listdir(tmp_path) == []


def test_a_host_must_hold_its_ranks_states(tmp_path, monkeypatch):
    from nbbench.probes.checkpoint import preflight

    monkeypatch.setattr(preflight, "memory_room", lambda: (1 << 30, "1.00 GiB available (psutil)"))
    job = CheckpointJob({"path": str(tmp_path), "size": "128M"})
    job.local_checks(2)  # 2 × 2 × 128 MiB = 512 MiB of 768 MiB usable
    with pytest.raises(ProbeError) as e:
        job.local_checks(4)
    msg = str(e.value)
    assert re.match(
        r"not enough memory for a transformer checkpoint of 12\d MiB per rank: it needs about "
        r"(10\d\d MiB|1\.00 GiB) \(4 ranks on this host × 25\d MiB each: the state dict and one loaded "
        r"copy\) and 1\.00 GiB available \(psutil\), keeping 256 MiB spare",
        msg,
    ), msg
    assert msg.endswith("or fewer ranks")
    # under torchrun each rank counts the ranks of its own host, not of the job
    env = SimpleNamespace(rank=0, world_size=8, local_rank=0, local_world_size=2)
    job.preflight(env)


def test_device_cuda_gives_each_local_rank_its_gpu(tmp_path, monkeypatch):
    job = CheckpointJob({"path": str(tmp_path), "size": "8M", "device": "cuda"})
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ProbeError, match=r"^--device cuda: CUDA is not usable here"):
        job.local_checks(1)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    job.local_checks(1)
    with pytest.raises(
        ProbeError,
        match=r"^--device cuda gives each rank the GPU of its local rank: 2 ranks on a host "
        r"with 1 GPU\(s\); use at most 1 rank per host, or --device cuda:0",
    ):
        job.local_checks(2)
    CheckpointJob({"path": str(tmp_path), "size": "8M", "device": "cuda:0"}).local_checks(2)  # one GPU, shared
    job.bind(SimpleNamespace(rank=3, world_size=4, local_rank=1, local_world_size=2))
    assert job._device() == "cuda:1"


def test_a_rank_without_shards_is_refused_before_the_launch(tmp_path):
    from nbbench.probes.shards.probe import shard_rank

    for i in range(4):
        (tmp_path / f"shard-{i:06d}.tar").write_bytes(b"\0" * 1024)
    idle = sorted({0, 1, 2} - {shard_rank(f"shard-{i:06d}.tar", 3) for i in range(4)})
    assert idle  # the stable hash leaves a rank of 3 without one
    ShardsJob({"path": str(tmp_path)}).local_checks(2)
    with pytest.raises(
        ProbeError,
        match=rf"4 tar shards split over 3 ranks .* leave ranks? "
        rf"{', '.join(map(str, idle))} none to read",
    ):
        ShardsJob({"path": str(tmp_path)}).local_checks(3)


# ------------------------------------------------------------ the ranks meet before every timed phase
def test_checkpoint_meets_before_each_timed_phase_and_times_after(tmp_path):
    from nbbench.probes.checkpoint import probe as ckpt

    met = []

    def ready(phase):
        time.sleep(0.05)  # the other ranks arrive later
        met.append((phase, time.time()))

    r = ckpt.checkpoint(tmp_path, size="2M", ready=ready)
    assert r.ok, r.reason
    assert [p for p, _ in met] == list(ckpt.TIMED)
    for phase, left in met:  # each phase's t = 0 is after the meeting, not before
        assert r.extra["t0_unix"][phase] >= left, phase
    assert os.listdir(tmp_path) == []


# ------------------------------------------------------------ the aggregate, from synthetic records
def _ckpt_record(rank, wall0, rate, mmap_s):
    state, fb, db = 32 * MIB, 32 * MIB + 4096, 32 * MIB + 8192
    m = {
        "state_bytes": state,
        "tensors_count": 10,
        "file_bytes": fb,
        "dcp_bytes": db,
        "load_mmap_first_tensor_s": mmap_s,
        "load_mmap_all_s": 2 * mmap_s,
        "cold_resident_pct": 0.0,
    }
    t0, phases = {}, {}
    t = wall0
    for ph, key, nbytes in (
        ("write", "write_bytes_per_s", fb),
        ("dcp_write", "dcp_write_bytes_per_s", db),
        ("read", "read_bytes_per_s", fb),
        ("dcp_read", "dcp_read_bytes_per_s", db),
        ("read_warm", "read_warm_bytes_per_s", fb),
        ("dcp_read_warm", "dcp_read_warm_bytes_per_s", db),
    ):
        el = nbytes / rate
        t0[ph] = t
        m[key] = rate
        m[key.replace("_bytes_per_s", "_elapsed_s")] = el
        phases[ph] = el
        t += el + 1.0
    labels = {"rank": f"{rank} of 2", "cache_read": "buffered-warm" if rank == 1 else "buffered-cold"}
    return m, t0, labels


def test_checkpoint_aggregate_of_two_ranks():
    from nbbench.ranks.group import Clock
    from nbbench.ranks.rank import build_result
    from nbbench.results import result_class

    job = CheckpointJob({"path": "/shared", "size": "32M"})
    clock = Clock(zero=1000.0, rank0_start=1000.0, offset_s=0.0)
    recs = []
    for rank, rate, mmap_s in ((0, 100 * MIB, 0.01), (1, 50 * MIB, 0.03)):
        m, t0, labels = _ckpt_record(rank, 1000.0, rate, mmap_s)
        res = result_class("checkpoint")(params={"path": "/shared", "model": "transformer", "rank": rank})
        res.metrics.update(m)
        res.labels.update(labels)
        res.extra["t0_unix"] = t0
        res.finish()
        tracks = job.tracks(res, clock)
        assert set(tracks) == {"write", "dcp_write", "read", "dcp_read", "read_warm", "dcp_read_warm"}
        assert tracks["write"]["start"] == 0.0 and tracks["write"]["cum"]["write_bytes_per_s"][-1] == m["file_bytes"]
        recs.append(
            {
                "rank": rank,
                "host": "h",
                "local_rank": rank,
                "status": "ok",
                "reason": None,
                "metrics": m,
                "tracks": tracks,
                "result": res.to_dict(),
            }
        )
    out = build_result(job, recs, None, "gloo")
    m = out.metrics
    # both start together; rank 1 writes at half the rate: while both ran, 150 MiB/s
    assert m["write_bytes_per_s"] == pytest.approx(150 * MIB)
    assert m["write_bytes_per_s_last_done"] == pytest.approx(2 * (32 * MIB + 4096) / ((32 * MIB + 4096) / (50 * MIB)))
    assert m["write_rank_spread_pct"] == pytest.approx(50.0) and m["rank_spread_pct"] == pytest.approx(50.0)
    assert m["write_total_bytes"] == 2 * (32 * MIB + 4096) and m["dcp_write_total_bytes"] == 2 * (32 * MIB + 8192)
    assert m["state_bytes"] == 32 * MIB and m["state_total_bytes"] == 64 * MIB
    assert m["load_mmap_first_tensor_s"] == 0.03  # the slowest rank's
    assert out.labels["cache_read"] == "buffered-warm"  # one rank's cold read was partly warm
    assert "rank" not in out.labels and "rank" not in out.params
    assert out.answer() == out.extra["answer"]  # the ranked answer line, in the result too
    assert out.extra["answer"].startswith(
        "2 ranks on 1 host, a 32.0 MiB transformer checkpoint each: torch.save wrote 157 MB/s together while all ran"
    )


def test_shards_tracks_count_samples_as_the_bytes_go():
    from nbbench.ranks.group import Clock
    from nbbench.results import result_class

    res = result_class("shards")(params={})
    res.metrics.update(
        {
            "read_bytes_per_s": 100.0,
            "elapsed_s": 1.0,
            "read_total_bytes": 100,
            "samples_count": 10,
            "samples_per_s": 10.0,
        }
    )
    res.samples["bw"] = {"t_s": [0.5], "read_bytes_per_s": [60.0]}
    res.extra["t0_unix"] = {"read": 1002.0}
    tr = ShardsJob({"path": "/d"}).tracks(res, Clock(zero=1000.0, rank0_start=1000.0, offset_s=0.0))["read"]
    assert tr["start"] == 2.0 and tr["t"] == [0.5, 1.0]
    assert tr["cum"]["read_bytes_per_s"] == [30.0, 100.0]
    assert tr["cum"]["samples_per_s"] == [3.0, 10.0]
