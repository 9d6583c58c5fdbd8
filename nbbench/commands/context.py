"""What a front end offers a command: :class:`Context`.

Everything that differs between the magic, the CLI and the control panel is a
method or attribute here — the parser class and program name, whether ``-o``
exists, how progress, results, HTML, images, tables and live plots are shown, and
how a subcommand is named in advice — so no command asks which front end it runs
in.  This base is the plain-Python one (prints text, draws nothing); the front ends
subclass it (``nbbench.magics.NotebookContext``, ``nbbench.cli.TerminalContext``,
``nbbench.panel.runner.PanelContext``).
"""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..results import ProbeError, Result

__all__ = ["Context"]


@dataclass
class Context:
    """What a front end offers a command."""

    #: a label for the front end ("api", "magic", "cli", "panel"); for records and tests —
    #: no command branches on it (the attributes and methods below say what differs)
    frontend: str = "api"
    quiet: bool = False
    as_json: bool = False
    #: ``-v/--details``: show a result's folded details too
    details: bool = False
    user_ns: dict | None = None
    #: the cell body (``%%iobench NAME``); None: no cell
    cell: str | None = None
    cancel: threading.Event = field(default_factory=threading.Event)
    #: runs a cell body in the user's namespace (the magic); None: there are no cells here
    run_cell: Callable[[str], Any] | None = None
    #: the program name before a subcommand's name in usage lines ("%iobench", "nbbench", "")
    prog: str = "nbbench"
    #: the argparse parser class this front end parses with (IPython's MagicArgumentParser in a notebook)
    parser_class: type = argparse.ArgumentParser
    #: the front end can return the result as a value (``-o``, like ``%timeit -o``)
    returns_result: bool = False
    #: the front end lives on after a command returns (a Jupyter kernel, a Python session), so a
    #: command may leave a background monitor running there (``watch``); a terminal's process ends
    #: with its command
    lasting: bool = False
    #: which of ``--repeat N`` runs is running ("run 2 of 5"; '' for one run): progress bars name it
    run_of: str = ""

    # ------------------------------------------------------------- words
    def command_text(self, name: str, args: str = "", cell: bool = False) -> str:
        """How a user of this front end runs subcommand ``name`` with ``args``: "nbbench sweep DATASET"."""
        return " ".join(p for p in ("nbbench", name, args) if p)

    def origin(self) -> str:
        """Where the running command was given, for messages ("cell [12]"); '' when nothing useful."""
        return ""

    def help_overview(self) -> str:
        """The list of subcommands (``help``, or no subcommand)."""
        from . import REGISTRY

        prefix = self.prog or "nbbench"
        width = max(len(n) for n in REGISTRY)
        lines = [f"{prefix} SUBCOMMAND [options]   ({prefix} SUBCOMMAND --help for its options)", ""]
        for name, (_, one_line) in REGISTRY.items():
            lines.append(f"  {name:<{width}}  {one_line}")
        common = ["-o return the result"] * self.returns_result + [
            "-q quiet",
            "-v details",
            "--label TEXT",
            "--no-save",
            "--json",
        ]
        lines += [
            "",
            "Common options: " + ", ".join(common),
            "Measuring subcommands also take --repeat N: N whole runs, the median with its spread",
        ]
        return "\n".join(lines)

    def error_text(self, exc: BaseException) -> str:
        """An error's message, its advice worded for this front end."""
        return exc.text(self.command_text) if isinstance(exc, ProbeError) else str(exc)

    def worded(self, value: Any) -> Any:
        """``value`` with its Results' advice worded for this front end (:attr:`Result.wording`)."""
        for r in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(r, Result):
                r.wording = self.command_text
        return value

    # ------------------------------------------------------------ output
    def progress(self, desc: str = ""):
        """A progress reporter (callable ``(fraction, metrics)``) with ``close(status)``; this one draws nothing."""
        from ..progress import NullProgress

        return NullProgress(desc)

    def display(self, obj: Any) -> None:
        """Show a value (a Result, a list of them, a DataFrame…) the richest way this front end can."""
        if not self.quiet:
            print(self.worded(obj))

    def display_html(self, html: str, text: str) -> None:
        """Show HTML where HTML renders; ``text`` (its plain form) elsewhere."""
        self.echo(text)

    def display_image(self, png) -> None:
        """Show a PNG (bytes, or a callable making them: called only where images show)."""

    def display_table(self, frame, left=()) -> None:
        """Show a DataFrame; a text front end left-aligns the columns named in ``left``."""
        self.display(frame)

    def echo(self, text: str) -> None:
        if not self.quiet:
            print(text)

    def write(self, text: str) -> None:
        """Output asked for even when quiet (``--json``)."""
        print(text)

    def note(self, text: str) -> None:
        """One line about the run that is not its result ("not saved: …"): shown even when
        quiet or with ``--json``, on stderr (so stdout stays the JSON alone)."""
        print(text, file=sys.stderr, flush=True)

    # ----------------------------------------------------------- widgets
    def live_plot(self, **kwargs):
        """A live plot for samplers (``nbbench.ui.liveplot.LivePlot`` kwargs) or None where there is none."""
        return None

    def watch_view(self, monitor, **kwargs):
        """A live view of a background monitor (``nbbench.ui.watchview.WatchView`` kwargs), shown, that
        updates while other cells run; None where there is none.  It has ``close()``."""
        return None

    def loader_plot(self):
        """A started live view of a DataLoader benchmark (``nbbench.ui.loaderplot.LoaderPlot``) or None."""
        return None

    def open_panel(self, path: str | None, tab: str | None = None):
        """The control panel on ``path`` (a notebook widget) or None where widgets cannot show."""
        return None

    # --------------------------------------------------------------- run
    def run_probe(self, desc: str, fn: Callable[[Any, threading.Event], Any]) -> Any:
        """Run ``fn(progress, cancel)`` with a progress bar, cancellable by Ctrl-C / interrupt / Stop.

        The bar ends in the result's status (red when the probe raised).
        """
        from ..runner import run_cancellable

        bar = self.progress(f"{desc} ({self.run_of})" if self.run_of else desc)
        try:
            res = run_cancellable(lambda cancel: fn(bar, cancel), self.cancel)
        except BaseException:
            bar.close("failed")
            raise
        metrics = getattr(res, "metrics", None)
        bar.close(getattr(res, "status", "ok"), final=metrics if isinstance(metrics, dict) else None)
        return res

    def lookup(self, name: str) -> Any:
        """A variable of the user's namespace (notebook) by name."""
        if self.user_ns is None or name not in self.user_ns:
            raise ProbeError(f"no variable named {name!r} in the notebook's namespace")
        return self.user_ns[name]
