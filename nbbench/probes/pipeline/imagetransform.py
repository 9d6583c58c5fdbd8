"""The image side of the built-in datasets: decode with Pillow, random-resized crop, flip.

:class:`CropFlip` is a mixin both built-in datasets share — the image folder
(:class:`~nbbench.probes.pipeline.imagefolder.ImageFolderDataset`) and the tar shards
(:class:`~nbbench.probes.shards.tarshards.TarShardDataset`) — so a JPEG read from a file and
one read from a shard are prepared the same way: decoded with Pillow, a random-resized
crop (torchvision's ``RandomResizedCrop`` rule: scale 8–100 % of the area, aspect
3/4–4/3, ten tries then a centre crop) resized to ``size``×``size``, flipped left-right
half the time, returned as a ``uint8`` CHW tensor (torchvision's ``PILToTensor``) or
``float32`` normalised with ImageNet's mean and std (``ToTensor`` + ``Normalize``).
No torchvision needed; torch and Pillow are imported when an item is made.
"""

from __future__ import annotations

import io
import math
import random

from ...results import ProbeError

__all__ = ["CropFlip", "IMAGE_EXTENSIONS", "SampleError", "pil_can_open"]

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")
_MEAN = (0.485, 0.456, 0.406)
_STD = (0.229, 0.224, 0.225)


class SampleError(ProbeError):
    """A sample a built-in dataset cannot read or decode, in one line — also when a DataLoader worker raised
    it and torch raises it again with the worker's whole traceback as the message (its last line is kept)."""

    def __init__(self, message="", advice=None):
        lines = [ln for ln in str(message).splitlines() if ln.strip()]
        last = lines[-1] if lines else ""
        if len(lines) > 1 and "SampleError: " in last:
            last = last.split("SampleError: ", 1)[1]
        super().__init__(last, advice)


#: how a built-in dataset reads a sample: decoded with Pillow, as bytes, or auto (Pillow when they are images)
DECODES = ("auto", "pil", "none")


class CropFlip:
    """Mixin: ``self.size``, ``flip``, ``scale``, ``ratio``, ``dtype`` and the transform they define.

    The one declaration of the transform's options: every built-in dataset (image folder, tar shards,
    their S3 forms) takes them as keywords and hands them here, so a new option or default is written once.
    """

    def init_transform(
        self,
        decode: str = "auto",
        size: int = 224,
        flip: bool = True,
        scale=(0.08, 1.0),
        ratio=(3 / 4, 4 / 3),
        dtype: str = "uint8",
    ) -> None:
        """``decode`` checked (the dataset resolves "auto" itself); the crop ``size`` in pixels, random
        horizontal ``flip``, torchvision's RandomResizedCrop ``scale`` and ``ratio``, the tensor ``dtype``."""
        if decode not in DECODES:
            raise ProbeError(f"decode must be 'auto', 'pil' or 'none', not {decode!r}")
        if dtype not in ("uint8", "float32"):
            raise ProbeError(f"dtype must be 'uint8' or 'float32', not {dtype!r}")
        self.size = int(size)
        self.flip = bool(flip)
        self.scale = tuple(scale)
        self.ratio = tuple(ratio)
        self.dtype = dtype

    def crop_box(self, width: int, height: int, rng=random) -> tuple[int, int, int, int]:
        """A random-resized-crop box (left, top, right, bottom), torchvision's rule."""
        area = width * height
        log_ratio = (math.log(self.ratio[0]), math.log(self.ratio[1]))
        for _ in range(10):
            target = area * rng.uniform(*self.scale)
            aspect = math.exp(rng.uniform(*log_ratio))
            w = int(round(math.sqrt(target * aspect)))
            h = int(round(math.sqrt(target / aspect)))
            if 0 < w <= width and 0 < h <= height:
                x = rng.randint(0, width - w)
                y = rng.randint(0, height - h)
                return x, y, x + w, y + h
        # fallback: the central crop with the aspect clamped to the range
        in_ratio = width / height
        if in_ratio < self.ratio[0]:
            w, h = width, int(round(width / self.ratio[0]))
        elif in_ratio > self.ratio[1]:
            h, w = height, int(round(height * self.ratio[1]))
        else:
            w, h = width, height
        x, y = (width - w) // 2, (height - h) // 2
        return x, y, x + w, y + h

    def item(self, data: bytes, name: str):
        """One sample's tensor: its bytes as a ``uint8`` tensor (``self.decode == "none"``), else decoded and
        transformed (``name`` says which sample in an error)."""
        import torch

        if getattr(self, "decode", "pil") == "none":
            return torch.frombuffer(bytearray(data), dtype=torch.uint8) if data else torch.empty(0, dtype=torch.uint8)
        return self._transform(data, name)

    def _transform(self, data: bytes, path: str):
        import torch
        from PIL import Image

        try:
            img = Image.open(io.BytesIO(data))
            img = img.convert("RGB")
        except Exception as exc:  # noqa: BLE001 - Pillow raises many kinds
            why = str(exc).split(" <_io.")[0] or type(exc).__name__  # not the buffer's address
            raise SampleError(f"Pillow cannot decode {path}: {why}") from None
        box = self.crop_box(*img.size)
        img = img.resize((self.size, self.size), Image.BILINEAR, box=box)
        if self.flip and random.random() < 0.5:
            img = img.transpose(Image.FLIP_LEFT_RIGHT)
        t = torch.frombuffer(bytearray(img.tobytes()), dtype=torch.uint8).view(self.size, self.size, 3)
        t = t.permute(2, 0, 1).contiguous()
        if self.dtype == "float32":
            t = t.to(torch.float32).div_(255.0)
            mean = torch.tensor(_MEAN).view(3, 1, 1)
            std = torch.tensor(_STD).view(3, 1, 1)
            t = t.sub_(mean).div_(std)
        return t


def pil_can_open(source) -> bool:
    """Can Pillow open this image (a path or bytes)?"""
    try:
        from PIL import Image

        with Image.open(io.BytesIO(source) if isinstance(source, (bytes, bytearray)) else source) as im:
            im.verify()
        return True
    except Exception:  # noqa: BLE001
        return False
