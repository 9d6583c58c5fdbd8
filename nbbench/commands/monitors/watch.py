"""``watch``: a dashboard that stays, and ``mark TEXT``: a labelled line on its timeline.

In a notebook (and from Python, ``nbbench.watch()``) ``%iobench watch`` starts the one
background monitor of the kernel (:mod:`nbbench.monitor.background`) and returns at
once; its view — the live timeline of the last ``--window`` (10 min) — stays in that
cell and keeps updating while other cells run (right-click it, "Create New View for
Output", to dock it beside the notebook).  Memory stays bounded however long the kernel
lives (full rate for the window, older samples as means).  ``--serve [HOST:]PORT``
exposes ``/metrics`` for Prometheus meanwhile.  ``%iobench mark TEXT`` draws a labelled
vertical line (an epoch, a config change) and stores it; ``%iobench watch --stop``
stops it all and saves the run as a ``monitor`` result (``params["what"] == "watch"``)
— the only one of these that saves anything.  A second ``watch`` says where the first
was started.

In a terminal a process lives as long as its command, so ``nbbench watch`` is
``nbbench monitor --duration 0`` in the foreground (same options, ``--serve`` too):
it runs until Ctrl-C and then saves the run the same way.
"""

from __future__ import annotations

import argparse

from ...results import ProbeError, Result
from .. import Command, Invocation, defaults, get_command
from ..options import Opt
from .common import monitor_options

__all__ = ["WatchCommand", "MarkCommand", "invocation"]


def _window(text: str) -> float:
    from ..options import duration

    v = duration(text)
    if v < 10:
        raise argparse.ArgumentTypeError(f"the window must be 10 s or more, not {text!r}")
    return v


class WatchCommand(Command):
    name = "watch"
    help = "a background monitor for the kernel's life: a live view, marks, /metrics"
    description = (
        "Start the kernel's background monitor (GPU, CPU, disk, network, the per-process table) with a "
        "live view of the last --window that keeps updating while other cells run; --stop ends it and "
        "saves it as a monitor run. In a terminal: monitor --duration 0 in the foreground, until Ctrl-C."
    )
    epilog = (
        "Dock the view: right-click it in JupyterLab, 'Create New View for Output'. Mark the timeline with "
        "mark TEXT. Memory stays bounded: the window at full rate, older samples as 10 s / 1 min means."
    )

    arguments = (
        *monitor_options(interval=1.0),
        Opt(
            "--window",
            _window,
            600.0,
            "the view shows the last S seconds, kept at full rate (default 10m)",
            metavar="S",
        ),
        Opt("--stop", "store_true", help="stop the background monitor and save it as a monitor run"),
        Opt("--no-plot", "store_true", help="no live view"),
    )

    def run(self, args, ctx):
        if args.stop:
            return self._stop(args, ctx)
        if not ctx.lasting:  # a terminal: the command's process is the watch's life
            from .monitor import MonitorCommand

            return MonitorCommand()._run_for(args, ctx, 0, what="watch", recent_s=args.window)
        return self._start(args, ctx)

    # ----------------------------------------------------------------- start
    def _start(self, args, ctx):
        from ...monitor import background
        from .common import serve_here
        from .monitor import _check_path

        serve, note = serve_here(args.serve)
        if note:
            ctx.echo(note)
        try:
            bg = background.start(
                interval=args.interval,
                gpus=args.gpus,
                path=_check_path(args.path),
                net=args.net,
                procs=args.procs,
                window_s=args.window,
                serve=serve,
                origin=ctx.origin(),
            )
        except background.AlreadyWatching as exc:
            raise ProbeError(f"{exc}: stop it first with {ctx.command_text('watch', '--stop')}") from None
        except (ValueError, OSError) as exc:
            raise ProbeError(str(getattr(exc, "strerror", None) or exc)) from None
        mon = bg.monitor
        bg.params = {"interval_s": args.interval, "gpus": args.gpus, "path": args.path, "window_s": args.window}
        if args.net != "auto":
            bg.params["net"] = args.net
        if args.serve:
            bg.params["serve"] = args.serve
        if bg.server is not None and bg.server.warning:
            ctx.echo(f"warning: {bg.server.warning}")
        ctx.echo(
            f"watching in the background ({bg.describe()}); {ctx.command_text('mark', 'TEXT')} marks the "
            f"timeline, {ctx.command_text('watch', '--stop')} ends it and saves the run"
        )
        if not getattr(args, "no_plot", False):
            plot = self._view(args, ctx, mon)
            if plot is not None:
                bg.views.append(plot)
        return bg

    def _view(self, args, ctx, mon):
        """The front end's live view: the timeline of the last --window and the process table under it,
        updating in place while other cells run (None where views do not show)."""
        try:
            from ...plots.monitor import monitor_plot_kwargs

            kw = monitor_plot_kwargs(mon, title=f"nbbench watch — the last {args.window / 60:g} min")
            return ctx.watch_view(mon, window_s=args.window, capacity=int(1.2 * args.window / args.interval) + 10, **kw)
        except Exception as exc:  # noqa: BLE001 - the view is a convenience; the monitor runs on
            mon._note(f"the live view could not start: {type(exc).__name__}: {exc}")
            return None

    # ------------------------------------------------------------------ stop
    def _stop(self, args, ctx):
        from ...monitor import background

        bg = background.current()
        if bg is None:
            raise ProbeError(f"no background monitor is running: start one with {ctx.command_text('watch')}")
        _, res = background.stop(params={"frontend": ctx.frontend})
        return res

    def show(self, value, args, ctx) -> None:
        if isinstance(value, Result):
            ctx.display(value)
            ctx.display_image(value.png)


class MarkCommand(Command):
    name = "mark"
    help = "a labelled mark on the background monitor's timeline (watch)"
    description = (
        "Put a labelled vertical line on the running watch's timeline (an epoch, a configuration "
        "change); it is drawn in the view and stored with the run."
    )
    saves = False

    arguments = (Opt("text", help="the label", metavar="TEXT", nargs="+"),)

    def run(self, args, ctx):
        from ...monitor import background

        text = " ".join(args.text)
        bg = background.current()
        if bg is None and not ctx.lasting:
            raise ProbeError(
                "mark puts a line on a background monitor of the same process: %iobench watch in a "
                "notebook or nbbench.watch() in Python (a terminal's nbbench watch runs in its own "
                "process, where nothing else can reach it)"
            )
        if bg is None:
            raise ProbeError(f"no background monitor is running here: start one with {ctx.command_text('watch')}")
        t, _ = background.mark(text)
        t0 = bg.monitor.t_start or t
        ctx.echo(f"mark {text!r} at {t - t0:.1f} s")
        return None

    def show(self, value, args, ctx) -> None:
        pass


def invocation(ctx, name: str = "watch", **options) -> Invocation:
    """An Invocation of ``watch`` (or ``mark``) from Python keyword arguments: the parser's
    defaults, then ``options`` given as values or as the text an option takes
    (``window="10m"``, ``serve=9100``)."""
    cmd = get_command(name)
    values = defaults(name, ctx)
    types = {"window": _window}
    if name == "watch":
        from .common import _gpus, _interval, _table_interval, interfaces, serve_address

        types.update(interval=_interval, procs=_table_interval, net=interfaces, serve=serve_address, gpus=_gpus)
    for key, v in options.items():
        if key not in values:
            raise ProbeError(f"{name}() has no option {key!r} (it has {', '.join(sorted(values))})")
        conv = types.get(key)
        if (
            conv is not None
            and v is not None
            and not (isinstance(v, (int, float)) and key in ("interval", "window", "procs"))
        ):
            try:
                v = conv(str(v))
            except argparse.ArgumentTypeError as exc:
                raise ProbeError(f"{key}: {exc}") from None
        values[key] = v
    return Invocation(name, cmd, argparse.Namespace(**values))
