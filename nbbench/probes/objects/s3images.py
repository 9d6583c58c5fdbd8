"""Image objects in S3 as a DataLoader's dataset: ``loader s3://…`` and ``feed s3://…`` over images.

:class:`S3ImageDataset` is the local image folder
(:class:`~nbbench.probes.pipeline.imagefolder.ImageFolderDataset`) over the image objects under
``s3://BUCKET/PREFIX`` (the extensions the image folder accepts): ``PREFIX/CLASS/…/IMAGE``, the
class label the first "folder" after the prefix (sorted, as ImageFolder numbers its class
folders; objects right under the prefix are one class when there is no folder, else left out).
Each sample is one GET — in the DataLoader worker that asks for it, through the worker's own
boto3 client — then decoded, cropped and flipped by the same code as a local file
(:class:`~nbbench.probes.pipeline.imagetransform.CropFlip`).  One request per sample is what
makes a dataset of small objects request-bound: tar shards read the same samples in far fewer
requests.

A bucket may hold terabytes: above ``max_bytes`` a seeded subset is read (the shards probe's
own :func:`~nbbench.probes.shards.probe._subset`).  Under ``--ranks`` each rank reads a disjoint,
deterministic share (a stable hash of the key after the prefix, as shards are split).  With
``copy`` the objects are first copied into a new local directory laid out as an image folder
(:class:`~nbbench.probes.objects.s3source.S3Source`; removed by :meth:`close`, on error,
interrupt and SIGTERM): what ``feed``'s warm pass reads — from a local cache, said so — while
its cold pass GETs every sample from the store.  torch is imported when an item is made.
"""

from __future__ import annotations

import os

from ...results import ProbeError
from ...units import format_bytes
from ..pipeline.imagefolder import collate_records
from ..pipeline.imagetransform import CropFlip, SampleError, pil_can_open
from ..shards.probe import _subset, shard_rank
from .client import explain
from .s3source import S3Source, list_dataset

__all__ = ["S3ImageDataset", "labelled"]


def labelled(u, found) -> tuple[list[tuple[str, int, int]], list[str]]:
    """``([(key, size, label)], classes)``: each image object's class, the first folder after the prefix."""
    start = len(u.prefix)

    def rel(key: str) -> str:
        return key[start:].lstrip("/")

    classes = sorted({rel(k).split("/", 1)[0] for k, _ in found if "/" in rel(k)})
    if not classes:
        return [(k, s, 0) for k, s in found], ["."]
    index = {c: i for i, c in enumerate(classes)}
    return [(k, s, index[rel(k).split("/", 1)[0]]) for k, s in found if "/" in rel(k)], classes


class S3ImageDataset(S3Source, CropFlip):
    """Image objects under an s3:// prefix, one GET per sample (see the module doc)."""

    unit = "image object"

    def __init__(
        self,
        url,
        endpoint_url: str | None = None,
        region: str | None = None,
        cache_dir=None,
        decode: str = "auto",
        rank: int | None = None,
        world_size: int | None = None,
        seed: int = 0,
        max_bytes: int | None = None,
        copy: bool = True,
        listing=None,
        bs: int = 1 << 20,
        **transform,  # size, flip, scale, ratio, dtype: CropFlip.init_transform's
    ):
        # here, not at the top: .s3dataset imports this module
        from .s3dataset import DEFAULT_MAX_BYTES

        self.init_transform(decode, **transform)
        u, kind, found, pages = listing or list_dataset(str(url), endpoint_url, region)
        if kind != "images":
            raise ProbeError(f"no image objects under {u}: it holds tar shards (read them as shards)")
        self.init_source(u, endpoint_url, region, pages)
        self.root = str(u)
        self.seed = int(seed)
        items, self.classes = labelled(u, found)
        self.objects_found = len(items)
        if rank is not None and world_size is not None:  # a rank reads only its own share
            items = [o for o in items if shard_rank(o[0][len(u.prefix) :], int(world_size)) == int(rank)]
            if not items:
                raise ProbeError(
                    f"rank {rank} of {world_size} has no image object of {u} to read (they are split "
                    "by a stable hash of their key): use fewer ranks or more objects"
                )
        self.objects_mine = len(items)
        cap = DEFAULT_MAX_BYTES if max_bytes is None else (int(max_bytes) or None)
        self.max_bytes = cap
        label = {k: lab for k, _, lab in items}
        picked = _subset([(k, s) for k, s, _ in items], cap, seed)  # the shards probe's seeded subset
        self._sizes = dict(picked)
        self.samples: list[tuple[str, int]] = [(k, label[k]) for k, _ in picked]
        self._local: dict[str, str] = {}
        if decode != "none":
            first = self.samples[0][0]
            body = self.get(first)
            try:
                data = body.read()
            finally:
                body.close()
            if pil_can_open(data):
                decode = "pil"
            elif decode == "pil":
                raise ProbeError(
                    f"Pillow cannot decode {u.key_url(first)}: these are not images; "
                    "use decode='none' to read bytes only"
                )
            else:
                decode = "none"
        self.decode = decode
        if copy:
            self._copy(cache_dir, bs)

    def _copy(self, cache_dir, bs: int) -> None:
        cache = self.make_cache(sum(self._sizes.values()), cache_dir)
        try:
            for i, (key, label) in enumerate(self.samples):
                folder = os.path.join(cache, f"{label:05d}")  # root/CLASS/IMAGE, as the local image folder
                os.makedirs(folder, exist_ok=True)
                local = os.path.join(folder, f"{i:07d}{os.path.splitext(key)[1].lower()}")
                self.copy_object(key, local, bs)
                self._local[key] = local
        except BaseException:
            self.close()
            raise

    # --------------------------------------------------------------- dataset
    def __len__(self) -> int:
        return len(self.samples)

    @property
    def collate_fn(self):
        """The collate function a DataLoader needs (None: torch's default)."""
        return collate_records if self.decode == "none" else None

    def paths(self) -> list[str]:
        """The local copies of the samples (what a warm pass reads)."""
        return [self._local[k] for k, _ in self.samples if k in self._local]

    def total_bytes(self) -> int:
        return sum(self._sizes.get(k, 0) for k, _ in self.samples)

    def describe(self) -> str:
        """The dataset in one phrase: how many image objects, how many classes, and the subset if capped."""
        n = len(self.samples)
        text = (
            f"{self.root}: {self.objects_found} image objects in {len(self.classes)} "
            f"class{'es' if len(self.classes) != 1 else ''}, every sample one GET"
        )
        if n < self.objects_mine:
            text += (
                f"; a seeded subset of {n} of {self.objects_mine} (seed {self.seed}), "
                f"{format_bytes(self.total_bytes(), binary=True)} under the cap of "
                f"{format_bytes(self.max_bytes, binary=True)}"
            )
        return text

    def __repr__(self) -> str:
        return (
            f"S3ImageDataset({self.root!r}, {len(self)} image objects, {len(self.classes)} classes, "
            f"decode={self.decode!r}, reading from {'the store' if self.source == 's3' else 'a local copy'})"
        )

    def __getitem__(self, index: int):
        key, label = self.samples[index]
        if self.source == "local" and key in self._local:  # the copy, read as the local image folder reads
            path = self._local[key]
            with open(path, "rb") as f:
                return self.item(f.read(), path), label
        body = self.get(key)
        try:
            data = body.read()
        except Exception as exc:  # noqa: BLE001 - a connection cut mid-body, a key deleted meanwhile
            raise SampleError(f"{key}: {explain(exc, self.url, self.endpoint_url)}") from None
        finally:
            body.close()
        return self.item(data, self.url.key_url(key)), label
