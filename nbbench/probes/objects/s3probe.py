"""The s3 probe: can this bucket feed the GPUs, and with how many streams?

:func:`s3` lists ``s3://BUCKET/PREFIX`` (LIST throughput: keys per second over the
prefix, paginated as every client does), then GETs its objects — never changing them:

1. a **concurrency sweep** (1, 2, 4, … up to ``max_streams`` streams, ``sweep_runtime``
   each) that names the knee: the fewest streams past which doubling adds less than 5 %;
2. the **measured phase** at ``streams`` (default: the knee) for ``runtime`` seconds: GET
   throughput and requests per second, time to first byte and whole-request latency
   percentiles (fio's histogram), per object-size class;
3. **ranged GETs** of ``part_size`` against whole-object GETs of the same objects (those
   of two parts or more), as parallel downloaders (s3torchconnector's CRT client, boto3's
   transfer manager) split large objects.

A write test, only with ``write=True``, is :mod:`.writes` (new keys under a new prefix,
all deleted).  Figures are time based (bytes counted as they arrive); retries are counted
and a throttled run is labelled.  Errors are one line (:func:`.client.explain`).
"""

from __future__ import annotations

import random
import time

from ...progress import call_progress
from ...results import ProbeError
from ...results.objects import S3Result
from ...units import format_bytes
from . import client as _c
from .getters import PhaseResult, get_phase, is_fatal

__all__ = ["s3", "list_objects", "knee", "sweep_levels"]

KNEE_GAIN = 0.05


def sweep_levels(max_streams: int) -> list[int]:
    """1, 2, 4, … up to ``max_streams`` (which is included when not a power of two)."""
    out, s = [], 1
    while s < max_streams:
        out.append(s)
        s *= 2
    out.append(max_streams)
    return out


def knee(rows: list[dict], gain: float = KNEE_GAIN) -> int | None:
    """The fewest streams that reach within ``gain`` (5 %) of the sweep's best GET bytes/s: more streams
    than that add less than 5 %.

    ``rows``: the sweep's ``{"streams", "get_bytes_per_s"}`` in increasing streams.  None when the sweep
    has no figure; the last level when only it comes that close (still rising)."""
    rates = [(r["streams"], r.get("get_bytes_per_s") or 0.0) for r in rows]
    best = max((v for _, v in rates), default=0.0)
    if best <= 0:
        return None
    return next(s for s, v in rates if v >= best * (1 - gain))


def list_objects(client, url: _c.S3Url, max_keys: int = 100_000, cancel=None) -> tuple[list, dict]:
    """``[(key, size)]`` under the prefix (paginated, at most ``max_keys``) and the LIST figures."""
    objs: list = []
    pages = 0
    token = None
    t0 = time.perf_counter()
    while len(objs) < max_keys:
        kw = {"Bucket": url.bucket, "Prefix": url.prefix, "MaxKeys": min(1000, max_keys - len(objs))}
        if token:
            kw["ContinuationToken"] = token
        resp = client.list_objects_v2(**kw)
        pages += 1
        for o in resp.get("Contents") or []:
            objs.append((o["Key"], int(o.get("Size") or 0)))
        token = resp.get("NextContinuationToken")
        if not resp.get("IsTruncated") or not token or (cancel is not None and cancel.is_set()):
            break
    dt = time.perf_counter() - t0
    figs = {
        "list_keys_count": len(objs),
        "list_pages_count": pages,
        "list_s": dt,
        "list_keys_per_s": len(objs) / dt if dt > 0 and objs else None,
    }
    return objs, figs


def _phase_metrics(ph: PhaseResult, prefix: str = "") -> dict:
    m = {f"{prefix}get_bytes_per_s": ph.bytes_per_s, f"{prefix}requests_per_s": ph.requests_per_s}
    if not prefix and ph.requests:
        p = ph.ttfb.percentiles((50.0, 90.0, 99.0))
        m.update({"ttfb_p50_ns": p[50.0], "ttfb_p90_ns": p[90.0], "ttfb_p99_ns": p[99.0]})
        m.update(ph.lat.metrics("lat"))
    return {k: v for k, v in m.items() if v is not None}


def _class_rows(ph: PhaseResult) -> list[dict]:
    rows = []
    for name, c in ph.classes.items():
        t, lat = c["ttfb"].percentiles((50.0, 99.0)), c["lat"].percentiles((50.0, 99.0))
        rows.append(
            {
                "class": name,
                "requests": c["requests"],
                "bytes": c["bytes"],
                "ttfb_p50_ns": t[50.0],
                "ttfb_p99_ns": t[99.0],
                "lat_p50_ns": lat[50.0],
                "lat_p99_ns": lat[99.0],
                "request_bytes_per_s": c["bytes"] / (c["lat"].mean * c["requests"] / 1e9)
                if c["lat"].mean > 0
                else None,
            }
        )
    return rows


def _fail_on(ph: PhaseResult, url, endpoint_url) -> None:
    """A phase in which nothing could be read, or which a fatal error ended (the same rule that stopped its
    streams, :func:`.getters.is_fatal`: a lost connection, 403, no bucket, no credentials): one line."""
    if ph.first_error is not None and (ph.requests == 0 or is_fatal(ph.first_error)):
        raise ProbeError(_c.explain(ph.first_error, url, endpoint_url))
    if ph.requests == 0 and ph.vanished:
        raise ProbeError(f"every object under {url} vanished while being read (deleted meanwhile?)")


def s3(
    url: str,
    *,
    endpoint_url: str | None = None,
    region: str | None = None,
    streams: int | None = None,
    max_streams: int = 32,
    sweep: bool = True,
    runtime: float = 5.0,
    sweep_runtime: float = 1.5,
    part_size: int = 8 << 20,
    ranged: bool = True,
    max_keys: int = 100_000,
    seed: int = 0,
    write: bool = False,
    write_size: int = 8 << 20,
    write_count: int = 16,
    progress=None,
    cancel=None,
) -> S3Result:
    """GET throughput from ``s3://BUCKET/PREFIX`` (``nbbench s3``): time to first byte per object size class,
    a concurrency sweep up to ``max_streams`` with its knee, then ``runtime`` seconds at ``streams``
    (default: the knee); with ``write=True`` also PUTs ``write_count`` objects of ``write_size`` under a new
    prefix of its own, removed at the end.  Credentials come from the AWS configuration and are never
    recorded; requests, retries and throttling are counted."""
    u = _c.parse_url(url)
    if streams is not None and streams < 1:
        raise ProbeError(f"streams must be 1 or more, not {streams}")
    top = max(streams or 1, max_streams if sweep else 1)
    warn = _c.endpoint_warning(endpoint_url)
    lister = _c.make_client(endpoint_url, region, pool=2, connect_timeout=3.0, read_timeout=4.0, attempts=2)
    try:
        objs, list_figs = list_objects(lister, u, max_keys=max_keys, cancel=cancel)
    except ProbeError:
        raise
    except Exception as exc:  # noqa: BLE001 - every failure of the first request is one line
        raise ProbeError(_c.explain(exc, u, endpoint_url)) from None
    objs = [o for o in objs if o[1] > 0 and not o[0].endswith("/")]
    if not objs:
        raise ProbeError(
            f"no objects under {u}: nothing to read (check the prefix; it is matched as the start of each key)"
        )
    random.Random(seed).shuffle(objs)
    cli = _c.make_client(endpoint_url, region, pool=top)
    labels = {
        **_c.endpoint_labels(cli, endpoint_url),
        "operation": "GET, then PUT under a new prefix" if write else "GET (read only)",
        "ttfb": "request sent to response headers received",
    }
    res = S3Result(
        params={
            "path": str(u),
            "endpoint_url": labels["endpoint"],
            "streams": streams,
            "max_streams": max_streams,
            "sweep": sweep,
            "runtime_s": runtime,
            "part_size": part_size,
            "ranged": ranged,
            "seed": seed,
            "write": write,
            "write_size": write_size if write else None,
            "write_count": write_count if write else None,
        },
        labels=labels,
    )
    if warn:
        res.warn(warn)
    total_s = (sweep_runtime * len(sweep_levels(max_streams)) if sweep else 0) + runtime + (runtime if ranged else 0)
    spent = [0.0]

    def sub(seconds):
        base = spent[0]
        spent[0] += seconds
        return (
            None
            if progress is None
            else (
                lambda f, m: call_progress(progress, None if f is None else min(1.0, (base + f * seconds) / total_s), m)
            )
        )

    rows: list[dict] = []
    retries = 0
    errors: dict = {}
    vanished: list = []
    if sweep:
        for level in sweep_levels(max_streams):
            if cancel is not None and cancel.is_set():
                break
            ph = get_phase(cli, u.bucket, objs, level, sweep_runtime, cancel=cancel, progress=sub(sweep_runtime))
            _fail_on(ph, u, endpoint_url)
            retries += ph.retries
            vanished += ph.vanished
            for k, v in ph.errors.items():
                errors[k] = errors.get(k, 0) + v
            p = ph.ttfb.percentiles((50.0,)) if ph.requests else {}
            rows.append(
                {
                    "streams": level,
                    "get_bytes_per_s": ph.bytes_per_s,
                    "requests_per_s": ph.requests_per_s,
                    "ttfb_p50_ns": p.get(50.0),
                    "seconds": ph.seconds,
                }
            )
    k = knee(rows) if rows else None
    main_streams = streams or k or min(8, max_streams)
    ph = get_phase(cli, u.bucket, objs, main_streams, runtime, cancel=cancel, progress=sub(runtime))
    _fail_on(ph, u, endpoint_url)
    retries += ph.retries
    vanished += ph.vanished
    for key, v in ph.errors.items():
        errors[key] = errors.get(key, 0) + v
    if ph.stuck:
        res.warn(
            f"{ph.stuck} of {main_streams} streams were still inside a request 15 s after the measured phase "
            "ended (a hung connection): the endpoint stalls some requests"
        )
    m = res.metrics
    m.update(_phase_metrics(ph))
    m.update(
        {
            "streams_count": main_streams,
            "objects_count": len(objs),
            "objects_bytes": sum(s for _, s in objs),
            "requests_count": ph.requests,
        }
    )
    m.update({k2: v for k2, v in list_figs.items() if v is not None})
    if rows:
        best = max(rows, key=lambda r: r.get("get_bytes_per_s") or 0)
        m["sweep_best_bytes_per_s"] = best.get("get_bytes_per_s")
        m["sweep_best_streams_count"] = best["streams"]
        if k is not None:
            m["knee_streams_count"] = k
    res.samples.update(
        {
            "bw": {"get_bytes_per_s": ph.windows, "window_s": 0.5},
            "ttfb_hist": ph.ttfb.to_dict(),
            "lat_hist": ph.lat.to_dict(),
            "sweep": rows,
            "classes": _class_rows(ph),
        }
    )
    if ranged and not (cancel is not None and cancel.is_set()):
        big = [o for o in objs if o[1] >= 2 * part_size]
        if big:
            whole = get_phase(cli, u.bucket, big, main_streams, runtime / 2, cancel=cancel, progress=sub(runtime / 2))
            parts = [
                (key, size, off, min(off + part_size, size) - 1)
                for key, size in big
                for off in range(0, size, part_size)
            ]
            rng = get_phase(cli, u.bucket, parts, main_streams, runtime / 2, cancel=cancel, progress=sub(runtime / 2))
            for extra in (whole, rng):
                _fail_on(extra, u, endpoint_url)
                retries += extra.retries
            if whole.bytes_per_s:
                m["whole_get_bytes_per_s"] = whole.bytes_per_s
            if rng.bytes_per_s:
                m["ranged_get_bytes_per_s"] = rng.bytes_per_s
            res.labels["ranged"] = (
                f"{format_bytes(part_size, binary=True)} ranges of the {len(big)} objects of "
                f"{format_bytes(2 * part_size, binary=True)} or more, against whole GETs of them"
            )
        else:
            res.labels["ranged"] = (
                f"not measured: no object of {format_bytes(2 * part_size, binary=True)} or more "
                f"(two {format_bytes(part_size, binary=True)} parts)"
            )
    if write and not (cancel is not None and cancel.is_set()):
        from .writes import write_test

        w = write_test(cli, u, endpoint_url, int(write_size), int(write_count), cancel=cancel)
        prefix = w.pop("prefix")
        left = w.pop("left_prefix", None)
        if left:
            res.warn(f"the write test's keys could not all be deleted: delete what is left under {left}")
        m.update({k2: v for k2, v in w.items() if v is not None})
        res.labels["write"] = (
            f"{m.get('put_count', 0)} PUTs of {format_bytes(write_size, binary=True)} and one "
            f"multipart upload under {prefix} (a new prefix; conditional PUTs, nothing "
            f"overwritten), {w.get('deleted_count', 0)} keys deleted at the end"
        )
    m["retries_count"] = retries
    if errors:
        res.extra["errors"] = errors
        m["errors_count"] = sum(errors.values())
        res.warn(
            f"{m['errors_count']} requests failed after their retries ("
            + ", ".join(f"{v} {k}" for k, v in sorted(errors.items()))
            + "): the figures leave them out"
        )
    if retries:
        res.labels["throttled"] = f"{retries} retries (503 SlowDown or timeouts) — figures include the back-off"
        res.warn(
            f"the endpoint made {retries} requests retry (throttling or timeouts): the figures include "
            "the waits; try fewer --streams"
        )
    if vanished:
        res.warn(f"{len(set(vanished))} objects vanished between LIST and GET (deleted meanwhile?) and were skipped")
    call_progress(progress, 1.0, {k2: m[k2] for k2 in ("get_bytes_per_s",) if k2 in m})
    if cancel is not None and cancel.is_set():
        return res.finish("interrupted", "stopped early")
    return res.finish()
