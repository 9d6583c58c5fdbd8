"""A synthetic ImageNet-like dataset, to try the storage and DataLoader probes
without a real one.

:func:`make_image_folder` writes ``root/class_XXX/img_XXXXXXX.bin`` (random bytes)
or ``.jpg`` (real JPEGs of random noise, made with Pillow, sized so the encoded file
is about the size asked for).  :func:`make_tar_shards` writes the same kind of JPEGs
as WebDataset-like tar shards ``root/shard-XXXXXX.tar``, each sample two members
sharing a key: ``000123.jpg`` and ``000123.cls`` (the class label as text).  The same
``seed`` gives the same bytes.

Safety: files are written as new ``.nbbench-ds-…`` temporary files (``O_CREAT|O_EXCL``, see
:mod:`nbbench.tempfiles`) that take their final name only when whole, never replacing one.  A
non-empty ``root`` is refused unless it holds a previous nbbench dataset (its
marker file ``.nbbench-dataset.json``) made with the same parameters; then only
the missing files are written, so an interrupted run can be resumed.  A file
being written when an error, Ctrl-C or SIGTERM strikes is removed (a SIGKILL's is swept by
the next write probe or dataset run in that directory).
"""

from __future__ import annotations

import errno
import io
import json
import os
import random
import time
from pathlib import Path
from typing import Any

from . import tempfiles, tempsweep
from .probes.storage.target import check_free_space
from .progress import call_progress
from .results import ProbeError
from .units import format_bytes, parse_size

__all__ = ["make_image_folder", "make_tar_shards", "MARKER", "jpeg_dimensions"]

MARKER = ".nbbench-dataset.json"
_JPEG_QUALITY = 85


def _params(files: int, size: int, classes: int, jpeg: bool, seed: int) -> dict[str, Any]:
    return {
        "nbbench_dataset": 1,
        "files": files,
        "size_bytes": size,
        "classes": classes,
        "jpeg": bool(jpeg),
        "seed": seed,
    }


def _file_rng(seed: int, index: int) -> random.Random:
    return random.Random(seed * 1_000_003 + index)


def jpeg_dimensions(size: int, rng: random.Random | None = None) -> tuple[int, int]:
    """Width and height (4:3) of a random-noise JPEG whose encoded size is about ``size``.

    Calibrated by encoding: noise compresses little, so the encoded size grows
    with the pixel count; two rounds of correction land within a few percent.
    """
    from PIL import Image

    rng = rng or random.Random(12345)
    bpp = 0.77  # bytes per pixel of RGB noise at quality 85 (first guess)
    w = h = 8
    for _ in range(3):
        pixels = max(64.0, (size - 700) / bpp)
        w = max(8, int(round((pixels * 4 / 3) ** 0.5)))
        h = max(8, int(round(w * 3 / 4)))
        im = Image.frombytes("RGB", (w, h), rng.randbytes(w * h * 3))
        buf = io.BytesIO()
        im.save(buf, "JPEG", quality=_JPEG_QUALITY)
        got = len(buf.getvalue())
        if abs(got - size) <= 0.02 * size:
            break
        bpp = max(0.05, (got - 700) / (w * h)) if got > 700 else bpp / 2
    return w, h


def _jpeg_bytes(rng: random.Random, w: int, h: int) -> bytes:
    from PIL import Image

    im = Image.frombytes("RGB", (w, h), rng.randbytes(w * h * 3))
    buf = io.BytesIO()
    im.save(buf, "JPEG", quality=_JPEG_QUALITY)
    return buf.getvalue()


def _check_root(root: Path, params: dict[str, Any]) -> None:
    if root.exists() and not root.is_dir():
        raise ProbeError(f"{root} exists and is not a directory; give a new or empty directory")
    if not root.exists():
        return
    marker = root / MARKER
    _sweep(root)  # a run killed before its marker was whole left only its temporary file
    try:
        entries = [e.name for e in os.scandir(root)]
    except PermissionError:
        raise ProbeError(f"no permission to list {root}") from None
    if not entries:
        return
    if MARKER not in entries:
        raise ProbeError(
            f"{root} is not empty and holds no nbbench dataset; give a new or empty directory "
            "(nbbench never writes into a directory it did not make)"
        )
    try:
        old = json.loads(marker.read_text())
    except (OSError, ValueError):
        raise ProbeError(f"{marker} cannot be read; remove it or give another directory") from None
    if old != params:
        diff = ", ".join(f"{k}={old.get(k)!r} (asked {v!r})" for k, v in params.items() if old.get(k) != v)
        raise ProbeError(f"{root} holds an nbbench dataset made with other parameters: {diff}; give another directory")


def make_image_folder(
    root, files=1000, size="110k", classes=10, jpeg=False, seed=0, progress=None, *, cancel=None
) -> Path:
    """Make an ImageNet-like tree ``root/class_XXX/img_XXXXXXX.(jpg|bin)`` and return ``root``.

    Parameters
    ----------
    root : path
        A new or empty directory (or one holding a previous nbbench dataset with
        the same parameters: missing files are added, existing ones kept).
    files : int
        Number of files in all, spread evenly over the classes.
    size : int or str
        About how large each file is (``"110k"`` = 110 KiB, dd semantics).
    classes : int
        Number of class folders.
    jpeg : bool
        Real JPEG images (random noise, Pillow) instead of random bytes.
    seed : int
        Same seed, same bytes.
    progress : callable ``(fraction, metrics)``, optional
    cancel : threading.Event, optional
        Set it to stop early; the files written so far are kept (complete ones only).
    """
    files = int(files)
    classes = int(classes)
    if files < 1:
        raise ProbeError(f"files must be 1 or more, not {files}")
    if classes < 1:
        raise ProbeError(f"classes must be 1 or more, not {classes}")
    classes = min(classes, files)
    try:
        nbytes = parse_size(size)
    except ValueError as exc:
        raise ProbeError(str(exc)) from None
    if nbytes < 1:
        raise ProbeError("size must be at least 1 byte")
    root = Path(os.path.expanduser(str(root))).absolute()
    params = _params(files, nbytes, classes, jpeg, int(seed))
    _check_root(root, params)

    parent = root if root.exists() else root.parent
    if not parent.is_dir():
        raise ProbeError(f"{parent} does not exist; create it first")
    check_free_space(parent, files * (nbytes + 4096))

    _start(root, params)

    dims = jpeg_dimensions(nbytes, random.Random(seed)) if jpeg else None
    ext = "jpg" if jpeg else "bin"
    per_class = -(-files // classes)
    t0 = time.monotonic()
    written = 0
    last = 0.0
    for i in range(files):
        if cancel is not None and cancel.is_set():
            break
        cdir = root / f"class_{i // per_class:03d}"
        if i % per_class == 0 or not cdir.exists():
            cdir.mkdir(exist_ok=True)
            _sweep(cdir)
        path = cdir / f"img_{i:07d}.{ext}"
        if path.exists():
            continue
        rng = _file_rng(int(seed), i)
        data = _jpeg_bytes(rng, *dims) if jpeg else rng.randbytes(nbytes)

        def write(fd, data=data):
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]

        _write_new(path, write)
        written += 1
        now = time.monotonic()
        if progress is not None and now - last > 0.2:
            last = now
            el = max(now - t0, 1e-9)
            call_progress(
                progress, (i + 1) / files, {"files_per_s": written / el, "done": i + 1, "total": files, "unit": "files"}
            )
    call_progress(progress, 1.0, None)
    return root


def _shard_params(shards: int, shard_size: int, size: int, classes: int, seed: int) -> dict[str, Any]:
    return {
        "nbbench_dataset": 1,
        "format": "tar-shards",
        "shards": shards,
        "shard_size_bytes": shard_size,
        "size_bytes": size,
        "classes": classes,
        "jpeg": True,
        "seed": seed,
    }


def _sweep(directory: Path) -> None:
    """Remove the ``.nbbench-ds-…`` files a killed run of this host left (never another's)."""
    tempsweep.sweep_stale(directory)


def _start(root: Path, params: dict[str, Any]) -> None:
    """``root`` made (or kept), a killed run's leftovers swept, the marker written whole."""
    root.mkdir(parents=True, exist_ok=True)
    _sweep(root)
    marker = root / MARKER
    if not marker.exists():
        text = (json.dumps(params, indent=1) + "\n").encode()
        _write_new(marker, lambda fd: os.write(fd, text) and None)


def _write_new(path: Path, write) -> bool:
    """Write a new file ``path`` whole or not at all: ``write(fd)`` fills a new registered
    ``.nbbench-ds-…`` temporary file beside it (removed on error, Ctrl-C, SIGTERM; swept after a
    SIGKILL), which then takes the name without replacing anything (``link``; ``rename`` after a
    check where the filesystem has no hard links).  ``write`` returning False (cancelled): nothing
    is kept.  A file of the dataset is thus never left half written under its own name."""
    with tempfiles.temp_file(path.parent, "ds") as tf:
        if write(tf.fd) is False:
            return False
        os.fchmod(tf.fd, 0o644)
        try:
            os.link(tf.path, path)
        except FileExistsError:
            raise ProbeError(
                f"{path} appeared while it was being written (another run in {path.parent}?); nothing was replaced"
            ) from None
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK, errno.EXDEV):
                raise
            if os.path.lexists(path):
                raise ProbeError(f"{path} appeared while it was being written; nothing was replaced") from None
            os.rename(tf.path, path)
    return True


def make_tar_shards(
    root, shards=8, shard_size="32M", size="110k", classes=10, seed=0, progress=None, *, cancel=None
) -> Path:
    """Make WebDataset-like tar shards ``root/shard-XXXXXX.tar`` of JPEG + class-label samples; returns ``root``.

    Each shard holds as many samples as fit in about ``shard_size`` bytes: a JPEG of random
    noise of about ``size`` bytes (Pillow) as ``KEY.jpg`` and its class (``KEY.cls``, the
    number as text), keys numbered across the shards (``000000`` …).  Same safety as
    :func:`make_image_folder`: a new or empty ``root`` (or one made before with the same
    parameters: missing shards are added), files created ``O_EXCL``, a shard being
    written when an error, Ctrl-C or ``cancel`` strikes removed.
    """
    import tarfile

    shards, classes = int(shards), int(classes)
    if shards < 1:
        raise ProbeError(f"shards must be 1 or more, not {shards}")
    if classes < 1:
        raise ProbeError(f"classes must be 1 or more, not {classes}")
    try:
        shard_b, img_b = parse_size(shard_size), parse_size(size)
    except ValueError as exc:
        raise ProbeError(str(exc)) from None
    if img_b < 1024:
        raise ProbeError("size must be at least 1 KiB (a JPEG)")
    if shard_b < img_b + 2048:
        raise ProbeError(
            f"a shard of {format_bytes(shard_b, binary=True)} cannot hold one sample of "
            f"{format_bytes(img_b, binary=True)}: give a larger --shard-size"
        )
    root = Path(os.path.expanduser(str(root))).absolute()
    params = _shard_params(shards, shard_b, img_b, classes, int(seed))
    _check_root(root, params)

    parent = root if root.exists() else root.parent
    if not parent.is_dir():
        raise ProbeError(f"{parent} does not exist; create it first")
    check_free_space(parent, shards * shard_b)
    _start(root, params)
    w, h = jpeg_dimensions(img_b, random.Random(seed))
    padded = -(-img_b // 512) * 512
    per_shard = max(1, shard_b // (padded + 3 * 512))
    for i in range(shards):
        path = root / f"shard-{i:06d}.tar"
        if path.exists():
            continue

        def write(fd, i=i):
            with os.fdopen(os.dup(fd), "wb") as f, tarfile.open(fileobj=f, mode="w", format=tarfile.USTAR_FORMAT) as t:
                for j in range(per_shard):
                    if cancel is not None and cancel.is_set():
                        return False
                    k = i * per_shard + j
                    rng = _file_rng(int(seed), k)
                    for name, data in (
                        (f"{k:06d}.jpg", _jpeg_bytes(rng, w, h)),
                        (f"{k:06d}.cls", str(k % classes).encode()),
                    ):
                        ti = tarfile.TarInfo(name)
                        ti.size, ti.mode, ti.mtime = len(data), 0o644, 0
                        t.addfile(ti, io.BytesIO(data))
                    call_progress(progress, (i + (j + 1) / per_shard) / shards, None)
            return True

        if not _write_new(path, write):
            break
    call_progress(progress, 1.0, None)
    return root


def describe(root) -> str:
    """One line about a dataset made here: '1000 files of ~110 KiB in 10 classes'."""
    p = json.loads((Path(root) / MARKER).read_text())
    if p.get("format") == "tar-shards":
        return (
            f"{p['shards']} tar shards of ~{format_bytes(p['shard_size_bytes'], binary=True)} (JPEGs of "
            f"~{format_bytes(p['size_bytes'], binary=True)} + class labels, {p['classes']} classes)"
        )
    kind = "JPEGs" if p["jpeg"] else "files"
    return f"{p['files']} {kind} of ~{format_bytes(p['size_bytes'], binary=True)} in {p['classes']} classes"
