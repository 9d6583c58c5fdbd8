"""Subcommands, defined once and shared by ``%iobench`` and the ``nbbench`` CLI.

A subcommand is a :class:`Command`: it declares its options on an argparse parser
(IPython's ``MagicArgumentParser`` in a notebook, a plain subparser in a terminal),
and ``run(args, ctx)`` calls probe functions and returns what they return.  The
front end supplies a :class:`Context` (how to show progress, output and plots)
and :func:`execute` does the common end: save to the store unless ``--no-save``.

The registry below maps each name to ``module:Class`` and a one-line help, so
listing subcommands imports nothing heavy.
"""

from __future__ import annotations

import argparse
import importlib
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

from ..results import Result

__all__ = ["Command", "Context", "REGISTRY", "get_command", "execute", "add_common_options", "to_json",
           "HelpRequested", "names"]

# name: ("module:Class", one-line help).  Order is the order of the help listing.
REGISTRY: dict[str, tuple[str, str]] = {
    "gpu": ("nbbench.commands.gpu:GpuCommand", "check the GPU stack: CUDA, driver, versions, a short benchmark"),
    "env": ("nbbench.commands.env:EnvCommand", "environment fingerprint; export exact package versions"),
    "dd": ("nbbench.commands.storage:DdCommand", "sequential write then read, like dd (direct or buffered)"),
    "randread": ("nbbench.commands.storage:RandreadCommand", "random reads at a block size and queue depth, IOPS and latency"),
    "files": ("nbbench.commands.storage:FilesCommand", "read many small files the way an image dataset is read"),
    "disk": ("nbbench.commands.storage:DiskCommand", "a preset set of storage tests (CrystalDiskMark, MLPerf)"),
    "make-dataset": ("nbbench.commands.storage:MakeDatasetCommand", "make a synthetic ImageNet-like folder tree to try the probes"),
    "monitor": ("nbbench.commands.monitor:MonitorCommand", "sample GPU, CPU and disk while a cell (or command) runs"),
    "loader": ("nbbench.commands.loader:LoaderCommand", "DataLoader throughput with the data-wait / compute split"),
    "sweep": ("nbbench.commands.loader:SweepCommand", "sweep num_workers / batch size / pin_memory and recommend"),
    "feed": ("nbbench.commands.loader:FeedCommand", "how many accelerators can this storage and CPU feed"),
    "panel": ("nbbench.commands.panel:PanelCommand", "open the control panel (notebook)"),
    "doctor": ("nbbench.commands.doctor:DoctorCommand", "audit the environment: /dev/shm, limits, mounts, exposure"),
    "history": ("nbbench.commands.history:HistoryCommand", "stored runs as a table"),
    "compare": ("nbbench.commands.history:CompareCommand", "compare stored runs, % deltas against the first"),
    "report": ("nbbench.commands.history:ReportCommand", "a shareable report: environment, doctor, results"),
}


def names() -> list[str]:
    return list(REGISTRY)


class HelpRequested(Exception):
    """Raised by ``-h/--help``; carries the help text to show."""

    def __init__(self, text: str):
        super().__init__(text)
        self.text = text


class _HelpAction(argparse.Action):
    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings=option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        raise HelpRequested(parser.format_help())


def add_common_options(parser, frontend: str = "magic", saves: bool = True) -> None:
    """Options every subcommand takes."""
    parser.add_argument("-h", "--help", action=_HelpAction, help="show this help and return")
    if frontend == "magic":
        parser.add_argument("-o", dest="return_result", action="store_true",
                            help="return the result object (like %%timeit -o)")
    parser.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    parser.add_argument("--json", action="store_true", help="print the result as JSON (its to_dict())")
    if saves:
        parser.add_argument("--label", metavar="TEXT", default=None,
                            help="label the stored result (for history and compare)")
        parser.add_argument("--no-save", dest="no_save", action="store_true",
                            help="do not save the result in the store")


class Command:
    """One subcommand."""

    name: str = ""
    help: str = ""
    description: str | None = None
    epilog: str | None = None
    #: takes a cell body as ``%%iobench NAME`` (the CLI passes a command after ``--``)
    cell: bool = False
    #: results are saved to the store unless --no-save
    saves: bool = True

    def add_arguments(self, parser) -> None:
        """Declare this subcommand's own options (argparse API)."""

    def run(self, args: argparse.Namespace, ctx: "Context") -> Any:
        raise NotImplementedError

    def show(self, value: Any, args: argparse.Namespace, ctx: "Context") -> None:
        """Show the outcome (front ends call this unless --quiet)."""
        ctx.display(value)


@dataclass
class Context:
    """What a front end offers a command.  Subclassed by the magic and the CLI."""

    frontend: str = "api"
    quiet: bool = False
    as_json: bool = False
    user_ns: dict | None = None
    cell: str | None = None
    cancel: threading.Event = field(default_factory=threading.Event)
    #: the magic sets this to run the cell body (``%%iobench monitor``)
    run_cell: Callable[[str], Any] | None = None

    def progress(self, desc: str = ""):
        """A progress reporter (callable ``(fraction, metrics)``) with ``close(status)``."""
        from ..progress import NullProgress

        return NullProgress(desc)

    def display(self, obj: Any) -> None:
        if not self.quiet:
            print(obj)

    def echo(self, text: str) -> None:
        if not self.quiet:
            print(text)

    def live_plot(self, **kwargs):
        """A live plot for samplers (``nbbench.ui.liveplot``) or None where there is none."""
        return None

    def run_probe(self, desc: str, fn: Callable[[Any, threading.Event], Any]) -> Any:
        """Run ``fn(progress, cancel)`` with a progress bar, cancellable by Ctrl-C / interrupt / Stop.

        The bar ends in the result's status (red when the probe raised).
        """
        from ..runner import run_cancellable

        bar = self.progress(desc)
        try:
            res = run_cancellable(lambda cancel: fn(bar, cancel), self.cancel)
        except BaseException:
            bar.close("failed")
            raise
        bar.close(getattr(res, "status", "ok"))
        return res

    def lookup(self, name: str) -> Any:
        """A variable of the user's namespace (notebook) by name."""
        if self.user_ns is None or name not in self.user_ns:
            from ..results import ProbeError

            raise ProbeError(f"no variable named {name!r} in the notebook's namespace")
        return self.user_ns[name]


def get_command(name: str) -> Command:
    """The Command for ``name``; KeyError for an unknown name, ImportError when not built."""
    target, _ = REGISTRY[name]
    mod, _, cls = target.partition(":")
    module = importlib.import_module(mod)
    cmd = getattr(module, cls)()
    cmd.name = cmd.name or name
    if not cmd.help:
        cmd.help = REGISTRY[name][1]
    return cmd


def available(name: str) -> bool:
    try:
        get_command(name)
        return True
    except (ImportError, AttributeError):
        return False


def to_json(value: Any) -> str:
    """JSON text for what a command returned: a Result's dict, a list of them, a DataFrame's records."""
    import json

    if isinstance(value, Result):
        return value.to_json(indent=2)
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, Result) for v in value):
        return json.dumps([v.to_dict() for v in value], indent=2, default=str)
    if hasattr(value, "to_json"):
        try:
            return value.to_json(orient="records", indent=2, date_format="iso")
        except TypeError:
            return value.to_json()
    return json.dumps(value, indent=2, default=str)


def execute(cmd: Command, args: argparse.Namespace, ctx: Context, store=None) -> Any:
    """Run a command and save its result(s) unless ``--no-save``; returns what it returned."""
    value = cmd.run(args, ctx)
    if cmd.saves and not getattr(args, "no_save", False):
        results = value if isinstance(value, (list, tuple)) else [value]
        to_save = [r for r in results if isinstance(r, Result)]
        if to_save:
            from ..store import default_store

            st = store or default_store()
            for r in to_save:
                st.save(r, label=getattr(args, "label", None))
    return value
