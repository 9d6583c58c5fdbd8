"""Tar shards or image objects in S3 as a DataLoader's dataset: what ``loader s3://…`` and ``feed s3://…`` read.

:func:`open_s3_dataset` lists the prefix once and opens the dataset it holds: tar shards when
there are ``.tar`` objects (:class:`S3TarShardDataset`), else image objects
(:class:`~nbbench.probes.objects.s3images.S3ImageDataset`, one GET per sample), else one line
naming both (:func:`~nbbench.probes.objects.s3source.list_dataset`).

:class:`S3TarShardDataset` is :class:`~nbbench.probes.shards.tarshards.TarShardDataset` over the
``.tar`` objects under an ``s3://BUCKET/PREFIX``: the same samples (``000123.jpg`` +
``000123.cls``), the same crop and flip, the same split over ranks and DataLoader workers
(by a stable hash of the key after the prefix).  Each worker process opens its own boto3
client (a client does not survive a fork) and streams its shards by GETs.

To know its length it first copies the shards it will read into a new local directory
(:class:`~nbbench.probes.objects.s3source.S3Source`: free space checked first; removed by
:meth:`close`, on error, interrupt and SIGTERM) and counts their samples from the tar headers.
That copy is also what ``feed``'s warm run reads — "warm" here means *from a local cache*, as a
caching FUSE client (mountpoint-s3 ``--cache``) or a node-local cache would serve — while its
cold run GETs every shard from the store (:meth:`use`).  With ``rank`` and ``world_size`` given
(``--ranks``) a rank lists every shard but copies and reads only its own share;
:func:`check_shares` makes sure, before the ranks start, that none is left without one (and that
the local copies of all the ranks on the launcher's host fit together).
torch is imported by its base class.
"""

from __future__ import annotations

import os

from ...results import ProbeError
from ..shards.probe import _subset, shard_rank
from ..shards.tarshards import TarShardDataset, split_shards
from ..shards.tarwalk import TarWalker, count_samples
from ..storage.target import check_free_space
from .s3images import S3ImageDataset, labelled
from .s3source import S3Source, list_dataset

__all__ = ["S3TarShardDataset", "DEFAULT_MAX_BYTES", "check_shares", "open_s3_dataset"]

#: the shards (or image objects) copied and read at most by default (a seeded subset beyond it)
DEFAULT_MAX_BYTES = 2 << 30


def open_s3_dataset(url, endpoint_url: str | None = None, region: str | None = None, copy: bool = True, **kw):
    """The dataset under an s3:// prefix: :class:`S3TarShardDataset` over its tar shards, else
    :class:`~nbbench.probes.objects.s3images.S3ImageDataset` over its image objects (``copy``: make the
    local copy ``feed``'s warm pass reads; tar shards are always copied, to count their samples)."""
    listing = list_dataset(url, endpoint_url, region)
    if listing[1] == "tar":
        return S3TarShardDataset(url, endpoint_url, region, listing=listing, **kw)

    return S3ImageDataset(url, endpoint_url, region, listing=listing, copy=copy, **kw)


def check_shares(
    url: str,
    nranks: int,
    endpoint_url: str | None = None,
    region: str | None = None,
    local_copies: bool | None = False,
    cache_dir=None,
) -> int:
    """Before ranks start: every one of ``nranks`` must get at least one of the tar shards (or image objects)
    under ``url`` (a rank with none would have nothing to read); their number, else a ProbeError naming the idle
    ranks.  With ``local_copies`` (all ``nranks`` on this host, each copying its share; None: if they are tar shards,
    which are always copied) the free space for their copies *together* is checked once, in ``cache_dir`` (the
    temporary directory): each rank, checking its own share alone, would pass where together they do not fit."""
    u, kind, found, _ = list_dataset(str(url), endpoint_url, region)
    if kind == "images":
        found = [(k, s) for k, s, _ in labelled(u, found)[0]]
    what = "tar shards" if kind == "tar" else "image objects"
    shares: list[list] = [[] for _ in range(nranks)]
    for key, size in found:
        shares[shard_rank(key[len(u.prefix) :], nranks)].append((key, size))
    idle = [str(r) for r, c in enumerate(shares) if not c]
    if idle:
        raise ProbeError(
            f"{len(found)} {what} under {u} split over {nranks} ranks by a stable hash of their key "
            f"leave rank{'s' if len(idle) > 1 else ''} {', '.join(idle)} none to read: use fewer ranks "
            f"or more {what.split()[-1]}"
        )
    if local_copies or (local_copies is None and kind == "tar"):
        _check_copies_fit(shares, cache_dir)
    return len(found)


def _check_copies_fit(shares: list[list], cache_dir=None) -> None:
    """The local copies of every rank's share (each under the default cap, as the ranks pick them) fit together."""
    import tempfile

    need = sum(s for share in shares for _, s in _subset(share, DEFAULT_MAX_BYTES, 0))
    try:
        check_free_space(cache_dir or tempfile.gettempdir(), need)
    except ProbeError as exc:
        raise ProbeError(f"the local copies of the {len(shares)} ranks' shares on this host: {exc}") from None


class S3TarShardDataset(S3Source, TarShardDataset):
    """Samples streamed by GETs from the tar shards under an s3:// prefix (see the module doc)."""

    unit = "shard"

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
        bs: int = 1 << 20,
        max_bytes: int | None = DEFAULT_MAX_BYTES,
        listing=None,
        **transform,  # size, flip, scale, ratio, dtype: CropFlip.init_transform's
    ):
        self.init_transform(decode, **transform)
        u, kind, found, pages = listing or list_dataset(str(url), endpoint_url, region)
        if kind != "tar":
            raise ProbeError(f"no .tar shards under {u} (its {len(found)} objects are images)")
        self.init_source(u, endpoint_url, region, pages)
        self.root = str(u)
        self.rank, self.world_size = rank, world_size
        self.seed, self.bs, self.epoch = int(seed), int(bs), 0
        if rank is not None and world_size is not None:  # a rank copies and reads only its own share
            found = [o for o in found if shard_rank(o[0][len(u.prefix) :], int(world_size)) == int(rank)]
            if not found:
                raise ProbeError(
                    f"rank {rank} of {world_size} has no shard of {u} to read (the shards are split "
                    "by a stable hash of their key): use fewer ranks or more shards"
                )
        found = _subset(found, max_bytes or None, seed)  # the shards probe's seeded subset under the cap
        self.found_count = len(found)
        self._local: dict[str, str] = {}
        self.samples: list[tuple[str, int]] = []
        self._sizes: dict[str, int] = {}
        cache = self.make_cache(sum(s for _, s in found), cache_dir)
        try:
            for i, (key, nbytes) in enumerate(found):
                local = os.path.join(cache, f"{i:06d}.tar")
                self.copy_object(key, local)
                _, n = count_samples(local)
                self._local[key] = local
                self.samples.append((key, n))
                self._sizes[key] = nbytes
        except BaseException:
            self.close()
            raise
        if decode == "auto":
            self.source = "local"  # look at the first sample of the copy, not another GET
            decode = "pil" if self._first_is_image() else "none"
            self.source = "s3"
        self.decode = decode

    # --------------------------------------------------------------- index
    def _mine(self, worker: int = 0, workers: int = 1) -> list[str]:
        rank, world = self._part()
        rel = {k[len(self.url.prefix) :]: k for k, _ in self.samples}
        return [rel[r] for r in split_shards(rel, rank, world, worker, workers, self.seed, self.epoch)]

    def paths(self) -> list[str]:
        """The local copies of this process's shards (what a warm run reads)."""
        return [self._local[k] for k in self._mine() if k in self._local]

    def describe(self) -> str:
        """The dataset in one phrase, for the result's labels."""
        return f"{self!r}: every shard a GET from the store"

    def __repr__(self) -> str:
        return (
            f"S3TarShardDataset({self.root!r}, {len(self.samples)} shards, {sum(n for _, n in self.samples)} "
            f"samples, decode={self.decode!r}, reading from {'the store' if self.source == 's3' else 'a local copy'})"
        )

    # ------------------------------------------------------------- reading
    def _read(self, key: str):
        if self.source == "local" or key not in self._sizes:
            yield from super()._read(self._local.get(key, key))
            return
        walker = TarWalker(collect=True)
        body = self.get(key)
        try:
            while not walker.ended:
                chunk = body.read(self.bs)
                if not chunk:
                    break
                yield from walker.feed(memoryview(chunk))
        finally:
            body.close()
        yield from walker.finish()
