"""The storage engines, declared once: their names, what each can run, and the job every storage
probe hands them.

A job (:class:`IoJob`) is one stream of I/O whatever the probe: dd's sequential pass is a
size-based ``seq`` job at queue depth 1, randread a time-based ``rand`` job, a preset's row
either.  Each engine (:data:`ENGINES`) declares which patterns it runs, whether it runs
time-based jobs and queue depths above 1, how it runs ``--jobs``, which buffers it has and
whether it works on the probe's own descriptors or opens the file by name.  From that come the
``--engine`` choices of every command (:func:`engine_names`) and the one sentence an
unsupported combination gets (:func:`check`); the one dispatcher that runs a job is
:func:`nbbench.probes.storage.io_job.run_job`.

Layer: measure, inside :mod:`nbbench.probes._engines`; imports only the bottom layer.  Cheap to
import (commands read their choices from it while building parsers).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...results import ProbeError

__all__ = [
    "Engine",
    "IoJob",
    "ENGINES",
    "BUILTIN",
    "DD",
    "FIO",
    "DEFAULT",
    "SEQ",
    "RAND",
    "engine_names",
    "get",
    "check",
]

SEQ, RAND = "seq", "rand"
PATTERN_WORDS = {SEQ: "sequential", RAND: "random"}


@dataclass(frozen=True)
class Engine:
    """What one engine can run (read by :func:`check` and :func:`engine_names`)."""

    name: str
    help: str  # a few words for --engine's help
    patterns: tuple[str, ...] = (SEQ, RAND)
    timed: bool = True  # time-based jobs (runtime, ramp) beside one size-based pass
    queue: bool = True  # queue depths above 1
    jobs: str = "any"  # "any": size-based passes split over jobs too; "timed": time-based only; "one"
    buffers: tuple[str, ...] = ("pages",)  # the --buffers kinds it has
    in_process: bool = False  # runs in this process on the Session's descriptors (else a tool opening the name)
    writes_zeros: bool = False  # its writes write zeros (dd's /dev/zero), else random data

    @property
    def write_data(self) -> str:
        """What its writes write: the ``write_data`` label."""
        return "zeros (/dev/zero)" if self.writes_zeros else "random"

    def __str__(self) -> str:
        return self.name


BUILTIN = Engine(
    "builtin",
    "nothing to install: QD1 pread/pwrite, io_uring deeper, processes for --jobs",
    buffers=("pages", "huge"),
    in_process=True,
)
DD = Engine(
    "dd",
    "the system dd: one sequential pass at queue depth 1",
    patterns=(SEQ,),
    timed=False,
    queue=False,
    jobs="one",
    writes_zeros=True,
)
FIO = Engine("fio", "the system fio (io_uring, else libaio)", jobs="timed")

#: every engine, by name (the order of --engine's choices)
ENGINES: dict[str, Engine] = {e.name: e for e in (BUILTIN, DD, FIO)}
DEFAULT = BUILTIN.name


@dataclass
class IoJob:
    """One stream of I/O, what to do (where: the probe's Session).  Size based (``total`` bytes in one
    pass from offset 0) or time based (``runtime`` seconds after ``ramp``, over ``region`` bytes)."""

    engine: str = DEFAULT
    op: str = "read"  # "read" | "write"
    pattern: str = SEQ  # SEQ | RAND
    bs: int = 1 << 20
    qd: int = 1
    region: int = 0
    total: int | None = None  # size based: bytes of the one pass
    runtime: float | None = None  # time based: seconds measured
    ramp: float = 0.0
    jobs: int = 1  # independent copies in as many processes (builtin) / fio's numjobs
    threads: int = 1  # the builtin engine's threads of one process (T of a QnTm row)
    seed: int = 0
    buffers: str = "pages"
    builtin_path: str | None = None  # builtin: force "sync" | "uring" | "threads"
    cache_mode: str = "direct"  # the cache label prepared for it (fio drops the cache of a cold read)
    fsync_end: bool = False  # fdatasync inside the timed window (buffered writes)
    cancel: Any = None
    progress: Any = None

    @property
    def timed(self) -> bool:
        return self.runtime is not None

    @property
    def progress_key(self) -> str:
        return f"{self.op}_bytes_per_s"


def get(name) -> Engine:
    """The engine called ``name`` (case-insensitive; None: the default); a ProbeError naming the choices else."""
    if isinstance(name, Engine):
        return name
    key = (name or DEFAULT).lower()
    if key not in ENGINES:
        raise ProbeError(f"unknown engine {name!r}: choose from {', '.join(ENGINES)}")
    return ENGINES[key]


def engine_names(pattern: str | None = None, *, timed: bool = False, queue: bool = False) -> list[str]:
    """The engines that run ``pattern`` (SEQ, RAND; None: any), time-based jobs where ``timed``,
    queue depths above 1 where ``queue`` — a command's ``--engine`` choices: dd's are
    ``engine_names(SEQ)``, randread's ``engine_names(RAND, timed=True, queue=True)``."""
    return [
        e.name
        for e in ENGINES.values()
        if (pattern is None or pattern in e.patterns) and (e.timed or not timed) and (e.queue or not queue)
    ]


def check(job: IoJob, what: str | None = None) -> Engine:
    """The job's engine, or one ProbeError sentence saying why it cannot run this job and which
    engines can (``what``: the probe's name, said first, as ``randread --engine dd: …``)."""
    e = get(job.engine)
    why = None
    if job.pattern not in e.patterns:
        why = f"the {e} engine has no {PATTERN_WORDS.get(job.pattern, job.pattern)} I/O ({_does(e)})"
        fits = engine_names(job.pattern, timed=job.timed, queue=job.qd > 1)
    elif job.timed and not e.timed or job.qd > 1 and not e.queue:
        why = f"the {e} engine runs no time-based jobs or queue depths ({_does(e)})"
        fits = engine_names(job.pattern, timed=job.timed, queue=job.qd > 1)
    elif job.jobs > 1 and (e.jobs == "one" or e.jobs == "timed" and not job.timed):
        why = (
            f"jobs={job.jobs} needs the builtin engine here ("
            + (_does(e) if e.jobs == "one" else f"{e}'s numjobs would each make the whole pass")
            + "; randread and disk take fio's numjobs)"
        )
        fits = [x.name for x in ENGINES.values() if x.jobs == "any"]
    elif job.buffers not in e.buffers:
        why = f"buffers {job.buffers!r} is the builtin engine's option: {e} uses its own page-aligned buffers"
        fits = [x.name for x in ENGINES.values() if job.buffers in x.buffers]
    if why is None:
        return e
    use = " or ".join(fits)
    head = f"{what} --engine {e}: " if what else ""
    raise ProbeError(f"{head}{why}; use --engine {use}" if use else f"{head}{why}")


def _does(e: Engine) -> str:
    if e.timed:
        return f"{e} runs {' and '.join(PATTERN_WORDS[p] for p in e.patterns)} I/O"
    return f"{e} makes one {' or '.join(PATTERN_WORDS[p] for p in e.patterns)} pass at queue depth 1"
