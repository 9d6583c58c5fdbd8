"""``%%iobench monitor`` (a cell), ``monitor -- COMMAND`` (a program), ``monitor --duration S``.

Samples GPU (NVML), CPU, memory, disk, network and the process tree (a per-process
table) while the cell or program runs (or for S seconds, 0: until Stop / Ctrl-C),
plots it live where the front end shows plots, serves the latest samples at
``/metrics`` for Prometheus with ``--serve [HOST:]PORT`` (stopped with the monitor),
and ends with a summary saved as a ``MonitorResult``.  The options are the same in
every front end: ``%iobench monitor -- sleep 1`` runs a program from a notebook,
``nbbench monitor --duration 10`` watches for ten seconds in a terminal.

Exit code of ``nbbench monitor -- COMMAND``: the command's own (a signal N gives
128+N, as a shell does), so it can stand in for the command in scripts.  With
``--json`` the command's stdout is sent to stderr, so stdout is the JSON alone.  The
stored result is ``failed`` when the command exits non-zero, but the command's
code, not 1, is what the CLI returns (``MonitorResult.exit_code``, honoured by
``nbbench.cli.exit_code``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time

from ...results import ProbeError
from .. import Command, RaiseAfterFinish
from ..options import Opt, duration
from .common import _StatusLine, _wind_down, final_metrics, live_metrics, monitor_options, start_server  # noqa: F401

__all__ = ["MonitorCommand", "live_metrics"]


def _check_path(path):
    if path is None:
        return None
    p = os.path.expanduser(str(path))
    if not os.path.exists(p):
        raise ProbeError(f"--path {path}: no such file or directory")
    return p


def _first_line(body: str) -> str:
    for line in body.splitlines():
        if line.strip():
            return line.strip()[:120]
    return ""


class MonitorCommand(Command):
    name = "monitor"
    help = "sample GPU, CPU and disk while a cell (or command) runs"
    description = (
        "Run a cell (%%iobench monitor), a program (monitor -- COMMAND ARGS) or just watch for a while "
        "(monitor --duration S) and sample the GPUs (NVML kernel-active %, memory, PCIe, power), CPU, memory, "
        "the disk behind --path and this process tree's I/O in the background; plot it live where plots "
        "show and end with a summary."
    )
    epilog = (
        "GPU 'util' is NVML's kernel-active %: the share of time one or more kernels ran, not how busy "
        "the SMs were (GPM SM-active % shows that on Hopper and later)."
    )
    cell = True
    #: code is monitored as a cell (%%iobench monitor); without a cell it needs -- COMMAND or --duration
    cell_required = True

    arguments = (
        *monitor_options(),
        Opt(
            "--duration",
            duration,
            None,
            "no cell or program: watch for S seconds (0: until Stop / Ctrl-C)",
            metavar="S",
        ),
        Opt("--no-plot", "store_true", help="no live plot, only the summary"),
        Opt(
            "command",
            help="the program to run and monitor, after --",
            metavar="-- COMMAND ARGS",
            nargs=argparse.REMAINDER,
        ),
    )

    # ------------------------------------------------------------------ run
    def run(self, args, ctx):
        command = list(getattr(args, "command", None) or [])
        if command and command[0] == "--":
            command = command[1:]
        duration = getattr(args, "duration", None)
        given = [
            what
            for what, on in (
                ("a cell", ctx.cell is not None),
                ("a command", bool(command)),
                ("--duration", duration is not None),
            )
            if on
        ]
        if len(given) > 1:
            raise ProbeError(f"monitor watches a cell, a command after -- or --duration S: not {' and '.join(given)}")
        if command:
            return self._run_command(args, ctx, command)
        if duration is not None:
            return self._run_for(args, ctx, duration)
        if ctx.cell is not None:
            return self._run_cell(args, ctx, ctx.cell)
        if ctx.run_cell is not None:  # cells run here: the user meant one
            raise ProbeError(
                f"monitor needs a cell: write {ctx.command_text('monitor', cell=True)} on the first "
                f"line of the cell (or {ctx.command_text('monitor', '-- COMMAND ARGS')} for a program)"
            )
        raise ProbeError(
            "give the command to run after --, e.g.: "
            + ctx.command_text("monitor", "-- python train.py")
            + f" (or {ctx.command_text('monitor', '--duration 60')} to watch for a minute)"
        )

    def _monitor(self, args, recent_s: float | None = None):
        from ...monitor import Monitor

        try:
            return Monitor(
                interval=args.interval,
                gpus=args.gpus,
                path=_check_path(args.path),
                net=getattr(args, "net", "auto"),
                procs=getattr(args, "procs", 1.0),
                recent_s=recent_s,
            )
        except ValueError as exc:
            raise ProbeError(str(exc)) from None

    def _params(self, args, **extra) -> dict:
        out = dict(extra, interval_s=args.interval, gpus=args.gpus, path=args.path)
        if getattr(args, "net", "auto") != "auto":
            out["net"] = args.net
        if getattr(args, "serve", None):
            out["serve"] = args.serve
        return out

    def _plot(self, args, ctx, mon):
        """The front end's live plot of an opened monitor (None: no plot here, or --no-plot), first frame drawn."""
        if getattr(args, "no_plot", False):
            return None
        try:
            from ...ui.liveplot import monitor_plot_kwargs

            plot = ctx.live_plot(**monitor_plot_kwargs(mon))
            if plot is not None:
                plot.start()  # first frame drawn now, before the clock starts
            return plot
        except Exception as exc:  # noqa: BLE001 - a plot problem must not stop the run
            mon._note(f"the live plot could not start: {type(exc).__name__}: {exc}")
            return None

    @staticmethod
    def _attach(plot, mon) -> None:
        if plot is not None:
            plot.t0 = mon.t_start
            plot.attach(mon)

    @staticmethod
    def _stop(srv, mon, plot) -> None:
        """The end of every run: the metrics server, then the sampler (idempotent; closes the
        sources), then the plot's last frame (its thread joined first)."""
        if srv is not None:
            srv.stop()
        mon.stop()
        if plot is not None:
            try:
                plot.close()
            except Exception:  # noqa: BLE001
                pass

    @staticmethod
    def _plot_figures(plot, res) -> None:
        if plot is not None:
            res.extra["plot_frames"] = plot.frames
            res.extra["plot_cpu_s"] = round(plot.draw_cpu_s, 4)

    def _run_cell(self, args, ctx, body):
        if not body.strip():
            raise ProbeError(
                f"{ctx.command_text('monitor', cell=True)} needs code: put the cell's code below its first line"
            )
        mon = self._monitor(args)
        mon.open()  # sources first: the plot's subplots depend on which GPUs there are
        plot = srv = None
        try:
            plot = self._plot(args, ctx, mon)
            srv = start_server(args, ctx, mon)
            mon.start()
            self._attach(plot, mon)
            status, reason, error = "ok", None, None
            try:
                ctx.run_cell(body)
            except KeyboardInterrupt:
                status, reason = "interrupted", "interrupted while the cell ran; the samples up to then are kept"
            except BaseException as exc:  # noqa: BLE001 - re-raised below, after the result is shown
                status, reason, error = "failed", f"the cell raised {type(exc).__name__}: {exc}", exc
        finally:
            self._stop(srv, mon, plot)  # however the cell ended
        res = mon.result(status, reason, params=self._params(args, what="cell", cell=_first_line(body)))
        self._plot_figures(plot, res)
        if error is not None:
            # shown and saved like any result, then the cell's error — whose traceback the front
            # end shows once (the notebook keeps the body's own: nbbench.magics)
            raise RaiseAfterFinish(res, error)
        return res

    def _run_for(self, args, ctx, duration: float, what: str | None = None, recent_s: float = 600.0):
        """Watch for ``duration`` seconds (0: until Stop / Ctrl-C); stopping a set duration early
        marks the result interrupted, stopping an open-ended watch is its normal end.  An
        open-ended one keeps the last ``recent_s`` seconds at full rate and older samples as
        means, so memory stays bounded however long it runs."""
        mon = self._monitor(args, recent_s=None if duration else recent_s)
        mon.open()
        plot = srv = None
        stopped = False
        try:
            plot = self._plot(args, ctx, mon)
            srv = start_server(args, ctx, mon)
            mon.start()
            self._attach(plot, mon)
            p = ctx.progress("monitor")  # after the plot: a front end may plot the bar's rates otherwise
            t0 = time.monotonic()
            try:
                while not (stopped := ctx.cancel.wait(0.1)):
                    elapsed = time.monotonic() - t0
                    if duration and elapsed >= duration:
                        break
                    p(elapsed / duration if duration else None, live_metrics(mon.latest()))
            except KeyboardInterrupt:
                stopped = True
        finally:
            self._stop(srv, mon, plot)
        interrupted = stopped and bool(duration)
        what = what or (f"for {duration:g} s" if duration else "until stopped")
        res = mon.result(
            "interrupted" if interrupted else "ok",
            "stopped before the set duration" if interrupted else None,
            params=self._params(args, what=what, duration_s=duration or None, frontend=ctx.frontend),
        )
        self._plot_figures(plot, res)
        p.close(res.status, final_metrics(res))  # the bar ends on the result's figures
        return res

    def _run_command(self, args, ctx, command):
        import subprocess

        if shutil.which(command[0]) is None and not os.path.exists(command[0]):
            raise ProbeError(f"command not found: {command[0]}")
        from ...monitor import format_status

        mon = self._monitor(args)
        mon.open()
        plot = srv = status_line = None
        try:
            plot = self._plot(args, ctx, mon)
            srv = start_server(args, ctx, mon)
            mon.start()
            self._attach(plot, mon)
            status_line = _StatusLine(
                mon,
                enabled=plot is None and (not getattr(args, "quiet", False) or sys.stderr.isatty()),
                format_status=format_status,
            )
            unsub = mon.subscribe(status_line)
            status, reason = "ok", None
            # with --json, stdout carries the JSON alone: the program's own output goes to stderr
            out = 2 if getattr(args, "json", False) else None
            try:
                proc = subprocess.Popen(command, stdout=out)
            except OSError as exc:
                unsub()
                raise ProbeError(f"cannot run {command[0]}: {exc.strerror or exc}") from None
            try:
                code = proc.wait()
            except KeyboardInterrupt:
                status, reason = "interrupted", "interrupted (Ctrl-C); the samples up to then are kept"
                code = _wind_down(proc)
            finally:
                unsub()
                mon.stop()
                status_line.end()
        finally:
            self._stop(srv, mon, plot)
        if code < 0:
            code = 128 + (-code)
        if status == "ok" and code != 0:
            status, reason = "failed", f"the command exited with code {code}"
        res = mon.result(status, reason, params=self._params(args, command=list(command)))
        self._plot_figures(plot, res)
        res.extra["exit_code"] = code
        res.labels["exit_code"] = code
        if status_line is not None:
            status_line.final(res.answer_line())
        return res
