"""Things to try nbbench with, without a cloud: a local S3-compatible server on this machine.

:func:`local_s3` starts moto's S3 server (``pip install 'moto[server]'``) in a child process
listening on 127.0.0.1 only, on a free port, and gives its endpoint and a boto3 client with
dummy credentials; :meth:`LocalS3.fill` puts synthetic objects (random bytes, or tar shards)
under a prefix.  Everything it holds is in the server's memory and gone when it stops::

    from nbbench.testing import local_s3
    with local_s3() as s3:
        s3.fill("s3://bench/objects/", count=64, size="4M")
        %iobench s3 s3://bench/objects/ --endpoint-url {s3.endpoint_url}

For trying things out and for tests: it is a functional S3, not a fast one (one Python
process serves every request), so its figures say nothing about a real store.
"""

from __future__ import annotations

import atexit
import io
import os
import socket
import subprocess
import sys
import tarfile
import time

from .probes._engines.extern import _death_signal
from .probes.objects.client import parse_url
from .results import ProbeError
from .units import parse_size

__all__ = ["local_s3", "LocalS3", "DUMMY_CREDENTIALS"]

#: what the local server accepts (any credentials do); never real ones
DUMMY_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "nbbench-local",
    "AWS_SECRET_ACCESS_KEY": "nbbench-local",
    "AWS_DEFAULT_REGION": "us-east-1",
}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalS3:
    """A moto S3 server on 127.0.0.1:``port`` in a child process (see the module doc)."""

    def __init__(self, port: int | None = None, set_env: bool = True):
        self.port = port or _free_port()
        self.endpoint_url = f"http://127.0.0.1:{self.port}"
        self.set_env = set_env
        self._proc: subprocess.Popen | None = None
        self._saved_env: dict = {}

    def start(self, timeout: float = 20.0) -> LocalS3:
        try:
            import moto.server  # noqa: F401
        except ImportError:
            raise ProbeError("a local S3 server needs moto's server: pip install 'moto[server]'") from None

        # the server dies with this process (a kernel restart or kill leaves no listener behind)
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            preexec_fn=_death_signal(),
        )
        atexit.register(self.stop)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise ProbeError(
                    f"the local S3 server ended at start (exit {self._proc.returncode}; port {self.port} taken?)"
                )
            if self._listening():
                break
            time.sleep(0.05)
        else:
            self.stop()
            raise ProbeError(f"the local S3 server did not start within {timeout:.0f} s")
        if self.set_env:
            for k, v in DUMMY_CREDENTIALS.items():
                self._saved_env[k] = os.environ.get(k)
                os.environ[k] = v
        return self

    def _listening(self) -> bool:
        """Is our own child listening on the port (never another server that took it meanwhile)?"""
        import psutil

        try:
            procs = [psutil.Process(self._proc.pid)]
            procs += procs[0].children(recursive=True)
            return any(
                c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == self.port
                for p in procs
                for c in (getattr(p, "net_connections", None) or p.connections)(kind="tcp")
            )
        except (psutil.Error, AttributeError):
            return False

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(timeout=10)
        self._proc = None
        for k, v in self._saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        self._saved_env = {}

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def client(self):
        """A boto3 S3 client for this server (dummy credentials)."""
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint_url,
            region_name="us-east-1",
            aws_access_key_id=DUMMY_CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=DUMMY_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        )

    def fill(
        self, url: str, count: int = 32, size="1M", shards: bool = False, samples_per_shard: int = 64, seed: int = 0
    ) -> list[str]:
        """Put ``count`` objects of ``size`` (random bytes; or WebDataset tar shards of about that size
        with ``shards=True``) under ``s3://BUCKET/PREFIX`` (the bucket made if needed); their keys."""
        u = parse_url(url)
        c = self.client()
        try:
            c.create_bucket(Bucket=u.bucket)
        except Exception as exc:  # noqa: BLE001 - already there
            if "BucketAlready" not in type(exc).__name__ and "BucketAlready" not in str(exc):
                raise
        nbytes = parse_size(size)
        rnd = __import__("random").Random(seed)
        keys = []
        for i in range(count):
            if shards:
                body, key = _tar_shard(rnd, nbytes, samples_per_shard, i), f"{u.prefix}shard-{i:05d}.tar"
            else:
                body, key = rnd.randbytes(nbytes), f"{u.prefix}obj-{i:05d}.bin"
            c.put_object(Bucket=u.bucket, Key=key, Body=body)
            keys.append(key)
        return keys

    def __enter__(self) -> LocalS3:
        return self.start() if not self.running else self

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<nbbench LocalS3 {self.endpoint_url} {'running' if self.running else 'stopped'}>"


def _tar_shard(rnd, nbytes: int, samples: int, index: int) -> bytes:
    buf = io.BytesIO()
    each = max(1, nbytes // max(1, samples) - 1024)
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tf:
        for j in range(samples):
            stem = f"{index:05d}{j:05d}"
            for ext, data in ((".jpg", rnd.randbytes(each)), (".cls", str(j % 10).encode())):
                info = tarfile.TarInfo(stem + ext)
                info.size = len(data)
                info.mtime = 0
                tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def local_s3(port: int | None = None, set_env: bool = True) -> LocalS3:
    """Start a local S3 server (see the module doc); use it as a context manager or call ``.stop()``.
    ``set_env``: put dummy credentials in this process's environment while it runs."""
    return LocalS3(port, set_env).start()
