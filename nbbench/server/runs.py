"""Probe runs started from the sidebar: the CLI in a child process, its progress, Stop.

A run is ``python -m nbbench PROBE ARGS…`` (an argument list, never a shell string) in the
server's root directory: the CLI's own path — :func:`nbbench.commands.parse`, ``execute``,
``finish`` — with its safety rules (temporary files only, removed after; refused when space
is short), its result shown in its output and saved to the store.  The argv is checked
first with :func:`nbbench.commands.parse`, so a bad option is one error line before any
process starts; a path that is not there is one line too.  One run at a time (two probes
side by side measure each other).  Stop sends SIGINT (the CLI stops the probe and keeps what
it measured), then SIGKILL after ``grace_s``.

Layer: front end (the server extension).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any

from ..commands import Context, HelpRequested, UsageProblem, parse
from ..store import StoreError, default_store

__all__ = ["PROBES", "ProbeRuns", "RunError", "probe_argv"]

#: what the form offers, and what each takes: "path" (a directory here), "url" or nothing
PROBES: dict[str, str] = {"gpu": "", "dd": "path", "randread": "path", "doctor": "path", "s3": "url"}
#: the sizes the form may ask for (small by default: the sidebar's runs are quick looks)
DEFAULT_SIZE = {"dd": "64M", "randread": "64M"}


class RunError(ValueError):
    """A request the runner refuses: its message is the one line the sidebar shows."""


def probe_argv(probe: str, target: str | None = None, size: str | None = None, root: str | None = None) -> list[str]:
    """The CLI's argv for one sidebar run, checked with :func:`nbbench.commands.parse`."""

    if probe not in PROBES:
        raise RunError(f"unknown probe {probe!r}: choose from {', '.join(PROBES)}")
    want = PROBES[probe]
    argv = [probe]
    for name, value in (("target", target), ("size", size)):
        if value is not None and not isinstance(value, str):
            raise RunError(f"{name} must be text, not {type(value).__name__}")
    target = (target or "").strip()
    if want == "path":
        path = target or "."
        full = path if os.path.isabs(path) else os.path.join(root or os.getcwd(), path)
        if not os.path.exists(full):
            raise RunError(f"{path}: no such file or directory")
        if probe == "doctor" and not os.path.isdir(full):
            raise RunError(f"{path} is not a directory")
        argv.append(full)
        if probe in DEFAULT_SIZE:
            argv += ["--size", (size or DEFAULT_SIZE[probe]).strip()]
    elif want == "url":
        if not target.startswith("s3://"):
            raise RunError(f"{target or 'an empty URL'}: give an s3://bucket/prefix URL")
        argv.append(target)
    try:
        parse(argv, Context())
    except UsageProblem as exc:
        raise RunError(str(exc).splitlines()[0]) from None
    except HelpRequested:
        raise RunError("help is not a run") from None
    return argv


def _newest_run_id() -> int:

    try:
        h = default_store().history(limit=1)
    except StoreError:
        return 0
    return int(h["run_id"].iloc[-1]) if len(h) else 0


class _Run:
    def __init__(self, run_id: int, argv: list[str], cwd: str):
        self.id = run_id
        self.argv = argv
        self.cwd = cwd
        self.state = "running"  # running | done | failed | stopped
        self.lines: list[str] = []
        self.progress = ""
        self.started = time.time()
        self.ended: float | None = None
        self.returncode: int | None = None
        self.result_ids: list[int] = []
        self.error: str | None = None
        self.proc: subprocess.Popen | None = None
        self.stop_requested = False
        self.before = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "probe": self.argv[0],
            "argv": ["nbbench", *self.argv],
            "state": self.state,
            "progress": self.progress,
            "output": self.lines[-40:],
            "started": self.started,
            "elapsed_s": round((self.ended or time.time()) - self.started, 1),
            "returncode": self.returncode,
            "result_ids": self.result_ids,
            "error": self.error,
        }


class ProbeRuns:
    """The sidebar's runs (see the module doc)."""

    def __init__(self, root: str | None = None, grace_s: float = 5.0, python: str = sys.executable):
        self.root = root or os.getcwd()
        self.grace_s = grace_s
        self.python = python
        self._runs: dict[int, _Run] = {}
        self._lock = threading.Lock()
        self._next = 1

    def active(self) -> _Run | None:
        return next((r for r in self._runs.values() if r.state == "running"), None)

    def get(self, run_id: int) -> _Run | None:
        return self._runs.get(int(run_id))

    def list(self) -> list[dict]:
        return [r.to_dict() for r in sorted(self._runs.values(), key=lambda r: -r.id)[:20]]

    def start(self, probe: str, target: str | None = None, size: str | None = None) -> _Run:
        argv = probe_argv(probe, target, size, self.root)
        with self._lock:
            busy = self.active()
            if busy is not None:
                raise RunError(f"run {busy.id} ({busy.argv[0]}) is still running: stop it first")
            run = _Run(self._next, argv, self.root)
            self._next += 1
            self._runs[run.id] = run
        env = dict(os.environ, PYTHONUNBUFFERED="1", COLUMNS="100")
        try:
            run.before = _newest_run_id()
            run.proc = subprocess.Popen(
                [self.python, "-m", "nbbench", *argv],
                cwd=self.root,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        except Exception as exc:  # noqa: BLE001 - never a run left "running" that no process serves
            run.state, run.ended = "failed", time.time()
            run.error = f"could not start {argv[0]}: {exc}"
            raise RunError(run.error) from None
        threading.Thread(target=self._follow, args=(run,), name=f"nbbench-run-{run.id}", daemon=True).start()
        return run

    def _follow(self, run: _Run) -> None:
        proc = run.proc
        buf = b""
        while True:
            chunk = proc.stdout.read1(4096) if hasattr(proc.stdout, "read1") else proc.stdout.read(4096)
            if not chunk:
                break
            buf += chunk
            *parts, buf = buf.replace(b"\r", b"\n").split(b"\n")
            for p in parts:
                text = p.decode("utf-8", "replace").rstrip()
                if text:
                    run.progress = text
                    run.lines.append(text)
                    del run.lines[:-200]
        if buf.strip():
            run.lines.append(buf.decode("utf-8", "replace").rstrip())
        proc.stdout.close()
        run.returncode = proc.wait()
        run.ended = time.time()
        with self._lock:  # the sidebar lists the last 20; older finished runs are forgotten
            for old in sorted(self._runs)[:-20]:
                if self._runs[old].state != "running":
                    del self._runs[old]

        try:
            h = default_store().history(limit=20)
            run.result_ids = [int(i) for i in h["run_id"] if int(i) > run.before]
        except StoreError:
            run.result_ids = []
        if run.stop_requested:
            run.state = "stopped"
        elif run.returncode in (0, 3):  # 3: it ran, and a check it made failed (its verdict says so)
            run.state = "done"
        else:
            run.state = "failed"
            run.error = next((ln for ln in reversed(run.lines) if ln.strip()), f"exit code {run.returncode}")

    def stop(self, run_id: int) -> _Run:
        run = self.get(run_id)
        if run is None:
            raise RunError(f"no run {run_id}")
        if run.state != "running" or run.proc is None:
            return run
        run.stop_requested = True
        try:
            os.killpg(run.proc.pid, signal.SIGINT)
        except ProcessLookupError:
            return run

        def kill_later():
            # SIGINT first (the probe stops and cleans up), then SIGTERM (its temp-file clean-up runs on that
            # too), SIGKILL only when both went unheard
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    run.proc.wait(timeout=self.grace_s)
                    return
                except subprocess.TimeoutExpired:
                    try:
                        os.killpg(run.proc.pid, sig)
                    except ProcessLookupError:
                        return

        threading.Thread(target=kill_later, daemon=True).start()
        return run

    def stop_all(self) -> None:
        for r in list(self._runs.values()):
            if r.state == "running":
                self.stop(r.id)
