"""checkpoint: a model-like state dict saved with torch.save (fsync'd) and DCP, loaded back cold and
warm; the MLPerf presets' sizes; new temp files only, removed on error, Stop, SIGTERM and Ctrl-C; the
free-space and memory refusals say their numbers."""

import json
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")

from nbbench import tempfiles  # noqa: E402
from nbbench.probes.checkpoint import preflight as ckptpre  # noqa: E402
from nbbench.probes.checkpoint import probe as ckpt  # noqa: E402
from nbbench.probes.checkpoint import saveload as ckptio  # noqa: E402
from nbbench.probes.checkpoint.models import PRESETS, decoder_params, plan, resnet50_params  # noqa: E402
from nbbench.results import ProbeError, Result  # noqa: E402

PY = sys.executable
GIB = 1 << 30


def _left(d):
    return sorted(os.listdir(d))


# ----------------------------------------------------------------- shapes
def test_presets_follow_mlperf_storage():
    # the yaml's layer shapes give the parameter counts; LLM_SIZE_BY_RANK's "GB" are GiB of them
    p8 = PRESETS["llama3-8b"]
    n8 = sum(math.prod(s) for _, s in decoder_params(p8.layers, p8.hidden, p8.ffn, p8.vocab, p8.heads, p8.kv_heads))
    assert n8 == pytest.approx(8.03e9, rel=2e-3)
    for name in ("llama3-8b", "llama3-70b", "llama3-405b"):
        pr = PRESETS[name]
        n = sum(math.prod(s) for _, s in decoder_params(pr.layers, pr.hidden, pr.ffn, pr.vocab, pr.heads, pr.kv_heads))
        assert n * 2 / GIB == pytest.approx(pr.model_gib, rel=0.01)
        assert n * 12 / GIB == pytest.approx(pr.optimizer_gib, rel=0.01)
    assert PRESETS["llama3-8b"].per_process_bytes() == 105 * GIB / 8
    assert PRESETS["llama3-70b"].per_process_bytes() == 911 * GIB / 64
    assert PRESETS["llama3-1t"].processes == 1024 and PRESETS["llama3-405b"].processes == 512
    p = plan("llama3-8b", scale=0.01)
    assert p.total_bytes == pytest.approx(105 * GIB / 8 * 0.01, rel=0.01)
    assert p.count == 291 * 4  # 32 x 9 + 3 tensors, weights + 3 Adam states
    assert {s.dtype for s in p.specs} == {"float16", "float32"}
    assert "llama3_8b.yaml" in p.source and "LLM_SIZE_BY_RANK" in p.source
    assert plan("llama3-1t", scale=0.01).total_bytes == pytest.approx(17997 * GIB / 1024 * 0.01, rel=0.02)
    assert plan("llama3-8b", scale=0.01, optimizer=False).total_bytes == pytest.approx(15 * GIB / 8 * 0.01, rel=0.01)
    with pytest.raises(ProbeError, match="--scale"):
        plan("llama3-8b", size="1G")


def test_generic_and_resnet_shapes():
    t = plan("transformer", "256M")
    assert t.total_bytes == pytest.approx(256 << 20, rel=0.01)
    names = {s.name for s in t.specs}
    for part in (
        "q_proj",
        "k_proj",
        "v_proj",
        "o_proj",
        "gate_proj",
        "up_proj",
        "down_proj",
        "input_layernorm",
        "embed_tokens",
        "lm_head",
    ):
        assert any(part in n for n in names), part
    assert (
        any(n.endswith(".exp_avg_sq") for n in names)
        and not plan("transformer", "64M", optimizer=False).specs[-1].path[0] == "optimizer"
    )
    assert plan("transformer").total_bytes == pytest.approx(512 << 20, rel=0.01)
    assert plan("transformer", "256M", scale=0.5).total_bytes == pytest.approx(128 << 20, rel=0.01)
    params = [(n, s) for n, s, kind in resnet50_params() if kind == "param"]
    assert sum(math.prod(s) for _, s in params) == 25_557_032  # torchvision's resnet50
    r = plan("resnet50")
    assert sum(1 for s in r.specs if s.name.endswith("running_var")) == 53
    assert plan("resnet50", "100M").total_bytes == pytest.approx(100 << 20, rel=0.03)
    with pytest.raises(ProbeError, match="unknown model"):
        plan("gpt5")


# ------------------------------------------------------------------ runs
def test_a_small_checkpoint_saves_and_loads_cold_and_warm(tmp_path):
    steps = []
    r = ckpt.checkpoint(tmp_path, size="6M", progress=lambda f, m: steps.append((f, m)))
    assert r.ok and r.kind == "checkpoint", r.reason
    m = r.metrics
    for k in (
        "write_bytes_per_s",
        "read_bytes_per_s",
        "read_warm_bytes_per_s",
        "dcp_write_bytes_per_s",
        "dcp_read_bytes_per_s",
        "dcp_read_warm_bytes_per_s",
        "load_mmap_first_tensor_s",
        "load_mmap_all_s",
    ):
        assert m[k] > 0, k
    assert m["file_bytes"] >= m["state_bytes"] and m["dcp_bytes"] >= m["state_bytes"]
    assert m["load_mmap_first_tensor_s"] <= m["load_mmap_all_s"]
    assert m["read_bytes_per_s"] == pytest.approx(m["file_bytes"] / m["read_elapsed_s"])
    lb = r.labels
    assert lb["cache_read"] in ("buffered-cold", "buffered-warm") and lb["cache_read_warm"] == "buffered-warm"
    assert lb["cache_mmap"] == "buffered-warm" and "fsync" in lb["write"] and "mincore" in lb["cache_drop"]
    assert m["cold_resident_pct"] < 5 and lb["cache_read"] == "buffered-cold"
    assert _left(tmp_path) == []
    assert steps[-1][0] == 1.0 and [f for f, _ in steps] == sorted(f for f, _ in steps)
    assert set(r.extra["t0_unix"]) == {"write", "dcp_write", "read", "dcp_read", "read_warm", "dcp_read_warm"}
    a = r.answer()
    assert a.startswith("torch.save wrote the ") and "fsync" in a and "from the page cache" in a and "DCP" in a
    back = Result.from_dict(json.loads(r.to_json()))
    assert type(back).__name__ == "CheckpointResult" and back == r


def test_no_dcp_rank_names_and_the_stale_sweep(tmp_path):
    host, dead = tempfiles.host_tag(), _dead_pid()
    stale = tmp_path / f".nbbench-dcpr0-{host}-{dead}-0123abcd.tmp"
    stale.mkdir()
    (stale / "__0_0.distcp").write_bytes(b"x" * 1000)
    seen = []
    real = tempfiles.create
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(tempfiles, "create", lambda d, what, *a: (seen.append(what), real(d, what, *a))[1])
        r = ckpt.checkpoint(tmp_path, size="2M", dcp=False, rank=3, world_size=4)
    assert r.ok and seen == ["ckptr3"] and r.labels["rank"] == "3 of 4"
    assert "dcp_write_bytes_per_s" not in r.metrics and "dcp" not in r.labels
    assert r.labels["stale_temp_removed"].startswith("1 entry") and any("stale" in w for w in r.warnings)
    assert _left(tmp_path) == []


def _dead_pid():
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def test_stop_after_the_save_keeps_the_save_and_removes_the_files(tmp_path):
    stop = threading.Event()

    def prog(f, m):
        if m and "write_bytes_per_s" in m:
            stop.set()

    r = ckpt.checkpoint(tmp_path, size="4M", progress=prog, cancel=stop)
    assert r.status == "interrupted" and "after torch.save" in r.reason
    assert r.metrics["write_bytes_per_s"] > 0 and "read_bytes_per_s" not in r.metrics
    assert _left(tmp_path) == [] and "Interrupted" in r.answer()
    stop = threading.Event()
    stop.set()
    r = ckpt.checkpoint(tmp_path, size="4M", cancel=stop)
    assert r.status == "interrupted" and "nothing was written" in r.reason and _left(tmp_path) == []


def test_an_error_mid_save_fails_the_run_and_removes_everything(tmp_path, monkeypatch):
    def full(state, directory):
        (open(os.path.join(directory, "__0_0.distcp"), "wb")).write(b"partial")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ckptio, "save_dcp", full)
    r = ckpt.checkpoint(tmp_path, size="2M")
    assert r.status == "failed" and r.reason == "the DCP save failed: [Errno 28] No space left on device"
    assert r.metrics["write_bytes_per_s"] > 0 and _left(tmp_path) == []
    assert r.answer().startswith("The checkpoint run failed")


def test_memory_and_free_space_are_refused_with_numbers(tmp_path, monkeypatch):
    built = []
    monkeypatch.setattr(ckptio, "build_state", lambda *a, **k: built.append(1))
    monkeypatch.setattr(ckptpre, "memory_room", lambda: (300 << 20, "300 MiB available (psutil)"))
    with pytest.raises(ProbeError) as e:
        ckpt.checkpoint(tmp_path, size="256M")
    msg = str(e.value)
    assert "not enough memory for a transformer checkpoint of 256 MiB" in msg and "needs about 512 MiB" in msg
    assert "300 MiB available" in msg and "refused rather than swap" in msg and "--scale" in msg
    assert built == [] and _left(tmp_path) == []
    monkeypatch.undo()
    monkeypatch.setattr(ckptio, "build_state", lambda *a, **k: built.append(1))
    import nbbench.probes.storage.target as target

    def statvfs(_):
        return SimpleNamespace(f_blocks=10 * GIB // 4096, f_frsize=4096, f_bavail=int(1.3 * GIB) // 4096)

    monkeypatch.setattr(target.os, "statvfs", statvfs)
    with pytest.raises(ProbeError) as e:
        ckpt.checkpoint(tmp_path, size="256M")  # the file and the DCP directory: 512 MiB + headers
    msg = str(e.value)
    assert re.match(rf"not enough free space in {tmp_path}: writing 51\d MiB would leave", msg), msg
    assert "1 GiB free" in msg and built == []
    # without DCP the file alone fits the disk: the free-space check passes, the (tiny) memory stops it
    monkeypatch.setattr(ckptpre, "memory_room", lambda: (1 << 20, "1 MiB available (psutil)"))
    with pytest.raises(ProbeError, match="not enough memory"):
        ckpt.checkpoint(tmp_path, size="256M", dcp=False)


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA machine runs the device, not the refusal")
def test_cuda_without_cuda_is_one_line(tmp_path):
    with pytest.raises(ProbeError, match=r"^--device cuda: CUDA is not usable here \(torch "):
        ckpt.checkpoint(tmp_path, size="1M", device="cuda")
    out = subprocess.run(
        [PY, "-m", "nbbench", "checkpoint", str(tmp_path), "--device", "cuda", "--no-save"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 1 and len(out.stderr.strip().splitlines()) == 1 and "CUDA is not usable" in out.stderr
    assert _left(tmp_path) == []


def test_two_runs_compare_with_the_right_directions():
    from nbbench.compare import better, compare

    def run(label, w, r, mm):
        return ckpt.CheckpointResult(
            params={"path": "/x", "model": "transformer"},
            labels={"label": label, "cache": "buffered-cold"},
            metrics={"write_bytes_per_s": w, "read_bytes_per_s": r, "load_mmap_all_s": mm, "state_bytes": 1 << 20},
        )

    c = compare([run("nvme", 1e9, 2e9, 0.1), run("nfs", 5e8, 3e9, 0.2)])
    rows = {(x["metric"], x["ref"]): x for x in c.rows}
    assert rows[("write_bytes_per_s", "nfs")]["delta_pct"] == pytest.approx(-50.0)
    assert rows[("read_bytes_per_s", "nfs")]["delta_pct"] == pytest.approx(50.0)
    assert better("write_bytes_per_s") == better("dcp_read_bytes_per_s") == "higher"
    assert better("load_mmap_first_tensor_s") == better("write_elapsed_s") == "lower"
    assert better("state_bytes") is None and better("cold_resident_pct") is None
    assert "checkpoint" in c.text_table()


def test_magic_runs_and_stores_it(tmp_path, ipshell):
    r = ipshell.run_line_magic("iobench", f"checkpoint {tmp_path} --size 2M --no-dcp -o -q")
    assert r.kind == "checkpoint" and r.run_id is not None and r.metrics["read_bytes_per_s"] > 0
    from nbbench.store import default_store

    h = default_store().history(kind="checkpoint")
    summary = h["summary"].iloc[0]  # the answer first, then what was measured
    assert len(h) == 1 and re.match(r"[0-9.]+ [kMG]?B/s write · ", summary), summary
    assert f"checkpoint transformer {tmp_path}" in summary
    assert _left(tmp_path) == []


# ------------------------------------------------------- the command line
def _wait_for(d, prefix, proc, timeout=120):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if any(n.startswith(prefix) for n in os.listdir(d)):
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.005)
    raise AssertionError(f"no {prefix}* appeared")


@pytest.mark.slow
@pytest.mark.parametrize("phase", [".nbbench-ckptr0-", ".nbbench-dcpr0-"])
def test_sigterm_mid_save_leaves_nothing(tmp_path, phase):
    proc = subprocess.Popen(
        [PY, "-m", "nbbench", "checkpoint", str(tmp_path), "--size", "256M", "--no-save"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for(tmp_path, phase, proc)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGTERM
    assert _left(tmp_path) == []


@pytest.mark.slow
def test_ctrl_c_mid_save_ends_interrupted_after_the_save(tmp_path):
    proc = subprocess.Popen(
        [PY, "-m", "nbbench", "checkpoint", str(tmp_path), "--size", "256M", "--json", "--no-save"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for(tmp_path, ".nbbench-ckptr0-", proc)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    d = json.loads(out)
    assert d["status"] == "interrupted" and "read_bytes_per_s" not in d["metrics"]
    assert _left(tmp_path) == []


@pytest.mark.slow
def test_must_show_checkpoint_256m_json(tmp_path):
    out = subprocess.run(
        [PY, "-m", "nbbench", "checkpoint", str(tmp_path), "--size", "256M", "--json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    assert d["kind"] == "checkpoint" and d["status"] == "ok"
    m, lb = d["metrics"], d["labels"]
    assert m["write_bytes_per_s"] > 0 and m["read_bytes_per_s"] > 0 and m["read_warm_bytes_per_s"] > 0
    assert m["state_bytes"] == pytest.approx(256 << 20, rel=0.01)
    assert lb["cache_read"] == "buffered-cold" and lb["cache_read_warm"] == "buffered-warm"
    assert _left(tmp_path) == []


def test_reports_history_and_compare_take_both_kinds(tmp_path):
    from nbbench.datasets import make_tar_shards
    from nbbench.probes.shards.probe import shards
    from nbbench.report import build, report
    from nbbench.store import default_store

    st = default_store()
    d = tmp_path / "ckpt"
    d.mkdir()
    a, b = ckpt.checkpoint(d, size="2M", dcp=False), ckpt.checkpoint(d, size="2M", dcp=False)
    s = shards(make_tar_shards(tmp_path / "wds", shards=2, shard_size="64k", size="8k"))
    for r, label in ((a, "disk-a"), (b, "disk-b"), (s, "wds")):
        st.save(r, label=label)
    h = st.history()
    assert list(h["kind"]) == ["checkpoint", "checkpoint", "shards"]
    summary = h["summary"].iloc[2]
    assert re.match(r"[0-9.]+ [kMG]?B/s read · ", summary) and "samples/s" in summary, summary
    assert f"shards {s.params['path']}" in summary
    assert h["write_bytes_per_s"].iloc[0] > 0 and h["samples_per_s"].iloc[2] > 0
    data = build(runs=["disk-a", "disk-b", "wds"], run_doctor=False)
    assert [r.kind for r in data.results] == ["checkpoint", "checkpoint", "shards"]
    g = data.comparisons[0].groups[0]
    assert g.kind == "checkpoint" and not g.warnings  # like for like: same parameters and cache modes
    assert g.delta_pct("read_bytes_per_s", 1) is not None
    out = tmp_path / "r.md"
    report("md", out=out, runs=["disk-a", "disk-b", "wds"], run_doctor=False)
    text = out.read_text()
    # each result under its answer (the figure first), then what was measured
    assert re.search(r"^### [0-9.]+ [kMG]?B/s write", text, re.M) and "checkpoint transformer" in text
    assert re.search(r"^### [0-9.]+ [kMG]?B/s read", text, re.M) and "shards " in text
    assert "preset_source" not in text  # only the MLPerf presets cite a source


def test_the_memory_room_counts_the_cgroup(tmp_path, monkeypatch):
    import psutil

    cg = tmp_path / "sys/fs/cgroup"
    cg.mkdir(parents=True)
    (cg / "memory.current").write_text(str(3 * GIB) + "\n")
    (cg / "memory.stat").write_text(f"anon 123\ninactive_file {GIB}\nactive_file 5\n")
    assert ckptpre._cgroup_used(str(tmp_path)) == (2 * GIB, "in use in the cgroup (less its inactive file cache)")
    monkeypatch.setattr(
        ckptpre, "_cgroup_used", lambda: (2 * GIB, "in use in the cgroup (less its inactive file cache)")
    )
    monkeypatch.setattr(ckptpre, "cgroup_memory_limit", lambda: 4 * GIB)
    monkeypatch.setattr(psutil, "virtual_memory", lambda: SimpleNamespace(available=64 * GIB))
    room, how = ckptpre.memory_room()
    assert room == 2 * GIB and "cgroup limit 4.00 GiB less 2.00 GiB in use in the cgroup" in how
    with pytest.raises(ProbeError, match=r"needs about 2.00 GiB .* cgroup limit 4.00 GiB"):
        ckptpre.check_memory(GIB, "cpu", "a transformer checkpoint")
