"""``%%iobench monitor`` (a cell) and ``nbbench monitor -- COMMAND`` (a program).

Samples GPU (NVML), CPU, memory and disk while the cell or command runs, plots it
live in a notebook, and ends with a summary saved as a ``MonitorResult``.

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

from . import Command
from ..results import ProbeError

__all__ = ["MonitorCommand"]


def _interval(text: str) -> float:
    from .options import duration

    v = duration(text)
    if v < 0.01:
        raise argparse.ArgumentTypeError(f"the interval must be 0.01 s or more, not {text!r}")
    if v > 3600:
        raise argparse.ArgumentTypeError(f"the interval must be under an hour, not {text!r}")
    return v


def _gpus(text: str):
    t = text.strip().lower()
    if t in ("all", "none"):
        return t
    from .options import int_list

    return int_list(text)


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


def _quiet_traceback(exc: BaseException, saved: bool = True) -> None:
    """The cell's traceback is already shown once (by the cell run): show a one-line
    reminder instead of a second full traceback when the magic re-raises it."""
    name = type(exc).__name__
    msg = str(exc)

    tail = "; the monitor result was saved as failed" if saved else ""

    def render():
        return [f"{name}: {msg}" if msg else name, f"(raised in the monitored cell — traceback above{tail})"]

    try:
        exc._render_traceback_ = render
    except (AttributeError, TypeError):  # exceptions with __slots__
        pass


class MonitorCommand(Command):
    name = "monitor"
    help = "sample GPU, CPU and disk while a cell (or command) runs"
    description = (
        "Run a cell (%%iobench monitor) or a command (nbbench monitor -- COMMAND ARGS) and sample the GPUs "
        "(NVML kernel-active %, memory, PCIe, power), CPU, memory, the disk behind --path and this process "
        "tree's I/O in the background; plot it live and end with a summary."
    )
    epilog = ("GPU 'util' is NVML's kernel-active %: the share of time one or more kernels ran, not how busy "
              "the SMs were (GPM SM-active % shows that on Hopper and later).")
    cell = True
    cell_required = True

    def add_arguments(self, parser) -> None:
        parser.add_argument("--interval", type=_interval, default=0.2, metavar="S",
                            help="seconds between samples (default 0.2; 500ms, 1s also work)")
        parser.add_argument("--gpu", dest="gpus", type=_gpus, default="all", metavar="all|none|0,1",
                            help="which GPUs to sample (NVML indices; default all)")
        parser.add_argument("--path", default=None, metavar="DIR",
                            help="watch the block device behind DIR (default: the current directory); "
                                 "system-wide disk figures are always taken too")
        cli = not str(getattr(parser, "prog", "")).startswith("%")
        if not cli:
            parser.add_argument("--no-plot", dest="no_plot", action="store_true",
                                help="no live plot, only the summary")
        else:
            parser.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND ARGS",
                                help="the program to run and monitor, after --")

    # ------------------------------------------------------------------ run
    def run(self, args, ctx):
        command = [c for c in (getattr(args, "command", None) or [])]
        if command and command[0] == "--":
            command = command[1:]
        if ctx.frontend == "cli" or (command and ctx.run_cell is None):
            return self._run_command(args, ctx, command)
        if ctx.run_cell is None:
            raise ProbeError("monitor needs a cell (%%iobench monitor) or a command (nbbench monitor -- CMD); "
                             "from Python use `with nbbench.monitor() as m:`")
        return self._run_cell(args, ctx)

    def _monitor(self, args):
        from ..monitor import Monitor

        return Monitor(interval=args.interval, gpus=args.gpus, path=_check_path(args.path))

    def _params(self, args, **extra) -> dict:
        return dict(extra, interval_s=args.interval, gpus=args.gpus, path=args.path)

    def _run_cell(self, args, ctx):
        body = ctx.cell or ""
        if not body.strip():
            raise ProbeError("%%iobench monitor needs code: put the cell's code below the %%iobench line")
        mon = self._monitor(args)
        mon.open()  # sources first: the plot's panels depend on which GPUs there are
        try:
            return self._run_opened(args, ctx, mon, body)
        finally:
            mon.stop()  # idempotent; closes the sources however the cell ended

    def _run_opened(self, args, ctx, mon, body):
        plot = None
        if not getattr(args, "no_plot", False):
            try:
                from ..ui.liveplot import monitor_plot_kwargs

                plot = ctx.live_plot(**monitor_plot_kwargs(mon))
                if plot is not None and getattr(plot, "target", None) == "none":
                    plot = None  # terminal IPython: nowhere to show a picture; the summary is text
                if plot is not None:
                    plot.start()  # first frame drawn now, before the clock starts
            except Exception as exc:  # noqa: BLE001 - a plot problem must not stop the cell
                mon._note(f"the live plot could not start: {type(exc).__name__}: {exc}")
                plot = None
        mon.start()
        if plot is not None:
            plot.t0 = mon.t_start
            plot.attach(mon)
        status, reason, error = "ok", None, None
        try:
            ctx.run_cell(body)
        except KeyboardInterrupt:
            status, reason = "interrupted", "interrupted while the cell ran; the samples up to then are kept"
        except BaseException as exc:  # noqa: BLE001 - re-raised below, after the plot is final
            status, reason, error = "failed", f"the cell raised {type(exc).__name__}: {exc}", exc
        finally:
            mon.stop()
            if plot is not None:
                try:
                    plot.close()  # joins the drawing thread, then the last frame from here
                except Exception:  # noqa: BLE001
                    pass
        res = mon.result(status, reason, params=self._params(args, what="cell", cell=_first_line(body)))
        if plot is not None:
            res.extra["plot_frames"] = plot.frames
            res.extra["plot_cpu_s"] = round(plot.draw_cpu_s, 4)
        if error is not None:
            if self.saves and not getattr(args, "no_save", False):
                from ..store import default_store

                try:
                    default_store().save(res, label=getattr(args, "label", None))
                except Exception:  # noqa: BLE001 - the cell's error is what matters here
                    pass
            if not getattr(args, "quiet", False) and not getattr(args, "json", False):
                self.show(res, args, ctx)
            _quiet_traceback(error, saved=self.saves and not getattr(args, "no_save", False))
            raise error
        return res

    def _run_command(self, args, ctx, command):
        import subprocess

        if not command:
            raise ProbeError("give the command to run after --, e.g.: nbbench monitor -- python train.py")
        if shutil.which(command[0]) is None and not os.path.exists(command[0]):
            raise ProbeError(f"command not found: {command[0]}")
        from ..monitor import format_status

        mon = self._monitor(args)
        mon.start()
        status_line = _StatusLine(mon, enabled=not getattr(args, "quiet", False) or sys.stderr.isatty(),
                                  format_status=format_status)
        unsub = mon.subscribe(status_line)
        status, reason = "ok", None
        # with --json, stdout carries the JSON alone: the program's own output goes to stderr
        out = 2 if getattr(args, "json", False) else None
        try:
            proc = subprocess.Popen(command, stdout=out)
        except OSError as exc:
            unsub()
            mon.stop()
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
        if code < 0:
            code = 128 + (-code)
        if status == "ok" and code != 0:
            status, reason = "failed", f"the command exited with code {code}"
        res = mon.result(status, reason, params=self._params(args, command=list(command)))
        res.extra["exit_code"] = code
        res.labels["exit_code"] = code
        return res


def _wind_down(proc, grace: float = 5.0) -> int:
    """After Ctrl-C: give the program a moment (a terminal sent it SIGINT too), then
    forward SIGINT, then terminate, then kill."""
    import signal

    for action, wait in ((None, 1.0), ("sigint", grace), ("terminate", grace), ("kill", grace)):
        try:
            if action == "sigint":
                proc.send_signal(signal.SIGINT)
            elif action is not None:
                getattr(proc, action)()
        except OSError:
            pass
        try:
            return proc.wait(timeout=wait)
        except KeyboardInterrupt:
            continue
        except Exception:  # noqa: BLE001 - subprocess.TimeoutExpired
            continue
    return proc.returncode if proc.returncode is not None else 130


class _StatusLine:
    """A one-line status on stderr: redrawn in place on a terminal, every 10 s otherwise."""

    def __init__(self, mon, enabled: bool, format_status, stream=None):
        self.mon = mon
        self.stream = stream or sys.stderr
        self.tty = getattr(self.stream, "isatty", lambda: False)()
        self.enabled = enabled
        self.every = 0.5 if self.tty else 10.0
        self.last = time.monotonic()
        self.fmt = format_status
        self.drawn = False

    def __call__(self, rec) -> None:
        if not self.enabled or rec["t"] - self.last < self.every:
            return
        self.last = rec["t"]
        line = "monitor " + self.fmt(rec, self.mon.t_start)
        try:
            if self.tty:
                self.stream.write("\r\x1b[2K" + line)
                self.drawn = True
            else:
                self.stream.write(line + "\n")
            self.stream.flush()
        except (OSError, ValueError):
            self.enabled = False

    def end(self) -> None:
        if self.drawn:
            try:
                self.stream.write("\r\x1b[2K")
                self.stream.flush()
            except (OSError, ValueError):
                pass
