"""``loader s3://… --ranks N`` and ``feed s3://… --ranks N`` against a local S3 server (moto, on 127.0.0.1).

Each rank reads its own share of the tar shards (a stable hash of the key); the shares sum to
the dataset; the ranks listen on loopback only; the credentials reach them through the
environment alone (never on a command line, never in a saved file); nothing is left in the
temporary directory; a wrong endpoint or a rank without a share is one line, exit 1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest

pytest.importorskip("boto3")
pytest.importorskip("moto.server")

from rankproc import clean_env, short_tmpdir  # noqa: E402

from nbbench.results import ProbeError  # noqa: E402
from nbbench.testing import local_s3  # noqa: E402

#: credentials only this test uses, so a leak onto a command line or into a file is found by grepping for them
SECRET = {
    "AWS_ACCESS_KEY_ID": "nbbench-ranks-key-7q2",
    "AWS_SECRET_ACCESS_KEY": "nbbench-ranks-secret-x9w4",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}
SHARDS, PER_SHARD = 4, 16


@pytest.fixture(scope="module")
def server():
    with local_s3() as srv:
        srv.fill("s3://bench/ds/", count=SHARDS, size="256K", shards=True, samples_per_shard=PER_SHARD, seed=3)
        yield srv


def _env(tmp_path, **extra) -> dict:
    env = {k: v for k, v in clean_env().items() if not k.startswith("AWS_")}
    short_tmpdir(tmp_path)  # TMPDIR short enough for a worker's Unix socket
    env.update(SECRET, TMPDIR=os.path.realpath(tmp_path / "tmp"), NBBENCH_HOME=str(tmp_path / "home"), **extra)
    return env


def _watched(argv, env, timeout=300):
    """Run ``nbbench ARGV``; every 0.1 s note its process tree's listeners and command lines."""
    from test_ranks_listen import _listeners, _tree

    proc = subprocess.Popen(
        [sys.executable, "-m", "nbbench", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    seen, cmdlines, done = set(), set(), threading.Event()

    def sample():
        while not done.is_set():
            procs = _tree(proc.pid)
            seen.update(_listeners(procs))
            for p in procs:
                try:
                    cmdlines.add(" ".join(p.cmdline()))
                except Exception:  # noqa: BLE001 - a process that just ended
                    pass
            done.wait(0.1)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        done.set()
        t.join(5)
        if proc.poll() is None:
            proc.kill()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), seen, cmdlines


def _check_run(tmp_path, p, seen, cmdlines) -> dict:
    from test_ranks_listen import _not_loopback

    assert p.returncode == 0, p.stderr[-3000:]
    d = json.loads(p.stdout)
    assert d["labels"]["ranks"] == 2 and d["status"] == "ok"
    rows = d["extra"]["ranks"]
    assert sorted(r["rank"] for r in rows) == [0, 1] and all(r["status"] == "ok" for r in rows)
    assert _not_loopback(seen) == [], f"listeners on non-loopback addresses: {_not_loopback(seen)}"
    assert any("--ranks" in c for c in cmdlines) and any("nbbench" in c for c in cmdlines)
    leaked = [
        c for c in cmdlines if any(v in c for v in (SECRET["AWS_ACCESS_KEY_ID"], SECRET["AWS_SECRET_ACCESS_KEY"]))
    ]
    assert leaked == [], "a credential on a command line"
    assert list((tmp_path / "tmp").iterdir()) == []  # each rank's local copy of its shards is gone
    saved = [os.path.join(r, f) for r, _, fs in os.walk(tmp_path / "home") for f in fs]
    for path in saved:  # the saved result holds no credential
        text = open(path, "rb").read()
        assert SECRET["AWS_SECRET_ACCESS_KEY"].encode() not in text and SECRET["AWS_ACCESS_KEY_ID"].encode() not in text
    assert saved or "--no-save" in p.args
    return d


@pytest.mark.slow
def test_loader_from_s3_on_two_ranks_splits_the_shards(server, tmp_path):
    pytest.importorskip("torch")
    p, seen, cmdlines = _watched(
        [
            "loader",
            "s3://bench/ds/",
            "--endpoint-url",
            server.endpoint_url,
            "--ranks",
            "2",
            "--batch-size",
            "4",
            "--workers",
            "0",
            "--steps",
            "4",
            "--warmup",
            "1",
            "--no-plot",
            "--json",
        ],
        _env(tmp_path),
    )
    d = _check_run(tmp_path, p, seen, cmdlines)
    rows = d["extra"]["ranks"]
    shares = [r["metrics"]["dataset_samples_count"] for r in rows]
    assert all(s > 0 for s in shares) and sum(shares) == SHARDS * PER_SHARD == d["metrics"]["dataset_samples_count"]
    assert sum(r["metrics"]["shards_count"] for r in rows) == SHARDS == d["metrics"]["shards_count"]
    assert all(r["metrics"]["steps_count"] == 4 for r in rows)  # every rank met every step
    assert d["metrics"]["samples_count"] == 2 * 4 * 4
    assert "stable hash" in d["labels"]["sampler"] and d["labels"]["dataset"].startswith("s3://bench/ds/")


@pytest.mark.slow
def test_feed_from_s3_on_two_ranks_cold_from_the_store_warm_from_a_local_copy(server, tmp_path):
    pytest.importorskip("torch")
    p, seen, cmdlines = _watched(
        [
            "feed",
            "s3://bench/ds/",
            "--endpoint-url",
            server.endpoint_url,
            "--ranks",
            "2",
            "--batch-size",
            "4",
            "--workers",
            "0",
            "--duration",
            "1",
            "--warmup",
            "1",
            "--json",
            "--no-save",
        ],
        _env(tmp_path),
    )
    d = _check_run(tmp_path, p, seen, cmdlines)
    rows, m = d["extra"]["ranks"], d["metrics"]
    assert all(r["metrics"]["files_count"] > 0 for r in rows)
    assert sum(r["metrics"]["files_count"] for r in rows) == SHARDS * PER_SHARD == m["files_count"]
    assert m["cold_samples_per_s"] > 0 and m["warm_samples_per_s"] > 0
    assert m["cold_samples_per_s"] == pytest.approx(sum(r["metrics"]["cold_samples_per_s"] for r in rows))
    assert "GET from object storage" in d["labels"]["cold_method"] and "local cache" in d["labels"]["warm"]
    assert "from object storage" in d["extra"]["answer"] and "from a local copy (warm)" in d["extra"]["answer"]


@pytest.mark.parametrize("cmd", ["loader", "feed"])
def test_a_wrong_endpoint_under_ranks_is_one_line(server, tmp_path, cmd):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there once it is closed
    t = time.monotonic()
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "nbbench",
            cmd,
            "s3://bench/ds/",
            "--endpoint-url",
            f"http://127.0.0.1:{port}",
            "--ranks",
            "2",
            "--no-save",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(tmp_path),
        stdin=subprocess.DEVNULL,
    )
    assert p.returncode == 1 and time.monotonic() - t < 30
    assert p.stderr.count("\n") == 1 and "nothing answers there" in p.stderr and "Traceback" not in p.stderr
    assert list((tmp_path / "tmp").iterdir()) == []


def test_ranks_without_a_share_are_named_before_any_starts(server, tmp_path):
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "nbbench",
            "loader",
            "s3://bench/ds/",
            "--endpoint-url",
            server.endpoint_url,
            "--ranks",
            "16",
            "--no-save",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(tmp_path),
        stdin=subprocess.DEVNULL,
    )
    assert p.returncode == 1 and p.stderr.count("\n") == 1
    assert f"{SHARDS} tar shards" in p.stderr and "none to read" in p.stderr and "fewer ranks" in p.stderr


def test_sweep_refuses_an_s3_dataset_in_one_line(tmp_path):
    p = subprocess.run(
        [sys.executable, "-m", "nbbench", "sweep", "s3://bench/ds/", "--no-save"],
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(tmp_path),
        stdin=subprocess.DEVNULL,
    )
    assert p.returncode == 1 and p.stderr.count("\n") == 1 and "not an s3:// dataset" in p.stderr


def test_each_rank_copies_only_its_share(server, tmp_path, monkeypatch):
    pytest.importorskip("torch")
    import tempfile

    from nbbench.probes.objects.s3dataset import S3TarShardDataset, check_shares
    from nbbench.templock import DIR_LOCK

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    for k, v in SECRET.items():
        monkeypatch.setenv(k, v)
    assert check_shares("s3://bench/ds/", 2, server.endpoint_url) == SHARDS
    with pytest.raises(ProbeError, match="none to read"):
        check_shares("s3://bench/ds/", 64, server.endpoint_url)
    keys = []
    for rank in (0, 1):
        ds = S3TarShardDataset("s3://bench/ds/", endpoint_url=server.endpoint_url, rank=rank, world_size=2)
        try:
            copied = [n for n in os.listdir(ds.cache_path) if n != DIR_LOCK]  # the directory's own lock aside
            assert len(copied) == len(ds.samples) > 0  # its own shards, no other
            assert len(ds) == PER_SHARD * len(ds.samples)
            keys += [k for k, _ in ds.samples]
        finally:
            ds.close()
    assert sorted(keys) == sorted(set(keys)) and len(keys) == SHARDS  # disjoint, together the whole set
    again = S3TarShardDataset("s3://bench/ds/", endpoint_url=server.endpoint_url, rank=0, world_size=2)
    try:
        assert [k for k, _ in again.samples] == keys[: len(again.samples)]  # the split is deterministic
    finally:
        again.close()
    assert list(tmp_path.iterdir()) == []


def test_several_hosts_get_lines_with_the_endpoint_and_no_credential(tmp_path):
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "nbbench",
            "feed",
            "s3://bench/ds/",
            "--endpoint-url",
            "http://127.0.0.1:9000",
            "--ranks",
            "2",
            "--nnodes",
            "2",
            "--no-save",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(tmp_path),
        stdin=subprocess.DEVNULL,
    )
    assert p.returncode == 0, p.stderr
    assert "bucket must be reachable from every host" in p.stdout and "--endpoint-url http://127.0.0.1:9000" in p.stdout
    assert SECRET["AWS_SECRET_ACCESS_KEY"] not in p.stdout and SECRET["AWS_ACCESS_KEY_ID"] not in p.stdout


@pytest.mark.parametrize("cmd", ["loader", "feed", "shards"])
def test_an_endpoint_carrying_credentials_is_refused_before_any_command_line_is_printed(tmp_path, cmd):
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "nbbench",
            cmd,
            "s3://b/p",
            "--endpoint-url",
            "http://AKIAUSER:s3cr3tpw@10.0.0.5:9000",
            "--ranks",
            "2",
            "--nnodes",
            "2",
            "--no-save",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(tmp_path),
        stdin=subprocess.DEVNULL,
    )
    assert p.returncode == 1 and p.stderr.count("\n") == 1 and "must not carry credentials" in p.stderr
    assert "s3cr3tpw" not in p.stdout + p.stderr and "AKIAUSER" not in p.stdout + p.stderr


@pytest.mark.slow
def test_unequal_shares_with_epochs_end_together_each_rank_with_what_it_read(server, tmp_path):
    pytest.importorskip("torch")
    server.fill("s3://bench/three/", count=3, size="256K", shards=True, samples_per_shard=PER_SHARD, seed=3)
    p, seen, cmdlines = _watched(
        [
            "loader",
            "s3://bench/three/",
            "--endpoint-url",
            server.endpoint_url,
            "--ranks",
            "2",
            "--epochs",
            "1",
            "--batch-size",
            "4",
            "--workers",
            "0",
            "--no-plot",
            "--json",
            "--no-save",
        ],
        _env(tmp_path),
        timeout=100,
    )  # a stalled rank would wait 120 s
    d = _check_run(tmp_path, p, seen, cmdlines)
    rows = sorted(d["extra"]["ranks"], key=lambda r: r["rank"])
    shares = [r["metrics"]["dataset_samples_count"] for r in rows]
    assert sorted(shares) == [PER_SHARD, 2 * PER_SHARD]  # 3 shards over 2 ranks: unequal
    warm = 3 * 4  # warmup 2 + 1 batches of 4, not measured
    assert [r["metrics"]["samples_count"] for r in rows] == [s - warm for s in shares]  # each read its whole share
    assert d["metrics"]["samples_count"] == 3 * PER_SHARD - 2 * warm
    assert d["metrics"]["steps_count"] == max(r["metrics"]["steps_count"] for r in rows)
    assert "ran out at different steps" in d["labels"]["unequal_shares"]
    assert not any("1e+09" in w for w in d["warnings"])  # no window the user did not ask for


def test_a_rank_out_of_batches_meets_the_others_steps_until_all_are_out():
    import threading

    from nbbench.ranks.syncedstep import SyncedStep

    class TD:  # the other rank's votes, one per all_reduce: (stop, window over, has data)
        class ReduceOp:
            MAX = "max"

        def __init__(self, peer):
            self.peer, self.calls = list(peer), 0

        def all_reduce(self, votes, op):
            self.calls += 1
            votes[:] = [max(a, b) for a, b in zip(votes, self.peer.pop(0))]

    def joined(peer, failed=False):
        s = SyncedStep(None, 0, None, None, threading.Event(), threading.Event())
        td = TD(peer)
        s._torch = (type("T", (), {"tensor": staticmethod(list)}), td)
        s.join(failed=failed)
        return s.joined, td.calls, td.peer

    assert joined([(0, 0, 1), (0, 0, 1), (0, 0, 0), (0, 0, 1)]) == (2, 3, [(0, 0, 1)])  # until all are out
    assert joined([(0, 0, 1), (0, 1, 1), (0, 0, 1)]) == (1, 2, [(0, 0, 1)])  # or the window ends
    assert joined([(0, 0, 1), (1, 0, 1)]) == (1, 2, [])  # or a rank stops
    sent = []
    s = SyncedStep(None, 0, None, None, threading.Event(), threading.Event())
    s._torch = (
        type("T", (), {"tensor": staticmethod(list)}),
        type("D", (), {"ReduceOp": TD.ReduceOp, "all_reduce": staticmethod(lambda v, op: sent.append(list(v)))}),
    )
    s.join(failed=True)
    assert sent == [[1.0, 0.0, 0.0]]  # a failed rank votes stop once: the others end their loops
    s.in_reduce = True
    s.join(failed=True)
    assert len(sent) == 1  # an error inside the all_reduce: a peer is gone, no more


def test_the_local_copies_of_all_ranks_on_a_host_are_checked_together(server, tmp_path, monkeypatch):
    pytest.importorskip("torch")
    import tempfile
    from types import SimpleNamespace

    from nbbench.probes.objects.s3dataset import S3TarShardDataset, check_shares
    from nbbench.probes.storage.target import MIN_FREE_BYTES

    for k, v in SECRET.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    sizes = []
    for rank in (0, 1):
        ds = S3TarShardDataset("s3://bench/ds/", endpoint_url=server.endpoint_url, rank=rank, world_size=2)
        sizes.append(sum(ds._sizes.values()))
        ds.close()
    free = MIN_FREE_BYTES + max(sizes) + 1  # room for either rank's copy, not for both
    monkeypatch.setattr(
        os, "statvfs", lambda d: SimpleNamespace(f_blocks=10 * MIN_FREE_BYTES, f_frsize=1, f_bavail=free)
    )
    for rank in (0, 1):  # each rank alone passes its own check
        S3TarShardDataset("s3://bench/ds/", endpoint_url=server.endpoint_url, rank=rank, world_size=2).close()
    with pytest.raises(ProbeError, match="local copies of the 2 ranks' shares on this host: not enough free space"):
        check_shares("s3://bench/ds/", 2, server.endpoint_url, local_copies=None)  # tar shards: always copied
    assert check_shares("s3://bench/ds/", 2, server.endpoint_url) == SHARDS  # no copies: no check
    free = MIN_FREE_BYTES + sum(sizes) + 1
    assert check_shares("s3://bench/ds/", 2, server.endpoint_url, local_copies=True) == SHARDS
    assert list(tmp_path.iterdir()) == []


def test_the_launcher_checks_the_copies_feed_and_loader_make(monkeypatch):
    from nbbench.probes.objects import s3dataset
    from nbbench.ranks.loaderjobs import job_for

    asked = []
    monkeypatch.setattr(s3dataset, "check_shares", lambda *a, **kw: asked.append(kw["local_copies"]))
    job_for("feed", {"path": "s3://b/p"}).local_checks(2)  # feed copies tar shards and image objects
    job_for("loader", {"path": "s3://b/p"}).local_checks(2)  # loader copies tar shards only (None: by kind)
    job_for("loader", {"path": "/data"}).local_checks(2)  # a folder: nothing to copy, no S3 check
    assert asked == [True, None]
