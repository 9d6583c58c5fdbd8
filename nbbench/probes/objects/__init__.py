"""Object storage (S3 and S3-compatible stores): the s3 probe and its client.

* :mod:`.client`   the URL, one boto3 client (pool, bounded retries and timeouts), errors in words
* :mod:`.getters`  concurrent GETs for a fixed time: TTFB, latency, bytes in windows, retries
* :mod:`.s3probe`  :func:`s3`: LIST, the concurrency sweep and its knee, the measured phase, ranged GETs
* :mod:`.s3shards` ``shards s3://…``: tar shards streamed by GETs, the shards probe's figures
* :mod:`.s3dataset` ``loader``/``feed s3://…``: which dataset a prefix holds; tar shards as a DataLoader's dataset
* :mod:`.s3images`  image objects as a DataLoader's dataset, one GET per sample
* :mod:`.s3source`  what both share: the listing, a client per process, counted GETs, the local copy
* :mod:`.writes`   the opt-in write test under a new prefix, deleted on every exit path

Layer: measure (with the other probes).  It may import the core (results, units, progress,
env) and the probes beside it; boto3 only inside functions, never at import.
"""

from __future__ import annotations

from .s3probe import s3 as _s3

__all__ = ["s3"]


def s3(*args, **kwargs):
    """:func:`nbbench.probes.objects.s3probe.s3` (imported on first use)."""
    return _s3(*args, **kwargs)
