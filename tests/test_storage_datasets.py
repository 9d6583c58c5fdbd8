import hashlib
import os
from pathlib import Path

import pytest

from nbbench.datasets import MARKER, make_image_folder
from nbbench.results import ProbeError


def _digest(root: Path) -> dict:
    return {str(p.relative_to(root)): hashlib.sha1(p.read_bytes()).hexdigest() for p in sorted(root.rglob("img_*"))}


def test_bin_tree_layout_sizes_and_determinism(tmp_path):
    a = make_image_folder(tmp_path / "a", files=20, size="3k", classes=4, seed=7)
    b = make_image_folder(tmp_path / "b", files=20, size="3k", classes=4, seed=7)
    c = make_image_folder(tmp_path / "c", files=20, size="3k", classes=4, seed=8)
    classes = sorted(p.name for p in a.iterdir() if p.is_dir())
    assert classes == ["class_000", "class_001", "class_002", "class_003"]
    imgs = sorted(a.rglob("img_*.bin"))
    assert len(imgs) == 20
    assert all(p.stat().st_size == 3072 for p in imgs)
    assert _digest(a) == _digest(b)
    assert _digest(a) != _digest(c)


def test_jpeg_about_the_size_and_decodable(tmp_path):
    from PIL import Image

    root = make_image_folder(tmp_path / "j", files=6, size="40k", classes=2, jpeg=True)
    imgs = sorted(root.rglob("img_*.jpg"))
    assert len(imgs) == 6
    for p in imgs:
        assert 0.85 * 40960 <= p.stat().st_size <= 1.15 * 40960
        with Image.open(p) as im:
            assert im.format == "JPEG"


def test_refuses_foreign_nonempty_dir_and_never_overwrites(tmp_path):
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(ProbeError, match="not empty"):
        make_image_folder(tmp_path, files=3, size="1k")
    assert sorted(os.listdir(tmp_path)) == ["keep.txt"]


def test_rerun_resumes_and_keeps_existing_files(tmp_path):
    root = make_image_folder(tmp_path / "d", files=6, size="2k", classes=2)
    victim = next(root.rglob("img_*.bin"))
    victim.write_bytes(b"user data")  # an existing file is never rewritten
    gone = sorted(root.rglob("img_*.bin"))[-1]
    gone.unlink()
    make_image_folder(root, files=6, size="2k", classes=2)
    assert victim.read_bytes() == b"user data"
    assert gone.exists() and gone.stat().st_size == 2048
    assert (root / MARKER).exists()
    with pytest.raises(ProbeError, match="other parameters"):
        make_image_folder(root, files=7, size="2k", classes=2)


def test_progress_and_bad_args(tmp_path):
    calls = []
    make_image_folder(tmp_path / "p", files=3, size=100, classes=1, progress=lambda f, m: calls.append(f))
    assert calls and calls[-1] == 1.0
    with pytest.raises(ProbeError):
        make_image_folder(tmp_path / "q", files=0)
    with pytest.raises(ProbeError, match="size"):
        make_image_folder(tmp_path / "q", files=1, size="12 parsecs")
    with pytest.raises(ProbeError, match="free space"):
        make_image_folder(tmp_path / "q", files=10, size="100T")
    assert not (tmp_path / "q").exists()
