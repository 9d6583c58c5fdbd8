"""``nbbench SUBCOMMAND …`` for terminals (users who come in over SSH).

The same subcommands and options as ``%iobench``.  A small table for people,
``--json`` for scripts.  Exit codes (:data:`nbbench.commands.EXIT_CODES`, the one
rule :func:`nbbench.commands.exit_code`): 0 ran, 1 the probe failed (or could not
run), 2 usage error, 3 ran and a check failed (``nbbench gpu`` without CUDA,
``nbbench doctor`` with a failing check), 130 interrupted — so a CI job can gate on
``nbbench doctor`` or ``nbbench gpu``.  A result the store cannot keep is still
shown, with one "not saved: …" line on stderr; the exit code is the probe's.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass

from . import commands
from .commands import Context, HelpRequested, UsageProblem
from .results import ProbeError, Result
from .results.present.summaries import count_line
from .version import __version__

__all__ = ["main", "TerminalContext", "build_parser", "exit_code"]


@dataclass
class TerminalContext(Context):
    """The terminal's :class:`~nbbench.commands.Context`: text tables, a progress line, ``nbbench`` wording."""

    frontend: str = "cli"
    prog: str = "nbbench"

    def progress(self, desc: str = ""):
        # loaded when a command runs: `nbbench --help` stays light
        from .progress import NullProgress, TerminalProgress

        if self.quiet:
            return NullProgress(desc)
        return TerminalProgress(desc)

    def display(self, obj) -> None:
        """A Result by the one presentation rule (the answer first; ``-v``: the details too), its
        answer coloured on a terminal; then, where it returned several things (a list of results,
        a result with checks or tests), one line counting the results and the findings apart."""
        if self.quiet:
            return
        obj = self.worded(obj)
        results = [r for r in (obj if isinstance(obj, (list, tuple)) else [obj]) if isinstance(r, Result)]
        if results:
            for r in results:
                print(r.text_table(width=self.width(), details=self.details, ansi=self.ansi()))
            if len(results) > 1 or results[0].findings():
                print(count_line(results))
        elif hasattr(obj, "to_string"):
            print(obj.to_string())
        elif obj is not None:
            print(obj)

    @staticmethod
    def width() -> int:
        """The terminal's width, 100 columns where there is none (a pipe), at most 120."""
        import shutil

        return min(120, shutil.get_terminal_size((100, 24)).columns)

    @staticmethod
    def ansi() -> bool:
        """Colour the answer: stdout is a terminal and NO_COLOR is not set."""
        return sys.stdout.isatty() and not os.environ.get("NO_COLOR")

    def display_table(self, frame, left=()) -> None:
        """The frame as text, the columns in ``left`` left-aligned and never cut short."""
        if self.quiet:
            return
        import pandas as pd

        cols = [c for c in left if c in frame.columns]
        widths = {c: int(frame[c].astype(str).str.len().max() or 0) for c in cols}
        fmt = {c: (lambda w: lambda v: f"{v:<{w}}")(w) for c, w in widths.items()}
        with pd.option_context("display.max_colwidth", max([90] + list(widths.values())), "display.width", 250):
            self.echo(frame.to_string(formatters=fmt, justify="left"))

    def help_overview(self) -> str:
        return build_parser().format_help().rstrip("\n")


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser: only its help is shown (each subcommand is parsed by :func:`nbbench.commands.parse`)."""
    codes = "\n".join(f"  {code:<4} {text}" for code, text in commands.EXIT_CODES)
    parser = argparse.ArgumentParser(
        prog="nbbench",
        description="Benchmarks for GPU training containers: GPU stack, storage, input pipeline, environment.",
        epilog=f"Run 'nbbench SUBCOMMAND --help' for a subcommand's options.\n\nExit codes:\n{codes}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        add_help=False,
    )
    parser.add_argument("-h", "--help", action="store_true", help="show this help")
    parser.add_argument("--version", action="version", version=f"nbbench {__version__}")
    sub = parser.add_subparsers(dest="subcommand", metavar="SUBCOMMAND")
    for name, (_, one_line) in commands.REGISTRY.items():
        sub.add_parser(name, help=one_line.replace("%", "%%"), add_help=False)
    return parser


#: the exit code of what a command returned: :func:`nbbench.commands.exit_code`, the one rule
exit_code = commands.exit_code


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except KeyboardInterrupt:
        # Ctrl-C before the run began (importing a subcommand, parsing): interrupted all the same, in one line
        print("nbbench: interrupted", file=sys.stderr)
        return commands.EXIT_INTERRUPTED
    except BrokenPipeError:
        # `nbbench history | head`: the reader went away; that is not an error of ours
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 0


def _main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--version"]:
        print(f"nbbench {__version__}")
        return 0
    ctx = TerminalContext()
    try:
        inv = commands.parse(argv, ctx)
    except HelpRequested as h:
        print(h.text)
        return 0
    except UsageProblem as exc:  # as argparse words it: the usage line, then PROG: error: MESSAGE
        sys.stderr.write(exc.usage)
        print(f"{exc.prog}: error: {exc}", file=sys.stderr)
        return commands.EXIT_USAGE
    try:
        value = commands.execute(inv, ctx)
    except UsageProblem as exc:  # found while running (a setting of ``vs``): still a usage error
        if exc.usage:
            sys.stderr.write(exc.usage)
        print(f"{exc.prog or 'nbbench ' + inv.name}: error: {exc}", file=sys.stderr)
        return commands.EXIT_USAGE
    except ProbeError as exc:
        print(f"nbbench {inv.name}: {ctx.error_text(exc)}", file=sys.stderr)
        return commands.EXIT_FAILED
    except KeyboardInterrupt:
        print(f"nbbench {inv.name}: interrupted", file=sys.stderr)
        return commands.EXIT_INTERRUPTED
    return exit_code(value)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
