"""``--ranks N``: N local ranks as child processes of nbbench's own spawner (:mod:`.spawn`): no network port.

The launching process (a notebook kernel, the CLI) never joins the process group.  It makes a
private directory (mode 0700, a new name, registered for removal), starts the ranks
(:class:`~nbbench.ranks.spawn.Ranks`: ``python -m nbbench SUBCOMMAND …`` in sessions of their own),
opens the control store it shares with them (a :class:`torch.distributed.FileStore` in that
directory, keys under a random token) and, while they run:

* reads every rank's progress from the store and shows the sum (bar, live plot);
* on Stop / Ctrl-C (``cancel``) sets ``stop``: every rank winds up its probe within
  half a second and the partial results are still gathered — the run ends
  ``interrupted`` in about 2 s; ranks that do not answer within ``grace_s`` are
  terminated (SIGTERM to each rank's process group, then SIGKILL);
* when a rank fails, stops the others as torchrun did: at once when it was killed or crashed
  on a signal, after ``grace_s`` when it exited with an error (time for the others to end
  too, and for rank 0 to hand over what it has);
* afterwards removes any temporary file or directory a terminated rank left (each rank
  publishes the ones it holds; the job then sweeps its directory for what a killed rank
  made since: :meth:`~nbbench.ranks.rankjob.RankJob.sweep_left`), and the private directory.

SIGTERM or SIGHUP to the launching process (:func:`install_handlers`, from the main thread)
and its exit stop every rank the same way, remove what they left and the private directory,
then the process ends as it would have.

Rank 0 hands the aggregate result back through the store.  When a rank crashes or is
killed, the result is ``failed`` with that rank, its host, why it ended (its signal, or its
exit code and last line) and the ranks the launcher stopped.
"""

from __future__ import annotations

import atexit
import os
import secrets
import shutil
import signal
import tempfile
import time
from collections.abc import Callable

from .. import sigchain, tempfiles, tempsweep
from ..results import ProbeError, Result
from .control import Control, open_file_store, remove_left_files
from .rank import build_result
from .rankenv import hostname
from .spawn import Ranks, socket_env

__all__ = ["launch", "need_torch", "sum_progress", "install_handlers"]

POLL_S = 0.2


def need_torch(import_it: bool = False):
    """A one-line ProbeError when torch is not installed (found without importing it, unless asked)."""
    import importlib.util

    try:
        found = importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise ProbeError("--ranks needs PyTorch (torch.distributed): pip install torch")
    if not import_it:
        return None
    try:
        import torch.distributed as td
    except ImportError:
        raise ProbeError("--ranks needs PyTorch (torch.distributed): pip install torch") from None
    if not td.is_available():
        raise ProbeError("--ranks needs torch.distributed, which this torch build lacks")
    return td


def sum_progress(states: dict[int, dict], nranks: int) -> tuple[float | None, dict]:
    """All ranks' progress as one: the mean fraction; rates summed, percentages averaged."""
    fracs = [s.get("f") for s in states.values() if isinstance(s, dict) and s.get("f") is not None]
    frac = sum(fracs) / nranks if fracs else None
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for s in states.values():
        for k, v in ((s or {}).get("m") or {}).items():
            if v is None:
                continue
            sums[k] = sums.get(k, 0.0) + float(v)
            counts[k] = counts.get(k, 0) + 1
    out = {k: (v / counts[k] if k.endswith("_pct") else v) for k, v in sums.items()}
    return frac, out


class _Run:
    """One launch in progress: what a signal or the exit must stop and remove."""

    def __init__(self, job, ranks: Ranks, workdir: str):
        self.job = job
        self.ranks = ranks
        self.workdir = workdir
        self.control: Control | None = None

    def abandon(self, kill_after_s: float = 5.0) -> None:
        """Stop every rank still running (each removes its own files on SIGTERM), remove what a
        killed one left, then the private directory.  Safe to repeat, and from a signal handler
        (it takes no lock)."""
        self.ranks.stop(kill_after_s)
        if self.control is not None and os.path.isdir(self.workdir):  # the store lives in it
            remove_left_files(self.control)
        _sweep_job(self.job)
        shutil.rmtree(self.workdir, ignore_errors=True)


_ACTIVE: list[_Run] = []
_PREVIOUS: dict[int, object] = {}
_INSTALLED: list = []
_OWNER = [os.getpid()]  # a forked child (a DataLoader worker) launched no ranks of its own


def _forget_runs() -> None:
    _OWNER[0] = os.getpid()
    _ACTIVE.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_runs)


def install_handlers() -> None:
    """From the main thread, before the probe's thread: SIGTERM / SIGHUP to the launching process stop the
    ranks (and remove their files and the private directory) before the handler that was there runs;
    so does the process's exit.  A signal the process ignores stays ignored."""
    tempfiles.install_handlers()  # ours runs first, then theirs (which ends the process as before)
    if not _INSTALLED:
        _INSTALLED.append(True)
        atexit.register(_abandon_all)
    sigchain.install_signal_handler(_on_signal, _PREVIOUS)


def _abandon_all() -> None:
    if os.getpid() != _OWNER[0]:
        return
    for run in list(_ACTIVE):
        try:
            run.abandon()
        except Exception:  # noqa: BLE001 - the other runs still get their turn
            pass


def _on_signal(signum, frame):
    _abandon_all()
    sigchain.chain_signal(signum, frame, _PREVIOUS.get(signum))


def launch(
    argv: list[str],
    nproc: int,
    job,
    progress: Callable | None = None,
    cancel=None,
    on_figures: Callable | None = None,
    grace_s: float = 3.0,
    kill_after_s: float = 5.0,
    backend: str = "gloo",
) -> Result:
    """Run ``nbbench ARGV`` as ``nproc`` local ranks and return the one aggregate result."""
    need_torch()
    install_handlers()
    tmp = tempfile.gettempdir()
    try:
        swept = tempsweep.sweep_stale(tmp)[0]  # a private directory a killed launcher left
    except Exception:  # noqa: BLE001 - a sweep never stops a run
        swept = 0
    extra, socket_warnings = socket_env(os.environ, backend)
    workdir = tempfiles.create_dir(tmp, "ranks").path
    ranks = Ranks(argv, nproc, workdir, "nbbench-" + secrets.token_hex(6), extra)
    run = _Run(job, ranks, workdir)
    _ACTIVE.append(run)
    stopped_at = killed = failed_at = term_at = None
    try:
        ranks.start()
        control = run.control = _control(workdir, ranks.token, nproc)  # torch imported while the ranks import theirs
        while ranks.running():
            time.sleep(POLL_S)
            ranks.poll()
            _relay(control, nproc, progress, on_figures)
            now = time.monotonic()
            if cancel is not None and cancel.is_set() and stopped_at is None:
                stopped_at = now
                control.request_stop("Stop / Ctrl-C in the launching process")
            failures = ranks.failures()
            if failures and failed_at is None:  # killed: stop the others now; exited: let them end first
                failed_at = now + (0.0 if failures[0]["exitcode"] < 0 else grace_s)
            late = stopped_at is not None and now - stopped_at > grace_s
            if term_at is None and (late or (failed_at is not None and now >= failed_at)):
                term_at, killed = now, (now if late else None)
                ranks.signal(signal.SIGTERM)
            if term_at is not None and now - term_at > kill_after_s:
                ranks.signal(signal.SIGKILL)
        ranks.poll()
        error = control.get("error")
        if error:
            raise ProbeError(error)
        left = remove_left_files(control)
        stale = _sweep_job(job)
        data = control.get("result")
        if data is not None:
            res = Result.from_dict(data)
        else:
            res = _failed(job, control, ranks, backend, interrupted=stopped_at is not None)
        res.labels["launcher"] = f"--ranks {nproc} (nbbench's own spawner, this host: no network port)"
        if killed is not None:
            res.warn(f"some ranks did not finish within {grace_s:g} s of Stop and were terminated")
        if left:
            res.warn(f"removed {len(left)} temporary file(s) a terminated rank left: {', '.join(left)}")
        if stale:
            res.warn(
                f"removed {stale} stale nbbench temporary entr{'y' if stale == 1 else 'ies'} from "
                f"{job.params.get('path')}: left by processes of this host that were killed (a rank)"
            )
        for w in socket_warnings:
            res.warn(w)
        if swept:
            res.warn(
                f"removed {swept} stale nbbench temporary entr{'y' if swept == 1 else 'ies'} from {tmp}: left by "
                "processes of this host that were killed (a launcher of ranks, a probe)"
            )
        return res
    finally:
        if ranks.running():  # the launcher itself was interrupted
            run.abandon(kill_after_s)
        if run in _ACTIVE:
            _ACTIVE.remove(run)
        tempfiles.remove_dir(workdir)


def _control(workdir: str, token: str, nproc: int) -> Control:
    need_torch(import_it=True)
    return Control(open_file_store(workdir, token), nproc)


def _relay(control: Control, nproc: int, progress, on_figures) -> None:
    if progress is None and on_figures is None:
        return
    try:
        states = control.per_rank("prog")
    except Exception:  # noqa: BLE001 - a late progress line is not worth failing over
        return
    if not states:
        return
    frac, figs = sum_progress(states, nproc)
    if progress is not None:
        try:
            progress(frac, figs)
        except Exception:  # noqa: BLE001
            pass
    if on_figures is not None and figs:
        try:
            on_figures(figs)
        except Exception:  # noqa: BLE001
            pass


def _sweep_job(job) -> int:
    """What a killed rank made after it last published its files (the job's stale sweep: dead processes only)."""
    try:
        return int(job.sweep_left() or 0)
    except Exception:  # noqa: BLE001 - never hides the run's outcome
        return 0


def _root_cause(failures: list[dict], recs: dict) -> dict | None:
    """The failure to name: the first rank that ended of its own, unless all it left is an exit code (no line, not
    killed) and a rank's own record says why it failed (its error, e.g. a collective that timed out)."""
    root = failures[0] if failures else None
    said = [(r, v["reason"]) for r, v in sorted(recs.items()) if v.get("status") == "failed" and v.get("reason")]
    if said and (root is None or (root["exitcode"] >= 0 and ":" not in root["reason"])):
        r, reason = said[0]
        code = f" ({root['reason']})" if root is not None and root["rank"] == r else ""
        return {"rank": r, "reason": reason + code}
    return root


def _failed(job, control: Control, ranks: Ranks, backend: str, interrupted: bool) -> Result:
    """No result from rank 0: a failed (or interrupted) result from what the store and the spawner tell."""
    nproc = ranks.nproc
    infos = control.per_rank("info")
    recs = {int(r): v for r, v in control.per_rank("rec").items()}
    failures = ranks.failures()
    by_rank = {f["rank"]: f for f in failures}
    root = _root_cause(failures, recs)
    for r in range(nproc):
        if r in recs:
            continue
        f = by_rank.get(r)
        if f is not None:
            status, reason = "failed", f["reason"]
        elif interrupted:
            status, reason = "interrupted", "terminated after Stop"
        elif root is not None:
            status, reason = "failed", f"stopped by the launcher after rank {root['rank']} failed"
        else:
            status, reason = "failed", "ended before reporting"
        recs[r] = {
            "rank": r,
            "host": (infos.get(r) or {}).get("host") or hostname(),
            "local_rank": (infos.get(r) or {}).get("local_rank", r),
            "status": status,
            "reason": reason,
            "metrics": {},
            "tracks": {},
        }
    res = build_result(job, list(recs.values()), None, backend)
    res.labels["ranks"] = nproc
    if root is not None:
        host = (infos.get(root["rank"]) or {}).get("host") or hostname()
        stopped = sorted(r for r in ranks.signalled if r != root["rank"])
        tail = (
            f"; the launcher stopped rank{'s' if len(stopped) > 1 else ''} {', '.join(map(str, stopped))}"
            if stopped
            else ""
        )
        res.finish("failed", f"rank {root['rank']} on {host} failed: {root['reason']}{tail}")
        res.extra["rank_log_tail"] = _log_tail(ranks.log_path(root["rank"]))
    elif interrupted:
        res.finish("interrupted", "stopped; the ranks were terminated before they reported")
    else:
        codes = ", ".join(f"rank {r}: {c}" for r, c in sorted(ranks.ended.items()))
        res.finish("failed", f"the ranks ended without a result (exit codes {codes})")
    return res


def _log_tail(path: str, n: int = 40) -> list[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().strip().splitlines()[-n:]
    except OSError:
        return []
