"""Concurrent GETs for a fixed time: the one measuring loop of the s3 probe.

:func:`get_phase` runs ``streams`` threads against one boto3 client (whose pool holds a
connection per stream), each taking the next work item — a whole object, or a byte range
of one — and reading its body in 1 MiB chunks until the phase's time is up, as warp and
s3-benchmark do.  Per request it records the time to first byte (request sent to response
headers received: the server's first byte, as s3-benchmark's TTFB) and the whole request's
latency (to the last byte) in fio's log-linear histogram, per object-size class too; bytes
are counted as they arrive, in 500 ms windows, so the rate is time based and a request cut
by the end of the phase still counts what it read.  Retries (503 SlowDown, timeouts) are
counted from boto3's response metadata; an object that vanished between LIST and GET is
counted and skipped; a failure that no later request can escape (403, no bucket, no
credentials, an endpoint that stopped answering) ends the phase with that error.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from ...progress import call_progress
from ...results.hist import LatencyHistogram
from .client import FATAL_CODES, error_code, retries_of

__all__ = ["PhaseResult", "get_phase", "size_class", "SIZE_CLASSES", "is_fatal"]

CHUNK = 1 << 20
#: object-size classes: (name, upper bound in bytes, exclusive)
SIZE_CLASSES = (("< 1 MiB", 1 << 20), ("1-64 MiB", 64 << 20), (">= 64 MiB", float("inf")))
_FATAL_NAMES = {
    "NoCredentialsError",
    "PartialCredentialsError",
    "EndpointConnectionError",
    "ConnectTimeoutError",
    "ConnectionClosedError",
}


def size_class(size: int) -> str:
    for name, bound in SIZE_CLASSES:
        if size < bound:
            return name
    return SIZE_CLASSES[-1][0]  # pragma: no cover


@dataclass
class PhaseResult:
    streams: int
    seconds: float = 0.0
    bytes: int = 0
    requests: int = 0
    ttfb: LatencyHistogram = field(default_factory=LatencyHistogram)
    lat: LatencyHistogram = field(default_factory=LatencyHistogram)
    windows: list = field(default_factory=list)
    retries: int = 0
    errors: dict = field(default_factory=dict)
    vanished: list = field(default_factory=list)
    classes: dict = field(default_factory=dict)  # class -> {"requests", "bytes", "ttfb", "lat"}
    first_error: BaseException | None = None
    stuck: int = 0  # streams still inside a request 15 s after the phase ended

    @property
    def bytes_per_s(self) -> float | None:
        return self.bytes / self.seconds if self.seconds > 0 and self.bytes else None

    @property
    def requests_per_s(self) -> float | None:
        return self.requests / self.seconds if self.seconds > 0 and self.requests else None


def is_fatal(exc: BaseException) -> bool:
    """An error no later request can escape: it ends the phase, and the run, in one line."""
    return type(exc).__name__ in _FATAL_NAMES or error_code(exc) in FATAL_CODES


_fatal = is_fatal


def get_phase(
    client, bucket: str, items: list, streams: int, seconds: float, *, cancel=None, progress=None, window_s: float = 0.5
) -> PhaseResult:
    """GET ``items`` — ``(key, size)`` for whole objects or ``(key, size, start, end)`` for a range
    ``bytes=start-end`` — round robin from ``streams`` threads for ``seconds``."""
    out = PhaseResult(streams=streams)
    if not items:
        return out
    stop = threading.Event()
    counters = [0] * streams
    lock = threading.Lock()
    nxt = [0]
    gone: set = set()

    def take():
        with lock:
            for _ in range(len(items)):
                it = items[nxt[0] % len(items)]
                nxt[0] += 1
                if it[0] not in gone:
                    return it
        return None

    def record(cls, ttfb_ns, lat_ns, nbytes, retries):
        with lock:
            out.requests += 1
            out.retries += retries
            out.ttfb.add(ttfb_ns)
            out.lat.add(lat_ns)
            c = out.classes.setdefault(
                cls, {"requests": 0, "bytes": 0, "ttfb": LatencyHistogram(), "lat": LatencyHistogram()}
            )
            c["requests"] += 1
            c["bytes"] += nbytes
            c["ttfb"].add(ttfb_ns)
            c["lat"].add(lat_ns)

    def fail(exc):
        with lock:
            code = error_code(exc)
            out.errors[code] = out.errors.get(code, 0) + 1
            if out.first_error is None or (_fatal(exc) and not _fatal(out.first_error)):
                out.first_error = exc
        if _fatal(exc):
            stop.set()

    def worker(i: int):
        while not stop.is_set():
            it = take()
            if it is None:
                stop.set()
                return
            key, size = it[0], it[1]
            kw = {"Bucket": bucket, "Key": key}
            if len(it) == 4:
                kw["Range"] = f"bytes={it[2]}-{it[3]}"
            t0 = time.perf_counter_ns()
            try:
                resp = client.get_object(**kw)
            except Exception as exc:  # noqa: BLE001 - counted, worded by the caller
                if error_code(exc) in ("NoSuchKey", "404"):
                    with lock:
                        gone.add(key)
                        out.vanished.append(key)
                    continue
                fail(exc)
                continue
            t1 = time.perf_counter_ns()
            body = resp["Body"]
            got = 0
            cut = False
            try:
                while True:
                    if stop.is_set():
                        cut = True
                        break
                    chunk = body.read(CHUNK)
                    if not chunk:
                        break
                    got += len(chunk)
                    counters[i] += len(chunk)
            except Exception as exc:  # noqa: BLE001 - a connection cut mid-body
                fail(exc)
                cut = True
            finally:
                try:
                    body.close()
                except Exception:  # noqa: BLE001
                    pass
            if not cut:
                record(size_class(size), t1 - t0, time.perf_counter_ns() - t0, got, retries_of(resp))
            else:
                with lock:
                    out.retries += retries_of(resp)

    threads = [threading.Thread(target=worker, args=(i,), name=f"nbbench-s3-{i}", daemon=True) for i in range(streams)]
    t_start = time.perf_counter()
    for t in threads:
        t.start()
    deadline = t_start + seconds
    last_t, last_b = t_start, 0
    while not stop.is_set():
        now = time.perf_counter()
        if now >= deadline or (cancel is not None and cancel.is_set()):
            break
        stop.wait(min(window_s - ((now - t_start) % window_s), deadline - now))
        now = time.perf_counter()
        b = sum(counters)
        if now - last_t >= window_s * 0.5:
            out.windows.append((b - last_b) / (now - last_t))
            call_progress(progress, min(1.0, (now - t_start) / seconds), {"get_bytes_per_s": out.windows[-1]})
            last_t, last_b = now, b
    t_end = time.perf_counter()
    out.bytes = sum(counters)
    stop.set()
    join_by = time.monotonic() + 15.0  # one deadline for all: a hung endpoint costs 15 s, not 15 s a stream
    for t in threads:
        t.join(timeout=max(0.0, join_by - time.monotonic()))
    out.stuck = sum(t.is_alive() for t in threads)
    out.seconds = t_end - t_start
    return out
