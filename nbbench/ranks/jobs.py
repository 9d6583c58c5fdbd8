"""The storage probes' rank parts (:class:`~nbbench.ranks.rankjob.RankJob` subclasses), and
the registry of every probe that runs as ranks (:data:`JOBS`, :func:`job_for`).

The parts: **dd** — each rank its own new file in the directory (N files, "N-N");
**randread** — in a directory one file written by rank 0 and read by all after a
barrier (``file_per_rank``: each its own), a file or device read by all; **files** —
each rank the files of its own shard of the tree (a stable hash of the relative path).
**checkpoint** and **shards** live in :mod:`.ckptjobs`; loader in :mod:`.loaderjobs`, sweep and
feed in :mod:`.sweepfeed`.
"""

from __future__ import annotations

import os

from ..probes.storage.io_args import DEFAULT_READ_FILE
from ..probes.storage.io_session import Session
from ..probes.storage.target import inspect
from ..results import ProbeError, Result
from ..units import parse_size
from . import group
from .aggregate import Phase
from .ckptjobs import CheckpointJob, ShardsJob
from .colljobs import CollectivesJob
from .rankjob import RankJob, merge_hists, sum_metrics

# The probes are imported inside the jobs' methods: a rank, which unpickles its job, loads only
# the probe that job runs.

__all__ = ["RankJob", "DdJob", "RandreadJob", "FilesJob", "CheckpointJob", "ShardsJob", "job_for", "JOBS"]


# ================================================================== dd
class DdJob(RankJob):
    """Each rank: dd in the shared directory on a new file of its own (N files, "N-N")."""

    kind = "dd"
    phases = [Phase("write", ("write_bytes_per_s",), "write_bw"), Phase("read", ("read_bytes_per_s",), "read_bw")]
    tracked = {op: (f"{op}_elapsed_s", {f"{op}_bytes_per_s": f"{op}_total_bytes"}) for op in ("write", "read")}

    def __init__(self, params):
        super().__init__(params)
        p = self.params
        bs = parse_size(p.get("bs", "1M"))
        total = int(p["count"]) * bs if p.get("count") else parse_size(p.get("size", "1G"))
        self.write_bytes = 0 if p.get("mode") == "read" else total

    def local_checks(self, nranks: int) -> None:

        if self.params.get("mode") in (None, "both", "write"):
            t = inspect(self.params["path"], write=self.params.get("mode") == "write", read=False)
            if t.kind != "dir":
                self.write_bytes = 0
        super().local_checks(nranks)

    def preflight(self, env) -> None:
        self.local_checks(env.world_size)

    def finish(self, res, records):
        sum_metrics(res, records, ("write_total_bytes", "read_total_bytes"))


# ============================================================ randread
class RandreadJob(RankJob):
    """Random reads by every rank: over one shared file (written by rank 0 in a directory,
    read by all after a barrier, removed by rank 0 at the end), each rank's own file
    (``file_per_rank``), or the file / device given."""

    kind = "randread"
    phases = [Phase("read", ("iops", "read_bytes_per_s"), "bw")]
    tracked = {"read": ("runtime_s", {"iops": "ios_count", "read_bytes_per_s": "read_total_bytes"})}

    def __init__(self, params):
        super().__init__(params)
        self._session = None
        self._shared_path: str | None = None
        self.kind_of_path: str | None = None

        size = self.params.get("size")
        self.region = parse_size(size) if size is not None else DEFAULT_READ_FILE

    def _dir(self) -> bool:

        t = inspect(self.params["path"], write=False)
        self.kind_of_path = t.kind
        return t.kind == "dir"

    def local_checks(self, nranks: int) -> None:
        if self._dir():
            self.write_bytes = self.region
            self._room(nranks if self.params.get("file_per_rank") else 1)

    def preflight(self, env) -> None:
        self.local_checks(env.world_size)

    def setup(self, env) -> None:
        if self.kind_of_path != "dir" or self.params.get("file_per_rank"):
            return
        err = None
        if env.rank == 0:
            try:
                self._shared_path = self._write_shared()
            except ProbeError as exc:
                err = str(exc)
            except OSError as exc:
                err = f"{exc.strerror or exc}"
        shared = group.broadcast({"path": self._shared_path, "error": err}, env.rank)
        if shared["error"]:
            raise ProbeError(f"rank 0 could not write the file all ranks read: {shared['error']}")
        self._shared_path = shared["path"]

    def _write_shared(self) -> str:

        target = inspect(self.params["path"], write=True)
        # the other ranks open it by name (on other hosts too): its name stays until rank 0 removes it
        s = Session(target, self.params.get("direct"), "randread", fill=self.region, keep_name=True)
        s.__enter__()
        self._session = s
        return s.path

    def teardown(self, env) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None

    def own(self):
        p = self.params
        where = self._shared_path or p["path"]
        size = self.region if self._shared_path else p.get("size")
        return {"path": where, "size": size, "seed": p.get("seed", 0) + 1000 * self.rank}

    def run(self, progress, cancel) -> Result:
        p = self.params
        res = super().run(progress, cancel)
        if self._shared_path:
            res.params["path"] = os.path.abspath(p["path"])
            res.labels["shared_file"] = "one file written by rank 0, read by every rank"
        elif self.kind_of_path == "dir":
            res.labels["shared_file"] = "no: a file per rank"
        return res

    def finish(self, res, records):
        merge_hists(res, records)
        res.labels["file_per_rank"] = bool(self.params.get("file_per_rank"))


# =============================================================== files
class FilesJob(RankJob):
    """Each rank reads the files of its own shard of the tree (a stable hash of the relative
    path decides, so no two ranks read the same file); ``sample`` is per rank."""

    kind = "files"
    phases = [Phase("read", ("files_per_s", "read_bytes_per_s"), "bw")]
    tracked = {"read": ("elapsed_s", {"files_per_s": "files_count", "read_bytes_per_s": "read_total_bytes"})}

    def preflight(self, env) -> None:

        t = inspect(self.params["path"], write=False, read=False)
        if t.kind != "dir":
            raise ProbeError(f"{t.path} is not a directory: files reads the files of a tree")

    def own(self):
        return {"shard": (self.rank, self.world_size)}

    def finish(self, res, records):
        merge_hists(res, records)
        sum_metrics(res, records, ("files_count", "read_total_bytes", "tree_files_count", "tree_total_bytes"))
        res.labels["shards"] = "files split between ranks by a stable hash of the relative path"


#: probe kind -> its rank part.  A new probe opts in with a RankJob subclass here, and in its
#: command ``commands.ranks.OPTIONS`` (in its ``arguments``) and ``commands.ranks.dispatch(...)``.
JOBS: dict[str, type[RankJob]] = {
    "dd": DdJob,
    "randread": RandreadJob,
    "files": FilesJob,
    "checkpoint": CheckpointJob,
    "shards": ShardsJob,
    "collectives": CollectivesJob,
}


def job_for(kind: str, params: dict) -> RankJob:
    """The job of probe ``kind`` with ``params`` (the probe function's own keyword arguments + path)."""
    if kind in ("loader", "sweep", "feed"):
        # here, not at the top: .loaderjobs imports this module
        from .loaderjobs import job_for as loader_job

        return loader_job(kind, params)
    if kind not in JOBS:
        raise ProbeError(f"{kind} does not run as ranks ({', '.join([*JOBS, 'loader', 'sweep', 'feed'])} do)")
    return JOBS[kind](params)
