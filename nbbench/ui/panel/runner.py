"""The panel's background runner: one run at a time, Stop through a cancel event.

A button click in a notebook is handled by the kernel only while no cell is busy,
so a run started from the panel must not block the kernel: it happens in a
background thread, and Stop sets the :class:`threading.Event` that the probe was
given as ``cancel=`` (the same event ``Ctrl-C`` sets for a magic).  Probes honour
it within 0.5 s and return a result marked ``interrupted``, which is saved to the
store like any other.

Jobs are subcommands (:mod:`nbbench.commands`) run through :func:`commands.execute`
with a :class:`PanelContext`, so the panel parses its widgets' values with the very
parser the magic and the CLI use and calls the same probe functions; or plain
callables ``fn(ctx)`` for the few things that are not subcommands.

Nothing here imports ipywidgets: the runner talks to its panel through the
small :class:`RunnerHost` interface, which the tests fake.
"""

from __future__ import annotations

import argparse
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

from ... import commands
from ...commands import Context, HelpRequested, add_common_options
from ...results import ProbeError, Result

__all__ = ["Job", "PanelRunner", "PanelContext", "RunRecord", "RunnerHost", "command_job",
           "UsageProblem", "outcome_status"]


class UsageProblem(ProbeError):
    """A value in the panel the subcommand's parser rejects (shown like a UsageError)."""


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing and exiting."""

    def error(self, message):  # noqa: D401 - argparse API
        raise UsageProblem(f"{self.prog}: {message}")

    def exit(self, status=0, message=None):  # pragma: no cover - only -h/--version would exit
        raise UsageProblem(message or f"{self.prog}: exit {status}")


def parse_command(argv: list[str]):
    """``(Command, Namespace)`` for ``argv`` = ``[name, *options]``, parsed as the CLI does.

    Raises :class:`UsageProblem` for a bad value and :class:`ProbeError` when the
    subcommand is not available (not built, or an import error).
    """
    if not argv:
        raise UsageProblem("no subcommand given")
    name, rest = argv[0], [str(a) for a in argv[1:]]
    if name not in commands.REGISTRY:
        raise UsageProblem(f"unknown subcommand {name!r}")
    try:
        cmd = commands.get_command(name)
    except (ImportError, AttributeError) as exc:
        raise ProbeError(f"{name} is not available in this nbbench: {exc}") from None
    parser = _Parser(prog=name, description=cmd.description or cmd.help, add_help=False)
    add_common_options(parser, "api", saves=cmd.saves)
    cmd.add_arguments(parser)
    try:
        args = parser.parse_args(rest)
    except HelpRequested as h:  # pragma: no cover - the panel never passes -h
        raise UsageProblem(h.text) from None
    return cmd, args


@dataclass
class Job:
    """One thing the panel runs.

    ``argv``: a subcommand and its options (``["dd", "/data", "--size", "16M"]``);
    parsed when the job starts (a bad value is an error shown at once) and run
    through :func:`commands.execute`, which saves its results.  Or ``fn(ctx)`` for
    anything else; with ``save=True`` the Results it returns are saved here.
    """

    title: str
    argv: list[str] | None = None
    fn: Callable[["PanelContext"], Any] | None = None
    save: bool = False
    label: str | None = None
    #: called in the runner thread with the value when the job ends without an exception
    on_value: Callable[[Any], None] | None = None

    def __post_init__(self):
        if (self.argv is None) == (self.fn is None):
            raise ValueError("a Job takes argv or fn, exactly one")


def command_job(title: str, name: str, *options, label: str | None = None, **kw) -> Job:
    """A Job running ``nbbench NAME OPTIONS…``; None-valued options are left out."""
    argv = [name] + [str(o) for o in options if o is not None]
    if label:
        argv += ["--label", label]
    return Job(title=title, argv=argv, label=label, **kw)


def outcome_status(value: Any) -> str:
    """The worst status among the Results in ``value`` (ok when it holds none)."""
    results = value if isinstance(value, (list, tuple)) else [value]
    statuses = {r.status for r in results if isinstance(r, Result)}
    for s in ("failed", "interrupted"):
        if s in statuses:
            return s
    return "ok"


@dataclass
class RunRecord:
    """What the last run did (kept on the runner, shown by the panel)."""

    title: str
    status: str = "running"            # running | ok | interrupted | failed | error
    value: Any = None
    error: str | None = None           # the message shown in red
    details: str | None = None         # a traceback, for errors that are not user mistakes
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None
    stop_requested: float | None = None

    @property
    def elapsed_s(self) -> float | None:
        return None if self.ended is None else self.ended - self.started

    @property
    def stop_latency_s(self) -> float | None:
        """Seconds from pressing Stop to the run having ended."""
        if self.stop_requested is None or self.ended is None:
            return None
        return max(0.0, self.ended - self.stop_requested)


class RunnerHost:
    """What a runner needs from its panel; every method may be called from any thread."""

    def make_progress(self, desc: str):
        from ...progress import NullProgress

        return NullProgress(desc)

    def run_started(self, record: RunRecord) -> None: ...

    def run_stopping(self, record: RunRecord) -> None: ...

    def run_finished(self, record: RunRecord) -> None: ...

    def show(self, obj: Any) -> None: ...

    def echo(self, text: str) -> None: ...

    def live_plot(self, **kwargs):
        return None


class PanelContext(Context):
    """The :class:`~nbbench.commands.Context` the panel gives a subcommand."""

    def __init__(self, host: RunnerHost, cancel: threading.Event, user_ns: dict | None = None):
        super().__init__(frontend="api", quiet=False, as_json=False, user_ns=user_ns, cancel=cancel)
        self.host = host
        self.progresses: list = []

    def progress(self, desc: str = ""):
        p = self.host.make_progress(desc)
        self.progresses.append(p)
        return p

    def display(self, obj: Any) -> None:
        self.host.show(obj)

    def echo(self, text: str) -> None:
        self.host.echo(text)

    def live_plot(self, **kwargs):
        return self.host.live_plot(**kwargs)


class PanelRunner:
    """Runs one :class:`Job` at a time in a daemon thread."""

    def __init__(self, host: RunnerHost | None = None, store=None, user_ns: dict | None = None):
        self.host = host or RunnerHost()
        self.store = store
        self.user_ns = user_ns
        self.cancel = threading.Event()
        self.record: RunRecord | None = None
        self.history: list[RunRecord] = []
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ state
    @property
    def running(self) -> bool:
        t = self._thread
        return t is not None and t.is_alive()

    def wait(self, timeout: float | None = None) -> RunRecord | None:
        """Wait for the current run to end; returns its record."""
        t = self._thread
        if t is not None:
            t.join(timeout)
        return self.record

    # --------------------------------------------------------------- control
    def start(self, job: Job) -> RunRecord:
        """Start ``job``; raises ProbeError when a run is already going or the options are bad."""
        with self._lock:
            if self.running:
                raise ProbeError(f"{self.record.title if self.record else 'a run'} is still running: "
                                 "press Stop (or wait for it) before starting another")
            parsed = parse_command(job.argv) if job.argv is not None else None
            self.cancel = threading.Event()
            record = RunRecord(title=job.title)
            self.record = record
            self.history.append(record)
            t = threading.Thread(target=self._run, args=(job, parsed, record, self.cancel),
                                 name=f"nbbench-panel-{job.title}", daemon=True)
            self.host.run_started(record)
            self._thread = t
            t.start()
        return record

    def stop(self) -> bool:
        """Ask the current run to stop (sets its cancel event); False when nothing runs."""
        record = self.record
        if not self.running or record is None:
            return False
        if record.stop_requested is None:
            record.stop_requested = time.monotonic()
        self.cancel.set()
        self.host.run_stopping(record)
        return True

    # ----------------------------------------------------------------- worker
    def _run(self, job: Job, parsed, record: RunRecord, cancel: threading.Event) -> None:
        ctx = PanelContext(self.host, cancel, user_ns=self.user_ns)
        try:
            if parsed is not None:
                cmd, args = parsed
                value = commands.execute(cmd, args, ctx, store=self.store)
            else:
                value = job.fn(ctx)
                if job.save:
                    self._save(value, job.label)
            record.value = value
            record.status = outcome_status(value)
            if job.on_value is not None:
                job.on_value(value)
        except ProbeError as exc:
            record.status = "error"
            record.error = str(exc)
        except Exception as exc:  # noqa: BLE001 - shown in the panel, never swallowed
            record.status = "error"
            record.error = f"{type(exc).__name__}: {exc}"
            record.details = traceback.format_exc()
        except BaseException as exc:  # KeyboardInterrupt / SystemExit from a probe
            record.status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "error"
            record.error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        finally:
            final = {"ok": "ok", "interrupted": "interrupted"}.get(record.status, "failed")
            for p in ctx.progresses:
                if getattr(p, "status", None) == "running":
                    try:
                        p.close(final)
                    except Exception:  # noqa: BLE001 - drawing must not hide the outcome
                        pass
            record.ended = time.monotonic()
            try:
                self.host.run_finished(record)
            except Exception:  # noqa: BLE001
                record.details = (record.details or "") + traceback.format_exc()

    def _save(self, value: Any, label: str | None) -> None:
        results = value if isinstance(value, (list, tuple)) else [value]
        to_save = [r for r in results if isinstance(r, Result)]
        if not to_save:
            return
        from ...store import default_store

        st = self.store or default_store()
        for r in to_save:
            st.save(r, label=label)
