"""``%iobench panel [PATH]``: open the control panel (a notebook widget, :mod:`nbbench.panel`).

The command returns at once — the panel's runs happen in a background thread, and a
kernel only handles the panel's button clicks while no cell is busy.  It saves
nothing itself; each run started from the panel is saved like the magics' runs.
"""

from __future__ import annotations

from . import Command
from .options import Opt

TABS = ("GPU", "Storage", "DataLoader", "Monitor", "History")


def _tab(text: str) -> str:
    import argparse

    for t in TABS:
        if t.lower() == text.lower():
            return t
    raise argparse.ArgumentTypeError(f"no tab {text!r}: choose from {', '.join(TABS)}")


class PanelCommand(Command):
    help = "open the control panel (notebook)"
    description = (
        "An ipywidgets control panel over every probe: a PATH field checked as you type, tabs "
        "GPU · Storage · DataLoader · Monitor · History, Run and Stop, a progress bar with the live "
        "rate, the result table. Runs happen in the background, one at a time; Stop ends a run "
        "within half a second and keeps its partial result, marked interrupted."
    )
    saves = False

    arguments = (
        Opt(
            "path",
            help="a directory, file or block device to start with (may be typed in the panel)",
            metavar="PATH",
            nargs="?",
            default=None,
        ),
        Opt("--tab", _tab, None, f"the tab shown first: {', '.join(TABS)}", metavar="TAB"),
    )

    def run(self, args, ctx):
        panel = ctx.open_panel(args.path, tab=args.tab)  # the front end's: the panel is a front end itself
        if panel is None:
            from ..results import ProbeError

            raise ProbeError(
                "the control panel is a notebook widget: run %iobench panel [PATH] (or "
                "nbbench.panel()) in JupyterLab; here use the subcommands themselves "
                f"({ctx.command_text('dd')}, {ctx.command_text('randread')}, …)"
            )
        return panel

    def show(self, value, args, ctx) -> None:
        if getattr(args, "return_result", False):
            return  # -o: the returned panel is the cell's output; showing it here too would draw it twice
        ctx.display(value)
