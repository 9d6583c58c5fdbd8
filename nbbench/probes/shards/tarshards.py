"""A built-in streaming dataset over tar shards (WebDataset's layout), no webdataset package needed.

:class:`TarShardDataset` is a ``torch.utils.data.IterableDataset``: each DataLoader
worker streams its own shards whole, sequentially (:class:`~nbbench.probes.shards.tarwalk.TarWalker`
groups the members into samples by key as the bytes go by: ``000123.jpg`` +
``000123.cls`` is one sample), and yields ``(tensor, label)`` — the image member decoded
with the same crop and flip as the image-folder dataset
(:class:`~nbbench.probes.pipeline.imagetransform.CropFlip`), the label from the ``.cls`` member
(0 without one) — or, with ``decode="none"``, the image member's bytes.

Which shards a process reads: first its rank's — the shards whose stable hash (of the
path relative to the root, :func:`nbbench.probes.shards.probe.shard_rank`) modulo
``world_size`` is its ``rank`` (given, or torch.distributed's when a process group is
initialised) — then, of those, every ``num_workers``-th of the epoch's seeded shuffle
from its worker id (``torch.utils.data.get_worker_info``): across ranks and workers each
shard is read once an epoch.  :meth:`set_epoch` reshuffles, as a DistributedSampler's.
Shards are opened read-only.  This module imports torch: import it only where torch is.
"""

from __future__ import annotations

import os
import random

from torch.utils.data import IterableDataset, get_worker_info

from ...results import ProbeError
from ..pipeline.imagefolder import collate_records
from ..pipeline.imagetransform import IMAGE_EXTENSIONS, CropFlip, pil_can_open
from ..storage.files import _open_noatime
from .probe import find_shards, shard_rank
from .tarwalk import TarWalker, count_samples

__all__ = ["TarShardDataset", "has_tar_shards", "split_shards"]

_IMAGE_SUFFIXES = tuple(e.lstrip(".") for e in IMAGE_EXTENSIONS)


def has_tar_shards(path) -> bool:
    """Does the folder hold ``.tar`` files at its top (a set of shards, not an image tree)?  One listing."""
    try:
        with os.scandir(os.path.expanduser(str(path))) as it:
            return any(e.name.lower().endswith(".tar") and not e.name.startswith(".") and e.is_file() for e in it)
    except OSError:
        return False


def _why_empty(path: str) -> str:
    """Why a shard gave no sample: 'a.tar is not a tar file' / 'a.tar holds no samples'."""
    import tarfile

    name = os.path.basename(path)
    try:
        ok = tarfile.is_tarfile(path)
    except OSError as exc:
        return f"{name} cannot be read ({exc.strerror or exc})"
    return f"{name} holds no samples" if ok else f"{name} is not a tar file"


def split_shards(
    relpaths, rank: int, world_size: int, worker: int, workers: int, seed: int = 0, epoch: int = 0
) -> list[str]:
    """The shards worker ``worker`` of rank ``rank`` reads this epoch (see the module doc)."""
    mine = sorted(p for p in relpaths if shard_rank(p, world_size) == rank)
    random.Random(seed * 1_000_003 + epoch).shuffle(mine)
    return mine[worker::workers]


class TarShardDataset(CropFlip, IterableDataset):
    """Samples streamed from the tar shards under ``root`` (see the module doc)."""

    def __init__(
        self,
        root,
        decode: str = "auto",
        rank: int | None = None,
        world_size: int | None = None,
        seed: int = 0,
        bs: int = 1 << 20,
        **transform,  # size, flip, scale, ratio, dtype: CropFlip.init_transform's
    ):
        self.root = os.path.abspath(os.path.expanduser(str(root)))
        self.init_transform(decode, **transform)
        files, fmt = find_shards(self.root)
        if fmt != "tar" or not files:
            raise ProbeError(f"no .tar shards under {self.root} (nbbench make-dataset DIR --shards 8 makes some)")
        self.rank, self.world_size = rank, world_size
        self.seed, self.bs, self.epoch = int(seed), int(bs), 0
        #: (shard path, samples in it): the index, from the tar headers alone
        self.samples: list[tuple[str, int]] = []
        self._sizes: dict[str, int] = {}
        for path, nbytes in files:
            try:
                _, n = count_samples(path)
            except OSError as exc:
                raise ProbeError(f"cannot read {path}: {exc.strerror or exc}") from None
            self.samples.append((path, n))
            self._sizes[path] = nbytes
        if not any(n for _, n in self.samples):  # say which shard is unusable, not "0 batches of 64"
            raise ProbeError(
                "no usable samples: "
                + "; ".join(_why_empty(p) for p, _ in self.samples[:3])
                + (f" (and {len(self.samples) - 3} more)" if len(self.samples) > 3 else "")
            )
        if decode == "auto":
            decode = "pil" if self._first_is_image() else "none"
        self.decode = decode

    # ----------------------------------------------------------- the index
    @property
    def shards(self) -> list[str]:
        return [p for p, _ in self.samples]

    def _first_is_image(self) -> bool:
        gen = self._read(self.samples[0][0])
        try:
            for _, sample in gen:
                suffix = next((s for s in sample if s.endswith(_IMAGE_SUFFIXES)), None)
                return suffix is not None and pil_can_open(sample[suffix])
            return False
        finally:
            gen.close()

    def _part(self) -> tuple[int, int]:
        rank, world = self.rank, self.world_size
        if rank is None or world is None:
            try:
                import torch.distributed as dist

                if dist.is_available() and dist.is_initialized():
                    return dist.get_rank(), dist.get_world_size()
            except Exception:  # noqa: BLE001
                pass
            return 0, 1
        return int(rank), int(world)

    def _mine(self, worker: int = 0, workers: int = 1) -> list[str]:
        rank, world = self._part()
        rel = {os.path.relpath(p, self.root): p for p, _ in self.samples}
        return [rel[r] for r in split_shards(rel, rank, world, worker, workers, self.seed, self.epoch)]

    def __len__(self) -> int:
        counts = dict(self.samples)
        return sum(counts[p] for p in self._mine())

    def __repr__(self) -> str:
        return (
            f"TarShardDataset({self.root!r}, {len(self.samples)} shards, {sum(n for _, n in self.samples)} "
            f"samples, decode={self.decode!r}" + (f", size={self.size}" if self.decode == "pil" else "") + ")"
        )

    def paths(self) -> list[str]:
        """The shard files this process reads (to evict from or warm the page cache)."""
        return self._mine()

    def total_bytes(self) -> int:
        return sum(self._sizes.get(p, 0) for p in self._mine())

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    @property
    def collate_fn(self):
        return collate_records if self.decode == "none" else None

    # ------------------------------------------------------------ reading
    def _read(self, path: str):
        walker = TarWalker(collect=True)
        buf = bytearray(self.bs)
        view = memoryview(buf)
        fd = _open_noatime(path)
        try:
            while not walker.ended:
                k = os.readv(fd, [buf])
                if k <= 0:
                    break
                yield from walker.feed(view[:k])  # it copies what it keeps
        finally:
            os.close(fd)
        yield from walker.finish()

    def __iter__(self):
        info = get_worker_info()
        worker, workers = (info.id, info.num_workers) if info is not None else (0, 1)
        for path in self._mine(worker, workers):
            for key, sample in self._read(path):
                suffix = next((s for s in sample if s.endswith(_IMAGE_SUFFIXES)), None)
                if suffix is None:
                    continue
                cls = sample.get("cls", b"0").strip() or b"0"
                label = int(cls) if cls.isdigit() else 0
                yield self.item(sample[suffix], f"{path}:{key}.{suffix}"), label
