"""``--ranks N``: N local ranks through PyTorch's own launcher, run as child processes.

The launching process (a notebook kernel, the CLI) never joins the process group: it
hosts a small :class:`torch.distributed.TCPStore` bound to 127.0.0.1 (its keys under a
random token, passed to the ranks by environment), starts
``python -m torch.distributed.run --nproc-per-node N … -m nbbench SUBCOMMAND …`` in a
session of its own (so a terminal's Ctrl-C reaches only the launcher), and while it runs:

* reads every rank's progress from the store and shows the sum (bar, live plot);
* on Stop / Ctrl-C (``cancel``) sets ``stop``: every rank winds up its probe within
  half a second and the partial results are still gathered — the run ends
  ``interrupted`` in about 2 s; ranks that do not answer within ``grace_s`` are
  terminated (SIGTERM to the launcher's session, then SIGKILL);
* afterwards removes any temporary file or directory a terminated rank left (each rank
  publishes the ones it holds; the job then sweeps its directory for what a killed rank
  made since: :meth:`~nbbench.dist.rankjob.RankJob.sweep_left`), and torchrun's log folder (``--log-dir``, a new temporary folder: no
  ``torchelastic_*`` folder is left in /tmp).

Rank 0 hands the aggregate result back through the store.  When a rank crashes or is
killed, torchrun ends the others; the result is then ``failed`` with that rank, its host
and its exit reason (torchrun's own failure report, read from its stderr).
"""

from __future__ import annotations

import datetime
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import Callable

from ..results import ProbeError, Result
from .control import ENV_STORE, ENV_TOKEN, Control, remove_left_files

__all__ = ["launch", "need_torch", "torchrun_argv", "parse_failure", "sum_progress", "LaunchStore"]

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


class LaunchStore:
    """The launcher's TCPStore: listening on 127.0.0.1 only, keys under a fresh token.

    The socket is bound at once (its port goes to the ranks by environment); the store
    itself starts with :meth:`serve`, which imports torch — while the launched processes
    import theirs (ranks connecting earlier wait in the socket's backlog)."""

    def __init__(self, world_size: int):
        self.world_size = world_size
        self.token = "nbbench-" + secrets.token_hex(6)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(128)
        self.port = self.sock.getsockname()[1]
        self.server = None
        self.control: Control | None = None

    def serve(self) -> Control:
        td = need_torch(import_it=True)
        self.server = td.TCPStore("127.0.0.1", self.port, is_master=True, wait_for_workers=False,
                                  timeout=datetime.timedelta(seconds=30), master_listen_fd=self.sock.fileno())
        self.control = Control(td.PrefixStore(self.token, self.server), self.world_size)
        return self.control

    def environ(self) -> dict[str, str]:
        return {ENV_STORE: f"127.0.0.1:{self.port}", ENV_TOKEN: self.token}

    def close(self) -> None:
        self.control = None
        self.server = None
        try:
            self.sock.close()
        except OSError:
            pass


def torchrun_argv(nproc: int, argv: list[str], log_dir: str, token: str) -> list[str]:
    """The launcher's command line (an argument list).  Its agent looks at the ranks every 0.5 s
    (torchrun's default 0.1 s costs CPU beside the measurement; a crash is still seen at once)."""
    return [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc-per-node", str(nproc),
            "--rdzv-backend", "c10d", "--rdzv-endpoint", "127.0.0.1:0", "--rdzv-id", token,
            "--max-restarts", "0", "--monitor-interval", "0.5", "--log-dir", log_dir, "-m", "nbbench", *argv]


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


_FIELD = re.compile(r"^\s*(host|rank|exitcode|traceback)\s*:\s*(.*)$")


def parse_failure(stderr: str) -> list[dict]:
    """torchrun's failure report: ``[{"rank", "local_rank", "host", "exitcode", "signal", "traceback"}]``,
    the root cause first."""
    if "Root Cause" not in stderr:
        return []
    head, _, root = stderr.partition("Root Cause")
    blocks = [root] + head.split("Failures:", 1)[-1].split("[")[1:]
    out = []
    for block in blocks:
        row: dict = {}
        for line in block.splitlines():
            m = _FIELD.match(line)
            if not m or m.group(1) in row:
                continue
            key, val = m.group(1), m.group(2).strip()
            if key == "rank":
                mm = re.match(r"(\d+)\s*\(local_rank:\s*(\d+)\)", val)
                if mm:
                    row["rank"], row["local_rank"] = int(mm.group(1)), int(mm.group(2))
            elif key == "exitcode":
                mm = re.match(r"(-?\d+)\s*\(pid:\s*(\d+)\)\s*(\S*)", val)
                if mm:
                    row["exitcode"], row["pid"] = int(mm.group(1)), int(mm.group(2))
                    if mm.group(3).strip("()"):
                        row["signal"] = mm.group(3).strip("()")
            else:
                row[key] = val
        if "rank" in row and all(r.get("rank") != row["rank"] for r in out):
            out.append(row)
    return out


def _exit_reason(f: dict) -> str:
    code = f.get("exitcode")
    if f.get("signal") or (isinstance(code, int) and code < 0):
        name = f.get("signal") or (signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else "")
        why = f"killed by {name or 'signal ' + str(-code)}"
    else:
        why = f"exited with code {code}"
    tb = f.get("traceback") or ""
    if tb and "To enable traceback" not in tb and "Signal" not in tb:
        why += f": {tb}"
    return why


def launch(argv: list[str], nproc: int, job, progress: Callable | None = None, cancel=None,
           on_figures: Callable | None = None, grace_s: float = 3.0, kill_after_s: float = 5.0,
           backend: str = "gloo") -> Result:
    """Run ``nbbench ARGV`` as ``nproc`` local ranks and return the one aggregate result."""
    need_torch()
    store = LaunchStore(nproc)
    log_dir = tempfile.mkdtemp(prefix="nbbench-ranks-")
    control = None
    env = dict(os.environ, **store.environ(), PYTHONUNBUFFERED="1")
    if "GLOO_SOCKET_IFNAME" not in env and os.path.exists("/sys/class/net/lo"):
        env["GLOO_SOCKET_IFNAME"] = "lo"   # local ranks talk over loopback only
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "SLURM_STEP_ID"):
        env.pop(k, None)   # a launcher inside a job launches fresh ranks, not ranks of that job
    out_f = open(os.path.join(log_dir, "launcher.out"), "w+")
    err_f = open(os.path.join(log_dir, "launcher.err"), "w+")
    proc = None
    stopped_at = killed = None
    try:
        proc = subprocess.Popen(torchrun_argv(nproc, argv, log_dir, store.token), stdin=subprocess.DEVNULL,
                                stdout=out_f, stderr=err_f, env=env, start_new_session=True)
        control = store.serve()   # torch imported here while the launcher and the ranks import theirs
        while proc.poll() is None:
            time.sleep(POLL_S)
            _relay(control, nproc, progress, on_figures)
            if cancel is not None and cancel.is_set() and stopped_at is None:
                stopped_at = time.monotonic()
                control.request_stop("Stop / Ctrl-C in the launching process")
            if stopped_at is not None and killed is None and time.monotonic() - stopped_at > grace_s:
                killed = _signal_group(proc, signal.SIGTERM)
            if killed is not None and time.monotonic() - stopped_at > grace_s + kill_after_s:
                _signal_group(proc, signal.SIGKILL)
        proc.wait()
        err_f.seek(0)
        stderr = err_f.read()
        error = control.get("error")
        if error:
            raise ProbeError(error)
        left = _sweep(control, nproc)
        stale = _sweep_job(job)
        data = control.get("result")
        if data is not None:
            res = Result.from_dict(data)
        else:
            res = _failed(job, control, nproc, proc.returncode, stderr, backend,
                          interrupted=stopped_at is not None)
        res.labels["launcher"] = f"--ranks {nproc} (python -m torch.distributed.run, this host)"
        if killed is not None:
            res.warn(f"some ranks did not finish within {grace_s:g} s of Stop and were terminated")
        if left:
            res.warn(f"removed {len(left)} temporary file(s) a terminated rank left: {', '.join(left)}")
        if stale:
            res.warn(f"removed {stale} stale nbbench temporary entr{'y' if stale == 1 else 'ies'} from "
                     f"{job.params.get('path')}: left by processes of this host that were killed (a rank)")
        return res
    finally:
        if proc is not None and proc.poll() is None:   # the launcher itself was interrupted
            _signal_group(proc, signal.SIGTERM)
            try:
                proc.wait(kill_after_s)
            except subprocess.TimeoutExpired:
                _signal_group(proc, signal.SIGKILL)
                proc.wait()
            if control is not None:
                _sweep(control, nproc)
            _sweep_job(job)
        out_f.close()
        err_f.close()
        shutil.rmtree(log_dir, ignore_errors=True)
        store.close()


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


def _signal_group(proc, sig) -> int:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
    return sig


def _sweep(control: Control, nproc: int) -> list[str]:
    """Remove the temporary files ranks still listed (a rank that was killed could not)."""
    return remove_left_files(control)


def _sweep_job(job) -> int:
    """What a killed rank made after it last published its files (the job's stale sweep: dead processes only)."""
    try:
        return int(job.sweep_left() or 0)
    except Exception:  # noqa: BLE001 - never hides the run's outcome
        return 0


def _failed(job, control: Control, nproc: int, code: int | None, stderr: str, backend: str,
            interrupted: bool) -> Result:
    """No result from rank 0: a failed (or interrupted) result from what the store and torchrun tell."""
    from .rank import build_result

    infos = control.per_rank("info")
    recs = {int(r): v for r, v in control.per_rank("rec").items()}
    failures = {f["rank"]: f for f in parse_failure(stderr)}
    for r in range(nproc):
        if r in recs:
            continue
        info = infos.get(r) or {}
        f = failures.get(r)
        if f is not None:
            status, reason = "failed", _exit_reason(f)
        elif interrupted:
            status, reason = "interrupted", "terminated after Stop"
        else:
            status, reason = "failed", "ended before reporting (stopped by the launcher after another rank failed)"
        recs[r] = {"rank": r, "host": info.get("host") or (f or {}).get("host", "?"), "local_rank": info.get("local_rank", r),
                   "status": status, "reason": reason, "metrics": {}, "tracks": {}}
    res = build_result(job, list(recs.values()), None, backend)
    res.labels["ranks"] = nproc
    if failures:
        root = next(iter(failures.values()))
        host = (infos.get(root["rank"]) or {}).get("host") or root.get("host", "?")
        res.finish("failed", f"rank {root['rank']} on {host} failed: {_exit_reason(root)}; torchrun ended the "
                             f"other ranks (exit code {code})")
    elif interrupted:
        res.finish("interrupted", "stopped; the ranks were terminated before they reported")
    else:
        tail = [ln for ln in stderr.strip().splitlines() if ln.strip()][-1:] or [f"exit code {code}"]
        res.finish("failed", f"the ranks ended without a result (torchrun exit code {code}): {tail[0]}")
    res.extra["launcher_stderr_tail"] = stderr.strip().splitlines()[-40:]
    return res
