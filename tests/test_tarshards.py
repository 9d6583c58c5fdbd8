"""feed and loader on a folder of tar shards: the built-in streaming dataset splits the shards over
DataLoader workers and ranks (each read once), prepares JPEGs as the image folder does, and feed
answers with accelerators fed; and the must-show command lines on 8 shards of 32 MiB."""

import json
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

from nbbench.datasets import make_tar_shards  # noqa: E402
from nbbench.probes.pipeline.imagefolder import ImageFolderDataset  # noqa: E402
from nbbench.probes.shards.tarshards import TarShardDataset, has_tar_shards, split_shards  # noqa: E402

PY = sys.executable


@pytest.fixture(scope="module")
def unique_labels(tmp_path_factory):
    """5 shards whose class labels are the sample numbers (classes > samples): every sample told apart."""
    return make_tar_shards(
        tmp_path_factory.mktemp("tarshards") / "ds", shards=5, shard_size="120k", size="6k", classes=100000
    )


def _labels(ds, workers):
    dl = torch.utils.data.DataLoader(ds, batch_size=4, num_workers=workers, collate_fn=ds.collate_fn)
    return [int(x) for batch in dl for x in batch["labels"]]


def test_split_over_ranks_and_workers_reads_each_shard_once():
    names = [f"shard-{i:06d}.tar" for i in range(23)]
    for world in (1, 2, 3):
        for workers in (1, 2, 4):
            got = [
                s
                for r in range(world)
                for w in range(workers)
                for s in split_shards(names, r, world, w, workers, seed=1, epoch=2)
            ]
            assert sorted(got) == names, (world, workers)  # none missed, none twice
    assert split_shards(names, 0, 1, 0, 1, epoch=0) != split_shards(names, 0, 1, 0, 1, epoch=1)  # reshuffled


def test_a_dataloader_with_workers_yields_every_sample_once(unique_labels):
    ds = TarShardDataset(unique_labels, decode="none")
    n = len(ds)
    assert n == sum(c for _, c in ds.samples) and n > 20 and len(ds.shards) == 5
    assert sorted(_labels(ds, 0)) == list(range(n))
    assert sorted(_labels(ds, 2)) == list(range(n))
    parts = [TarShardDataset(unique_labels, decode="none", rank=r, world_size=2) for r in range(2)]
    got = [_labels(p, 2) for p in parts]
    assert sorted(got[0] + got[1]) == list(range(n)) and got[0] and got[1]
    assert sorted(parts[0].paths() + parts[1].paths()) == sorted(ds.paths())
    assert len(parts[0]) + len(parts[1]) == n
    assert parts[0].total_bytes() + parts[1].total_bytes() == sum(os.path.getsize(p) for p in ds.paths())


def test_jpegs_are_prepared_as_the_image_folder_prepares_them(unique_labels):
    assert TarShardDataset.crop_box is ImageFolderDataset.crop_box
    assert TarShardDataset._transform is ImageFolderDataset._transform
    ds = TarShardDataset(unique_labels, size=32)
    assert ds.decode == "pil"
    img, label = next(iter(ds))
    assert tuple(img.shape) == (3, 32, 32) and img.dtype == torch.uint8 and isinstance(label, int)
    assert has_tar_shards(unique_labels) and not has_tar_shards(unique_labels / "nothing")


def test_feed_on_shards_evicts_the_shard_files(unique_labels, monkeypatch):
    from nbbench.probes.pipeline import feed as feedmod

    evicted = []
    real = feedmod.evict_files
    monkeypatch.setattr(
        feedmod, "evict_files", lambda paths, *a, **k: (evicted.append(list(paths)), real(paths, *a, **k))[1]
    )
    r = feedmod.feed(str(unique_labels), batch_size=4, num_workers=1, duration=0.5, warmup=1, repeats=1)
    assert r.metrics["accelerators_fed_count"] is not None and r.metrics["shards_count"] == 5
    assert "TarShardDataset" in r.labels["dataset"] and r.labels["limiter"]
    assert evicted and sorted(evicted[0]) == sorted(str(p) for p in unique_labels.glob("*.tar"))


@pytest.mark.slow
def test_must_show_make_dataset_shards_then_shards_and_feed_json(tmp_path):
    d = tmp_path / "wds"
    mk = subprocess.run(
        [PY, "-m", "nbbench", "make-dataset", str(d), "--shards", "8", "--shard-size", "4M"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert mk.returncode == 0, mk.stderr
    assert "8 tar shards" in mk.stdout and len(list(d.glob("shard-*.tar"))) == 8
    out = subprocess.run([PY, "-m", "nbbench", "shards", str(d), "--json"], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)
    assert res["kind"] == "shards" and res["status"] == "ok"
    assert res["metrics"]["read_bytes_per_s"] > 0 and res["metrics"]["samples_per_s"] > 0
    assert res["metrics"]["shards_count"] == 8 and res["labels"]["cache"] in ("buffered-cold", "buffered-warm")
    fd = subprocess.run(
        [PY, "-m", "nbbench", "feed", str(d), "--json", "--duration", "2"], capture_output=True, text=True, timeout=600
    )
    assert fd.returncode == 0, fd.stderr
    feed = json.loads(fd.stdout)
    assert feed["kind"] == "feed" and isinstance(feed["metrics"]["accelerators_fed_count"], int)
    assert feed["metrics"]["shards_count"] == 8


def test_feed_on_a_folder_whose_only_tar_is_corrupt_says_which_and_why(tmp_path, capsys):
    from nbbench import cli

    (tmp_path / "a.tar").write_bytes(b"\x93not a tar at all" * 300)
    rc = cli.main(["feed", str(tmp_path), "--no-save"])
    err = capsys.readouterr().err
    assert rc != 0 and "no usable samples: a.tar is not a tar file" in err and "batches of" not in err
