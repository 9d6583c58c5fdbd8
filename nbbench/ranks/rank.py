"""One rank's run, start to finish: :func:`run_rank`.

1. join the process group; say who it is (host, local rank, pid) in the control store and
   start its :class:`~nbbench.ranks.control.Watchdog` (heartbeats, the ``stop`` flag, peers);
2. **preflight** on every rank before anything is written — the path is usable and has room
   for N × the size — gathered everywhere, so every rank refuses together and rank 0 says
   which hosts failed;
3. the job's shared set-up (randread's one file, written by rank 0);
4. the **start barrier** and the common clock (:func:`nbbench.ranks.group.start_barrier`);
5. the probe on this rank's part; its progress goes to the control store; on each host the
   local rank 0 samples CPU and disk around it;
6. a plain record (numbers and strings: the rank's ``result.to_dict()``, its tracks on the
   common clock) is **gathered** to rank 0, which builds the one aggregate result
   (:func:`build_result`); the outcome is broadcast, so every rank exits alike.

When a peer dies (no heartbeat) or the store is lost, collectives are skipped: survivors
leave their records in the store, rank 0 builds a ``failed`` result from what arrived and
names the rank and host that went silent; other survivors end with a one-line error.
Temporary files follow the probes' rules on every rank (removed on error, interrupt,
SIGTERM, exit).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from dataclasses import dataclass

from .. import tempfiles
from ..results import ProbeError, Result, result_class
from ..units import format_metric, metric_label
from . import group
from .aggregate import combine
from .control import DEAD_AFTER_S, Control, Gate, Watchdog, connect_launcher_store, remove_left_files
from .hoststats import HostStats
from .rankenv import RankEnv, hostname
from .spawn import ENV_PARENT

__all__ = ["run_rank", "RankOutcome", "build_result", "record_of", "install_sigterm_note"]

_EXIT = {"ok": 0, "interrupted": 130, "failed": 1}


@dataclass
class RankOutcome:
    """What a rank other than 0 returns: nothing to show, only how the run went (its exit code)."""

    rank: int
    status: str
    reason: str | None = None

    @property
    def exit_code(self) -> int:
        return _EXIT.get(self.status, 1)

    def __str__(self) -> str:
        return f"rank {self.rank}: {self.status}" + (f" ({self.reason})" if self.reason else "")


class _Tap:
    """The probe's progress callback: to the watchdog (published), to this process's own bar,
    and when each figure was last reported."""

    def __init__(self, watchdog: Watchdog, job, local=None):
        self.watchdog = watchdog
        self.job = job
        self.local = local

    def __call__(self, fraction, metrics=None):
        now = time.time()
        for k in metrics or ():
            self.job.last_report[k] = now
        self.watchdog.progress(fraction, metrics)
        if self.local is not None:
            try:
                self.local(fraction, metrics)
            except Exception:  # noqa: BLE001 - a bar never stops a probe
                pass


def run_rank(
    job,
    env: RankEnv,
    backend: str = "gloo",
    cancel: threading.Event | None = None,
    start_timeout_s: float = 60.0,
    timeout_s: float = group.DEFAULT_TIMEOUT_S,
    progress=None,
):
    """Run ``job`` as rank ``env.rank``: rank 0 returns the aggregate Result, the others a RankOutcome.
    ``progress``: this rank's own bar (its figures also go to the control store)."""
    cancel = cancel if cancel is not None else threading.Event()
    host = hostname()
    tempfiles.install_handlers()
    install_sigterm_note(env)
    job.bind(env)
    launcher = connect_launcher_store()
    group.join(env, backend, timeout_s)
    try:
        store = launcher if launcher is not None else group.default_store()
        control = Control(store, env.world_size)
        _ACTIVE[:] = [control, host]
        control.set(f"info/{env.rank}", {"host": host, "local_rank": env.local_rank, "pid": os.getpid()})
        control.beat(env.rank)
        wd = Watchdog(control, env.rank, cancel, temp_files=_held, parent=_launcher_pid(launcher))
        wd.start()
        try:
            return _run(job, env, backend, control, wd, cancel, host, launcher is not None, start_timeout_s, progress)
        except _Quiet as quiet:  # refused with the others; rank 0 says why
            return RankOutcome(env.rank, "failed", str(quiet))
        finally:
            wd.halt()
    finally:
        _ACTIVE.clear()
        group.leave()


def _run(job, env, backend, control, wd, cancel, host, under_launcher, start_timeout_s, progress=None):
    rank, world = env.rank, env.world_size
    _preflight(job, env, control, host, under_launcher)
    try:
        try:
            job.setup(env)
        except ProbeError as exc:
            _refuse(str(exc), env, control, under_launcher)
        clock = group.start_barrier(backend, world, start_timeout_s)
        wd.arm()
        stats = None
        if env.local_rank == 0:
            stats = HostStats(job.monitor_path()).start()
        res, error = None, None
        gate = job.ready = Gate(control, world, cancel)
        try:
            res = job.run(_Tap(wd, job, progress), cancel)
        except ProbeError as exc:
            error = str(exc)
        except Exception as exc:  # noqa: BLE001 - this rank's failure, reported with the others'
            error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")
        if error is not None:
            gate.abort(f"rank {rank}: {error}")
        elif res is not None and res.status == "failed":  # the others must not wait at its next phase's meeting
            gate.abort(f"rank {rank}: {res.reason or 'failed'}")
        rec = record_of(job, env, host, res, error, clock, stats.stop() if stats else None, wd)
        if wd.dead or wd.lost:
            return _broken(job, env, control, wd, rec, host)
        try:
            records = group.gather(rec, rank, world)
        except Exception as exc:  # noqa: BLE001 - a peer went away during the gather
            wd.lost = wd.lost or f"the gather failed: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
            return _broken(job, env, control, wd, rec, host)
        result = None
        if rank == 0:
            result = build_result(job, records, env, backend)
            if under_launcher:
                control.set("result", result.to_dict())
        status = group.broadcast([result.status, result.reason] if result is not None else None, rank)
    finally:
        job.teardown(env)
    return result if rank == 0 else RankOutcome(rank, status[0], status[1])


def _preflight(job, env, control, host, under_launcher) -> None:
    err = None
    try:
        job.preflight(env)
    except ProbeError as exc:
        err = str(exc)
    except Exception as exc:  # noqa: BLE001
        err = f"{type(exc).__name__}: {exc}"
    answers = group.all_gather({"rank": env.rank, "host": host, "error": err}, env.world_size)
    bad = [a for a in answers if a["error"]]
    if not bad:
        return
    by_msg: dict[str, list] = {}
    for a in bad:
        by_msg.setdefault(a["error"], []).append(a)
    parts = []
    for msg, who in by_msg.items():
        hosts = sorted({a["host"] for a in who})
        ranks = ", ".join(str(a["rank"]) for a in who)
        parts.append(
            f"{msg} — on host{'s' if len(hosts) > 1 else ''} {', '.join(hosts)} "
            f"(rank{'s' if len(who) > 1 else ''} {ranks})"
        )
    _refuse("preflight refused on every rank, nothing was written: " + "; ".join(parts), env, control, under_launcher)


def _refuse(message: str, env, control, under_launcher) -> None:
    """Every rank stops with ``message``: rank 0 says it (to the launcher too), the others quietly."""
    if env.rank == 0 and under_launcher:
        control.set("error", message)
    raise ProbeError(message) if env.rank == 0 else _Quiet(message)


class _Quiet(ProbeError):
    """A rank other than 0 refusing with the others: rank 0 says why."""


def record_of(job, env, host, res: Result | None, error: str | None, clock, host_stats, wd) -> dict:
    """This rank's plain record (numbers and strings only)."""
    if res is None:
        status, reason = "failed", error or "no result"
        rd, metrics, tracks, warnings = None, {}, {}, []
    else:
        status, reason = res.status, res.reason
        if status == "interrupted" and wd.stop_reason:
            reason = f"stopped ({wd.stop_reason}); the figures cover what was done before"
        rd = res.to_dict()
        metrics = {
            k: v for k, v in res.metrics.items() if isinstance(v, (int, float)) and not isinstance(v, bool) or v is None
        }
        tracks = job.tracks(res, clock)
        warnings = list(res.warnings)
    return {
        "rank": env.rank,
        "host": host,
        "local_rank": env.local_rank,
        "pid": os.getpid(),
        "status": status,
        "reason": reason,
        "metrics": metrics,
        "tracks": tracks,
        "result": rd,
        "host_stats": host_stats,
        "warnings": warnings,
        "clock_offset_s": clock.offset_s if clock else None,
        "start_unix": clock.rank0_start if clock else None,
    }


def build_result(job, records: list[dict], env: RankEnv | None, backend: str, launcher: str | None = None) -> Result:
    """The one result of the run, from every rank's record (rank 0, or the launcher when rank 0 is lost)."""
    world = env.world_size if env is not None else len(records)
    comb = combine(records, job.phases, world)
    first = next((r["result"] for r in sorted(records, key=lambda r: r["rank"]) if r.get("result")), None)
    res = result_class(job.kind)(params=dict((first or {}).get("params") or job.params))
    res.params.setdefault("path", job.params.get("path"))
    res.params["ranks"] = world
    res.labels = dict((first or {}).get("labels") or {})
    for k in ("io_path", "read_io_path", "write_io_path"):  # one rank's words; every rank's are in extra.ranks
        res.labels.pop(k, None)
    res.labels.update(comb.labels)
    res.labels["launcher"] = launcher or (env.source if env is not None else "?")
    res.labels["backend"] = backend
    res.metrics.update({k: v for k, v in comb.metrics.items()})
    res.samples.update(comb.samples)
    res.extra["ranks"] = comb.ranks
    res.extra["hosts"] = comb.hosts
    for w in comb.warnings:
        res.warn(w)
    res.extra["answer"] = answer(res, job)
    job.finish(res, records)  # may refine the answer
    zero = [r.get("start_unix") for r in records if r.get("start_unix")]
    if zero:
        res.extra["start_unix"] = min(zero)  # the start barrier's time (rank 0's clock): the common zero
    starts = [((r.get("result") or {}).get("started_at")) for r in records]
    starts = [s for s in starts if s]
    if starts:
        res.started_at = min(starts)
    return res.finish(comb.status, comb.reason)


def answer(res: Result, job) -> str:
    """One line: what all the ranks got together, first."""
    lab = res.labels
    who = f"{lab.get('ranks')} ranks on {lab.get('hosts')} host{'s' if lab.get('hosts') != 1 else ''}"
    bits = []
    for ph in job.phases:
        k = ph.primary
        last = format_metric(k, res.metrics.get(f"{k}_last_done"))
        if res.metrics.get(k) is not None:
            bits.append(
                f"{metric_label(k)} {format_metric(k, res.metrics[k])} together while all ran "
                f"({last} until the last finished)"
            )
        elif res.metrics.get(f"{k}_last_done") is not None:
            bits.append(
                f"{metric_label(k)} {last} together until the last finished (the ranks' {ph.name} phases "
                "never ran at the same time: too short to overlap)"
            )
    sp = res.metrics.get("rank_spread_pct")
    tail = f"; the slowest rank got {sp:.0f} % less than the fastest" if sp is not None else ""
    return f"{who}: " + ("; ".join(bits) if bits else "no figures") + tail


def _broken(job, env, control, wd, rec, host):
    """A peer died or the store went away: no more collectives."""
    dead = []
    infos = {}
    try:
        control.set(f"rec/{env.rank}", rec)
        infos = control.per_rank("info")
    except Exception:  # noqa: BLE001 - the store itself may be what was lost
        pass
    for r in wd.dead:
        who = infos.get(r) or {}
        dead.append(
            f"rank {r} on {who.get('host', '?')} (pid {who.get('pid', '?')}) stopped answering "
            f"(no heartbeat for {int(wd_dead_after())} s: killed, crashed or its host lost)"
        )
    why = "; ".join(dead) or (
        f"lost the coordination store (the launcher of rank 0's host keeps it: rank 0 or its host is gone): {wd.lost}"
    )
    if env.rank != 0:
        raise ProbeError(f"rank {env.rank} on {host}: the run failed: {why}")
    deadline = time.monotonic() + 2.0
    recs = {env.rank: rec}
    while time.monotonic() < deadline:
        try:
            recs.update({r: v for r, v in control.per_rank("rec").items()})
        except Exception:  # noqa: BLE001
            break
        if len(recs) >= env.world_size - len(wd.dead):
            break
        time.sleep(0.1)
    remove_left_files(control, host)  # a dead peer on this host cannot remove its own files
    try:
        job.sweep_left()  # and what it made after it last said (stale: its process is gone)
    except Exception:  # noqa: BLE001 - the run's outcome matters more
        pass
    for r in wd.dead:
        who = infos.get(r) or {}
        recs[r] = {
            "rank": r,
            "host": who.get("host", "?"),
            "local_rank": who.get("local_rank"),
            "status": "failed",
            "reason": "stopped answering (no heartbeat): killed, crashed or its host lost",
            "metrics": {},
            "tracks": {},
        }
    res = build_result(job, list(recs.values()), env, "?")
    res.reason = why
    return res


def _launcher_pid(launcher) -> int | None:
    """Under ``--ranks``: the launching process's pid (a rank winds up when it is gone)."""
    try:
        return int(os.environ[ENV_PARENT]) if launcher is not None else None
    except (KeyError, ValueError):
        return None


def _held() -> list[str]:
    """The temporary files and directories this rank holds (published: the launcher removes what a
    killed rank leaves)."""
    return tempfiles.registered() + tempfiles.registered_dirs()


def wd_dead_after() -> float:
    return DEAD_AFTER_S


_SIGTERM_NOTED: list = []
_ACTIVE: list = []  # [control, host] while a rank runs


def install_sigterm_note(env: RankEnv) -> None:
    """On SIGTERM (torchrun ends the other ranks when one fails): one line on stderr, then the
    temporary files' own handler (removes them, ends the process as SIGTERM would).  From the
    main thread, once."""
    if threading.current_thread() is not threading.main_thread() or _SIGTERM_NOTED:
        return
    _SIGTERM_NOTED.append(True)
    prev = signal.getsignal(signal.SIGTERM)
    line = (
        f"nbbench: rank {env.rank} on {hostname()}: ended by SIGTERM (the launcher stops every rank when one fails)\n"
    )

    def handler(signum, frame):
        try:
            os.write(sys.stderr.fileno(), line.encode())
        except (OSError, ValueError):
            pass
        if _ACTIVE:  # the files of a rank on this host that was killed outright: nobody else can remove them
            remove_left_files(*_ACTIVE)
        if callable(prev):
            prev(signum, frame)
        else:
            tempfiles.cleanup_all()
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)

    try:
        signal.signal(signal.SIGTERM, handler)
    except (ValueError, OSError):
        pass
