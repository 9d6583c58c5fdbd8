"""The s3 probe's write test: PUTs (and one multipart upload) of new keys under a new prefix, all deleted.

Only with an explicit option.  Every key goes under ``PREFIX/.nbbench-<host>-<pid>-<random>/``,
a prefix this run makes up and first checks is empty; each PUT is conditional
(``If-None-Match: *``), so an existing key is never overwritten — a store that refuses the
condition ends the test in one line.  Everything written is deleted at the end — also on
error, on interrupt (the cancel event) and on SIGTERM / SIGHUP: :func:`install_handlers`
(from the main thread) runs :func:`cleanup_all` first, which stops the uploads, waits for a
request in flight, lists the prefix and deletes what is there and aborts its multipart
uploads, then hands the signal on to the handler before it (nbbench's temp-file clean-up,
then the default action).
"""

from __future__ import annotations

import os
import secrets
import signal
import threading
import time

from ... import sigchain, tempfiles
from ...progress import call_progress
from ...results import ProbeError
from ...results.hist import LatencyHistogram
from . import client as _c

__all__ = ["WriteSession", "write_test", "install_handlers", "cleanup_all", "MIN_PART"]

#: S3's smallest multipart part (every part but the last)
MIN_PART = 5 << 20

_sessions: dict[int, WriteSession] = {}
_previous: dict[int, object] = {}
_installed = [False]


class WriteSession:
    """The keys of one write test, under its own new prefix; :meth:`cleanup` deletes them all."""

    def __init__(self, cli, url: _c.S3Url, endpoint_url=None):
        self.cli, self.url, self.endpoint_url = cli, url, endpoint_url
        base = url.prefix if (not url.prefix or url.prefix.endswith("/")) else url.prefix + "/"
        self.prefix = f"{base}{tempfiles.PREFIX}{tempfiles.host_tag()}-{os.getpid()}-{secrets.token_hex(4)}/"
        self.stop = threading.Event()
        self.idle = threading.Event()
        self.idle.set()
        self.cleaned = False
        self.left: str | None = None  # a prefix the clean-up could not empty (said in the result)
        self.wait_s = 30.0  # how long the clean-up waits for a request in flight (set by the size)
        resp = cli.list_objects_v2(Bucket=url.bucket, Prefix=self.prefix, MaxKeys=1)
        if resp.get("KeyCount") or resp.get("Contents"):  # pragma: no cover - 32 random bits
            raise ProbeError(f"s3://{url.bucket}/{self.prefix} is not empty: refusing to write there")
        _sessions[id(self)] = self  # a dict's item set/pop is atomic: no lock a handler could wait on

    def put(self, key: str, body: bytes) -> dict:
        """A conditional PUT of a new key (never an overwrite)."""
        if self.stop.is_set():
            raise ProbeError("stopped")
        self.idle.clear()
        try:
            return self.cli.put_object(Bucket=self.url.bucket, Key=self.prefix + key, Body=body, IfNoneMatch="*")
        finally:
            self.idle.set()

    def call(self, fn, **kw):
        if self.stop.is_set():
            raise ProbeError("stopped")
        self.idle.clear()
        try:
            return fn(Bucket=self.url.bucket, **kw)
        finally:
            self.idle.set()

    def cleanup(self, wait_s: float = 10.0) -> int:
        """Stop, wait for a request in flight, delete every key under the prefix, abort its multipart uploads."""
        self.stop.set()
        self.idle.wait(wait_s)
        deleted = 0
        b = self.url.bucket
        self.left = None
        for _ in range(4):  # a PUT completing meanwhile: list again
            try:
                ups = [
                    u
                    for page in self.cli.get_paginator("list_multipart_uploads").paginate(Bucket=b, Prefix=self.prefix)
                    for u in page.get("Uploads") or []
                ]
                for up in ups:
                    self.cli.abort_multipart_upload(Bucket=b, Key=up["Key"], UploadId=up["UploadId"])
                keys = [
                    o["Key"]
                    for page in self.cli.get_paginator("list_objects_v2").paginate(Bucket=b, Prefix=self.prefix)
                    for o in page.get("Contents") or []
                ]
            except Exception:  # noqa: BLE001 - best effort; the store may be gone
                self.left = f"s3://{b}/{self.prefix}"
                break
            self.left = f"s3://{b}/{self.prefix}" if keys or ups else None
            if not keys and not ups:
                break
            for i in range(0, len(keys), 1000):
                try:
                    self.cli.delete_objects(
                        Bucket=b, Delete={"Objects": [{"Key": k} for k in keys[i : i + 1000]], "Quiet": True}
                    )
                    deleted += len(keys[i : i + 1000])
                except Exception:  # noqa: BLE001
                    for k in keys[i : i + 1000]:
                        try:
                            self.cli.delete_object(Bucket=b, Key=k)
                            deleted += 1
                        except Exception:  # noqa: BLE001
                            pass
        self.cleaned = True
        _sessions.pop(id(self), None)
        return deleted


_owner = [os.getpid()]


def _forget_sessions() -> None:  # a forked child wrote none of these keys
    _owner[0] = os.getpid()
    _sessions.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_sessions)


def cleanup_all() -> None:
    """Delete what every write test of this process wrote (a snapshot: no lock taken, a signal
    handler may have interrupted code holding it)."""
    if os.getpid() != _owner[0]:
        return
    for s in list(_sessions.values()):
        s.cleanup(wait_s=s.wait_s)


def _handler(signum, frame):
    cleanup_all()
    sigchain.chain_signal(signum, frame, _previous.get(signum, signal.SIG_DFL))


def install_handlers() -> None:
    """SIGTERM/SIGHUP: delete what the write tests wrote, then the handler that was there (main thread only;
    an ignored signal stays ignored)."""
    if _installed[0] or threading.current_thread() is not threading.main_thread():
        return
    sigchain.install_signal_handler(_handler, _previous)
    _installed[0] = True


def write_test(cli, url: _c.S3Url, endpoint_url, size: int, count: int, cancel=None, progress=None) -> dict:
    """PUT ``count`` new objects of ``size`` bytes, then one multipart upload of the same total in
    parts of max(5 MiB, size); returns the figures.  Everything is deleted before it returns."""
    sess = WriteSession(cli, url, endpoint_url)
    sess.wait_s = max(10.0, min(120.0, max(size, MIN_PART) / 1e6))  # an 8 MiB PUT on a slow link: seconds
    out: dict = {"prefix": f"s3://{url.bucket}/{sess.prefix}"}
    lat = LatencyHistogram()
    body = os.urandom(size)
    try:
        t0 = time.perf_counter()
        done = 0
        for i in range(count):
            if cancel is not None and cancel.is_set():
                break
            t = time.perf_counter_ns()
            try:
                sess.put(f"put-{i:05d}.bin", body)
            except ProbeError:
                raise
            except Exception as exc:  # noqa: BLE001
                if _c.error_code(exc) == "PreconditionFailed":  # pragma: no cover - a new prefix
                    raise ProbeError(f"a key under {out['prefix']} already exists: nothing overwritten") from None
                raise ProbeError(_c.explain(exc, url, endpoint_url)) from None
            lat.add(time.perf_counter_ns() - t)
            done += 1
            call_progress(progress, (i + 1) / (count + 1), None)
        dt = time.perf_counter() - t0
        if done:
            p = lat.percentiles((50.0, 99.0))
            out.update(
                {
                    "put_bytes_per_s": done * size / dt,
                    "put_requests_per_s": done / dt,
                    "put_lat_p50_ns": p[50.0],
                    "put_lat_p99_ns": p[99.0],
                    "put_count": done,
                }
            )
        part = max(MIN_PART, size)
        total = part * max(2, min(count, 8))
        if not (cancel is not None and cancel.is_set()):
            key = sess.prefix + "multipart.bin"
            t0 = time.perf_counter()
            try:
                up = sess.call(cli.create_multipart_upload, Key=key)
                parts = []
                chunk = body if len(body) == part else os.urandom(part)
                for n in range(1, total // part + 1):
                    if cancel is not None and cancel.is_set():
                        break
                    r = sess.call(cli.upload_part, Key=key, UploadId=up["UploadId"], PartNumber=n, Body=chunk)
                    parts.append({"ETag": r["ETag"], "PartNumber": n})
                if len(parts) == total // part:
                    sess.call(
                        cli.complete_multipart_upload,
                        Key=key,
                        UploadId=up["UploadId"],
                        MultipartUpload={"Parts": parts},
                        IfNoneMatch="*",
                    )
                    out["multipart_bytes_per_s"] = total / (time.perf_counter() - t0)
                    out["multipart_parts_count"] = len(parts)
            except ProbeError:
                raise
            except Exception as exc:  # noqa: BLE001
                raise ProbeError(_c.explain(exc, url, endpoint_url)) from None
        call_progress(progress, 1.0, None)
    finally:
        out["deleted_count"] = sess.cleanup()
        out["left_prefix"] = sess.left
    return out
