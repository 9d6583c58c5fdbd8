"""``%iobench`` / ``%%iobench``: parse → run → show → return.

Every subcommand's options come from :mod:`nbbench.commands`, parsed with IPython's
``MagicArgumentParser`` so a bad option is a one-line ``UsageError``.
"""

from __future__ import annotations

import shlex
import sys

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.core.magic_arguments import MagicArgumentParser, MagicHelpFormatter
from IPython.display import display

from . import commands
from .commands import Context, HelpRequested, add_common_options
from .results import ProbeError

__all__ = ["IOBenchMagics", "NotebookContext", "load_ipython_extension"]


def _in_kernel() -> bool:
    """True inside a Jupyter kernel (widgets can render), False in terminal IPython."""
    try:
        from IPython import get_ipython

        ip = get_ipython()
        return ip is not None and "IPKernelApp" in ip.config
    except Exception:  # pragma: no cover
        return False


class NotebookContext(Context):
    def progress(self, desc: str = ""):
        if self.quiet:
            from .progress import NullProgress

            return NullProgress(desc)
        if _in_kernel():
            from .ui.progress import NotebookProgress

            return NotebookProgress(desc)
        from .progress import TerminalProgress

        return TerminalProgress(desc, stream=sys.stdout)

    def display(self, obj) -> None:
        if not self.quiet:
            display(obj)

    def live_plot(self, **kwargs):
        if self.quiet:
            return None
        try:
            from .ui.liveplot import LivePlot
        except ImportError:
            return None
        return LivePlot(**kwargs)


def help_text(prefix: str = "%iobench") -> str:
    width = max(len(n) for n in commands.REGISTRY)
    lines = [f"{prefix} SUBCOMMAND [options]   ({prefix} SUBCOMMAND --help for its options)", ""]
    for name, (_, one_line) in commands.REGISTRY.items():
        lines.append(f"  {name:<{width}}  {one_line}")
    lines += ["", "Common options: -o return the result, -q quiet, --label TEXT, --no-save, --json"]
    return "\n".join(lines)


class _HelpFormatter(MagicHelpFormatter):
    """IPython's magic help formatter writes usage as reST for docstrings ('::' and a '%');
    interactive --help reads better as plain 'usage: %iobench …'."""

    def add_usage(self, usage, actions, groups, prefix="usage: "):
        super().add_usage(usage, actions, groups, prefix)


def build_parser(cmd: commands.Command, cell: bool = False) -> MagicArgumentParser:
    prog = ("%%iobench " if cell else "%iobench ") + cmd.name
    parser = MagicArgumentParser(prog=prog, description=cmd.description or cmd.help, epilog=cmd.epilog,
                                 formatter_class=_HelpFormatter)
    add_common_options(parser, "magic", saves=cmd.saves)
    cmd.add_arguments(parser)
    return parser


@magics_class
class IOBenchMagics(Magics):
    @line_cell_magic
    def iobench(self, line: str, cell: str | None = None):
        """nbbench benchmarks: ``%iobench help`` lists the subcommands."""
        try:
            argv = shlex.split(line)
        except ValueError as exc:
            raise UsageError(f"cannot split the line: {exc}") from None
        if not argv or argv[0] in ("help", "-h", "--help"):
            if len(argv) > 1 and argv[1] in commands.REGISTRY:
                argv = [argv[1], "--help"]
            else:
                print(help_text("%%iobench" if cell is not None else "%iobench"))
                return None
        name, rest = argv[0], argv[1:]
        if name not in commands.REGISTRY:
            raise UsageError(
                f"unknown subcommand {name!r}: try %iobench help ({', '.join(commands.REGISTRY)})"
            )
        try:
            cmd = commands.get_command(name)
        except ImportError as exc:
            raise UsageError(f"%iobench {name} is not available: {exc}") from None
        if cell is not None and not cmd.cell:
            raise UsageError(f"%%iobench {name} takes no cell body; use the line magic %iobench {name}")
        if cell is None and cmd.cell and getattr(cmd, "cell_required", False):
            raise UsageError(f"%iobench {name} needs a cell: write %%iobench {name} on the first line of the cell")
        parser = build_parser(cmd, cell=cell is not None)
        try:
            args = parser.parse_args(rest)
        except HelpRequested as h:
            print(h.text)
            return None
        ctx = NotebookContext(
            frontend="magic",
            quiet=args.quiet or args.json,
            as_json=args.json,
            user_ns=self.shell.user_ns if self.shell is not None else None,
            cell=cell,
            run_cell=self._run_cell,
        )
        try:
            value = commands.execute(cmd, args, ctx)
        except ProbeError as exc:
            raise UsageError(str(exc)) from None
        if args.json:
            print(commands.to_json(value))
        elif not args.quiet:
            cmd.show(value, args, ctx)
        if getattr(args, "return_result", False):
            return value
        return None

    def _run_cell(self, body: str):
        """Run a cell body in the user's namespace; re-raise its exception."""
        res = self.shell.run_cell(body, store_history=False)
        if res.error_before_exec is not None:
            raise res.error_before_exec
        if res.error_in_exec is not None:
            raise res.error_in_exec
        return res.result


def load_ipython_extension(ipython) -> None:
    ipython.register_magics(IOBenchMagics)


def unload_ipython_extension(ipython) -> None:  # pragma: no cover - IPython keeps magics
    pass
