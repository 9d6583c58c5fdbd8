"""What ``monitor`` and ``watch`` share: their options, the ``--serve`` metrics server,
the terminal's status line and how a monitored program is wound down after Ctrl-C."""

from __future__ import annotations

import argparse
import sys
import time

from ...probes.limits import MONITOR_INTERVAL_S
from ...results import ProbeError
from ..options import Opt

__all__ = ["live_metrics", "monitor_options", "start_server", "serve_address", "interfaces", "serve_here"]

# record fields shown next to a progress bar (--duration), as metric keys (their unit is in the key)
_LIVE = (
    ("cpu.util_pct", "cpu_util_pct"),
    ("gpu0.util_pct", "gpu0_util_pct"),
    ("disk.read_bytes_per_s", "disk_read_bytes_per_s"),
    ("disk.write_bytes_per_s", "disk_write_bytes_per_s"),
)


def live_metrics(rec: dict | None) -> dict:
    """A monitor record's headline fields as metrics for a progress bar."""
    if not rec:
        return {}
    return {key: rec[field] for field, key in _LIVE if rec.get(field) is not None}


def final_metrics(res) -> dict:
    """The progress bar's figures from the result, so the bar ends on the result's own figures
    (the run's means), never on the last sample's."""
    m = res.metrics
    pairs = (
        ("cpu_util_pct", "cpu_mean_pct"),
        ("gpu0_util_pct", "gpu0_util_mean_pct"),
        ("disk_read_bytes_per_s", "disk_read_mean_bytes_per_s"),
        ("disk_write_bytes_per_s", "disk_write_mean_bytes_per_s"),
    )
    return {live: m[key] for live, key in pairs if isinstance(m.get(key), (int, float))}


def _interval(text: str) -> float:
    from ...probes.limits import MONITOR_INTERVAL_S
    from ..options import duration

    v = duration(text)
    lo, hi = MONITOR_INTERVAL_S
    if v < lo:
        raise argparse.ArgumentTypeError(f"the interval must be {lo:g} s or more, not {text!r}")
    if v > hi:
        raise argparse.ArgumentTypeError(f"the interval must be {hi:g} s or less, not {text!r}")
    return v


def serve_address(text: str) -> str:
    """``--serve``: ``PORT`` (on 127.0.0.1), ``HOST:PORT``, ``[::1]:PORT``; 0 picks a free port."""
    from ...monitor.exporter import parse_address

    try:
        host, port, _ = parse_address(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def interfaces(text: str):
    """``--net``: ``auto``, ``all``, ``none`` or interface names ``eth0,lo``."""
    from ...monitor.net import parse_interfaces

    try:
        return parse_interfaces(text.strip())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _table_interval(text: str) -> float:
    from ..options import duration

    v = duration(text)
    if 0 < v < 0.05:
        raise argparse.ArgumentTypeError(f"the table interval must be 0 (off) or 0.05 s or more, not {text!r}")
    return v


def monitor_options(interval: float = 0.2) -> tuple:
    """The options ``monitor`` and ``watch`` share: what to sample, how often, where to serve it."""
    lo, hi = MONITOR_INTERVAL_S
    return (
        Opt(
            "--interval",
            _interval,
            interval,
            f"seconds between samples, {lo:g} to {hi:g} (default {interval:g}; 500ms, 1s also work)",
            metavar="S",
        ),
        Opt(
            "--gpu",
            _gpus,
            "all",
            "which GPUs to sample (NVML indices; default all)",
            metavar="all|none|0,1",
            dest="gpus",
        ),
        Opt(
            "--path",
            None,
            None,
            "watch the block device behind DIR (default: the current directory); system-wide disk figures are "
            "always taken too",
            metavar="DIR",
        ),
        Opt(
            "--net",
            interfaces,
            "auto",
            "network interfaces (default: every one but loopback, each byte counted once; lo: loopback; all: "
            "every one; none: no network figures)",
            metavar="IF[,IF]|all|none",
        ),
        Opt(
            "--procs",
            _table_interval,
            1.0,
            "update the per-process table (reads, writes, CPU, RSS/PSS, GPU memory per process) every S seconds "
            "(default 1; 0: no table)",
            metavar="S",
        ),
        Opt(
            "--serve",
            serve_address,
            None,
            "serve the latest samples at http://HOST:PORT/metrics for Prometheus while it runs (host 127.0.0.1 "
            "unless given; port 0 picks a free one)",
            metavar="[HOST:]PORT",
        ),
    )


def serve_here(spec, environ=None):
    """Whether this process serves ``--serve SPEC``: (spec or None, a note or None).

    Under a launcher (torchrun, srun, a PyTorchJob: :func:`nbbench.ranks.rankenv.detect`) every
    rank of a host would bind the same port; each host's local rank 0 serves its own host (the
    monitor's figures are the host's: GPUs, CPU, disks, network) and the other ranks say where."""
    if spec is None:
        return None, None
    from ...ranks import rankenv

    env = rankenv.detect(environ)
    if env is None or env.local_rank == 0:
        return spec, None
    return None, (
        f"{env.describe()}: this host's metrics are served by its local rank 0 (--serve {spec}), not by this rank"
    )


def start_server(args, ctx, mon):
    """The ``--serve`` metrics server of an opened monitor, started (None without --serve, or on a
    rank that is not its host's local rank 0: :func:`serve_here`): the URL is shown, and a warning
    when it listens beyond loopback; a port that cannot be bound is a ProbeError."""
    spec, note = serve_here(getattr(args, "serve", None))
    if note:
        ctx.echo(note)
    if spec is None:
        return None
    from ...monitor.exporter import MetricsServer

    srv = MetricsServer.from_text(mon, spec)
    try:
        srv.start()
    except OSError as exc:
        raise ProbeError(str(exc.strerror or exc)) from None
    if srv.warning:
        if ctx.quiet:
            sys.stderr.write(f"warning: {srv.warning}\n")
        ctx.echo(f"warning: {srv.warning}")
    ctx.echo(f"metrics for Prometheus at {srv.url}")
    return srv


def _gpus(text: str):
    t = text.strip().lower()
    if t in ("all", "none"):
        return t
    from ..options import int_list

    return int_list(text)


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

    def final(self, text: str) -> None:
        """The last status line: the result's own figures (the answer line), so the line the
        terminal is left with agrees with the result printed under it."""
        if not self.enabled or not text:
            return
        try:
            self.stream.write(f"monitor done: {text}\n")
            self.stream.flush()
        except (OSError, ValueError):
            pass

    def end(self) -> None:
        if self.drawn:
            try:
                self.stream.write("\r\x1b[2K")
                self.stream.flush()
            except (OSError, ValueError):
                pass
