"""``nbbench SUBCOMMAND …`` for terminals (users who come in over SSH).

The same subcommands and options as ``%iobench``.  A small table for people,
``--json`` for scripts.  Exit codes: 0 ok, 1 the probe failed (or could not run),
2 usage error, 130 interrupted.
"""

from __future__ import annotations

import argparse
import os
import sys

from . import commands
from .version import __version__
from .commands import Context, HelpRequested, add_common_options
from .results import ProbeError, Result

__all__ = ["main", "TerminalContext", "build_parser"]


class TerminalContext(Context):
    def progress(self, desc: str = ""):
        from .progress import NullProgress, TerminalProgress

        if self.quiet:
            return NullProgress(desc)
        return TerminalProgress(desc)

    def display(self, obj) -> None:
        if self.quiet:
            return
        if isinstance(obj, Result):
            print(obj.text_table())
        elif hasattr(obj, "to_string"):
            print(obj.to_string())
        elif obj is not None:
            print(obj)

    def live_plot(self, **kwargs):
        return None


class _Parser(argparse.ArgumentParser):
    """argparse with our -h action (HelpRequested) handled at the top."""


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="nbbench",
        description="Benchmarks for GPU training containers: GPU stack, storage, input pipeline, environment.",
        epilog="Run 'nbbench SUBCOMMAND --help' for a subcommand's options.",
        add_help=False,
    )
    parser.add_argument("-h", "--help", action="store_true", help="show this help")
    parser.add_argument("--version", action="version", version=f"nbbench {__version__}")
    sub = parser.add_subparsers(dest="subcommand", metavar="SUBCOMMAND")
    for name, (_, one_line) in commands.REGISTRY.items():
        sub.add_parser(name, help=one_line.replace("%", "%%"), add_help=False)
    return parser


def _command_parser(cmd: commands.Command) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"nbbench {cmd.name}", description=cmd.description or cmd.help,
                                epilog=cmd.epilog, add_help=False)
    add_common_options(p, "cli", saves=cmd.saves)
    cmd.add_arguments(p)
    return p


def exit_code(value) -> int:
    # a command that ran a program (nbbench monitor -- CMD) returns that program's exit code
    code = getattr(value, "exit_code", None)
    if isinstance(code, int) and not isinstance(code, bool):
        return code
    results = value if isinstance(value, (list, tuple)) else [value]
    statuses = {r.status for r in results if isinstance(r, Result)}
    if "failed" in statuses:
        return 1
    if "interrupted" in statuses:
        return 130
    if isinstance(value, int) and not isinstance(value, bool):
        return value  # commands that run a program return its exit code
    return 0


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
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
    top = build_parser()
    if not argv or argv[0] in ("-h", "--help", "help"):
        if len(argv) > 1 and argv[1] in commands.REGISTRY:
            argv = [argv[1], "--help"]
        else:
            top.print_help()
            return 0
    if argv[0] == "--version":
        print(f"nbbench {__version__}")
        return 0
    name, rest = argv[0], argv[1:]
    if name not in commands.REGISTRY:
        print(f"nbbench: error: unknown subcommand {name!r} (choose from {', '.join(commands.REGISTRY)})",
              file=sys.stderr)
        return 2
    try:
        cmd = commands.get_command(name)
    except ImportError as exc:
        print(f"nbbench {name}: not available: {exc}", file=sys.stderr)
        return 2
    parser = _command_parser(cmd)
    try:
        args = parser.parse_args(rest)
    except HelpRequested as h:
        print(h.text)
        return 0
    except SystemExit as exc:  # argparse printed the usage error
        return 2 if exc.code else 0
    ctx = TerminalContext(frontend="cli", quiet=args.quiet or args.json, as_json=args.json)
    try:
        value = commands.execute(cmd, args, ctx)
    except ProbeError as exc:
        print(f"nbbench {name}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"nbbench {name}: interrupted", file=sys.stderr)
        return 130
    if args.json:
        print(commands.to_json(value))
    elif not args.quiet:
        cmd.show(value, args, ctx)
    return exit_code(value)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
