"""Tar shards in S3 as a DataLoader's dataset: what ``loader s3://…`` and ``feed s3://…`` read.

:class:`S3TarShardDataset` is :class:`~nbbench.probes.shards.tarshards.TarShardDataset` over the
``.tar`` objects under an ``s3://BUCKET/PREFIX``: the same samples (``000123.jpg`` +
``000123.cls``), the same crop and flip, the same split over ranks and DataLoader workers
(by a stable hash of the key after the prefix).  Each worker process opens its own boto3
client (a client does not survive a fork) and streams its shards by GETs.

To know its length it first copies the shards it will read into a new local directory
(:func:`nbbench.tempfiles.temp_dir`, free space checked first; removed by :meth:`close`,
on error, interrupt and SIGTERM) and counts their samples from the tar headers.  That copy is
also what ``feed``'s warm run reads — "warm" here means *from a local cache*, as a caching
FUSE client (mountpoint-s3 ``--cache``) or a node-local cache would serve — while its cold
run GETs every shard from the store (:meth:`use`).  With ``rank`` and ``world_size`` given
(``--ranks``) a rank lists every shard but copies and reads only its own share;
:func:`check_shares` makes sure, before the ranks start, that none is left without one.
torch is imported by its base class.
"""

from __future__ import annotations

import os
import tempfile

from ...results import ProbeError
from ..shards.probe import _subset, shard_rank
from ..shards.tarshards import TarShardDataset, split_shards
from ..shards.tarwalk import TarWalker, count_samples
from . import client as _c
from .s3shards import list_shards

__all__ = ["S3TarShardDataset", "DEFAULT_MAX_BYTES", "check_shares"]

#: the shards copied and read at most by default (a seeded subset beyond it)
DEFAULT_MAX_BYTES = 2 << 30


def check_shares(url: str, nranks: int, endpoint_url: str | None = None, region: str | None = None) -> int:
    """Before ranks start: every one of ``nranks`` must get at least one of the tar shards under ``url`` (a rank
    with none would have nothing to read); the number of shards, else a ProbeError naming the idle ranks."""
    u, found, fmt = list_shards(str(url), endpoint_url, region)
    if fmt != "tar" or not found:
        raise ProbeError(f"no .tar shards under {u} (a dataset in S3 for loader and feed is a set of tar shards)")
    counts = [0] * nranks
    for key, _ in found:
        counts[shard_rank(key[len(u.prefix):], nranks)] += 1
    idle = [str(r) for r, c in enumerate(counts) if c == 0]
    if idle:
        raise ProbeError(f"{len(found)} tar shards under {u} split over {nranks} ranks by a stable hash of their key "
                         f"leave rank{'s' if len(idle) > 1 else ''} {', '.join(idle)} none to read: use fewer ranks "
                         "or more shards")
    return len(found)


class S3TarShardDataset(TarShardDataset):
    """Samples streamed by GETs from the tar shards under an s3:// prefix (see the module doc)."""

    def __init__(self, url, endpoint_url: str | None = None, region: str | None = None, cache_dir=None,
                 decode: str = "auto", size: int = 224, flip: bool = True, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3),
                 dtype: str = "uint8", rank: int | None = None, world_size: int | None = None, seed: int = 0,
                 bs: int = 1 << 20, max_bytes: int | None = DEFAULT_MAX_BYTES):
        from ... import tempfiles
        from ..storage.target import check_free_space

        if decode not in ("auto", "pil", "none"):
            raise ProbeError(f"decode must be 'auto', 'pil' or 'none', not {decode!r}")
        self.init_transform(size, flip, scale, ratio, dtype)
        self.endpoint_url, self.region = endpoint_url, region
        u, found, fmt = list_shards(str(url), endpoint_url, region)
        if fmt != "tar" or not found:
            raise ProbeError(f"no .tar shards under {u} (a dataset in S3 for loader and feed is a set of tar shards)")
        self.url, self.root, self.bucket = u, str(u), u.bucket
        self.rank, self.world_size = rank, world_size
        self.seed, self.bs, self.epoch = int(seed), int(bs), 0
        found.sort()
        if rank is not None and world_size is not None:   # a rank copies and reads only its own share
            found = [o for o in found if shard_rank(o[0][len(u.prefix):], int(world_size)) == int(rank)]
            if not found:
                raise ProbeError(f"rank {rank} of {world_size} has no shard of {u} to read (the shards are split "
                                 "by a stable hash of their key): use fewer ranks or more shards")
        found = _subset(found, max_bytes or None, seed)   # the shards probe's seeded subset under the cap
        self.found_count = len(found)
        need = sum(s for _, s in found)
        where = cache_dir or tempfile.gettempdir()
        check_free_space(where, need)
        self._cache = tempfiles.create_dir(where, "s3cache")
        self._local: dict[str, str] = {}
        self.samples: list[tuple[str, int]] = []
        self._sizes: dict[str, int] = {}
        self.source = "s3"
        self._client = None
        self._pid = None
        try:
            cli = self.client()
            for i, (key, nbytes) in enumerate(found):
                local = os.path.join(self._cache.path, f"{i:06d}.tar")
                try:
                    cli.download_file(u.bucket, key, local)
                except Exception as exc:  # noqa: BLE001
                    raise ProbeError(f"{key}: {_c.explain(exc, u, endpoint_url)}") from None
                _, n = count_samples(local)
                self._local[key] = local
                self.samples.append((key, n))
                self._sizes[key] = nbytes
        except BaseException:
            self.close()
            raise
        if decode == "auto":
            self.source = "local"   # look at the first sample of the copy, not another GET
            decode = "pil" if self._first_is_image() else "none"
            self.source = "s3"
        self.decode = decode

    # ------------------------------------------------------------- plumbing
    def client(self):
        """This process's boto3 client (a new one after a fork: a DataLoader worker)."""
        if self._client is None or self._pid != os.getpid():
            self._client = _c.make_client(self.endpoint_url, self.region, pool=4)
            self._pid = os.getpid()
        return self._client

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_client"] = None
        return state

    def use(self, source: str) -> None:
        """Read from ``"s3"`` (every shard a GET from the store) or ``"local"`` (the local copy)."""
        if source not in ("s3", "local"):
            raise ValueError(f"source must be 's3' or 'local', not {source!r}")
        self.source = source

    @property
    def cache_path(self) -> str | None:
        return self._cache.path if self._cache is not None else None

    def close(self) -> None:
        """Remove the local copy (idempotent)."""
        if getattr(self, "_cache", None) is not None:
            self._cache.remove()
            self._cache = None

    # --------------------------------------------------------------- index
    def _mine(self, worker: int = 0, workers: int = 1) -> list[str]:
        rank, world = self._part()
        rel = {k[len(self.url.prefix):]: k for k, _ in self.samples}
        return [rel[r] for r in split_shards(rel, rank, world, worker, workers, self.seed, self.epoch)]

    def paths(self) -> list[str]:
        """The local copies of this process's shards (what a warm run reads)."""
        return [self._local[k] for k in self._mine() if k in self._local]

    def __repr__(self) -> str:
        return (f"S3TarShardDataset({self.root!r}, {len(self.samples)} shards, {sum(n for _, n in self.samples)} "
                f"samples, decode={self.decode!r}, reading from {'the store' if self.source == 's3' else 'a local copy'})")

    # ------------------------------------------------------------- reading
    def _read(self, key: str):
        if self.source == "local" or key not in self._sizes:
            yield from super()._read(self._local.get(key, key))
            return
        walker = TarWalker(collect=True)
        try:
            body = self.client().get_object(Bucket=self.bucket, Key=key)["Body"]
        except Exception as exc:  # noqa: BLE001
            raise ProbeError(f"{key}: {_c.explain(exc, self.url, self.endpoint_url)}") from None
        try:
            while not walker.ended:
                chunk = body.read(self.bs)
                if not chunk:
                    break
                yield from walker.feed(memoryview(chunk))
        finally:
            body.close()
        yield from walker.finish()
