"""shards: large files read as parallel sequential streams, cold then warm; tar samples counted on the
way; read only; split between ranks by a stable hash; make-dataset --shards writes a set to try."""

import hashlib
import io
import json
import os
import tarfile
import threading

import pytest

from nbbench.datasets import MARKER, make_tar_shards
from nbbench.probes.shards.probe import find_shards, plan_streams, shard_rank, shards
from nbbench.results import ProbeError, Result


@pytest.fixture(scope="module")
def small_shards(tmp_path_factory):
    return make_tar_shards(
        tmp_path_factory.mktemp("shards") / "ds", shards=5, shard_size="200k", size="8k", classes=1000
    )


def _true_counts(paths):
    members = samples = 0
    for p in paths:
        with tarfile.open(p) as t:
            names = [m.name for m in t.getmembers() if m.isfile()]
        members += len(names)
        samples += len({n.split(".", 1)[0] for n in names})
    return members, samples


def _fingerprint(root):
    out = {}
    for p, _ in find_shards(str(root))[0]:
        st = os.stat(p)
        out[p] = (hashlib.sha256(open(p, "rb").read()).hexdigest(), st.st_mtime_ns, st.st_size)
    return out


def test_make_tar_shards_writes_webdataset_samples(small_shards):
    files, fmt = find_shards(str(small_shards))
    assert fmt == "tar" and [os.path.basename(p) for p, _ in files] == [f"shard-{i:06d}.tar" for i in range(5)]
    with tarfile.open(files[1][0]) as t:
        names = t.getnames()
        first = t.extractfile(names[0]).read()
        cls = t.extractfile(names[1]).read()
    per = len(names) // 2
    assert names[:2] == [f"{per:06d}.jpg", f"{per:06d}.cls"]  # keys numbered across the shards
    assert first[:3] == b"\xff\xd8\xff" and cls == str(per % 1000).encode()  # a JPEG and its class
    assert all(abs(s - 200 * 1024) < 16 * 1024 for _, s in files)
    assert json.loads((small_shards / MARKER).read_text())["format"] == "tar-shards"


def test_make_tar_shards_is_safe(tmp_path):
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "mine.txt").write_text("x")
    with pytest.raises(ProbeError, match="not empty"):
        make_tar_shards(tmp_path / "busy", shards=1, shard_size="64k", size="8k")
    # the same seed gives the same bytes; a re-run with the same options adds only what is missing
    a = make_tar_shards(tmp_path / "a", shards=2, shard_size="64k", size="8k")
    b = make_tar_shards(tmp_path / "b", shards=2, shard_size="64k", size="8k")
    assert (a / "shard-000001.tar").read_bytes() == (b / "shard-000001.tar").read_bytes()
    (a / "shard-000001.tar").unlink()
    make_tar_shards(a, shards=2, shard_size="64k", size="8k")
    assert (a / "shard-000001.tar").read_bytes() == (b / "shard-000001.tar").read_bytes()
    with pytest.raises(ProbeError, match="other parameters"):
        make_tar_shards(a, shards=3, shard_size="64k", size="8k")
    # cancelled mid-shard: the shard being written is removed, the finished ones kept
    stop = threading.Event()
    calls = []

    def prog(f, m):
        calls.append(f)
        if len(calls) == 6:
            stop.set()

    make_tar_shards(tmp_path / "c", shards=3, shard_size="64k", size="8k", progress=prog, cancel=stop)
    left = sorted(n for n in os.listdir(tmp_path / "c") if n.endswith(".tar"))
    assert left == ["shard-000000.tar"]
    with tarfile.open(tmp_path / "c" / left[0]) as t:
        assert len(t.getnames()) > 2


def test_find_shards_prefers_tar_then_chunks_then_large_files(tmp_path):
    (tmp_path / "a.bin").write_bytes(b"x" * 10)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.parquet").write_bytes(b"y" * 10)
    (tmp_path / "big.dat").write_bytes(b"z" * 3000)
    (tmp_path / ".hidden.bin").write_bytes(b"h")
    (tmp_path / ".nbbench-dd-host-1-0123abcd.tmp").write_bytes(b"t" * 5000)
    files, fmt = find_shards(str(tmp_path), min_size=1000)
    assert fmt == "chunks" and [os.path.basename(p) for p, _ in files] == ["a.bin", "b.parquet"]
    (tmp_path / "a.bin").unlink()
    (tmp_path / "sub" / "b.parquet").unlink()
    assert find_shards(str(tmp_path), min_size=1000) == ([(str(tmp_path / "big.dat"), 3000)], "files")
    assert find_shards(str(tmp_path), min_size=4000) == ([], "files")
    (tmp_path / "s.tar").write_bytes(b"\0" * 1024)
    assert find_shards(str(tmp_path), min_size=1000)[1] == "tar"


def test_streams_and_ranks_read_every_shard_once():
    files = [(f"/d/s{i:04d}.tar", 1000 + i) for i in range(37)]
    plan = plan_streams(files, 4, seed=3)
    flat = [f for s in plan for f in s]
    assert sorted(flat) == sorted(files) and len(flat) == len(set(flat))
    assert plan == plan_streams(files, 4, seed=3) and plan != plan_streams(files, 4, seed=4)
    assert flat != sorted(flat)  # shuffled
    for world in (1, 2, 3, 5):
        parts = [[p for p, _ in files if shard_rank(os.path.relpath(p, "/d"), world) == r] for r in range(world)]
        assert sorted(sum(parts, [])) == sorted(p for p, _ in files)  # none missed, none twice
        if world > 1:
            assert all(parts), "a stable hash spreads 37 shards over every rank"
    assert shard_rank("s0001.tar", 7) == shard_rank("s0001.tar", 7)


def test_shards_reads_cold_then_warm_and_counts_samples(small_shards):
    before = _fingerprint(small_shards)
    paths = list(before)
    seen = []
    r = shards(small_shards, streams=2, bs="64k", progress=lambda f, m: seen.append(f))
    assert r.ok and r.kind == "shards" and r.metrics["streams_count"] == 2
    m = r.metrics
    total = sum(size for _, _, size in before.values())
    assert m["read_total_bytes"] == total == m["read_warm_total_bytes"] and m["shards_count"] == 5
    assert m["read_bytes_per_s"] > 0 and m["read_warm_bytes_per_s"] > 0
    assert (m["members_count"], m["samples_count"]) == _true_counts(paths)
    assert m["samples_per_s"] == pytest.approx(m["samples_count"] / m["elapsed_s"])
    assert m["ttfb_p50_ns"] <= m["ttfb_p90_ns"] <= m["ttfb_p99_ns"] and m["warm_ttfb_p50_ns"] > 0
    assert r.labels["cache"] == "buffered-cold" and m["cold_resident_pct"] < 5
    assert "fadvise" in r.labels["cache_drop"] and r.labels["shard_format"] == "tar"
    st = r.streams_frame()
    assert list(st["shards"]) and sum(st["shards"]) == 5 and sum(st["bytes"]) == total
    assert r.ttfb_histogram().n == 5
    assert seen[-1] == 1.0
    assert set(r.extra["t0_unix"]) == {"read", "read_warm"}  # each pass's start (for ranks' timelines)
    assert _fingerprint(small_shards) == before  # read only: bytes and mtime unchanged
    assert "samples" in r.answer() and "from the page cache" in r.answer()
    back = Result.from_dict(json.loads(r.to_json()))
    assert type(back).__name__ == "ShardsResult" and back == r


def test_shards_on_chunks_ranks_subsets_and_cancel(tmp_path):
    for i in range(6):
        (tmp_path / f"c{i}.bin").write_bytes(os.urandom(100_000 + i))
    r = shards(tmp_path, streams=8, warm=False)
    assert r.ok and r.metrics["streams_count"] == 6 and "samples_per_s" not in r.metrics
    assert "read_warm_bytes_per_s" not in r.metrics and r.labels["shard_format"] == "chunks"
    assert any("6 shards" in w for w in r.warnings)
    per_rank = [shards(tmp_path, warm=False, rank=k, world_size=3) for k in range(3)]
    done = [x for x in per_rank if x.ok]
    assert sum(x.metrics["read_total_bytes"] for x in done) == r.metrics["read_total_bytes"]
    assert sum(x.metrics["shards_count"] for x in done) == 6
    sub = shards(tmp_path, max_bytes="250k", cold=False)
    assert sub.metrics["shards_count"] == 2 and "subset" in sub.labels and "read_bytes_per_s" not in sub.metrics
    stop = threading.Event()
    stop.set()
    assert shards(tmp_path, cancel=stop).status == "interrupted"
    with pytest.raises(ProbeError, match="does not exist"):
        shards(tmp_path / "none")
    with pytest.raises(ProbeError, match="not a directory"):
        shards(tmp_path / "c0.bin")


def test_no_shards_is_one_sentence(tmp_path):
    (tmp_path / "small.txt").write_text("x")
    with pytest.raises(ProbeError, match=r"no shards under .*--min-size.*make-dataset DIR --shards"):
        shards(tmp_path)


def test_a_broken_tar_is_counted_up_to_the_break(tmp_path):
    good = io.BytesIO()
    with tarfile.open(fileobj=good, mode="w") as t:
        for name, data in (("000000.jpg", b"a" * 600), ("000000.cls", b"1")):
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            t.addfile(ti, io.BytesIO(data))
    data = good.getvalue()
    (tmp_path / "x.tar").write_bytes(data[:2048] + os.urandom(4096))
    r = shards(tmp_path, warm=False)
    assert r.metrics["samples_count"] == 1 and any("not valid tar" in w for w in r.warnings)


def test_the_rank_split_is_balanced_on_counter_names():
    names = [f"shard-{i:06d}.tar" for i in range(64)]
    for world in (2, 4, 8):
        counts = [sum(shard_rank(n, world) == r for n in names) for r in range(world)]
        assert min(counts) >= 64 // world // 2, (world, counts)  # crc32 puts shard-000000..07 all on rank 0 of 2
