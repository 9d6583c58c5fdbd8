"""Network source: receive / transmit bytes and packets per second, per interface and together.

Fields (rates over the interval since the previous sample; None on the first):

- ``net.rx_bytes_per_s``, ``net.tx_bytes_per_s``, ``net.rx_packets_per_s``,
  ``net.tx_packets_per_s``: the watched interfaces together;
- ``net.<IF>.rx_bytes_per_s`` … the same four per interface (``net.eth0.rx_bytes_per_s``).

Which interfaces (``interfaces=``, the ``--net`` option): ``"auto"`` (default) every
interface but loopback — except that where physical NICs exist (a ``device`` link in
``/sys/class/net/IF``) only they count, and bridges and ``ifb`` mirrors never do, so a
byte that crosses a veth, a bridge and a NIC on a Docker host is counted once.  Inside a
container the only interface is usually ``eth0``, a veth: it counts.  ``"all"``: every
interface, loopback included; ``"none"``: no network source; ``"lo"``, ``"eth0,eth1"`` or a
list: exactly those (``lo`` counts each byte sent over loopback once in rx and once in tx).

Summary (from the counters, not integrated rates): ``net_rx_bytes``, ``net_tx_bytes``,
``net_rx_packets_count``, ``net_tx_packets_count``, ``net_rx_mean_bytes_per_s`` (bytes over
the wall time), ``net_rx_peak_bytes_per_s`` (highest sample: :meth:`NetSource.peaks`, from the
monitor's statistics) and the tx twins; per interface ``net_<IF>_rx_bytes``,
``net_<IF>_tx_bytes``, ``net_<IF>_rx_peak_bytes_per_s``…
(``IF`` with characters other than letters, digits and ``_`` written as ``_``).
Labels: ``net_interfaces``.  On Linux ``/proc/net/dev`` stays open (one ``pread`` a
sample, this network namespace's interfaces); elsewhere psutil.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any

from . import procfs
from .procfs import HostSource, read_net_dev

__all__ = ["NetSource", "parse_interfaces", "default_interfaces", "metric_name"]

_KEYS = ("rx_bytes_per_s", "rx_packets_per_s", "tx_bytes_per_s", "tx_packets_per_s")


def parse_interfaces(spec) -> str | list[str]:
    """``None``/``"auto"`` -> "auto"; ``"all"``; ``"none"``/``""``/False -> "none"; ``"lo,eth0"`` -> a list."""
    if spec is None or spec == "auto":
        return "auto"
    if spec in ("none", "", False):
        return "none"
    if spec == "all":
        return "all"
    names = [s.strip() for s in spec.split(",")] if isinstance(spec, str) else [str(s).strip() for s in spec]
    names = [n for n in names if n]
    if not names:
        return "none"
    bad = [n for n in names if "/" in n or n in (".", "..") or len(n) > 64]
    if bad:
        raise ValueError(f"not a network interface name: {bad[0]!r}")
    return names


def metric_name(interface: str) -> str:
    """An interface name as it appears in metric keys: ``eth0.100`` -> ``eth0_100``."""
    return re.sub(r"[^A-Za-z0-9_]", "_", interface)


def _sys(root: str, name: str, what: str) -> str:
    return os.path.join(root, "sys/class/net", name, what)


def default_interfaces(names, root: str = "/") -> tuple[list[str], str]:
    """The interfaces ``"auto"`` watches among ``names``, and why (a phrase for the labels)."""
    cand = [n for n in names if n != "lo"]
    phys = [n for n in cand if os.path.exists(_sys(root, n, "device"))]
    if phys:
        return phys, "the physical NICs (virtual interfaces left out so no byte is counted twice)"
    virt = [n for n in cand if not os.path.exists(_sys(root, n, "bridge")) and not n.startswith("ifb")]
    return virt, "every interface but loopback, bridges and ifb"


class NetSource(HostSource):
    """Network figures of some interfaces (see the module doc)."""

    name = "net"

    def __init__(self, interfaces="auto", fast: bool = True, root: str = "/"):
        super().__init__(fast)
        self.spec = parse_interfaces(interfaces)
        self.root = root
        self.interfaces: list[str] = []
        self._f = None
        self._wanted: frozenset | None = None
        self._prev: dict[str, tuple] = {}
        self._t = None
        self._tot: dict[str, list[int]] = {}  # interface -> [rx bytes, rx packets, tx bytes, tx packets] since start
        self._keys: dict[str, tuple[str, ...]] = {}
        self._wall0 = None

    def open(self) -> None:
        if self.want_fast and sys.platform.startswith("linux"):
            try:
                f = procfs.ProcFile("/proc/net/dev")
                procfs.read_net_dev(f)
                self._f, self.fast = f, True
            except (OSError, ValueError, IndexError):
                self.fast = False
        if not self.fast:
            import psutil

            self._psutil = psutil
        try:
            names = list(self._counters())
        except Exception as exc:  # noqa: BLE001 - no /proc/net/dev, no permission
            self.na["net.rx_bytes_per_s"] = str(exc)
            self.notes.append(f"network counters are not readable here ({exc}): network figures are N/A")
            names = []
        if self.spec == "auto":
            self.interfaces, why = default_interfaces(names, self.root)
        elif self.spec == "all":
            self.interfaces, why = list(names), "every interface, loopback included"
        else:
            self.interfaces, why = list(self.spec), "chosen with --net"
            missing = [n for n in self.interfaces if n not in names]
            if missing and names:
                self.notes.append(
                    f"no network interface {', '.join(missing)} here (there are "
                    f"{', '.join(names)}): its figures stay empty until it appears"
                )
        if not self.interfaces and names and "net.rx_bytes_per_s" not in self.na:
            self.notes.append(f"no network interface to watch among {', '.join(names)} (--net IF to choose one)")
        if "lo" in self.interfaces:
            self.notes.append(
                "loopback (lo) is watched: each byte sent to this machine counts once in rx and once in tx"
            )
        self.labels = {"net_interfaces": f"{','.join(self.interfaces) or 'none'}: {why}"}
        self._wanted = frozenset(n.encode() for n in self.interfaces)
        self._wall0 = None

    def _counters(self) -> dict:
        if self.fast:
            return read_net_dev(self._f, self._wanted)
        return self._psutil.net_io_counters(pernic=True, nowrap=True) or {}

    def _fields(self, name: str) -> tuple[str, ...]:
        keys = self._keys.get(name)
        if keys is None:
            keys = self._keys[name] = tuple(f"net.{name}.{k}" for k in _KEYS)
        return keys

    def sample(self, now: float) -> dict:
        if self._f is None and self._psutil is None:
            self.open()
        out: dict[str, Any] = {}
        if "net.rx_bytes_per_s" in self.na or not self.interfaces:
            return out
        try:
            counters = self._counters()
        except Exception:  # noqa: BLE001
            return out
        prev, tprev = self._prev, self._t
        dt = (now - tprev) if tprev is not None else 0.0
        if self._wall0 is None:
            self._wall0 = now
        total = [0.0, 0.0, 0.0, 0.0]
        any_rate = False
        cur: dict[str, tuple] = {}
        for name in self.interfaces:
            c = counters.get(name)
            keys = self._fields(name)
            if c is None:
                continue
            c = (c.bytes_recv, c.packets_recv, c.bytes_sent, c.packets_sent)
            cur[name] = c
            p = prev.get(name)
            if p is None or dt <= 0:
                for k in keys:
                    out[k] = None
                continue
            any_rate = True
            tot = self._tot.get(name)
            if tot is None:
                tot = self._tot[name] = [0, 0, 0, 0]
            # a counter that went back (the interface was re-created) counts from its new value
            d = [c[0] - p[0], c[1] - p[1], c[2] - p[2], c[3] - p[3]]
            for j in (0, 1, 2, 3):
                if d[j] < 0:
                    d[j] = 0
                tot[j] += d[j]
                total[j] += d[j]
            out[keys[0]] = round(d[0] / dt, 1)
            out[keys[1]] = round(d[1] / dt, 1)
            out[keys[2]] = round(d[2] / dt, 1)
            out[keys[3]] = round(d[3] / dt, 1)
        self._prev, self._t = cur, now
        if any_rate:
            out["net.rx_bytes_per_s"] = round(total[0] / dt, 1)
            out["net.rx_packets_per_s"] = round(total[1] / dt, 1)
            out["net.tx_bytes_per_s"] = round(total[2] / dt, 1)
            out["net.tx_packets_per_s"] = round(total[3] / dt, 1)
        else:
            out["net.rx_bytes_per_s"] = out["net.tx_bytes_per_s"] = None
            out["net.rx_packets_per_s"] = out["net.tx_packets_per_s"] = None
        return out

    def totals(self) -> dict[str, tuple[int, int, int, int]]:
        """interface -> (rx bytes, rx packets, tx bytes, tx packets) since the monitor started."""
        return {k: tuple(v) for k, v in list(self._tot.items())}

    def summary(self) -> dict:
        """Totals from the counters, means over the wall time, peaks of the samples (see the module doc)."""
        out: dict[str, Any] = {}
        if not self.interfaces or "net.rx_bytes_per_s" in self.na:
            return out
        tots = self.totals()
        all4 = [sum(t[j] for t in tots.values()) for j in range(4)]
        wall = (self._t - self._wall0) if self._t is not None and self._wall0 is not None else 0.0
        out["net_rx_bytes"], out["net_tx_bytes"] = all4[0], all4[2]
        out["net_rx_packets_count"], out["net_tx_packets_count"] = all4[1], all4[3]
        if wall > 0:
            out["net_rx_mean_bytes_per_s"] = round(all4[0] / wall, 1)
            out["net_tx_mean_bytes_per_s"] = round(all4[2] / wall, 1)
        for name in self.interfaces:
            t = tots.get(name)
            if t is None:
                continue
            m = metric_name(name)
            out[f"net_{m}_rx_bytes"], out[f"net_{m}_tx_bytes"] = t[0], t[2]
        return out

    def peaks(self, stats: dict) -> dict:
        """The highest samples (``net_rx_peak_bytes_per_s``, per interface too) from the monitor's
        running statistics (field -> :class:`~nbbench.results.series.FieldStats`)."""
        out: dict[str, Any] = {}
        for name, prefix in [("", "net.")] + [(metric_name(n) + "_", f"net.{n}.") for n in self.interfaces]:
            for way in ("rx", "tx"):
                st = stats.get(f"{prefix}{way}_bytes_per_s")
                if st is not None and st.n:
                    out[f"net_{name}{way}_peak_bytes_per_s"] = st.max
        return out

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
        self._f = None
