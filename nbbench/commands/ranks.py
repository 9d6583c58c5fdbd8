"""``--ranks N`` and rank mode for the subcommands that opt in (dd, randread, files, checkpoint, shards,
loader, sweep, feed).

:data:`OPTIONS` declares the options once; a command's ``run`` starts with
``value = ranks.dispatch(...)`` and goes on with its local code when it gets :data:`LOCAL`:

* this process is a rank (torchrun / srun / a PyTorchJob set the environment; never in a
  notebook kernel, never with ``--no-dist``): run the probe's rank part
  (:func:`nbbench.ranks.rank.run_rank`).  Rank 0 returns the one aggregate result, which is
  shown and saved as usual; every other rank shows and saves nothing and exits with the
  run's outcome.  Under ``--ranks`` even rank 0 stays quiet: the launching process shows
  and saves the result.
* ``--ranks N``: launch N local ranks as child processes of nbbench's own spawner
  (:func:`nbbench.ranks.launch.launch`: a FileStore in a private directory, no network port)
  with the aggregate progress live; with
  ``--nnodes M`` > 1 print the torchrun and srun lines to run on each host instead.

A new probe opts in with three pieces (as checkpoint and shards did): this
module's :data:`OPTIONS` in its ``arguments``, :func:`dispatch` at the top of
its ``run``, and its rank part, a :class:`nbbench.ranks.rankjob.RankJob` in ``nbbench.ranks.jobs.JOBS``.
"""

from __future__ import annotations

import os

from ..results import ProbeError
from . import Command, options
from .options import Group, Opt

__all__ = ["OPTIONS", "OPTIONS_FILE_PER_RANK", "dispatch", "RankedCommand", "LOCAL", "child_argv"]

#: what :func:`dispatch` returns when the command should run as usual, in this process alone
LOCAL = object()

_DROP_WITH_VALUE = ("--ranks", "--nnodes", "--rdzv-host")
_DROP = ("-o",)
#: the launcher repeats the whole ranked run (--repeat N); the ranks run once each time
_DROP_ALWAYS = ("--repeat",)


_RANKS = (
    Opt(
        "--ranks",
        options.positive_int,
        None,
        "run N ranks on this host as child processes (one per GPU, as DDP does; they meet through "
        "a private directory and loopback, no network port) and report what they get together",
        metavar="N",
    ),
    Opt(
        "--nnodes",
        options.positive_int,
        1,
        "with --ranks: M hosts sharing the path; prints the torchrun and srun lines to run",
        metavar="M",
    ),
    Opt(
        "--rdzv-host",
        None,
        None,
        "with --nnodes: the host:port the printed lines meet at (default: a placeholder)",
        metavar="HOST",
    ),
    Opt(
        "--backend",
        ("gloo", "nccl"),
        "gloo",
        "process group backend: gloo (default, no GPU needed) or nccl (a GPU per rank)",
    ),
    Opt("--no-dist", "store_true", help="never act as a rank, even where WORLD_SIZE/RANK or SLURM_* say this is one"),
)
_FILE_PER_RANK = Opt(
    "--file-per-rank",
    "store_true",
    help="in a directory: each rank reads a file of its own (default: one file rank 0 writes, read by every rank)",
)
_TITLE = "many ranks (torch.distributed; see docs/guide/ranks.md)"
#: the options of many-rank runs (one group, the same for every command that opts in), an entry of a
#: command's ``arguments``; :data:`OPTIONS_FILE_PER_RANK` adds ``--file-per-rank``
OPTIONS = Group(*_RANKS, title=_TITLE)
OPTIONS_FILE_PER_RANK = Group(*_RANKS, _FILE_PER_RANK, title=_TITLE)


def child_argv(name: str, args, strip_ranks: bool = False) -> list[str]:
    """The subcommand's command line for the ranks (as typed; ``-o`` and ``--no-dist`` left out, and with
    ``strip_ranks`` the --ranks / --nnodes / --rdzv-host options)."""
    rest = list(getattr(args, "_nbbench_argv", None) or [])
    # -o is the notebook's "return the result" flag (no value) only where the front end declared it; on the
    # CLI a command may take -o for its own option with a value (collectives' reduction op, as nccl-tests)
    returns = hasattr(args, "return_result")
    out, skip = [], False
    for a in rest:
        if skip:
            skip = False
            continue
        if (a in _DROP and returns) or _is_no_dist(a):
            continue
        if a in _DROP_ALWAYS:
            skip = True
            continue
        if a.startswith(tuple(f"{o}=" for o in _DROP_ALWAYS)):
            continue
        if strip_ranks and a in _DROP_WITH_VALUE:
            skip = True
            continue
        if strip_ranks and a.startswith(tuple(f"{o}=" for o in _DROP_WITH_VALUE)):
            continue
        out.append(a)
    return [name, *out]


def _is_no_dist(arg: str) -> bool:
    """``--no-dist`` as argparse reads it (also abbreviated, ``--no-di``): never handed to the ranks. They
    must act as ranks; with it each would launch --ranks N of its own, and those theirs, without end."""
    return len(arg) > len("--no-d") - 1 and "--no-dist".startswith(arg) and arg.startswith("--no-d")


def _quiet(args, ctx) -> None:
    """Nothing shown, nothing saved here (rank 0 or the launcher speaks for the run)."""
    args.json = False
    args.quiet = True
    args.no_save = True
    ctx.quiet = True
    ctx.as_json = False


def dispatch(name: str, kind: str, args, ctx, params: dict, desc: str, on_figures=None):
    """Run ``kind`` as a rank, launch ``--ranks`` of it, print the lines for several hosts, or
    return :data:`LOCAL`."""
    from ..probes.objects.client import check_endpoint
    from ..ranks import rankenv

    check_endpoint(getattr(args, "endpoint_url", None))  # before any command line is printed: no credential in it
    env = rankenv.detect(no_dist=getattr(args, "no_dist", False))
    if env is not None:
        return _as_rank(kind, args, ctx, params, env, desc)
    n = getattr(args, "ranks", None)
    if n is None:
        if getattr(args, "nnodes", 1) > 1:
            raise ProbeError("--nnodes M goes with --ranks N (the ranks on each host)")
        return LOCAL
    if getattr(args, "nnodes", 1) > 1:
        from ..ranks.cmdlines import command_lines

        return command_lines(child_argv(name, args, strip_ranks=True), n, args.nnodes, args.rdzv_host)
    from ..ranks.jobs import job_for
    from ..ranks.launch import install_handlers, launch, need_torch

    need_torch()  # one line, before any bar
    install_handlers()  # from the main thread: SIGTERM / SIGHUP stop the ranks before the process ends
    job = job_for(kind, params)
    job.local_checks(n)
    argv = child_argv(name, args)
    return ctx.run_probe(
        f"{desc} ×{n} ranks",
        lambda p, c: launch(argv, n, job, progress=p, cancel=c, on_figures=on_figures, backend=args.backend),
    )


def _as_rank(kind, args, ctx, params, env, desc):
    from .. import tempfiles
    from ..ranks.control import ENV_STORE
    from ..ranks.jobs import job_for
    from ..ranks.rank import install_sigterm_note, run_rank

    if os.environ.get(ENV_STORE) or not env.is_zero:
        _quiet(args, ctx)
    job = job_for(kind, params)
    tempfiles.install_handlers()  # signal handlers: from the main thread, before the probe's thread
    install_sigterm_note(env)
    return ctx.run_probe(
        f"{desc} (rank {env.rank} of {env.world_size})",
        lambda p, c: run_rank(job, env, backend=args.backend, cancel=c, progress=p),
    )


class RankedCommand(Command):
    """A command that can run as ranks (a many-rank result says its together-answer and its
    per-host rows through the one presentation rule: :meth:`~nbbench.results.present.view.ResultView.present`)."""

    def show(self, value, args, ctx) -> None:
        if isinstance(value, str):
            ctx.echo(value)
            return
        super().show(value, args, ctx)


def refuse_variable(ctx, name: str) -> None:
    """With --ranks, a notebook variable cannot go to other processes: say what to give instead."""
    if ctx.user_ns is not None and name in ctx.user_ns:
        raise ProbeError(
            f"{name} is a notebook variable: a Python object (a DataLoader) cannot be sent to other "
            "processes. With --ranks give a dataset folder, or --dataset module:function "
            "(a function every rank can import that returns the Dataset)"
        )
