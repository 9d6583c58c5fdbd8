"""feed on a small synthetic JPEG tree: the built-in Pillow dataset, the cold / warm
differential, how many accelerators it feeds; the CLI's --json answer; the magics."""

import json

import pytest

from nbbench.probes.pipeline.feed import FeedResult, evict_files, feed
from nbbench.probes.pipeline.imagefolder import ImageFolderDataset
from nbbench.results import ProbeError, Result


@pytest.fixture(scope="module")
def jpeg_tree(tmp_path_factory):
    from nbbench.datasets import make_image_folder

    return make_image_folder(tmp_path_factory.mktemp("feed") / "ds", files=96, size="6k", classes=3, jpeg=True)


@pytest.fixture(scope="module")
def bytes_tree(tmp_path_factory):
    from nbbench.datasets import make_image_folder

    return make_image_folder(tmp_path_factory.mktemp("feedb") / "ds", files=40, size="4k", classes=2)


def test_image_folder_dataset_decodes_crops_and_flips(jpeg_tree):
    ds = ImageFolderDataset(jpeg_tree, size=64)
    assert ds.decode == "pil" and len(ds) == 96 and len(ds.classes) == 3
    img, label = ds[50]
    assert tuple(img.shape) == (3, 64, 64) and str(img.dtype) == "torch.uint8"
    assert label == 1
    f, _ = ImageFolderDataset(jpeg_tree, size=32, dtype="float32")[0]
    assert str(f.dtype) == "torch.float32" and tuple(f.shape) == (3, 32, 32)
    import random

    rng = random.Random(1)
    for _ in range(50):
        x0, y0, x1, y1 = ds.crop_box(200, 100, rng)
        assert 0 <= x0 < x1 <= 200 and 0 <= y0 < y1 <= 100


def test_random_bytes_are_read_not_decoded(bytes_tree):
    ds = ImageFolderDataset(bytes_tree)
    assert ds.decode == "none"
    data, label = ds[0]
    assert data.numel() == 4096
    with pytest.raises(ProbeError, match="no image files"):
        ImageFolderDataset(bytes_tree, decode="pil")
    with pytest.raises(ProbeError, match="does not exist"):
        ImageFolderDataset(bytes_tree / "nope")


def test_feed_answers_how_many_accelerators(jpeg_tree):
    res = feed(jpeg_tree, accelerator="h100-resnet50", batch_size=8, num_workers=1, duration=0.5, size=64, warmup=1)
    assert res.ok, res.reason
    m = res.metrics
    need = 0.9 * 400 / 0.224
    assert m["needed_samples_per_s"] == pytest.approx(need)
    assert m["cold_samples_per_s"] > 0 and m["warm_samples_per_s"] > 0
    assert m["accelerators_fed_count"] == int(m["cold_samples_per_s"] // need)
    assert res.limiter in ("storage fetch", "CPU preparation")
    assert res.labels["cold_method"] == "fadvise"
    assert f"feed {m['accelerators_fed_count']} such" in res.answer
    frame = res.accelerators_frame()
    assert set(frame["accelerator"]) == {"h100-resnet50", "a100-resnet50"}
    assert isinstance(Result.from_dict(res.to_dict()), FeedResult)


def test_feed_bytes_only_warm_only(bytes_tree):
    res = feed(
        bytes_tree, accelerator="a100-resnet50", batch_size=4, num_workers=0, duration=0.3, cold="none", warmup=1
    )
    assert res.labels["decode"] == "none" and res.labels["cold_method"] == "none"
    assert "cold_samples_per_s" not in res.metrics and res.limiter is None
    assert res.metrics["samples_per_s"] == res.metrics["warm_samples_per_s"]


def test_feed_refuses_what_cannot_work(jpeg_tree):
    with pytest.raises(ProbeError, match="unknown accelerator"):
        feed(jpeg_tree, accelerator="tpu")
    with pytest.raises(ProbeError, match="smaller batch"):
        feed(jpeg_tree, batch_size=64)


def test_evict_files_is_read_only(jpeg_tree):
    paths = ImageFolderDataset(jpeg_tree).paths()[:5]
    before = [open(p, "rb").read() for p in paths]
    info = evict_files(paths)
    assert info == {"method": "fadvise", "files": 5, "failed": 0}
    assert [open(p, "rb").read() for p in paths] == before


def test_cli_feed_json_answers(jpeg_tree, capsys):
    from nbbench.cli import main

    rc = main(
        [
            "feed",
            str(jpeg_tree),
            "--accelerator",
            "h100-resnet50",
            "--json",
            "--batch-size",
            "8",
            "--workers",
            "1",
            "--duration",
            "0.3",
            "--size",
            "64",
            "--warmup",
            "1",
        ]
    )
    out = capsys.readouterr().out
    assert rc == 0
    d = json.loads(out)
    assert d["kind"] == "feed"
    assert isinstance(d["metrics"]["accelerators_fed_count"], int)
    assert "such accelerator" in d["extra"]["answer"]
    from nbbench.store import default_store

    assert default_store().count("feed") == 1


def test_cli_errors(tmp_path, capsys):
    from nbbench.cli import main

    assert main(["feed", str(tmp_path / "missing")]) == 1
    assert "not a directory" in capsys.readouterr().err
    assert main(["sweep", str(tmp_path), "--workers", "a,b"]) == 2
    assert main(["feed", str(tmp_path), "--accelerator", "tpu"]) == 2


def test_magics_loader_sweep_feed(jpeg_tree):
    from IPython.core.error import UsageError
    from IPython.testing.globalipapp import start_ipython

    ip = start_ipython()
    ip.run_line_magic("load_ext", "nbbench")
    import torch
    from torch.utils.data import DataLoader

    ip.user_ns["dl"] = DataLoader([torch.zeros(4, 2) for _ in range(30)], batch_size=None)
    r = ip.run_line_magic("iobench", "loader dl --steps 10 --emulate h100-cosmoflow -o -q --no-save")
    assert r.metrics["steps_count"] == 10 and r.labels["step"] == "emulate:h100-cosmoflow"
    ip.user_ns["ds"] = ImageFolderDataset(jpeg_tree, size=32)
    s = ip.run_line_magic("iobench", "sweep ds --workers 0 --batch-size 8 --duration 0.2 -o -q --no-save")
    assert s.kind == "sweep" and s.recommended["num_workers"] == 0
    f = ip.run_line_magic(
        "iobench", f"feed {jpeg_tree} --batch-size 8 --workers 0 --duration 0.2 --size 32 --warmup 1 -o -q --no-save"
    )
    assert f.kind == "feed"
    with pytest.raises(UsageError, match="no variable named"):
        ip.run_line_magic("iobench", "loader nothing_here")
