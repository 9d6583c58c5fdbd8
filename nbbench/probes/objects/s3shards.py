"""Shards streamed from S3: ``shards s3://BUCKET/PREFIX`` as ``shards DIR`` reads a folder.

The objects under the prefix (``.tar`` shards when there are any, else the known chunk
extensions, else every object) are shuffled (seeded) and dealt to ``streams`` parallel
streams; each GETs its shards whole, one after another, and reads each body in ``bs``
pieces — as a WebDataset or s3torchconnector ``S3IterableDataset`` worker does.  The
figures are the shards probe's own (:func:`nbbench.probes.shards.streams.read_pass` with a GET as
the source): the aggregate and per-stream rates, the time to the first bytes of each shard,
and for tar shards the WebDataset samples per second.  One pass: there is no page cache
between a process and object storage, so no warm pass (a FUSE mount's local cache is
measured by ``shards`` on its mount point).  Read only; ranks split the keys as the
shards probe splits paths.
"""

from __future__ import annotations

from ...env import usable_cpus
from ...results import ProbeError
from ...results.storage.shards import ShardsResult
from ...units import format_bytes, parse_size
from ..shards.probe import CHUNK_EXTENSIONS, _subset, plan_streams, shard_rank
from ..shards.streams import keep_pass, read_pass
from . import client as _c
from .s3probe import list_objects

__all__ = ["s3_shards", "list_shards", "DEFAULT_MAX_BYTES"]

#: what a run reads at most by default (a seeded subset beyond it): a bucket may hold terabytes
DEFAULT_MAX_BYTES = 4 << 30


def _pick_format(objs):
    tars = [o for o in objs if o[0].lower().endswith(".tar")]
    if tars:
        return tars, "tar"
    chunks = [o for o in objs if o[0].lower().endswith(CHUNK_EXTENSIONS)]
    return (chunks, "chunks") if chunks else (objs, "objects")


def _get_source(cli, bucket: str, url, endpoint_url):
    def source(key: str):
        try:
            body = cli.get_object(Bucket=bucket, Key=key)["Body"]
        except Exception as exc:  # noqa: BLE001 - worded, counted by the pass
            raise ProbeError(f"{key}: {_c.explain(exc, url, endpoint_url)}") from None

        def read(bufs) -> int:
            buf = bufs[0]
            try:
                data = body.read(len(buf))
            except Exception as exc:  # noqa: BLE001 - a connection cut mid-body
                raise ProbeError(f"{key}: {_c.explain(exc, url, endpoint_url)}") from None
            n = len(data)
            buf[:n] = data
            return n

        return read, body.close

    return source


def list_shards(url: str, endpoint_url: str | None = None, region: str | None = None):
    """``(S3Url, [(key, size)], format)``: the shards under an s3:// prefix, as :func:`s3_shards` picks them."""
    u = _c.parse_url(url)
    lister = _c.make_client(endpoint_url, region, pool=2, connect_timeout=3.0, read_timeout=4.0, attempts=2)
    try:
        objs, _ = list_objects(lister, u)
    except ProbeError:
        raise
    except Exception as exc:  # noqa: BLE001 - every failure of the first request is one line
        raise ProbeError(_c.explain(exc, u, endpoint_url)) from None
    found, fmt = _pick_format([o for o in objs if o[1] > 0 and not o[0].endswith("/")])
    return u, found, fmt


def s3_shards(
    url: str,
    streams: int | None = None,
    bs="1M",
    seed: int = 0,
    max_bytes=None,
    rank: int = 0,
    world_size: int = 1,
    progress=None,
    cancel=None,
    ready=None,
    endpoint_url: str | None = None,
    region: str | None = None,
) -> ShardsResult:
    import time

    bs_b = parse_size(bs)
    if bs_b < 1:
        raise ProbeError("bs must be at least 1 byte")
    u, found, fmt = list_shards(url, endpoint_url, region)
    if not found:
        raise ProbeError(f"no objects under {u}: nothing to read (check the prefix)")
    mine = [o for o in found if shard_rank(o[0][len(u.prefix) :], world_size) == rank]
    cap = DEFAULT_MAX_BYTES if max_bytes is None else (parse_size(max_bytes) or None)
    picked = _subset(mine, cap, seed)  # the shards probe's own seeded subset under the cap
    n_streams = max(1, min(int(streams) if streams else max(4, usable_cpus()["usable_int"]), len(picked) or 1))
    cli = _c.make_client(endpoint_url, region, pool=n_streams)
    res = ShardsResult(
        params={
            "path": str(u),
            "streams": n_streams,
            "bs": bs_b,
            "cold": True,
            "warm": False,
            "seed": seed,
            "max_bytes": max_bytes,
            "rank": rank,
            "world_size": world_size,
            "endpoint_url": _c.endpoint_labels(cli, endpoint_url)["endpoint"],
        }
    )
    res.labels.update(
        {
            "engine": "boto3 GET",
            "cache": "none (object storage)",
            **_c.endpoint_labels(cli, endpoint_url),
            "shard_format": fmt,
            "order": f"shuffled (seed {seed}), dealt round-robin to the streams",
            "warm": "not measured: no page cache between this process and object storage",
        }
    )
    warn = _c.endpoint_warning(endpoint_url)
    if warn:
        res.warn(warn)
    total = sum(s for _, s in picked)
    res.metrics.update(
        {
            "shards_found_count": len(found),
            "dataset_total_bytes": sum(s for _, s in found),
            "shards_count": len(picked),
            "streams_count": n_streams,
        }
    )
    if world_size > 1:
        res.labels["rank"] = (
            f"{rank} of {world_size}: the keys whose hash(key after the prefix) % {world_size} == {rank}"
        )
    if len(picked) < len(mine):
        res.labels["subset"] = (
            f"{len(picked)} of {len(mine)} shards (seed {seed}), {format_bytes(total, binary=True)}: "
            "--max-bytes (default 4 GiB from object storage; 0: all)"
        )
    if not picked:
        return res.fail("no shard falls to this rank")
    if ready is not None:
        ready("read")
    res.extra.setdefault("t0_unix", {})["read"] = time.time()
    out = read_pass(
        plan_streams(picked, n_streams, seed),
        bs_b,
        fmt == "tar",
        cancel,
        progress,
        source=_get_source(cli, u.bucket, u, endpoint_url),
    )
    keep_pass(res, "cold", out, fmt == "tar")
    if out["interrupted"]:
        return res.finish("interrupted", "stopped during the pass; the figures cover what was read")
    if out["errors"]:
        if out["errors"] >= len(picked):
            raise ProbeError(f"no shard could be read: {out['first_error']}")
        res.warn(f"{out['errors']} shards could not be read and were skipped (first: {out['first_error']})")
    if out.get("tar_errors"):
        res.warn(
            f"{out['tar_errors']} .tar shards are not valid tar files past some point (first: "
            f"{out['first_tar_error']}): their samples are counted up to there"
        )
    return res.finish()
