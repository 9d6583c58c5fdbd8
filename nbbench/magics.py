"""``%iobench`` / ``%%iobench``: parse → run → show → save → return.

Every subcommand's options come from :mod:`nbbench.commands`, parsed by
:func:`nbbench.commands.parse` with IPython's ``MagicArgumentParser``; a bad option
is a one-line ``UsageError``.  :class:`NotebookContext` is what the notebook offers
a command: widgets progress bars, rich display, live plots, ``%iobench`` wording.

The magic returns the result with ``-o``; ``history`` and ``compare`` return theirs
always, like any expression (``h = %iobench history``), and IPython displays it when
it is the cell's value.  A cell body run under ``%%iobench monitor`` that raises
shows its own traceback once: the body's traceback is kept, not shown, and shown by
IPython when the magic re-raises the error (after the monitor's result).
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.core.magic_arguments import MagicArgumentParser, MagicHelpFormatter
from IPython.display import display

from . import commands
from .commands import Context, HelpRequested, Invocation, UsageProblem
from .results import ProbeError, Result

__all__ = ["IOBenchMagics", "NotebookContext", "load_ipython_extension", "parse"]


class _HelpFormatter(MagicHelpFormatter):
    """IPython's magic help formatter writes usage as reST for docstrings ('::' and a '%');
    interactive --help reads better as plain 'usage: %iobench …'."""

    def add_usage(self, usage, actions, groups, prefix="usage: "):
        super().add_usage(usage, actions, groups, prefix)


class MagicParser(MagicArgumentParser):
    """IPython's magic argument parser with plain 'usage: %iobench …' help."""

    def __init__(self, *args, formatter_class=_HelpFormatter, **kwargs):
        super().__init__(*args, formatter_class=formatter_class, **kwargs)


@dataclass
class NotebookContext(Context):
    """The notebook's :class:`~nbbench.commands.Context` (``%iobench`` and ``%%iobench``)."""

    frontend: str = "magic"
    prog: str = "%iobench"
    parser_class: type = MagicParser
    returns_result: bool = True
    lasting: bool = True

    def __post_init__(self):
        if self.cell is not None:
            self.prog = "%%iobench"

    def command_text(self, name: str, args: str = "", cell: bool = False) -> str:
        return " ".join(p for p in ("%%iobench" if cell else "%iobench", name, args) if p)

    def origin(self) -> str:
        try:
            from IPython import get_ipython

            n = getattr(get_ipython(), "execution_count", None)
        except Exception:  # noqa: BLE001
            n = None
        # IPython counts the running cell before it runs: the cell's own number is one less
        return f"cell [{n - 1}]" if isinstance(n, int) and n > 1 else ""

    def progress(self, desc: str = ""):
        if self.quiet:
            # ui/ loads ipywidgets: only when a bar is drawn
            from .progress import NullProgress

            return NullProgress(desc)
        from .ui.kernel import in_kernel

        if in_kernel():
            from .ui.progress import NotebookProgress

            return NotebookProgress(desc)
        from .progress import TerminalProgress

        return TerminalProgress(desc, stream=sys.stdout)

    def display(self, obj) -> None:
        if not self.quiet:
            obj = self.worded(obj)
            # -v/--details: the result with its details unfolded (open <details>; all the text)
            display(obj.details() if self.details and isinstance(obj, Result) else obj)

    def display_html(self, html: str, text: str) -> None:
        if not self.quiet:  # HTML in a notebook, its text form in terminal IPython
            display({"text/html": html, "text/plain": text}, raw=True)

    def display_image(self, png) -> None:
        if not self.quiet:
            from IPython.display import Image

            display(Image(data=png() if callable(png) else png, format="png"))

    def live_plot(self, **kwargs):
        if self.quiet:
            return None
        try:
            # ui/ loads matplotlib: only when a plot is drawn
            from .ui.liveplot import LivePlot
        except ImportError:
            return None
        plot = LivePlot(**kwargs)
        return None if plot.target == "none" else plot  # terminal IPython: nowhere to show a picture

    def watch_view(self, monitor, **kwargs):
        if self.quiet:
            return None
        # ui/ loads matplotlib: only when a view is drawn
        from .ui.kernel import in_kernel

        if not in_kernel():  # terminal IPython: no widgets
            return None
        from .ui.watchview import WatchView

        view = WatchView(monitor, **kwargs)
        display(view.widget)
        return view

    def loader_plot(self):
        if self.quiet:
            return None
        # ui/ loads matplotlib: only when a plot is drawn
        from .ui.loaderplot import LoaderPlot

        return LoaderPlot.start()

    def open_panel(self, path, tab=None):
        # the panel loads ipywidgets: only when it is opened
        from .panel import panel

        return panel(path, tab=tab, user_ns=self.user_ns)


def parse(argv: list[str], ctx: NotebookContext) -> Invocation | None:
    """:func:`nbbench.commands.parse` for the magic: a usage problem is a one-line
    ``UsageError``; help is printed and gives None."""
    try:
        return commands.parse(argv, ctx)
    except HelpRequested as h:
        print(h.text)
        return None
    except UsageProblem as exc:
        raise UsageError(str(exc)) from None


@magics_class
class IOBenchMagics(Magics):
    @line_cell_magic
    def iobench(self, line: str, cell: str | None = None):
        """nbbench benchmarks: ``%iobench help`` lists the subcommands."""
        try:
            argv = shlex.split(line)
        except ValueError as exc:
            raise UsageError(f"cannot split the line: {exc}") from None
        ctx = NotebookContext(
            user_ns=self.shell.user_ns if self.shell is not None else None, cell=cell, run_cell=self._run_cell
        )
        inv = parse(argv, ctx)
        if inv is None:
            return None
        try:
            value = commands.execute(inv, ctx)
        except ProbeError as exc:
            raise UsageError(ctx.error_text(exc)) from None
        return value if commands.returns_value(inv, ctx) else None

    def _run_cell(self, body: str):
        """Run a cell body in the user's namespace; re-raise its exception.

        The traceback IPython draws for the body's error is kept on the exception
        (``_render_traceback_``) instead of being shown now, so it is shown once, when
        the magic re-raises it; an interrupt's is shown at once (the run goes on)."""
        shell = self.shell
        kept: list = []
        own = "_showtraceback" in vars(shell)
        original = shell._showtraceback

        def keep(etype, evalue, stb):
            kept.append((etype, evalue, stb))

        shell._showtraceback = keep
        try:
            res = shell.run_cell(body, store_history=False)
        finally:
            if own:
                shell._showtraceback = original
            else:
                del shell._showtraceback
        error = res.error_before_exec if res.error_before_exec is not None else res.error_in_exec
        for etype, evalue, stb in kept:
            if evalue is error and not isinstance(error, KeyboardInterrupt):
                try:
                    error._render_traceback_ = lambda stb=stb: stb
                    continue
                except (AttributeError, TypeError):  # exceptions with __slots__: shown now, as before
                    pass
            original(etype, evalue, stb)
        if error is not None:
            raise error
        return res.result


def _display_comparison(cmp) -> None:
    """A Comparison shown as a cell's value (``cmp = %iobench compare A B; cmp``) the way
    ``compare`` shows it: the table as HTML, each bar chart as its own image/png output."""
    commands.get_command("compare").show(cmp, None, NotebookContext())


def load_ipython_extension(ipython) -> None:
    ipython.register_magics(IOBenchMagics)
    # loaded by %load_ext, not by `import nbbench`
    from .compare import Comparison

    ipython.display_formatter.ipython_display_formatter.for_type(Comparison, _display_comparison)


def unload_ipython_extension(ipython) -> None:  # pragma: no cover - IPython keeps magics
    pass
