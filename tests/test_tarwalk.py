"""The tar header walk of the shards probe and the streaming dataset: members and WebDataset
samples counted in the bytes as they are read, in chunks of any size."""

import io
import os
import tarfile

import pytest

from nbbench.probes.shards.tarwalk import TarWalker, count_samples, split_key

LONG = "deep/" + "x" * 150 + "/000002"
MEMBERS = [
    ("000000.jpg", os.urandom(1000)),
    ("000000.cls", b"3"),
    ("000001.jpg", os.urandom(513)),
    ("000001.cls", b"1"),
    ("000001.json", b"{}"),
    (LONG + ".jpg", b"abc"),
    (LONG + ".cls", b""),  # a key only a long name carries
    ("noext", b"zz"),  # no suffix: in no sample
    ("000003.jpg", b"q"),
    ("000003.jpg", b"r"),  # a repeated suffix starts a new sample
    ("a.b/000004.seg.png", b"s"),
    ("a.b/000004.cls", b"4"),
]  # dots in the directory and the suffix
KEYS = ["000000", "000001", LONG, "000003", "000003", "a.b/000004"]


def _tar(members, fmt):
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode="w", format=fmt) as t:
        d = tarfile.TarInfo("somedir")
        d.type = tarfile.DIRTYPE
        t.addfile(d)  # not a member of any sample
        for name, data in members:
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            t.addfile(ti, io.BytesIO(data))
    return b.getvalue()


def test_split_key_is_webdatasets_rule():
    assert split_key("000123.jpg") == ("000123", "jpg")
    assert split_key("dir/000123.seg.PNG") == ("dir/000123", "seg.png")
    assert split_key("a.b/c") is None and split_key("noext") is None


@pytest.mark.parametrize("fmt", [tarfile.GNU_FORMAT, tarfile.PAX_FORMAT], ids=["gnu", "pax"])
@pytest.mark.parametrize("chunk", [1, 7, 511, 512, 513, 4096, 1 << 20])
def test_members_and_samples_whatever_the_chunks(fmt, chunk):
    data = _tar(MEMBERS, fmt)
    for collect in (False, True):
        w = TarWalker(collect=collect)
        got = []
        for i in range(0, len(data), chunk):
            got += w.feed(data[i : i + chunk])
        got += w.finish()
        assert w.error is None and w.ended
        assert (w.members, w.samples) == (len(MEMBERS), len(KEYS))
        if collect:
            assert [k for k, _ in got] == KEYS
            assert got[0][1] == {"jpg": MEMBERS[0][1], "cls": b"3"}
            assert got[1][1]["json"] == b"{}" and got[2][1] == {"jpg": b"abc", "cls": b""}
            assert got[4][1] == {"jpg": b"r"} and got[5][1] == {"seg.png": b"s", "cls": b"4"}
        else:
            assert got == []


def test_a_key_split_across_two_reads_is_one_sample():
    data = _tar(
        [("000000.jpg", b"j" * 700), ("000000.cls", b"1"), ("000001.jpg", b"k"), ("000001.cls", b"2")],
        tarfile.USTAR_FORMAT,
    )
    cut = 512 + 1024 + 100  # inside the second member's header: the sample's two members in two reads
    w = TarWalker(collect=True)
    first = w.feed(data[:cut])
    assert (w.members, w.samples) == (1, 1) and first == []
    rest = w.feed(data[cut:]) + w.finish()
    assert (w.members, w.samples) == (4, 2)
    assert [(k, sorted(v)) for k, v in rest] == [("000000", ["cls", "jpg"]), ("000001", ["cls", "jpg"])]


def test_not_a_tar_stops_with_an_error():
    w = TarWalker()
    w.feed(os.urandom(4096))
    assert w.ended and w.error and "checksum" in w.error and w.samples == 0


def test_count_samples_reads_a_file(tmp_path):
    p = tmp_path / "s.tar"
    p.write_bytes(_tar(MEMBERS, tarfile.GNU_FORMAT))
    assert count_samples(str(p)) == (len(MEMBERS), len(KEYS))


def test_the_index_reads_headers_only(tmp_path, monkeypatch):
    import nbbench.probes.shards.tarwalk as tw

    members = [(f"{i:06d}.{ext}", os.urandom(20_000)) for i in range(20) for ext in ("jpg", "cls")]
    p = tmp_path / "big.tar"
    p.write_bytes(_tar(members, tarfile.GNU_FORMAT))
    read = []
    real = os.pread
    monkeypatch.setattr(tw.os, "pread", lambda fd, n, off: (read.append(n), real(fd, n, off))[1])
    assert count_samples(str(p)) == (40, 20)
    assert sum(read) <= 43 * 512 < os.path.getsize(p) // 30  # 40 headers, the directory's, the end block
