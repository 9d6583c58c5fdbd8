"""``/metrics``: a running monitor's latest samples for Prometheus (``--serve HOST:PORT``).

:class:`MetricsServer` serves a :class:`~nbbench.monitor.Monitor` with
``prometheus_client`` (imported only here, when a server starts): a custom collector
(:class:`MonitorCollector`) turns the monitor's newest record and its per-process table
into ``GaugeMetricFamily`` / ``CounterMetricFamily`` objects at each scrape, in a
registry of its own, served by ``prometheus_client.start_http_server`` on a server that
:meth:`MetricsServer.stop` shuts down and closes (the monitor's owner stops it with the
monitor).  Names follow Prometheus conventions: base units in the name, ratios 0..1,
``_total`` counters::

    nbbench_gpu_utilization_ratio{gpu="0"}            NVML kernel-active share, 0..1
    nbbench_gpu_memory_used_bytes{gpu="0"}
    nbbench_cpu_utilization_ratio                       whole machine, 0..1
    nbbench_disk_read_bytes_per_second{device="nvme0n1"}
    nbbench_network_receive_bytes_per_second{interface="eth0"}
    nbbench_network_receive_bytes_total{interface="eth0"}   since the monitor started
    nbbench_process_read_bytes_per_second{pid="…",role="worker",worker="2",name="pt_data_worker"}
    nbbench_cgroup_cpu_throttled_ratio                  throttled by the CPU quota, per second (cpu.stat)
    nbbench_pressure_io_waiting_ratio{scope="system"}   PSI io some, the cgroup's or the system's

It binds 127.0.0.1 unless a host is given; any other address gets :data:`EXPOSED_WARNING`.
Port 0 picks a free port (:attr:`MetricsServer.url` says which).  One small object, so
a later per-host server (ranks) can reuse it.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from .stalls import PROMETHEUS

__all__ = ["MetricsServer", "MonitorCollector", "parse_address", "EXPOSED_WARNING", "families"]

EXPOSED_WARNING = "anyone who can reach that address can read these metrics"

# record field -> (metric name without the prefix, scale, help)
_GPU = {
    "util_pct": (
        "gpu_utilization_ratio",
        0.01,
        "NVML kernel-active share: time one or more kernels ran (not SM busy), 0..1",
    ),
    "mem_util_pct": ("gpu_memory_controller_utilization_ratio", 0.01, "memory-controller busy share, 0..1"),
    "mem_used_bytes": ("gpu_memory_used_bytes", 1, "device memory in use"),
    "power_w": ("gpu_power_watts", 1, "power draw"),
    "temp_c": ("gpu_temperature_celsius", 1, "GPU temperature"),
    "sm_clock_mhz": ("gpu_sm_clock_hertz", 1e6, "SM clock"),
    "pcie_rx_bytes_per_s": ("gpu_pcie_receive_bytes_per_second", 1, "PCIe receive throughput (NVML, ~20 ms)"),
    "pcie_tx_bytes_per_s": ("gpu_pcie_transmit_bytes_per_second", 1, "PCIe transmit throughput (NVML, ~20 ms)"),
    "sm_active_pct": ("gpu_sm_active_ratio", 0.01, "GPM share of SMs busy, 0..1"),
    "sm_occupancy_pct": ("gpu_sm_occupancy_ratio", 0.01, "GPM active warps versus the maximum, 0..1"),
}
_HOST = {
    "cpu.util_pct": ("cpu_utilization_ratio", 0.01, "whole-machine CPU busy share (in a container: the host's), 0..1"),
    "cpu.iowait_pct": ("cpu_iowait_ratio", 0.01, "whole-machine CPU iowait share, 0..1"),
    "mem.used_bytes": ("memory_used_bytes", 1, "whole-machine memory in use (total - available)"),
    "mem.available_bytes": ("memory_available_bytes", 1, "whole-machine memory available"),
    "sys.read_bytes_per_s": ("system_disk_read_bytes_per_second", 1, "all physical disks together"),
    "sys.write_bytes_per_s": ("system_disk_write_bytes_per_second", 1, "all physical disks together"),
    "proc.cpu_pct": (
        "process_tree_cpu_utilization_ratio",
        0.01,
        "the monitored process and its children, in cores (1 = one core busy)",
    ),
    "proc.read_bytes_per_s": ("process_tree_read_bytes_per_second", 1, "the monitored process tree, read from storage"),
    "proc.read_syscall_bytes_per_s": (
        "process_tree_read_syscall_bytes_per_second",
        1,
        "the monitored process tree, read() calls (page-cache hits included)",
    ),
    "proc.write_bytes_per_s": (
        "process_tree_write_bytes_per_second",
        1,
        "the monitored process tree, written to storage (pages dirtied)",
    ),
    "proc.write_syscall_bytes_per_s": (
        "process_tree_write_syscall_bytes_per_second",
        1,
        "the monitored process tree, write() calls (into the page cache or not)",
    ),
    "proc.rss_bytes": ("process_tree_resident_memory_bytes", 1, "RSS of the monitored process tree"),
}
_DISK = {
    "disk.read_bytes_per_s": ("disk_read_bytes_per_second", 1, "the block device behind the watched path"),
    "disk.write_bytes_per_s": ("disk_write_bytes_per_second", 1, "the block device behind the watched path"),
    "disk.read_iops": ("disk_reads_per_second", 1, "completed reads per second"),
    "disk.write_iops": ("disk_writes_per_second", 1, "completed writes per second"),
    "disk.busy_pct": ("disk_busy_ratio", 0.01, "share of time the device had I/O in flight, 0..1"),
}
_NET = {
    "rx_bytes_per_s": ("network_receive_bytes_per_second", "bytes received per second"),
    "tx_bytes_per_s": ("network_transmit_bytes_per_second", "bytes sent per second"),
    "rx_packets_per_s": ("network_receive_packets_per_second", "packets received per second"),
    "tx_packets_per_s": ("network_transmit_packets_per_second", "packets sent per second"),
}
_PROC = (
    ("read_bytes_per_s", "process_read_bytes_per_second", 1, "read from storage (/proc/PID/io read_bytes)"),
    (
        "read_syscall_bytes_per_s",
        "process_read_syscall_bytes_per_second",
        1,
        "returned by read() calls, page-cache hits included (rchar)",
    ),
    (
        "write_bytes_per_s",
        "process_write_bytes_per_second",
        1,
        "written to storage (/proc/PID/io write_bytes: pages dirtied)",
    ),
    ("write_syscall_bytes_per_s", "process_write_syscall_bytes_per_second", 1, "taken by write() calls (wchar)"),
    ("cpu_pct", "process_cpu_utilization_ratio", 0.01, "CPU in cores (1 = one core busy)"),
    ("rss_bytes", "process_resident_memory_bytes", 1, "RSS"),
    ("pss_bytes", "process_proportional_memory_bytes", 1, "PSS: shared pages divided among their users"),
    ("gpu_mem_bytes", "process_gpu_memory_used_bytes", 1, "GPU memory of this process (NVML)"),
    ("gpu_util_pct", "process_gpu_utilization_ratio", 0.01, "share of time a kernel of this process ran (NVML)"),
)
_PREFIX = "nbbench_"


def parse_address(text: str | int) -> tuple[str, int, bool]:
    """``"9100"``, ``":9100"``, ``"0"``, ``"127.0.0.1:9100"``, ``"0.0.0.0:9100"``, ``"[::]:9100"`` ->
    ``(host, port, exposed)``; ``exposed``: the host is not a loopback address.  ValueError with a sentence."""
    s = str(text).strip()
    host, port = "127.0.0.1", s
    if s.startswith("["):
        end = s.find("]")
        if end < 0 or s[end + 1 : end + 2] != ":":
            raise ValueError(f"not HOST:PORT: {text!r} (an IPv6 host goes in brackets: [::1]:9100)")
        host, port = s[1:end], s[end + 2 :]
    elif ":" in s:
        host, _, port = s.rpartition(":")
        host = host or "127.0.0.1"
    try:
        p = int(port)
    except ValueError:
        raise ValueError(f"not a port number in {text!r} (use PORT or HOST:PORT, e.g. 9100 or 0.0.0.0:9100)") from None
    if not 0 <= p <= 65535:
        raise ValueError(f"port {p} is out of range (0..65535; 0 picks a free one)")
    if not host or any(c.isspace() for c in host):
        raise ValueError(f"not a host in {text!r}")
    try:
        exposed = not ipaddress.ip_address(host).is_loopback
    except ValueError:
        exposed = host != "localhost"
    return host, p, exposed


def _fam(out: dict, name: str, doc: str, labels=(), counter: bool = False):
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    f = out.get(name)
    if f is None:
        cls = CounterMetricFamily if counter else GaugeMetricFamily
        f = out[name] = cls(_PREFIX + name, doc, labels=list(labels))
    return f


def families(monitor) -> list:
    """The metric families of ``monitor``'s newest record, table and counters (what a scrape returns)."""
    out: dict[str, Any] = {}
    rec = monitor.latest() or {}
    disk = monitor.source("disk") if hasattr(monitor, "source") else None
    device = getattr(getattr(disk, "device", None), "name", None) or "system-wide"
    stall = monitor.source("stall") if hasattr(monitor, "source") else None
    scope = [(getattr(stall, "labels", None) or {}).get("psi_scope", "none")]
    for k, v in rec.items():
        if v is None or v.__class__ not in (float, int):
            continue
        if k in PROMETHEUS:  # the container's stall figures (PSI with its scope: cgroup or system)
            name, scale, doc = PROMETHEUS[k]
            psi = k.startswith("stall.psi_")
            _fam(out, name, doc, ["scope"] if psi else ()).add_metric(scope if psi else [], v * scale)
        elif k in _HOST:
            name, scale, doc = _HOST[k]
            _fam(out, name, doc).add_metric([], v * scale)
        elif k in _DISK:
            name, scale, doc = _DISK[k]
            _fam(out, name, doc, ["device"]).add_metric([device], v * scale)
        elif k.startswith("gpu") and "." in k:
            idx, _, field = k[3:].partition(".")
            spec = _GPU.get(field)
            if spec is not None and idx.isdigit():
                _fam(out, spec[0], spec[2], ["gpu"]).add_metric([idx], v * spec[1])
        elif k.startswith("net.") and k.count(".") >= 2:
            iface, _, field = k[4:].rpartition(".")
            spec = _NET.get(field)
            if spec is not None:
                _fam(out, spec[0], spec[1], ["interface"]).add_metric([iface], v)
    net = monitor.source("net") if hasattr(monitor, "source") else None
    if net is not None:
        for iface, t in net.totals().items():
            _fam(
                out, "network_receive_bytes", "bytes received since the monitor started", ["interface"], counter=True
            ).add_metric([iface], t[0])
            _fam(
                out, "network_transmit_bytes", "bytes sent since the monitor started", ["interface"], counter=True
            ).add_metric([iface], t[2])
    gpu = monitor.source("gpu") if hasattr(monitor, "source") else None
    for d in getattr(gpu, "info", None) or []:
        if d.get("mem_total_bytes"):
            _fam(out, "gpu_memory_total_bytes", "device memory", ["gpu"]).add_metric(
                [str(d["index"])], d["mem_total_bytes"]
            )
    procs = monitor.source("proc") if hasattr(monitor, "source") else None
    table = getattr(procs, "table", None)
    if table is not None:
        for row in table.current():
            lv = [str(row["pid"]), row["kind"], "" if row["worker"] is None else str(row["worker"]), row["name"]]
            for key, name, scale, doc in _PROC:
                v = row.get(key)
                if v is not None:
                    _fam(out, name, doc, ["pid", "role", "worker", "name"]).add_metric(lv, v * scale)
    _fam(out, "monitor_samples", "samples taken since the monitor started", counter=True).add_metric(
        [], monitor.n_samples
    )
    _fam(out, "monitor_interval_seconds", "seconds between samples").add_metric([], monitor.interval)
    return list(out.values())


class MonitorCollector:
    """A ``prometheus_client`` collector of one monitor (see :func:`families`)."""

    def __init__(self, monitor):
        self.monitor = monitor

    def collect(self):
        yield from families(self.monitor)


class MetricsServer:
    """Serve ``monitor`` at ``http://HOST:PORT/metrics`` until :meth:`stop`.

    ``MetricsServer(monitor, "127.0.0.1", 0).start()`` binds (port 0: a free one; see
    :attr:`url`); :attr:`warning` is the sentence to show when ``host`` is not loopback.
    """

    def __init__(self, monitor, host: str = "127.0.0.1", port: int = 0):
        self.monitor = monitor
        self.host = host
        self.port = int(port)
        self._httpd = None
        self._thread = None
        try:
            exposed = not ipaddress.ip_address(host).is_loopback
        except ValueError:
            exposed = host != "localhost"
        self.warning = (
            (f"serving metrics on {host}:{self.port if self.port else '(a free port)'}: {EXPOSED_WARNING}")
            if exposed
            else None
        )

    @classmethod
    def from_text(cls, monitor, text: str | int) -> MetricsServer:
        """A server for ``--serve`` text (:func:`parse_address`)."""
        host, port, _ = parse_address(text)
        return cls(monitor, host, port)

    def start(self) -> MetricsServer:
        from prometheus_client import CollectorRegistry, start_http_server

        if self._httpd is not None:
            return self
        registry = CollectorRegistry(auto_describe=False)
        registry.register(MonitorCollector(self.monitor))
        try:
            self._httpd, self._thread = start_http_server(self.port, addr=self.host, registry=registry)
        except OSError as exc:
            raise OSError(
                exc.errno, f"cannot serve metrics on {self.host}:{self.port}: {exc.strerror or exc}"
            ) from None
        self._thread.name = "nbbench-metrics"
        self.port = self._httpd.server_address[1]
        return self

    @property
    def running(self) -> bool:
        return self._httpd is not None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    def stop(self) -> None:
        """Shut the server down, close its socket and join its thread (idempotent)."""
        httpd, thread = self._httpd, self._thread
        self._httpd = self._thread = None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        if thread is not None:
            thread.join(timeout=5.0)

    def __enter__(self) -> MetricsServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<MetricsServer {self.url if self.running else 'stopped'}>"
