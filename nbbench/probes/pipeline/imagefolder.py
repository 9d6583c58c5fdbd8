"""A built-in image-folder dataset: read the files, decode them with Pillow.

``root/CLASS/IMAGE`` (ImageNet's layout; a flat folder is one class).  Each item reads
its file, decodes it with Pillow, takes a random-resized crop (torchvision's
``RandomResizedCrop`` rule: scale 8–100 % of the area, aspect 3/4–4/3, ten tries
then a centre crop) resized to ``size``×``size``, flips it left-right half the time,
and returns ``(tensor, label)`` — a ``uint8`` CHW tensor (torchvision's
``PILToTensor``), or ``float32`` normalised with ImageNet's mean and std
(``ToTensor`` + ``Normalize``); the transform is :mod:`nbbench.probes.pipeline.imagetransform`'s,
shared with the tar-shard dataset.  No torchvision needed.

``decode="none"`` reads the bytes only (the storage side of the pipeline); items are
variable-length, so the dataset's :attr:`collate_fn` gathers them into
``{"labels": tensor, "data": [tensors]}``.  ``decode="auto"`` decodes when the first
file is an image Pillow can open, else reads bytes.

The dataset is map-style (``__len__`` / ``__getitem__``) and picklable, so it works
with any ``torch.utils.data.DataLoader``; torch is imported only when items are made.
Files are opened read-only.
"""

from __future__ import annotations

import os
from pathlib import Path

from ...results import ProbeError
from .imagetransform import IMAGE_EXTENSIONS, CropFlip, pil_can_open

__all__ = ["ImageFolderDataset", "collate_records", "IMAGE_EXTENSIONS"]


def collate_records(items):
    """Collate ``(tensor, label)`` items of different lengths: labels first, then the list."""
    import torch

    labels = torch.tensor([int(lab) for _, lab in items], dtype=torch.int64)
    return {"labels": labels, "data": [t for t, _ in items]}


def _scan(root: Path, extensions) -> tuple[list[tuple[str, int]], list[str]]:
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except FileNotFoundError:
        raise ProbeError(f"{root} does not exist") from None
    except NotADirectoryError:
        raise ProbeError(f"{root} is not a directory: give the dataset's top folder (root/CLASS/IMAGE)") from None
    except PermissionError:
        raise ProbeError(f"no permission to list {root}") from None

    def files_in(d):
        out = []
        for dirpath, dirnames, filenames in os.walk(d):
            dirnames[:] = sorted(n for n in dirnames if not n.startswith("."))
            for name in sorted(filenames):
                if name.startswith("."):
                    continue
                if extensions is None or name.lower().endswith(extensions):
                    out.append(os.path.join(dirpath, name))
        return out

    classes = [e.name for e in entries if e.is_dir() and not e.name.startswith(".")]
    samples: list[tuple[str, int]] = []
    if classes:
        for i, c in enumerate(classes):
            samples.extend((p, i) for p in files_in(root / c))
    top = [
        e.path
        for e in entries
        if e.is_file() and not e.name.startswith(".") and (extensions is None or e.name.lower().endswith(extensions))
    ]
    if top and not classes:
        classes = ["."]
        samples = [(p, 0) for p in top]
    return samples, classes


class ImageFolderDataset(CropFlip):
    """Files under ``root`` (class folders), decoded with Pillow or read as bytes (the transform:
    :class:`~nbbench.probes.pipeline.imagetransform.CropFlip`, shared with the tar-shard dataset)."""

    def __init__(
        self,
        root,
        decode: str = "auto",
        extensions=None,
        limit: int | None = None,
        **transform,  # size, flip, scale, ratio, dtype: CropFlip.init_transform's
    ):
        self.root = Path(os.path.expanduser(str(root))).absolute()
        self.init_transform(decode, **transform)
        exts = None if decode == "none" and extensions is None else tuple(extensions or IMAGE_EXTENSIONS)
        if decode == "auto" and extensions is None:
            exts = None  # decide after looking at the files
        self.samples, self.classes = _scan(self.root, exts)
        if decode == "auto":
            images = [s for s in self.samples if s[0].lower().endswith(IMAGE_EXTENSIONS)]
            if images and _pil_can_open(images[0][0]):
                decode = "pil"
                self.samples = images
            else:
                decode = "none"
        elif decode == "pil":
            self.samples = [s for s in self.samples if s[0].lower().endswith(exts)]
        if limit is not None:
            self.samples = self.samples[: int(limit)]
        if not self.samples:
            what = "image files (" + ", ".join(IMAGE_EXTENSIONS) + ")" if decode == "pil" else "files"
            raise ProbeError(
                f"no {what} under {self.root}: give a folder laid out as root/CLASS/IMAGE "
                "(nbbench make-dataset DIR --jpeg makes one)"
            )
        if decode == "pil" and not _pil_can_open(self.samples[0][0]):
            raise ProbeError(
                f"Pillow cannot decode {self.samples[0][0]}: these are not images; use decode='none' to read bytes only"
            )
        self.decode = decode

    # --------------------------------------------------------------- dataset
    def __len__(self) -> int:
        return len(self.samples)

    def __repr__(self) -> str:
        return (
            f"ImageFolderDataset({str(self.root)!r}, {len(self)} files, {len(self.classes)} classes, "
            f"decode={self.decode!r}" + (f", size={self.size}" if self.decode == "pil" else "") + ")"
        )

    @property
    def collate_fn(self):
        """The collate function a DataLoader needs (None: torch's default)."""
        return collate_records if self.decode == "none" else None

    def paths(self) -> list[str]:
        return [p for p, _ in self.samples]

    def total_bytes(self) -> int:
        total = 0
        for p, _ in self.samples:
            try:
                total += os.stat(p).st_size
            except OSError:
                pass
        return total

    def __getitem__(self, index: int):
        path, label = self.samples[index]
        with open(path, "rb") as f:
            data = f.read()
        return self.item(data, path), label


def _pil_can_open(path: str) -> bool:
    return pil_can_open(path)
