"""nbbench's own spawner for ``--ranks N`` on one host: N child processes and no network port.

torchrun's elastic agent serves its rendezvous store (a TCPStore) on every interface, without
authentication, for the whole run.  Local ranks need none of it:

* the launching process makes a **private directory** (:func:`nbbench.tempfiles.create_dir` in the
  system's temporary folder: a new name that ``mkdir`` refuses to reuse, mode 0700, registered for
  removal on exit, error, SIGTERM and SIGHUP) and removes it when the run ends;
* it starts ``python -m nbbench SUBCOMMAND …`` N times, each in a session of its own (a terminal's
  Ctrl-C reaches the launcher only; a rank's own children are signalled with it), with the
  variables torchrun would set (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``,
  ``OMP_NUM_THREADS=1``) and ``NBBENCH_LAUNCH_STORE=file:DIR``;
* each rank joins the process group through a :class:`torch.distributed.FileStore` in that
  directory (``DIR/pg``, :func:`nbbench.ranks.group.join`); the ranks and the launcher share a
  second one (``DIR/ctl``) for progress, stop, temporary files and the result
  (:mod:`.control`);
* gloo (and NCCL) still connect the ranks to each other over TCP: ``GLOO_SOCKET_IFNAME`` and
  ``NCCL_SOCKET_IFNAME`` name the loopback interface, so those sockets listen on 127.0.0.1 only.
  A value the user set is kept, and the result says so (:func:`socket_env`).

:class:`Ranks` starts and watches the processes, signals them (each rank's process group: its
DataLoader workers too), and tells how each one ended (:meth:`Ranks.failures`), the first to
fail first, for the failure report.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

from .control import ENV_STORE, ENV_TOKEN

__all__ = ["Ranks", "rank_environ", "socket_env", "loopback_interface", "exit_reason", "ENV_PARENT"]

#: the launching process's pid: a rank whose parent changed winds up (the launcher was killed)
ENV_PARENT = "NBBENCH_LAUNCH_PARENT"

#: a launcher's variables that must not reach fresh local ranks (they would be taken for ranks of that job)
_INHERITED = (
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
    "GROUP_RANK",
    "ROLE_RANK",
    "ROLE_WORLD_SIZE",
    "GROUP_WORLD_SIZE",
    "MASTER_ADDR",
    "MASTER_PORT",
    "SLURM_STEP_ID",
)


def loopback_interface() -> str | None:
    """The name of the interface that carries 127.0.0.1 (``lo`` on Linux, ``lo0`` on macOS)."""
    try:
        import psutil

        for name, addrs in psutil.net_if_addrs().items():
            if any(a.family == socket.AF_INET and str(a.address).startswith("127.") for a in addrs):
                return name
    except Exception:  # noqa: BLE001 - fall back to the usual name
        pass
    return "lo" if os.path.exists("/sys/class/net/lo") else None


def socket_env(environ, backend: str) -> tuple[dict[str, str], list[str]]:
    """The interface variables for local ranks (loopback for both gloo and NCCL, where not set), and a
    warning for each one of the backend in use that the user set to another interface."""
    lo = loopback_interface()
    out: dict[str, str] = {}
    warnings = []
    if lo is None and not all(environ.get(n) for n in ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME")):
        warnings.append(
            "no loopback interface found: the ranks' sockets listen on the address this host's name "
            "resolves to; set GLOO_SOCKET_IFNAME (and NCCL_SOCKET_IFNAME) to keep them local"
        )
    for name, lib in (("GLOO_SOCKET_IFNAME", "gloo"), ("NCCL_SOCKET_IFNAME", "nccl")):
        have = environ.get(name)
        if not have:
            if lo:
                out[name] = lo
        elif have != lo and lib in ("gloo", backend):
            warnings.append(
                f"{name}={have} (set in the environment): the ranks' {lib} sockets listen on that "
                "interface, not on loopback only"
            )
    return out, warnings


def rank_environ(base, rank: int, nproc: int, store_dir: str, token: str, extra: dict | None = None) -> dict:
    """A local rank's environment: the caller's, less any launcher's variables, plus this run's."""
    env = {k: v for k, v in base.items() if k not in _INHERITED and not k.startswith("TORCHELASTIC_")}
    env.update(extra or {})
    env.setdefault("OMP_NUM_THREADS", "1")  # as torchrun: N ranks do not each take every core
    env.update(
        {
            "RANK": str(rank),
            "WORLD_SIZE": str(nproc),
            "LOCAL_RANK": str(rank),
            "LOCAL_WORLD_SIZE": str(nproc),
            "GROUP_RANK": "0",
            ENV_STORE: "file:" + store_dir,
            ENV_TOKEN: token,
            ENV_PARENT: str(os.getpid()),
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


def exit_reason(code: int | None, tail: str = "") -> str:
    """How a rank ended, in words: ``killed by SIGKILL``, ``exited with code 1: <its last line>``."""
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with code {code}" + (f": {tail}" if tail else "")


class Ranks:
    """N local rank processes of ``python -m nbbench ARGV``, their output in ``workdir``."""

    def __init__(self, argv: list[str], nproc: int, workdir: str, token: str, extra_env: dict | None = None):
        self.argv = list(argv)
        self.nproc = nproc
        self.workdir = workdir
        self.token = token
        self.extra_env = dict(extra_env or {})
        self.procs: list[subprocess.Popen] = []
        self.ended: dict[int, int] = {}  # rank -> exit code, in the order they were seen to end
        self.signalled: dict[int, int] = {}  # rank -> the first signal the launcher sent it
        self._round = 0
        self._seen_round: dict[int, int] = {}

    def log_path(self, rank: int) -> str:
        return os.path.join(self.workdir, f"rank{rank}.log")

    def start(self) -> None:
        base = dict(os.environ)
        for r in range(self.nproc):
            with open(self.log_path(r), "w") as log:
                self.procs.append(
                    subprocess.Popen(
                        [sys.executable, "-m", "nbbench", *self.argv],
                        stdin=subprocess.DEVNULL,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        env=rank_environ(base, r, self.nproc, self.workdir, self.token, self.extra_env),
                        start_new_session=True,
                        close_fds=True,
                    )
                )

    def poll(self) -> list[int]:
        """The ranks seen to end since the last call."""
        self._round += 1
        new = []
        for r, p in enumerate(self.procs):
            if r in self.ended:
                continue
            code = p.poll()
            if code is not None:
                self.ended[r] = code
                self._seen_round[r] = self._round
                new.append(r)
        return new

    def running(self) -> list[int]:
        return [r for r, p in enumerate(self.procs) if r not in self.ended and p.poll() is None]

    def signal(self, sig: int, ranks=None) -> None:
        """``sig`` to each rank's process group (the rank and what it started)."""
        for r, p in enumerate(self.procs):
            if ranks is not None and r not in ranks:
                continue
            if p.poll() is None:
                self.signalled.setdefault(r, sig)
            try:  # an ended rank's group too: its DataLoader workers may outlive it (a pgid is not reused meanwhile)
                os.killpg(p.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass

    def stop(self, kill_after_s: float = 5.0) -> None:
        """SIGTERM to every rank still running (each removes its own files), SIGKILL after ``kill_after_s``."""
        self.signal(signal.SIGTERM)
        deadline = time.monotonic() + kill_after_s
        for p in self.procs:
            try:
                p.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        if self.running():
            self.signal(signal.SIGKILL)
            for p in self.procs:
                try:
                    p.wait(10)  # a process stuck in the kernel (a hung mount) is not waited for forever
                except subprocess.TimeoutExpired:
                    pass
        self.poll()

    def tail(self, rank: int) -> str:
        """The last line a rank wrote (its one-line error), or ''."""
        try:
            with open(self.log_path(rank), "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 4096))
                lines = [ln.strip() for ln in f.read().decode("utf-8", "replace").splitlines() if ln.strip()]
        except OSError:
            return ""
        return lines[-1][:300] if lines else ""

    def failures(self) -> list[dict]:
        """The ranks that failed of their own (not stopped by the launcher), the first to fail first
        (seen in the same look: a killed one before one that exited with an error)."""
        out = []
        for r, code in self.ended.items():
            if code == 0 or r in self.signalled:
                continue
            out.append(
                {
                    "rank": r,
                    "local_rank": r,
                    "exitcode": code,
                    "pid": self.procs[r].pid,
                    "reason": exit_reason(code, "" if code < 0 else self.tail(r)),
                }
            )
        out.sort(key=lambda f: (self._seen_round.get(f["rank"], 0), f["exitcode"] >= 0, f["rank"]))
        return out
