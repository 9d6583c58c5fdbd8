"""What the two s3:// datasets of ``loader`` and ``feed`` share.

:func:`list_dataset` lists an ``s3://BUCKET/PREFIX`` (paginated) and says which dataset it
holds: tar shards when there are ``.tar`` objects, else image objects (the extensions the local
image folder accepts), else a one-line error naming both.  :class:`S3Source` is the plumbing of
:class:`~nbbench.probes.objects.s3dataset.S3TarShardDataset` and
:class:`~nbbench.probes.objects.s3images.S3ImageDataset`: one boto3 client per process (a
client does not survive a fork, so each DataLoader worker opens its own), every GET counted
with its retries (in shared memory, so a worker's requests are counted too), the local copy
that ``feed``'s warm pass reads (a new directory from :mod:`nbbench.tempfiles`, free space
checked first, removed by :meth:`S3Source.close`, on error, interrupt and SIGTERM), and the
switch between reading from the store and from that copy.
"""

from __future__ import annotations

import os
import tempfile

from ... import tempfiles
from ...results import ProbeError
from ..pipeline.imagetransform import IMAGE_EXTENSIONS, SampleError
from ..storage.target import check_free_space
from . import client as _c
from .s3probe import list_objects

__all__ = ["S3Source", "list_dataset", "MAX_KEYS"]

#: the keys listed at most (1000 a LIST page): an ImageNet-sized prefix fits
MAX_KEYS = 2_000_000


def _hidden(rel: str) -> bool:
    return any(part.startswith(".") for part in rel.split("/"))


def list_dataset(url, endpoint_url: str | None = None, region: str | None = None):
    """``(S3Url, kind, [(key, size)], LIST pages)``: kind "tar" (the .tar objects) or "images" (the image
    objects), sorted by key; empty objects, "folder" markers and hidden names are left out."""
    u = _c.parse_url(str(url))
    lister = _c.make_client(endpoint_url, region, pool=2, connect_timeout=3.0, read_timeout=4.0, attempts=2)
    try:
        objs, figs = list_objects(lister, u, max_keys=MAX_KEYS)
    except ProbeError:
        raise
    except Exception as exc:  # noqa: BLE001 - every failure of the first request is one line
        raise ProbeError(_c.explain(exc, u, endpoint_url)) from None
    objs = sorted(o for o in objs if o[1] > 0 and not o[0].endswith("/") and not _hidden(o[0][len(u.prefix) :]))
    pages = figs["list_pages_count"]
    tars = [o for o in objs if o[0].lower().endswith(".tar")]
    if tars:
        return u, "tar", tars, pages
    images = [o for o in objs if o[0].lower().endswith(IMAGE_EXTENSIONS)]
    if images:
        return u, "images", images, pages
    raise ProbeError(
        f"no .tar shards or image objects ({', '.join(IMAGE_EXTENSIONS)}) under {u}: a dataset in S3 "
        "for loader and feed is a set of tar shards or of images (s3://BUCKET/PREFIX/CLASS/IMAGE)"
    )


def _shared_counts():
    import multiprocessing

    return multiprocessing.Array("q", 2)  # GETs, their retries: DataLoader workers add to them


class S3Source:
    """Mixin: the client, the request counts, the local copy and the source of reads (see the module doc)."""

    #: what one GET reads, for the labels
    unit = "object"

    def init_source(self, u, endpoint_url: str | None, region: str | None, list_pages: int = 0) -> None:
        self.url, self.bucket = u, u.bucket
        self.endpoint_url, self.region = endpoint_url, region
        self.source = "s3"
        self.list_pages = int(list_pages)
        self._client = None
        self._pid = None
        self._cache = None
        self.copied = False
        self._counts = _shared_counts()

    def client(self):
        """This process's boto3 client (a new one after a fork: a DataLoader worker)."""
        if self._client is None or self._pid != os.getpid():
            self._client = _c.make_client(self.endpoint_url, self.region, pool=4)
            self._pid = os.getpid()
        return self._client

    def __getstate__(self):
        from multiprocessing.context import get_spawning_popen

        state = dict(self.__dict__)
        state["_client"] = None
        if get_spawning_popen() is None:  # shared counts travel only to a process being started
            state["_counts"] = None
        return state

    def get(self, key: str):
        """The body of one GET of ``key`` (counted, with its retries); a failure is one line naming the key, also
        from a DataLoader worker (:class:`~nbbench.probes.pipeline.imagetransform.SampleError`)."""
        try:
            resp = self.client().get_object(Bucket=self.bucket, Key=key)
        except Exception as exc:  # noqa: BLE001
            self._count(1, _c.retries_of(getattr(exc, "response", None)))
            raise SampleError(f"{key}: {_c.explain(exc, self.url, self.endpoint_url)}") from None
        self._count(1, _c.retries_of(resp))
        return resp["Body"]

    def copy_object(self, key: str, local: str, bs: int = 1 << 20) -> None:
        """One GET of ``key`` written to the new file ``local`` (in the local copy's directory)."""
        body = self.get(key)
        try:
            with open(local, "xb") as f:
                while True:
                    try:
                        chunk = body.read(bs)
                    except Exception as exc:  # noqa: BLE001 - a connection cut mid-body
                        raise SampleError(f"{key}: {_c.explain(exc, self.url, self.endpoint_url)}") from None
                    if not chunk:
                        break
                    f.write(chunk)
        finally:
            body.close()

    def _count(self, gets: int, retries: int) -> None:
        if self._counts is not None:
            with self._counts.get_lock():
                self._counts[0] += gets
                self._counts[1] += retries

    def requests(self) -> tuple[int, int]:
        """(requests made: LIST pages + GETs, retries of the GETs) by this dataset and its workers so far."""
        gets, retries = (self._counts[0], self._counts[1]) if self._counts is not None else (0, 0)
        return self.list_pages + gets, retries

    def label_requests(self, res) -> None:
        """The result's ``requests_count`` and ``retries_count``, and a label saying what they were."""
        n, retries = self.requests()
        res.metrics["requests_count"] = n
        res.metrics["retries_count"] = retries
        res.labels["requests"] = (
            f"{n} ({self.list_pages} LIST page{'s' if self.list_pages != 1 else ''}, "
            f"{n - self.list_pages} GETs: one per "
            f"{self.unit} read{' or copied' if self.copied else ''})" + (f", {retries} retries" if retries else "")
        )

    def feed_labels(self) -> dict:
        """What ``feed``'s cold and warm passes read, for its labels."""
        how = "" if self.unit == "shard" else ", read as an image folder"
        return {
            "cold_method": f"every {self.unit} a GET from object storage",
            "warm": f"a local copy of the {self.unit}s in {self.cache_path}{how} (page cache): a local cache, as a "
            "caching FUSE client would serve",
        }

    def make_cache(self, need: int, cache_dir=None) -> str:
        """A new local directory for ``need`` bytes (free space checked first); its path."""
        where = cache_dir or tempfile.gettempdir()
        check_free_space(where, need)
        self._cache = tempfiles.create_dir(where, "s3cache")
        self.copied = True
        return self._cache.path

    def use(self, source: str) -> None:
        """Read from ``"s3"`` (every read a GET from the store) or ``"local"`` (the local copy)."""
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
