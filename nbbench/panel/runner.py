"""The panel's background runner: one run at a time, Stop through a cancel event.

A button click in a notebook is handled by the kernel only while no cell is busy,
so a run started from the panel must not block the kernel: it happens in a
background thread, and Stop sets the :class:`threading.Event` that the probe was
given as ``cancel=`` (the same event ``Ctrl-C`` sets for a magic).  Probes honour
it within 0.5 s and return a result marked ``interrupted``, which is saved to the
store like any other.

Jobs are subcommand lines parsed by :func:`nbbench.commands.parse` with a
:class:`PanelContext` — the very parser the magic and the CLI use — and run and
ended (shown, then saved) by :func:`nbbench.commands.execute`; or plain callables
``fn(ctx)`` for the few things that are not subcommands, ended the same way.

Nothing here imports ipywidgets: the runner talks to its panel through the
small :class:`RunnerHost` interface, which the tests fake.
"""

from __future__ import annotations

import argparse
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .. import commands
from ..commands import Command, Context, HelpRequested, Invocation, UsageProblem
from ..progress import NullProgress
from ..results import ProbeError
from ..results.present.summaries import outcome_word
from . import panel
from .wording import panel_words

__all__ = ["Job", "PanelRunner", "PanelContext", "RunRecord", "RunnerHost", "command_job", "parse_command"]


def parse_command(argv: list[str], ctx: PanelContext | None = None) -> Invocation:
    """``argv`` = ``[name, *options]`` parsed by :func:`nbbench.commands.parse` for the panel.

    A bad value (or an unknown or unavailable subcommand) raises a :class:`ProbeError`
    worded for the panel's red box: ``PROG: MESSAGE``.
    """
    try:
        return commands.parse(argv, ctx if ctx is not None else PanelContext())
    except UsageProblem as exc:
        raise ProbeError(f"{exc.prog}: {exc}" if exc.prog else str(exc)) from None
    except HelpRequested as h:  # pragma: no cover - the panel never passes -h
        raise ProbeError(h.text) from None


@dataclass
class Job:
    """One thing the panel runs.

    ``argv``: a subcommand and its options (``["dd", "/data", "--size", "16M"]``);
    parsed when the job starts (a bad value is an error shown at once) and run
    through :func:`commands.execute`, which shows, then saves its results.  Or
    ``fn(ctx)`` for anything else, ended the same way; its Results are saved only
    with ``save=True``.
    """

    title: str
    argv: list[str] | None = None
    fn: Callable[[PanelContext], Any] | None = None
    save: bool = False
    label: str | None = None
    #: called in the runner thread with the value when the job ends without an exception
    on_value: Callable[[Any], None] | None = None
    #: each flag the tab may pass and the name of its field ("--size": "size"), so errors
    #: name the field the user sees, not the flag (:func:`~nbbench.panel.wording.panel_words`)
    fields: dict[str, str] = field(default_factory=dict)

    def __post_init__(self):
        if (self.argv is None) == (self.fn is None):
            raise ValueError("a Job takes argv or fn, exactly one")


def command_job(title: str, name: str, *options, label: str | None = None, **kw) -> Job:
    """A Job running ``nbbench NAME OPTIONS…``; None-valued options are left out."""
    argv = [name] + [str(o) for o in options if o is not None]
    if label:
        argv += ["--label", label]
    return Job(title=title, argv=argv, label=label, **kw)


class _FnCommand(Command):
    """A ``fn(ctx)`` job as a command, so it ends like every subcommand (shown, then saved)."""

    name = "fn"

    def __init__(self, fn: Callable[[PanelContext], Any], saves: bool):
        self.fn = fn
        self.saves = saves

    def run(self, args, ctx):
        return self.fn(ctx)


def _invocation(job: Job, ctx: PanelContext) -> Invocation:
    if job.argv is not None:
        return parse_command(job.argv, ctx)
    args = argparse.Namespace(label=job.label, no_save=False, quiet=False, json=False)
    return Invocation(job.title, _FnCommand(job.fn, job.save), args)


@dataclass
class RunRecord:
    """What the last run did (kept on the runner, shown by the panel)."""

    title: str
    status: str = "running"  # running | ok | interrupted | failed | error
    verdict: str | None = None  # what the run's checks found: ok | warn | fail | None (no checks)
    value: Any = None
    error: str | None = None  # the message shown in red
    details: str | None = None  # a traceback, for errors that are not user mistakes
    notes: list[str] = field(default_factory=list)  # lines about the run, e.g. "not saved: …"
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None
    stop_requested: float | None = None
    fields: dict[str, str] = field(default_factory=dict)  # the job's flag -> field names (for wording)

    @property
    def elapsed_s(self) -> float | None:
        return None if self.ended is None else self.ended - self.started

    def outcome(self) -> str:
        """How the run went in words that keep "did it run" and "what its checks found" apart:
        'ran · checks: fail', 'ran', 'interrupted', 'failed' — never "ok" over a failed check."""

        if self.status == "ok":
            word = outcome_word("ok", self.verdict)
            return "ran" if word == "ok" else f"ran · {word}"
        return self.status

    def __str__(self) -> str:
        """'GPU check: ran · checks: fail — CUDA not available: …' (the answer line when there is one)."""
        answer = getattr(self.value, "answer_line", None)
        text = f"{self.title}: {self.outcome()}"
        try:
            return text + (f" — {answer()}" if callable(answer) else (f" — {self.error}" if self.error else ""))
        except Exception:  # noqa: BLE001 - a value without an answer: the outcome alone
            return text

    @property
    def stop_latency_s(self) -> float | None:
        """Seconds from pressing Stop to the run having ended."""
        if self.stop_requested is None or self.ended is None:
            return None
        return max(0.0, self.ended - self.stop_requested)


class RunnerHost:
    """What a runner needs from its panel; every method may be called from any thread."""

    def make_progress(self, desc: str):

        return NullProgress(desc)

    def run_started(self, record: RunRecord) -> None: ...

    def run_stopping(self, record: RunRecord) -> None: ...

    def run_finished(self, record: RunRecord) -> None: ...

    def show(self, obj: Any) -> None: ...

    def echo(self, text: str) -> None: ...

    def note(self, text: str) -> None: ...

    def live_plot(self, **kwargs):
        return None


#: how advice names a subcommand in the panel: the tab (and its choice) that runs it
_TAB_WORDS = {
    "gpu": "the GPU tab's check",
    "dd": "the Storage tab's dd",
    "randread": "the Storage tab's randread",
    "files": "the Storage tab's files",
    "disk": "the Storage tab's disk presets",
    "feed": "the DataLoader tab's feed",
    "sweep": "the DataLoader tab's sweep",
    "monitor": "the Monitor tab",
    "history": "the History tab",
    "compare": "the History tab's Compare",
}


class _Html:
    """HTML for the panel's result area (``_repr_html_``) with its text form."""

    def __init__(self, html_text: str, text: str = ""):
        self.html, self.text = html_text, text

    def _repr_html_(self) -> str:
        return self.html

    def __str__(self) -> str:
        return self.text


class PanelContext(Context):
    """The :class:`~nbbench.commands.Context` the panel gives a subcommand: its progress bar and
    live plot, its result area, the tabs' wording."""

    def __init__(
        self, host: RunnerHost | None = None, cancel: threading.Event | None = None, user_ns: dict | None = None
    ):
        super().__init__(
            frontend="panel",
            prog="",
            quiet=False,
            as_json=False,
            user_ns=user_ns,
            cancel=cancel if cancel is not None else threading.Event(),
        )
        self.host = host if host is not None else RunnerHost()
        self.progresses: list = []
        self.notes: list[str] = []

    def command_text(self, name: str, args: str = "", cell: bool = False) -> str:
        """The tab that runs ``name`` ("the DataLoader tab's sweep"); a subcommand no tab runs
        as the magic that runs it in this notebook."""
        if name in _TAB_WORDS and not cell:
            return _TAB_WORDS[name]
        return " ".join(p for p in ("%%iobench" if cell else "%iobench", name, args) if p)

    def progress(self, desc: str = ""):
        p = self.host.make_progress(desc)
        self.progresses.append(p)
        return p

    def display(self, obj: Any) -> None:
        self.host.show(self.worded(obj))

    def display_html(self, html_text: str, text: str) -> None:
        self.host.show(_Html(html_text, text))

    def display_image(self, png) -> None:
        import base64

        data = base64.b64encode(png() if callable(png) else png).decode("ascii")
        self.host.show(_Html(f"<img src='data:image/png;base64,{data}' style='max-width:100%'/>"))

    def display_table(self, frame, left=()) -> None:
        self.host.show(frame)

    def echo(self, text: str) -> None:
        self.host.echo(text)

    def note(self, text: str) -> None:
        """A line about the run ("not saved: …"): kept on the run's record, shown by the panel when it ends."""
        self.notes.append(text)
        self.host.note(text)

    def live_plot(self, **kwargs):
        return self.host.live_plot(**kwargs)

    def open_panel(self, path, tab=None):

        return panel(path, tab=tab, user_ns=self.user_ns)


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
                raise ProbeError(
                    f"{self.record.title if self.record else 'a run'} is still running: "
                    "press Stop (or wait for it) before starting another"
                )
            cancel = threading.Event()
            ctx = PanelContext(self.host, cancel, user_ns=self.user_ns)
            try:
                inv = _invocation(job, ctx)
            except ProbeError as exc:  # a bad value: named as its field is, not as its flag
                raise ProbeError(panel_words(str(exc), job.fields)) from None
            self.cancel = cancel
            record = RunRecord(title=job.title, fields=dict(job.fields))
            self.record = record
            self.history.append(record)
            t = threading.Thread(
                target=self._run, args=(job, inv, record, ctx), name=f"nbbench-panel-{job.title}", daemon=True
            )
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
    def _run(self, job: Job, inv: Invocation, record: RunRecord, ctx: PanelContext) -> None:
        try:
            value = commands.execute(inv, ctx, store=self.store)  # run, show, save: as every front end
            record.value = value
            record.status = commands.outcome(value)
            record.verdict = commands.verdict(value)
            if job.on_value is not None:
                job.on_value(value)
        except ProbeError as exc:
            record.status = "error"
            record.error = panel_words(ctx.error_text(exc), job.fields)
        except Exception as exc:  # noqa: BLE001 - shown in the panel, never swallowed
            record.status = "error"
            record.error = f"{type(exc).__name__}: {exc}"
            record.details = traceback.format_exc()
        except BaseException as exc:  # KeyboardInterrupt / SystemExit from a probe
            record.status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "error"
            record.error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        finally:
            record.notes = list(ctx.notes)
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
