"""The open target shared by the storage probes: :class:`Session` over a
:class:`~nbbench.probes.storage.target.StorageTarget` (temp file or read-only fd, O_DIRECT as the target
decided, cache preparation and the honesty warnings).  The argument checks are in :mod:`.io_args`,
running a job on it in :mod:`.io_job`.

In a directory the Session first removes the temp files killed runs of this host left
there (:func:`nbbench.tempsweep.sweep_stale`, said in the result), creates its own, and
— for the builtin engine, which needs only descriptors — opens every descriptor it
needs and unlinks the name at once, so not even a SIGKILL can leave the file behind.
"""

from __future__ import annotations

import os
from typing import Any

from ... import tempfiles, tempsweep
from ...units import format_bytes
from .._engines import cache, registry
from .._engines.job import JobSpec
from .._engines.sync import run_sync
from .target import StorageTarget, open_read


class Session:
    """An open target: the fd(s) to use, cache mode and labels.  Removes its temp file.

    Whether O_DIRECT is used is the target's decision (:meth:`StorageTarget.decide_direct`),
    taken on the fd opened here: :attr:`direct`, :attr:`direct_fallback`.
    """

    def __init__(
        self,
        target: StorageTarget,
        direct_req,
        what: str,
        fill: int = 0,
        write: bool = False,
        cancel=None,
        progress=None,
        engine: str = registry.DEFAULT,
        keep_name: bool = False,
    ):
        self.target = target
        self.labels: dict[str, Any] = {}
        self.warnings: list[str] = []
        self.tmp = None
        self.path = target.path
        target.direct, target.direct_fallback = False, None
        self.fd = -1  # for reads (O_DIRECT when direct)
        self.wfd = -1  # writable fd of our temp file
        self.dwfd = -1  # its O_DIRECT write fd, when direct
        # descriptors only: the name goes as soon as they are open — unless others open it by name
        # (``keep_name``: the one file every rank reads; rank 0 removes it at the end)
        self.unlink = registry.get(engine).in_process and not keep_name
        self.region = target.size
        self._direct_req = direct_req
        self._what = what
        self._fill = fill
        self._write = write
        self._cancel = cancel
        self._progress = progress
        self.interrupted = False
        if target.memory:
            self.warnings.append(target.memory_warning())

    @property
    def direct(self) -> bool:
        return self.target.direct

    @property
    def direct_fallback(self) -> str | None:
        return self.target.direct_fallback

    # ------------------------------------------------------------- opening
    def __enter__(self):
        try:
            self._open()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def _decide_direct(self, fd: int, write: bool) -> None:
        warning = self.target.decide_direct(fd, write, self._direct_req)
        if warning:
            self.warnings.append(warning)

    def _open(self) -> None:
        t = self.target
        if t.kind == "dir":
            self._sweep(t.path)
            self.tmp = tempfiles.create(t.path, self._what)
            self.path = self.tmp.path
            self.wfd = self.tmp.fd
            self._decide_direct(self.wfd, write=True)
            cloexec = getattr(os, "O_CLOEXEC", 0)
            self.fd = os.open(self.path, os.O_RDONLY | cloexec | (os.O_DIRECT if self.direct else 0))
            if self.direct:
                self.dwfd = os.open(self.path, os.O_WRONLY | cloexec | os.O_DIRECT)
            if self.unlink:
                self.tmp.unlink()
            if self._fill:
                self._fill_file(self._fill)
            self.region = self._fill
        else:
            self.fd = open_read(t.path)
            self._decide_direct(self.fd, write=False)
            if self.direct:
                os.close(self.fd)
                self.fd = open_read(t.path, direct=True)

    def _sweep(self, directory: str) -> None:

        n, nbytes, kept = tempsweep.sweep_stale(directory)
        if n:
            files = "file" if n == 1 else "files"
            self.labels["stale_temp_removed"] = f"{n} {files}, {format_bytes(nbytes, binary=True)}"
            self.warnings.append(
                f"removed {n} stale nbbench temporary {files} ({format_bytes(nbytes, binary=True)}) from "
                f"{directory}: left by runs on this host whose process was killed"
            )
        if kept:
            self.warnings.append(f"stale nbbench temporary files in {directory}: {tempsweep.kept_note(kept)}")

    def _fill_file(self, size: int) -> None:
        """Write ``size`` bytes of random data (not timed) so reads have real data to read."""

        fd = self._write_fd()
        outer = self._progress

        def prog(frac, metrics):
            outer(None if frac is None else 0.15 * frac, None)

        import math as _m

        bs = _m.gcd(size, 1 << 20)
        spec = JobSpec(
            fd=fd,
            op="write",
            pattern="seq",
            bs=bs,
            qd=1,
            region=size,
            total=size,
            cancel=self._cancel,
            progress=prog if outer is not None else None,
            fsync_end=True,
            progress_key="write_bytes_per_s",
        )
        out = run_sync(spec)
        if out.interrupted:
            self.interrupted = True

    def run_extern(self, tool: str, run, presize: int = 0):
        """``run()``: an external engine (dd, fio) that opens our temp file by name.  The file gets
        ``presize`` bytes first (fio replaces a shorter file by a new one:
        :meth:`~nbbench.tempfiles.TempFile.presize`); after it, the name must still name the locked
        file (:meth:`~nbbench.tempfiles.TempFile.check_locked`: else the run fails)."""
        if self.tmp is not None and presize:
            self.tmp.presize(presize)
        out = run()
        if self.tmp is not None:
            self.tmp.check_locked(tool)
        return out

    def _write_fd(self) -> int:
        """The write fd on our temp file (the Session's; it closes it): O_DIRECT when direct."""
        return self.dwfd if self.direct and self.dwfd >= 0 else self.wfd

    def close(self) -> None:
        for name in ("fd", "dwfd"):
            fd = getattr(self, name)
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
                setattr(self, name, -1)
        if self.tmp is not None:
            self.tmp.remove()
            self.tmp = None

    # ------------------------------------------------------------- caches
    def prepare_read(self, region: int, warm: bool = False) -> str:
        """Set up the cache before a timed read; returns the cache label."""

        if self.target.memory:
            self.labels["cache_drop"] = "none (the data live in RAM)"
            return "memory"
        if self.direct:
            self.labels["cache_drop"] = "not needed (O_DIRECT)"
            return "direct"
        if warm:
            cache.preload(self.fd, region)
            self.labels["cache_drop"] = "none (preloaded: --warm)"
            frac = cache.resident_fraction(self.fd, region)
            if frac is not None and frac < 0.9:
                self.warnings.append(
                    f"only {frac * 100:.0f} % of the region stayed in the page cache; the run mixes cache and disk"
                )
            return "buffered-warm"
        if self.wfd >= 0:
            os.fdatasync(self.wfd)
        ok, method = cache.drop_file(self.fd, 0, writable=False)
        frac = cache.resident_fraction(self.fd, region)
        if not ok or (frac is not None and frac > 0.5):
            self.labels["cache_drop"] = (
                f"{method} (failed: {frac * 100:.0f} % still cached)" if frac is not None else method
            )
            self.warnings.append(
                "the page cache could not be emptied for this file (tmpfs or a similar memory filesystem): "
                "the reads came from memory"
            )
            return "buffered-warm"
        self.labels["cache_drop"] = method + (" (mincore: 0 % cached)" if frac == 0 else "")
        return "buffered-cold"

    def buffered_warnings(self, region: int, cache_mode: str) -> None:

        if cache_mode in ("direct", "memory") or self.target.memory:
            return
        ram = cache.memory_bytes()
        if ram and region < 2 * ram:
            self.warnings.append(
                f"the region ({format_bytes(region, binary=True)}) is smaller than twice the RAM "
                f"({format_bytes(ram, binary=True)}): the page cache will serve it — use --direct "
                "for the disk's own speed"
            )

    def data_warnings(self, region: int, bs: int) -> None:

        if self.target.kind == "file":
            try:
                sp = cache.sparse_fraction(os.stat(self.target.path))
            except OSError:
                sp = 0.0
            if sp > 0.1:
                self.warnings.append(
                    f"{self.target.path} is sparse ({sp * 100:.0f} % holes): holes read as zeros without "
                    "touching the disk, so reads look faster than real data — test a file with real data"
                )
                return
        if cache.looks_zero(self.fd, region, bs if bs % 4096 == 0 else 4096 * max(1, bs // 4096)):
            self.warnings.append(
                "the data read are all zeros: sparse or never-written blocks can be served without touching "
                "the disk, and some storage compresses zeros — test real data"
            )

    def base_labels(self, engine: str, cache_mode: str) -> dict[str, Any]:
        lab = {"engine": engine, "cache": "memory" if self.target.memory else cache_mode}
        lab.update(self.labels)
        if self.direct_fallback:
            lab["direct_fallback"] = self.direct_fallback
        lab.update(self.target.labels())
        return lab
