"""Subcommands, defined once and shared by every front end: ``%iobench``, ``nbbench``, the panel.

Layer: commands, the front ends' only plumbing.  One :class:`Command` per
subcommand declares its options (argparse API) and ``run(args, ctx)`` calls the
probes and returns what they return.  A front end (the magic, the CLI, the
control panel) goes through three steps, each written once here:

1. :func:`parse` turns ``argv`` into an :class:`Invocation` (name, command, parsed
   options), with the parser class and program name the front end's
   :class:`Context` gives; ``-h`` raises :class:`HelpRequested`, a bad option
   :class:`UsageProblem` — the one usage error every front end words its own way;
2. :func:`execute` runs it and :func:`finish` ends it: show the result, then save it
   (unless ``--no-save``; a store that cannot be written is one "not saved: …" line)
   and return it;
3. :func:`outcome` says whether it ran ("ok" / "interrupted" / "failed"), :func:`verdict`
   what its checks found ("ok" / "warn" / "fail" / None), :func:`exit_code` both as
   the CLI's exit code (:data:`EXIT_CODES`).

Whatever differs between front ends is a method or attribute of :class:`Context`
(showing HTML, images, tables and live plots, drawing progress, naming a command in
advice); no command branches on which front end it is.  This package may import
everything below it (core, measure, plots, ui, report) and never a front end
(``magics``, ``cli``, ``panel``).

The registry below maps each name to ``module:Class`` and a one-line help, so
listing subcommands imports nothing heavy.  Inside a command module the probe, plot and ui
modules it runs are imported in ``run`` / ``show``: making its parser (``--help``, the panel's
fields, the reference) loads none of them.
"""

from __future__ import annotations

import argparse
import importlib
from dataclasses import dataclass
from typing import Any

from ..results import ProbeError
from . import ending as _ending
from .context import Context
from .ending import *  # noqa: F403  (the finish step's names, re-exported: ending.__all__)

__all__ = [
    "Command",
    "Context",
    "REGISTRY",
    "get_command",
    "names",
    "available",
    "add_common_options",
    "HelpRequested",
    "UsageProblem",
    "Invocation",
    "parse",
    "defaults",
    "build_parser",
    *_ending.__all__,
]

# name: ("module:Class", one-line help).  Order is the order of the help listing.
REGISTRY: dict[str, tuple[str, str]] = {
    "gpu": ("nbbench.commands.gpu:GpuCommand", "check the GPU stack: CUDA, driver, versions, a short benchmark"),
    "collectives": (
        "nbbench.commands.gpunode:CollectivesCommand",
        "nccl-tests on N ranks: all-reduce, all-gather… busbw by size, checked, against the GPU link",
    ),
    "copies": (
        "nbbench.commands.gpunode:CopiesCommand",
        "host↔device pageable vs pinned, and the GPU-to-GPU bandwidth and latency matrix",
    ),
    "env": ("nbbench.commands.env:EnvCommand", "environment fingerprint; export exact package versions"),
    "dd": ("nbbench.commands.storage.disk:DdCommand", "sequential write then read, like dd (direct or buffered)"),
    "randread": (
        "nbbench.commands.storage.disk:RandreadCommand",
        "random reads at a block size and queue depth, IOPS and latency",
    ),
    "files": ("nbbench.commands.storage.disk:FilesCommand", "read many small files the way an image dataset is read"),
    "disk": ("nbbench.commands.storage.disk:DiskCommand", "a preset set of storage tests (CrystalDiskMark, MLPerf)"),
    "checkpoint": (
        "nbbench.commands.storage.ckpt:CheckpointCommand",
        "save a model-like checkpoint and load it back (torch.save, DCP)",
    ),
    "shards": (
        "nbbench.commands.storage.ckpt:ShardsCommand",
        "read large shard files as parallel sequential streams (WebDataset-like)",
    ),
    "s3": (
        "nbbench.commands.storage.objects:S3Command",
        "GET throughput, time to first byte and a concurrency sweep from S3",
    ),
    "make-dataset": (
        "nbbench.commands.storage.dataset:MakeDatasetCommand",
        "make a synthetic ImageNet-like folder tree or tar shards to try the probes",
    ),
    "monitor": (
        "nbbench.commands.monitors.monitor:MonitorCommand",
        "sample GPU, CPU and disk while a cell (or command) runs",
    ),
    "watch": (
        "nbbench.commands.monitors.watch:WatchCommand",
        "a background monitor for the kernel's life: live view, marks, /metrics",
    ),
    "mark": ("nbbench.commands.monitors.watch:MarkCommand", "a labelled mark on the background monitor's timeline"),
    "loader": (
        "nbbench.commands.pipeline.loader:LoaderCommand",
        "DataLoader throughput with the data-wait / compute split",
    ),
    "sweep": (
        "nbbench.commands.pipeline.sweep:SweepCommand",
        "sweep num_workers / batch size / pin_memory and recommend",
    ),
    "feed": ("nbbench.commands.pipeline.feed:FeedCommand", "how many accelerators can this storage and CPU feed"),
    "vs": (
        "nbbench.commands.interleave:VsCommand",
        "two or more settings of one probe, interleaved A B A B …, compared",
    ),
    "panel": ("nbbench.commands.panel:PanelCommand", "open the control panel (notebook)"),
    "doctor": ("nbbench.commands.doctor:DoctorCommand", "audit the environment: /dev/shm, limits, mounts, exposure"),
    "history": ("nbbench.commands.history:HistoryCommand", "stored runs as a table"),
    "compare": (
        "nbbench.commands.history:CompareCommand",
        "compare stored runs: changes against the first, with their 95 % intervals",
    ),
    "report": ("nbbench.commands.history:ReportCommand", "a shareable report: environment, doctor, results"),
}


def names() -> list[str]:
    return list(REGISTRY)


class HelpRequested(Exception):
    """Raised by ``-h/--help`` (and by ``help`` or no subcommand); carries the help text to show."""

    def __init__(self, text: str):
        super().__init__(text)
        self.text = text


class UsageProblem(ProbeError):
    """The command line is wrong: an unknown subcommand, a bad option or value.

    The one usage error of every front end: the magic raises it as IPython's one-line
    ``UsageError``, the CLI prints ``usage`` and ``PROG: error: MESSAGE`` and exits 2,
    the panel shows ``PROG: MESSAGE`` in red.  ``str()`` is the message alone (one line);
    ``prog`` is the parser's program name (``"%iobench dd"``, ``"nbbench dd"``, ``"dd"``),
    ``usage`` its usage line ('' when no parser was made).
    """

    def __init__(self, message: str, prog: str = "", usage: str = ""):
        super().__init__(one_line(message))
        self.prog = prog
        self.usage = usage


def one_line(message) -> str:
    """``message`` as one printable line: its own line breaks become spaces, any other control character
    (a typed ``\\x1e`` or ``\\x00``: terminals and str.splitlines break at some of them) its escape, so
    that an argument echoed back can never split the error or hide part of it."""
    text = " ".join(str(message).replace("\r\n", "\n").split("\n")).strip()
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


class _HelpAction(argparse.Action):
    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings=option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        raise HelpRequested(parser.format_help())


def add_common_options(parser, ctx: Context, saves: bool = True) -> None:
    """Options every subcommand takes; ``-o`` only where the front end returns values (``ctx.returns_result``)."""
    parser.add_argument("-h", "--help", action=_HelpAction, help="show this help and return")
    if ctx.returns_result:
        parser.add_argument(
            "-o", dest="return_result", action="store_true", help="return the result object (like %%timeit -o)"
        )
    parser.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    parser.add_argument(
        "-v",
        "--details",
        action="store_true",
        help="show the details too: every figure, the latency percentiles, how it was measured",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON (its to_dict())")
    if saves:
        parser.add_argument(
            "--label", metavar="TEXT", default=None, help="label the stored result (for history and compare)"
        )
        parser.add_argument("--no-save", action="store_true", help="do not save the result in the store")


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
    #: its value is the answer (a table, a comparison): where values are returned (the
    #: notebook) it is returned like an expression's without -o, and then not shown by the
    #: command too (IPython displays it as the cell's value); with -o: shown and returned
    expression: bool = False
    #: it measures: it takes ``--repeat N`` (:mod:`nbbench.commands.repeat`), and its result
    #: states its spread and run quality
    measures: bool = False
    #: (option, dest, "size" | "duration" | "count"): the option that lengthens the measured
    #: phase, named by "too short to trust" advice (None: "run it longer")
    scale: tuple[str, str, str] | None = None

    #: the probe it runs, by its name in :data:`nbbench.probes.catalog.PROBES` (None: it runs none)
    probe: str | None = None
    #: options of its parser that only the front end reads (a live plot's switch): never handed to
    #: the probe or the ranks.  Every other option is in :meth:`params`.
    front_only: frozenset[str] = frozenset()

    #: this subcommand's own options as data (:class:`nbbench.commands.options.Opt`, ``Group`` and parser
    #: helpers): the one declaration its parser (CLI and magic), the panel's fields, :meth:`params` (what the
    #: probe and every rank receive), ``--repeat`` and the reference docs are all read from
    arguments: tuple = ()

    def add_arguments(self, parser) -> None:
        """Add :attr:`arguments` to ``parser`` (a command whose options depend on the parser overrides it)."""
        for add in self.arguments:
            add(parser)

    @classmethod
    def own_options(cls) -> tuple[str, ...]:
        """The ``dest`` of every option :meth:`add_arguments` declares, less the ranks' own
        (``--ranks``, ``--nnodes``…: how to run, not what) and :attr:`front_only`."""
        cached = cls.__dict__.get("_own_options")
        if cached is None:
            scratch = argparse.ArgumentParser(add_help=False)
            cls.add_arguments(cls, scratch)
            skip = RANK_OPTIONS | cls.front_only
            cached = tuple(a.dest for a in scratch._actions if a.dest != argparse.SUPPRESS and a.dest not in skip)
            cls._own_options = cached
        return cached

    def params(self, args: argparse.Namespace) -> dict[str, Any]:
        """The parameter object: each declared option's value by its name, the same dict for the probe
        called here and for the job every rank runs (:func:`nbbench.commands.ranks.dispatch`)."""
        return {dest: getattr(args, dest) for dest in self.own_options()}

    def call_probe(self, params: dict[str, Any], **runtime: Any) -> Any:
        """:attr:`probe` called with ``params`` (see :meth:`nbbench.probes.catalog.Probe.call`)."""
        from ..probes import catalog

        return catalog.get(self.probe).call(params, **runtime)

    def run(self, args: argparse.Namespace, ctx: Context) -> Any:
        raise NotImplementedError

    def show(self, value: Any, args: argparse.Namespace, ctx: Context) -> None:
        """Show the outcome (:func:`finish` calls this unless --quiet / --json)."""
        ctx.display(value)


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


@dataclass
class Invocation:
    """A parsed command line: the subcommand's ``name``, its :class:`Command` and the parsed ``args``."""

    name: str
    command: Command
    args: argparse.Namespace


_RAISING: dict[type, type] = {}

#: the options of many-rank runs (:data:`nbbench.commands.ranks.OPTIONS`): how a probe is run,
#: never a parameter of it
RANK_OPTIONS = frozenset({"ranks", "nnodes", "rdzv_host", "backend", "no_dist"})


def _raising(base: type) -> type:
    """``base`` (the front end's parser class) with errors raised as :class:`UsageProblem`."""
    cls = _RAISING.get(base)
    if cls is None:

        def error(self, message):
            raise UsageProblem(message, prog=self.prog, usage=self.format_usage())

        def exit(self, status=0, message=None):  # pragma: no cover - no subcommand has --version
            raise UsageProblem((message or "").strip() or f"exit {status}", prog=self.prog, usage=self.format_usage())

        cls = _RAISING[base] = type(base.__name__, (base,), {"error": error, "exit": exit, "__module__": __name__})
    return cls


def build_parser(cmd: Command, ctx: Context):
    """The parser of ``cmd`` as front end ``ctx`` shows it: its parser class and program name.

    The one place a subcommand's parser is made (:func:`parse` and :func:`defaults` use it).
    """
    prog = " ".join(p for p in (ctx.prog, cmd.name) if p)
    parser = _raising(ctx.parser_class)(
        prog=prog, description=cmd.description or cmd.help, epilog=cmd.epilog, add_help=False
    )
    add_common_options(parser, ctx, saves=cmd.saves)
    if cmd.measures:
        from .repeat import REPEAT

        REPEAT(parser)
    cmd.add_arguments(parser)
    return parser


def _lookup(name: str, ctx: Context) -> Command:
    if name not in REGISTRY:
        raise UsageProblem(
            f"unknown subcommand {name!r}: try {ctx.command_text('help')} ({', '.join(REGISTRY)})", prog=ctx.prog
        )
    try:
        return get_command(name)
    except (ImportError, AttributeError) as exc:
        raise UsageProblem(f"{ctx.command_text(name)} is not available: {exc}", prog=ctx.prog) from None


def parse(argv, ctx: Context | None = None) -> Invocation:
    """``argv`` = ``[NAME, *options]`` parsed for front end ``ctx``: the one way any front end does it.

    ``[]``, ``help``, ``-h``, ``--help``: :class:`HelpRequested` with the list of
    subcommands (``help NAME``: NAME's help); ``NAME -h``: HelpRequested with NAME's
    help; an unknown name, a body given to a command that takes none, a bad option
    or value: :class:`UsageProblem`.  Tells ``ctx`` about ``-q`` / ``--json``.
    """
    ctx = ctx if ctx is not None else Context()
    argv = [str(a) for a in argv]
    if not argv or argv[0] in ("help", "-h", "--help"):
        if len(argv) > 1 and argv[1] in REGISTRY:
            argv = [argv[1], "--help"]
        else:
            raise HelpRequested(ctx.help_overview())
    name, rest = argv[0], argv[1:]
    cmd = _lookup(name, ctx)
    if ctx.cell is not None and not cmd.cell:
        raise UsageProblem(
            f"{ctx.command_text(name, cell=True)} takes no cell body; use {ctx.command_text(name)}", prog=ctx.prog
        )
    args = build_parser(cmd, ctx).parse_args(rest)
    args._nbbench_argv = list(rest)  # as typed: what --ranks hands to the ranks it launches
    ctx.as_json = ctx.as_json or bool(getattr(args, "json", False))
    ctx.quiet = ctx.quiet or ctx.as_json or bool(getattr(args, "quiet", False))
    ctx.details = ctx.details or bool(getattr(args, "details", False))
    return Invocation(name, cmd, args)


def defaults(name: str, ctx: Context | None = None) -> dict[str, Any]:
    """The defaults subcommand ``name``'s parser declares (dest -> default), as :func:`parse` would fill them."""
    ctx = ctx if ctx is not None else Context()
    parser = build_parser(_lookup(name, ctx), ctx)
    return {a.dest: a.default for a in parser._actions if a.dest not in ("help", argparse.SUPPRESS)}
