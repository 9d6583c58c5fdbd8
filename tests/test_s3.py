"""The s3 probe against a local S3 server (moto, on 127.0.0.1), faults through a local proxy.

No network: the server and the proxy listen on loopback only.  Every bad input ends in one
line (exit 1, or 2 for a malformed command line), within a bounded time, and no run changes
the bucket.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

pytest.importorskip("boto3")
pytest.importorskip("moto.server")

from s3proxy import FaultProxy  # noqa: E402

from nbbench.probes.objects import s3  # noqa: E402
from nbbench.probes.objects.s3probe import knee, sweep_levels  # noqa: E402
from nbbench.results import ProbeError  # noqa: E402
from nbbench.testing import DUMMY_CREDENTIALS, local_s3  # noqa: E402

FAST = dict(max_streams=4, runtime=0.8, sweep_runtime=0.3, part_size=1 << 20)


@pytest.fixture(scope="module")
def server():
    with local_s3() as srv:
        srv.fill("s3://bench/objs/", count=12, size="256K")
        srv.fill("s3://bench/objs/big-", count=2, size="3M", seed=1)
        srv.client().create_bucket(Bucket="empty")
        yield srv


def _listing(srv, bucket="bench", prefix="objs/"):
    resp = srv.client().list_objects_v2(Bucket=bucket, Prefix=prefix)
    return sorted((o["Key"], o["ETag"], o["Size"]) for o in resp.get("Contents", []))


def _cli(args, env_extra=None, timeout=60):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(DUMMY_CREDENTIALS)
    env.update(env_extra or {})
    t = time.monotonic()
    r = subprocess.run(
        [sys.executable, "-m", "nbbench", "s3", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    return r, time.monotonic() - t


def test_sweep_levels_and_knee():
    assert sweep_levels(32) == [1, 2, 4, 8, 16, 32]
    assert sweep_levels(12) == [1, 2, 4, 8, 12]
    rows = [{"streams": s, "get_bytes_per_s": v} for s, v in ((1, 100), (2, 190), (4, 360), (8, 370), (16, 380))]
    assert knee(rows) == 8  # the fewest streams within 5 % of the best (380)
    noisy = [{"streams": s, "get_bytes_per_s": v} for s, v in ((1, 90), (2, 160), (4, 150), (8, 110), (16, 250))]
    assert knee(noisy) == 16  # a dip is no knee: only 16 comes within 5 % of the best
    rising = [{"streams": s, "get_bytes_per_s": 100 * s} for s in (1, 2, 4)]
    assert knee(rising) == 4  # still rising: the last level
    assert knee([]) is None


def test_probe_reads_every_figure_and_changes_nothing(server):
    before = _listing(server)
    r = s3("s3://bench/objs/", endpoint_url=server.endpoint_url, **FAST)
    m = r.metrics
    assert r.status == "ok"
    assert m["get_bytes_per_s"] > 0 and m["requests_per_s"] > 0
    assert m["ttfb_p50_ns"] <= m["lat_p50_ns"]  # first byte before the last
    assert m["ttfb_p50_ns"] <= m["ttfb_p99_ns"]
    assert m["objects_count"] == 14 and m["list_keys_count"] == 14
    assert [row["streams"] for row in r.samples["sweep"]] == [1, 2, 4]
    assert m["knee_streams_count"] in (1, 2, 4)
    assert m["streams_count"] == m["knee_streams_count"]  # the measured phase runs at the knee
    assert m["retries_count"] == 0
    assert m.get("ranged_get_bytes_per_s", 0) > 0 and m.get("whole_get_bytes_per_s", 0) > 0
    assert {c["class"] for c in r.samples["classes"]} <= {"< 1 MiB", "1-64 MiB"}
    assert "streams reach" in " ".join(r.story())
    fig = r.plot()  # the sweep's picture: one point per level, the knee starred
    assert fig is not None and len(fig.axes[0].lines[0].get_xdata()) == 3
    assert _listing(server) == before  # read only


def test_cli_json_names_the_endpoint_never_the_credentials(server, tmp_path):
    r, dt = _cli(
        [
            "s3://bench/objs/",
            "--endpoint-url",
            server.endpoint_url,
            "--max-streams",
            "2",
            "--runtime",
            "0.5",
            "--sweep-runtime",
            "0.2",
            "--no-ranged",
            "--json",
        ],
        {"NBBENCH_HOME": str(tmp_path)},
    )
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["kind"] == "s3" and d["metrics"]["get_bytes_per_s"] > 0
    assert d["labels"]["endpoint"] == server.endpoint_url
    secret = DUMMY_CREDENTIALS["AWS_SECRET_ACCESS_KEY"]
    assert secret not in r.stdout + r.stderr
    store = (tmp_path / "results.sqlite").read_bytes()
    assert secret.encode() not in store and DUMMY_CREDENTIALS["AWS_ACCESS_KEY_ID"].encode() not in store


def _one_line_error(r, words, code=1):
    assert r.returncode == code, (r.returncode, r.stdout, r.stderr)
    err = [line for line in r.stderr.strip().splitlines() if line.strip()]
    assert "Traceback" not in r.stderr
    assert any(words in line for line in err), r.stderr
    return err


@pytest.mark.parametrize(
    "url,words",
    [
        ("s3://no-such-bucket/x/", "no such bucket"),
        ("s3://bench/nothing-here/", "no objects under"),
        ("s3://empty/", "no objects under"),
    ],
)
def test_bad_bucket_or_prefix_is_one_line(server, url, words):
    r, _ = _cli([url, "--endpoint-url", server.endpoint_url, "--no-save"])
    _one_line_error(r, words)


def test_malformed_url_is_a_usage_error():
    r, _ = _cli(["/not/an/s3/url", "--no-save"])
    _one_line_error(r, "not an s3:// URL", code=2)


def test_no_credentials_is_one_line(server, tmp_path):
    env = {k: "" for k in DUMMY_CREDENTIALS}
    env.update(
        {
            "AWS_CONFIG_FILE": str(tmp_path / "none"),
            "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
            "AWS_EC2_METADATA_DISABLED": "true",
        }
    )
    r, dt = _cli(["s3://bench/objs/", "--endpoint-url", server.endpoint_url, "--no-save"], env)
    _one_line_error(r, "no S3 credentials found")
    assert dt < 20


def test_wrong_endpoint_fails_fast():
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    r, dt = _cli(["s3://bench/objs/", "--endpoint-url", f"http://127.0.0.1:{port}", "--no-save"])
    _one_line_error(r, "cannot connect")
    assert dt < 15


def test_endpoint_that_never_answers_fails_within_bounded_time():
    with FaultProxy("http://127.0.0.1:1", silent=True) as p:
        r, dt = _cli(["s3://bench/objs/", "--endpoint-url", p.url, "--no-save"], timeout=60)
    _one_line_error(r, "did not answer in time")
    assert dt < 25


def test_access_denied_is_one_line(server):
    with FaultProxy(server.endpoint_url, rule=lambda m, path, n: (403, "AccessDenied")) as p:
        r, _ = _cli(["s3://bench/objs/", "--endpoint-url", p.url, "--no-save"])
    _one_line_error(r, "access denied (403)")


def test_access_denied_on_get_after_a_good_list(server):
    rule = lambda m, path, n: (403, "AccessDenied") if m == "GET" and "list-type" not in path else None  # noqa: E731
    with FaultProxy(server.endpoint_url, rule=rule) as p:
        with pytest.raises(ProbeError, match="access denied"):
            s3("s3://bench/objs/", endpoint_url=p.url, **FAST)


def test_throttling_is_retried_counted_and_labelled(server):
    rule = lambda m, path, n: (503, "SlowDown") if m == "GET" and "list-type" not in path and n % 4 == 0 else None  # noqa: E731
    with FaultProxy(server.endpoint_url, rule=rule) as p:
        r = s3("s3://bench/objs/", endpoint_url=p.url, sweep=False, streams=2, runtime=1.0, ranged=False)
    assert p.injected > 0
    assert r.plot() is None  # no sweep, no picture
    assert r.metrics["retries_count"] > 0
    assert "retries" in r.labels.get("throttled", "")
    assert any("retry" in w for w in r.warnings)


def test_a_key_deleted_while_read_is_skipped_and_said(server):
    victim = "objs/obj-00003.bin"
    rule = lambda m, path, n: (404, "NoSuchKey") if m == "GET" and path.split("?")[0].endswith(victim) else None  # noqa: E731
    with FaultProxy(server.endpoint_url, rule=rule) as p:
        r = s3("s3://bench/objs/", endpoint_url=p.url, sweep=False, streams=2, runtime=0.8, ranged=False)
    assert r.status == "ok" and r.metrics["requests_count"] > 0
    assert any("vanished" in w for w in r.warnings)


def test_server_that_stops_mid_run_is_one_line():
    import threading

    srv = local_s3(set_env=False)
    reading = threading.Event()

    def rule(method, path, n):  # forwards everything; says when the first object GET goes through
        if method == "GET" and "list-type" not in path:
            reading.set()
        return None

    try:
        srv.fill("s3://gone/objs/", count=6, size="128K")
        with FaultProxy(srv.endpoint_url, rule=rule) as p:
            env = {
                **{k: v for k, v in os.environ.items() if not k.startswith("AWS_")},
                "AWS_ACCESS_KEY_ID": "nbbench-local",
                "AWS_SECRET_ACCESS_KEY": "nbbench-local",
            }
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "nbbench",
                    "s3",
                    "s3://gone/objs/",
                    "--endpoint-url",
                    p.url,
                    "--no-save",
                    "--no-sweep",
                    "--runtime",
                    "30",
                    "--streams",
                    "2",
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
                stdin=subprocess.DEVNULL,
            )
            assert reading.wait(60), "the probe never started reading"
            srv.stop()  # the store goes away mid-run
            out, err = proc.communicate(timeout=60)
    finally:
        srv.stop()
    assert proc.returncode == 1, (out, err)
    assert "Traceback" not in err
    assert "failed" in err or "cannot connect" in err or "did not answer" in err


def test_no_boto3_is_one_line():
    code = (
        "import sys; sys.modules['boto3'] = None; from nbbench.cli import main; "
        "sys.exit(main(['s3', 's3://bench/x/', '--no-save']))"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1, r.stderr
    assert "pip install 'nbbench[s3]'" in r.stderr and "Traceback" not in r.stderr


def test_help_works_without_a_server():
    r = subprocess.run([sys.executable, "-m", "nbbench", "s3", "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "--endpoint-url" in r.stdout


@pytest.fixture(scope="module")
def shard_server(server):
    server.fill("s3://bench/shards/", count=4, size="1M", shards=True, samples_per_shard=16)
    return server


def test_shards_streams_tar_shards_from_s3(shard_server):
    from nbbench.probes.shards.probe import shards

    before = _listing(shard_server, prefix="shards/")
    r = shards("s3://bench/shards/", streams=2, endpoint_url=shard_server.endpoint_url)
    m = r.metrics
    assert r.status == "ok"
    assert m["shards_count"] == 4 and m["streams_count"] == 2
    assert m["samples_count"] == 4 * 16  # every WebDataset sample of every shard
    assert m["read_total_bytes"] == sum(s for _, _, s in before)  # every byte, once
    assert m["read_bytes_per_s"] > 0 and m["ttfb_p50_ns"] > 0
    assert "read_warm_bytes_per_s" not in m and "page cache" in r.labels["warm"]
    assert "from object storage" in r.answer()
    assert _listing(shard_server, prefix="shards/") == before


@pytest.mark.slow
def test_shards_from_s3_on_two_ranks_read_each_shard_once(shard_server, tmp_path):
    from rankproc import clean_env

    env = clean_env(NBBENCH_HOME=str(tmp_path), **DUMMY_CREDENTIALS)
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "nbbench",
            "shards",
            "s3://bench/shards/",
            "--endpoint-url",
            shard_server.endpoint_url,
            "--ranks",
            "2",
            "--json",
            "--no-save",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["metrics"]["samples_count"] == 4 * 16 and d["metrics"]["shards_count"] == 4


@pytest.mark.parametrize(
    "fstype,source,client,url",
    [
        ("fuse.s3fs", "s3fs", "s3fs", None),
        ("fuse", "mountpoint-s3", "mountpoint-s3", None),
        ("fuse.goofys", "datasets:imagenet", "goofys", "s3://datasets/imagenet/"),
        ("fuse.rclone", "minio:bench/shards", "rclone", "s3://bench/shards/"),
        ("fuse.gcsfuse", "my-bucket", "gcsfuse", None),
        ("fuse.sshfs", "me@host:/data", None, None),
        ("nfs4", "server:/export", None, None),
    ],
)
def test_fuse_mounts_of_object_storage_are_named(fstype, source, client, url):
    from nbbench.topology import object_storage_mount

    got = object_storage_mount(fstype, source)
    assert (got[0] if got else None) == client
    if got:
        assert got[1] == url


def test_the_doctor_points_a_fuse_bucket_to_the_s3_probe():
    from nbbench import topology
    from nbbench.doctor import storage

    line = "1108 1100 0:60 / /mnt/bucket rw,nosuid,nodev,relatime - fuse.rclone minio:bench/shards rw,user_id=0"
    mounts = topology.parse_mountinfo(line + "\n")
    c, _ = storage.check_mount("/mnt/bucket/x", mounts)
    assert c.status == "warn"
    assert "object storage through a FUSE client (rclone)" in c.evidence and "O_DIRECT is not honoured" in c.evidence
    assert "nbbench s3 s3://bench/shards/" in c.fix


@pytest.fixture(scope="module")
def loader_server(server):
    server.fill("s3://bench/ds/", count=4, size="512K", shards=True, samples_per_shard=32, seed=3)
    return server


def test_feed_from_s3_cold_from_the_store_warm_from_a_local_copy(loader_server, tmp_path, monkeypatch):
    pytest.importorskip("torch")
    import tempfile

    from nbbench.probes.pipeline.feed import feed

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    r = feed(
        "s3://bench/ds/",
        endpoint_url=loader_server.endpoint_url,
        batch_size=8,
        num_workers=0,
        duration=1.0,
        warmup=1,
        repeats=1,
    )
    m = r.metrics
    assert r.status == "ok"
    assert m["files_count"] == 4 * 32 and m["shards_count"] == 4
    assert m["cold_samples_per_s"] > 0 and m["warm_samples_per_s"] > 0
    assert "GET from object storage" in r.labels["cold_method"] and "local copy" in r.labels["warm"]
    assert "from object storage" in r.extra["answer"]
    assert list(tmp_path.iterdir()) == []  # the local copy is gone


def test_loader_on_an_s3_dataset(loader_server, tmp_path):
    pytest.importorskip("torch")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("AWS_")},
        **DUMMY_CREDENTIALS,
        "TMPDIR": str(tmp_path),
    }
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "nbbench",
            "loader",
            "s3://bench/ds/",
            "--endpoint-url",
            loader_server.endpoint_url,
            "--batch-size",
            "8",
            "--workers",
            "1",
            "--steps",
            "6",
            "--warmup",
            "1",
            "--no-plot",
            "--json",
            "--no-save",
        ],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["metrics"]["samples_per_s"] > 0 and "GET from the store" in d["labels"]["dataset"]
    assert [x for x in tmp_path.iterdir() if x.name.startswith(".nbbench-")] == []


def _all_keys(srv, bucket="bench"):
    c = srv.client()
    keys = [o["Key"] for o in c.list_objects_v2(Bucket=bucket).get("Contents", [])]
    ups = c.list_multipart_uploads(Bucket=bucket).get("Uploads") or []
    return sorted(keys), ups


def test_write_test_puts_new_keys_and_deletes_them(server):
    before = _all_keys(server)
    r = s3(
        "s3://bench/objs/",
        endpoint_url=server.endpoint_url,
        sweep=False,
        streams=2,
        runtime=0.3,
        ranged=False,
        write=True,
        write_size=1 << 20,
        write_count=4,
    )
    m = r.metrics
    assert m["put_count"] == 4 and m["put_bytes_per_s"] > 0 and m["multipart_parts_count"] >= 2
    assert m["deleted_count"] == 5  # 4 PUTs + the multipart object
    assert ".nbbench-" in r.labels["write"] and "nothing overwritten" in r.labels["write"]
    assert _all_keys(server) == before  # nothing left, nothing else touched


@pytest.mark.parametrize("delay", [0.4, 1.2, 2.5])
def test_write_test_sigterm_mid_upload_leaves_nothing(server, delay):
    import signal
    import threading

    before = _all_keys(server)
    putting = threading.Event()

    def rule(method, path, n):  # forwards everything; says when the first PUT goes through
        if method == "PUT":
            putting.set()
        return None

    with FaultProxy(server.endpoint_url, rule=rule) as p:
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("AWS_")}, **DUMMY_CREDENTIALS}
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "nbbench",
                "s3",
                "s3://bench/objs/",
                "--endpoint-url",
                p.url,
                "--no-save",
                "--no-sweep",
                "--no-ranged",
                "--runtime",
                "0.2",
                "--streams",
                "1",
                "--write",
                "--write-size",
                "1M",
                "--write-count",
                "200",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            stdin=subprocess.DEVNULL,
        )
        assert putting.wait(60), "no PUT was sent"
        time.sleep(delay)  # the moment of the signal within the uploads (not a synchronisation)
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    assert proc.returncode != 0
    assert _all_keys(server) == before


def test_repeat_runs_the_s3_probe_twice(server, tmp_path):
    r, _ = _cli(
        [
            "s3://bench/objs/",
            "--endpoint-url",
            server.endpoint_url,
            "--streams",
            "2",
            "--no-sweep",
            "--runtime",
            "0.3",
            "--no-ranged",
            "--repeat",
            "2",
            "--json",
        ],
        {"NBBENCH_HOME": str(tmp_path)},
    )
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert len(d["runs"]) == 2 and "min…max of 2 runs)" in d["summary"]
    assert "(GET ± " in d["summary"]


def test_s3_figures_have_a_direction_for_compare():
    from nbbench.compare.direction import better

    assert better("get_bytes_per_s", "s3") == "higher" and better("requests_per_s", "s3") == "higher"
    assert better("ttfb_p99_ns", "s3") == "lower" and better("list_keys_per_s", "s3") == "higher"
    assert better("knee_streams_count", "s3") is None
