"""``loader s3://…`` and ``feed s3://…`` over image objects (not tar shards), against a local S3 server (moto).

40 small JPEGs under two class prefixes: every sample one GET, the labels from the class
"folder", the feed's warm pass from a local copy read as an image folder (and removed after),
``--ranks 2`` shares that sum to the dataset, a corrupt image named in one line, a prefix with
neither shards nor images one line, nothing left in the temporary directory.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("boto3")
pytest.importorskip("moto.server")

from rankproc import short_tmpdir  # noqa: E402

from nbbench.results import ProbeError  # noqa: E402
from nbbench.testing import DUMMY_CREDENTIALS, local_s3  # noqa: E402

PER_CLASS = 20
CLASSES = ("cat", "dog")


def _jpeg(i: int) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (40 + i % 7, 32 + i % 5), (i * 6 % 256, 90, 200 - i)).save(buf, format="JPEG", quality=70)
    return buf.getvalue()


@pytest.fixture(scope="module")
def server():
    pytest.importorskip("PIL")
    with local_s3() as srv:
        c = srv.client()
        c.create_bucket(Bucket="imgs")
        for ci, cls in enumerate(CLASSES):
            for i in range(PER_CLASS):
                c.put_object(Bucket="imgs", Key=f"train/{cls}/{i:03d}.jpg", Body=_jpeg(ci * PER_CLASS + i))
        c.put_object(Bucket="imgs", Key="bad/a/000.jpg", Body=_jpeg(1))
        c.put_object(Bucket="imgs", Key="bad/a/001.jpg", Body=b"not a jpeg at all" * 10)
        c.put_object(Bucket="imgs", Key="other/notes.txt", Body=b"neither shards nor images")
        yield srv


def _env(tmp_path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    short_tmpdir(tmp_path)  # TMPDIR short enough for a worker's Unix socket
    env.update(DUMMY_CREDENTIALS, TMPDIR=os.path.realpath(tmp_path / "tmp"), NBBENCH_HOME=str(tmp_path / "home"))
    return env


def _cli(server, tmp_path, *args, timeout=240):
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "nbbench",
            *args[:1],
            args[1],
            "--endpoint-url",
            server.endpoint_url,
            *args[2:],
            "--no-save",
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=_env(tmp_path),
        stdin=subprocess.DEVNULL,
    )


def _one_line(p) -> str:
    """The command's one error line (the progress bar's own line, if any, aside); exit 1, no traceback."""
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("nbbench ")]
    assert len(lines) == 1 and len([ln for ln in p.stderr.splitlines() if ln.strip()]) <= 2, p.stderr
    return lines[0]


def test_the_dataset_lists_labels_and_gets_one_object_per_sample(server, tmp_path, monkeypatch):
    pytest.importorskip("torch")
    import tempfile

    from nbbench.probes.objects.s3dataset import check_shares, open_s3_dataset
    from nbbench.probes.objects.s3images import S3ImageDataset

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    ds = open_s3_dataset("s3://imgs/train/", endpoint_url=server.endpoint_url, size=32)
    try:
        assert isinstance(ds, S3ImageDataset) and len(ds) == 2 * PER_CLASS and ds.decode == "pil"
        assert ds.classes == list(CLASSES)
        assert {lab for k, lab in ds.samples if "/dog/" in k} == {1} and {
            lab for k, lab in ds.samples if "/cat/" in k
        } == {0}
        assert len(ds.paths()) == len(ds) and all(os.path.isfile(p) for p in ds.paths())  # the local copy
        before = ds.requests()[0]
        t, label = ds[len(ds) - 1]
        assert tuple(t.shape) == (3, 32, 32) and label == 1
        assert ds.requests()[0] == before + 1  # one GET per sample
        ds.use("local")
        ds[0]
        assert ds.requests()[0] == before + 1  # the warm pass reads the copy
    finally:
        ds.close()
    assert list(tmp_path.iterdir()) == []
    capped = S3ImageDataset("s3://imgs/train/", server.endpoint_url, max_bytes=8 * len(_jpeg(0)), copy=False)
    assert 0 < len(capped) < 2 * PER_CLASS and "seeded subset" in capped.describe()
    again = S3ImageDataset("s3://imgs/train/", server.endpoint_url, max_bytes=8 * len(_jpeg(0)), copy=False)
    assert again.samples == capped.samples
    assert check_shares("s3://imgs/train/", 2, server.endpoint_url) == 2 * PER_CLASS
    with pytest.raises(ProbeError, match="image objects .* none to read"):
        check_shares("s3://imgs/train/", 200, server.endpoint_url)
    shares = [
        S3ImageDataset("s3://imgs/train/", server.endpoint_url, rank=r, world_size=2, copy=False).samples
        for r in (0, 1)
    ]
    keys = [k for s in shares for k, _ in s]
    assert all(shares) and len(keys) == len(set(keys)) == 2 * PER_CLASS  # disjoint, together the whole set


def test_throttled_gets_are_retried_and_counted(server):
    pytest.importorskip("torch")
    from s3proxy import FaultProxy

    from nbbench.probes.objects.s3images import S3ImageDataset

    rule = lambda m, path, n: (503, "SlowDown") if m == "GET" and "list-type" not in path and n % 3 == 0 else None  # noqa: E731
    with FaultProxy(server.endpoint_url, rule=rule) as p:
        ds = S3ImageDataset("s3://imgs/train/", p.url, size=32, copy=False)
        for i in range(6):
            ds[i]
    assert p.injected > 0 and ds.requests()[1] == p.injected  # every 503 retried by boto3, and counted
    assert ds.requests()[0] == 1 + 1 + 6  # a LIST page, the first object's GET, six GETs


def test_loader_over_image_objects(server, tmp_path):
    pytest.importorskip("torch")
    p = _cli(
        server,
        tmp_path,
        "loader",
        "s3://imgs/train/",
        "--batch-size",
        "4",
        "--workers",
        "1",
        "--steps",
        "4",
        "--warmup",
        "1",
        "--size",
        "32",
        "--no-plot",
        "--json",
    )
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["status"] == "ok" and d["metrics"]["samples_per_s"] > 0
    assert f"{2 * PER_CLASS} image objects in 2 classes, every sample one GET" in d["labels"]["dataset"]
    assert d["metrics"]["requests_count"] >= 1 + (1 + 4) * 4 and d["metrics"]["retries_count"] == 0
    assert "GETs: one per image object" in d["labels"]["requests"]  # counted in the worker too
    assert list((tmp_path / "tmp").iterdir()) == []


def test_feed_over_image_objects_cold_by_gets_warm_from_a_local_copy(server, tmp_path):
    pytest.importorskip("torch")
    p = _cli(
        server,
        tmp_path,
        "feed",
        "s3://imgs/train/",
        "--batch-size",
        "4",
        "--workers",
        "0",
        "--duration",
        "1",
        "--warmup",
        "1",
        "--size",
        "32",
        "--json",
    )
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    m = d["metrics"]
    assert d["status"] == "ok" and m["files_count"] == m["objects_count"] == 2 * PER_CLASS
    assert m["cold_samples_per_s"] > 0 and m["warm_samples_per_s"] > 0
    assert d["labels"]["cold_method"] == "every image object a GET from object storage"
    assert "local copy of the image objects" in d["labels"]["warm"] and "local cache" in d["labels"]["warm"]
    assert m["requests_count"] >= 2 * PER_CLASS and "from object storage" in d["extra"]["answer"]
    assert (
        "every image object a GET" in d["extra"]["answer"]
        and "s3://imgs/train/: 40 image objects" in d["labels"]["dataset"]
    )
    assert list((tmp_path / "tmp").iterdir()) == []


@pytest.mark.slow
def test_loader_over_image_objects_on_two_ranks(server, tmp_path):
    pytest.importorskip("torch")
    p = _cli(
        server,
        tmp_path,
        "loader",
        "s3://imgs/train/",
        "--ranks",
        "2",
        "--batch-size",
        "4",
        "--workers",
        "0",
        "--steps",
        "3",
        "--warmup",
        "1",
        "--size",
        "32",
        "--no-plot",
        "--json",
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    shares = [r["metrics"]["dataset_samples_count"] for r in d["extra"]["ranks"]]
    assert all(s > 0 for s in shares) and sum(shares) == 2 * PER_CLASS == d["metrics"]["dataset_samples_count"]
    assert "image objects split over 2 ranks" in d["labels"]["sampler"]
    assert list((tmp_path / "tmp").iterdir()) == []


@pytest.mark.slow
def test_feed_over_image_objects_on_two_ranks(server, tmp_path):
    pytest.importorskip("torch")
    p = _cli(
        server,
        tmp_path,
        "feed",
        "s3://imgs/train/",
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
        "--size",
        "32",
        "--json",
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    rows, m = d["extra"]["ranks"], d["metrics"]
    assert all(r["metrics"]["objects_count"] > 0 for r in rows)
    assert sum(r["metrics"]["objects_count"] for r in rows) == 2 * PER_CLASS == m["objects_count"] == m["files_count"]
    assert m["cold_samples_per_s"] > 0 and m["warm_samples_per_s"] > 0 and m["requests_count"] >= 2 * PER_CLASS
    assert "image objects" in d["labels"]["dataset"] and "local copy of its image objects" in d["labels"]["warm"]
    assert list((tmp_path / "tmp").iterdir()) == []


def test_idle_ranks_are_refused_in_one_line(server, tmp_path):
    line = _one_line(_cli(server, tmp_path, "feed", "s3://imgs/train/", "--ranks", "64"))
    assert f"{2 * PER_CLASS} image objects" in line and "none to read" in line


def test_a_corrupt_image_object_is_one_line_naming_its_key(server, tmp_path):
    pytest.importorskip("torch")
    p = _cli(
        server,
        tmp_path,
        "loader",
        "s3://imgs/bad/",
        "--batch-size",
        "2",
        "--workers",
        "1",
        "--steps",
        "2",
        "--warmup",
        "0",
        "--no-plot",
    )
    line = _one_line(p)
    assert "Pillow cannot decode s3://imgs/bad/a/001.jpg" in line
    assert list((tmp_path / "tmp").iterdir()) == []


def test_a_corrupt_file_in_a_local_folder_is_the_same_one_line(tmp_path):
    pytest.importorskip("torch")
    (tmp_path / "ds" / "a").mkdir(parents=True)
    (tmp_path / "ds" / "a" / "000.jpg").write_bytes(_jpeg(0))
    (tmp_path / "ds" / "a" / "001.jpg").write_bytes(b"not a jpeg at all" * 10)
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "nbbench",
            "loader",
            str(tmp_path / "ds"),
            "--batch-size",
            "2",
            "--workers",
            "1",
            "--steps",
            "2",
            "--warmup",
            "0",
            "--no-plot",
            "--no-save",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(tmp_path),
        stdin=subprocess.DEVNULL,
    )
    assert f"Pillow cannot decode {tmp_path / 'ds' / 'a' / '001.jpg'}" in _one_line(p)  # from the worker, one line


def test_a_sample_error_raised_again_by_torch_keeps_one_line():
    from nbbench.probes.pipeline.imagetransform import SampleError

    wrapped = (
        "Caught SampleError in DataLoader worker process 0.\nOriginal Traceback (most recent call last):\n"
        '  File "x.py", line 1, in f\nnbbench.probes.pipeline.imagetransform.SampleError: k.jpg: gone\n'
    )
    assert str(SampleError(wrapped)) == "k.jpg: gone" and str(SampleError("one line")) == "one line"


@pytest.mark.parametrize("cmd", ["loader", "feed"])
def test_a_prefix_with_neither_shards_nor_images_is_one_line(server, tmp_path, cmd):
    line = _one_line(_cli(server, tmp_path, cmd, "s3://imgs/other/"))
    assert "no .tar shards or image objects" in line and "s3://imgs/other/" in line
    assert list((tmp_path / "tmp").iterdir()) == []
