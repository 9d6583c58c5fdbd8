"""A warm nbbench that forks: each trial is a child running the CLI as a fresh process would
(``sys.exit(main(argv))``), signalled at a chosen moment after the fork.  Forking from a process
that already imported nbbench (and torch) makes a trial cost milliseconds of start instead of a
second, so many random moments fit in a test.

Protocol: one JSON line per trial on stdin ``{"argv": [...], "delay": seconds | null, "sig": N,
"limit": seconds}`` (``delay`` null: no signal, the run's own length is measured); one JSON line
back ``{"rc": exit code or -signal, "signalled": bool, "elapsed": s, "hung": bool}``.  A child still
alive ``limit`` seconds after the signal is SIGKILLed and reported hung.  A child ends as Python
ends a process (non-daemon threads joined, ``atexit`` run) but skips the module teardown, which
only costs time in a fork.  A KeyboardInterrupt outside ``main`` (SIGINT at the first instant)
ends the child with the traceback and code 1, as it would a fresh process.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import time


def _wait(pid: int, limit: float):
    """(status, hung): wait for ``pid`` to end (its pidfd becomes readable), at most ``limit`` s."""
    fd = os.pidfd_open(pid)
    try:
        ready, _, _ = select.select([fd], [], [], limit)
        hung = not ready
        if hung:
            os.kill(pid, signal.SIGKILL)
    finally:
        os.close(fd)
    _, status = os.waitpid(pid, 0)
    return status, hung


def serve():
    """The parent's loop; returns the argv a forked child must run (None at the end of input)."""
    for line in sys.stdin:
        trial = json.loads(line)
        t0 = time.monotonic()
        pid = os.fork()
        if pid == 0:
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            return trial["argv"]
        signalled = False
        if trial["delay"] is not None:
            fd = os.pidfd_open(pid)
            try:  # the chosen moment, unless the child ended before it
                ended, _, _ = select.select([fd], [], [], max(0.0, t0 + trial["delay"] - time.monotonic()))
            finally:
                os.close(fd)
            if not ended:
                os.kill(pid, trial["sig"])
                signalled = True
        status, hung = _wait(pid, trial.get("limit", 60))
        rc = os.waitstatus_to_exitcode(status)
        print(
            json.dumps({"rc": rc, "signalled": signalled, "elapsed": time.monotonic() - t0, "hung": hung}), flush=True
        )
    return None


if __name__ == "__main__":
    import importlib

    from nbbench.cli import main

    for mod in (
        "nbbench.commands.storage.disk",
        "nbbench.commands.storage.dataset",
        "nbbench.commands.storage.ckpt",
        "nbbench.commands.doctor",
        "nbbench.store",
        "nbbench.env",
        "nbbench.probes.storage.disk",
        "nbbench.probes.checkpoint.probe",
        "nbbench.datasets",
        "nbbench.doctor",
        "numpy",
        "pandas",
        "PIL.Image",
        "torch",
        "torch.distributed.checkpoint",
    ):
        try:  # loaded once here, before the forks (what is not installed is skipped)
            importlib.import_module(mod)
        except ImportError:
            pass
    import atexit
    import gc
    import threading

    gc.freeze()  # the forks' collections leave the parent's objects (and their pages) alone
    print(json.dumps({"ready": True}), flush=True)
    argv = serve()
    if argv is not None:
        sys.stdin = open(os.devnull)
        try:
            rc = main(argv)
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else 1
        # the end of a process as Python makes it (threads joined, atexit), without the module
        # teardown: with torch loaded, its writes to every copied page take seconds in a fork
        threading._shutdown()
        atexit._run_exitfuncs()
        sys.stdout.flush()
        os._exit(rc if isinstance(rc, int) else 0)
