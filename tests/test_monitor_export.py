"""``--serve``: the monitor's latest samples at /metrics in the Prometheus text format (prometheus_client),
scraped with urllib and parsed with prometheus_client's own parser; the server stops with the monitor."""

import os
import re
import socket
import threading
import time
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from nbbench import cli, commands
from nbbench.commands import Context
from nbbench.monitor import Monitor
from nbbench.monitor.exporter import EXPOSED_WARNING, MetricsServer, parse_address
from nbbench.nvml import Nvml


def scrape(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("text/plain")
        text = r.read().decode()
    return {f.name: f for f in text_string_to_metric_families(text)}


def samples(fams, name):
    return [(s.labels, s.value) for s in fams[name].samples]


def refused(port):
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def no_server_threads():
    return not [t for t in threading.enumerate() if t.name == "nbbench-metrics" or "serve_forever" in t.name]


def test_address_forms():
    assert parse_address("9100") == ("127.0.0.1", 9100, False)
    assert parse_address(":0") == ("127.0.0.1", 0, False)
    assert parse_address("0.0.0.0:9100") == ("0.0.0.0", 9100, True)
    assert parse_address("[::1]:9100") == ("::1", 9100, False)
    assert parse_address("localhost:1") == ("localhost", 1, False)
    for bad in ("", "host:", "99999", "a b:1", "[::1]9100"):
        with pytest.raises(ValueError):
            parse_address(bad)
    assert cli.main(["monitor", "--serve", "nope", "--", "true"]) == 2


def test_metrics_are_scraped_with_conventional_names_labels_and_values():
    from test_monitor_gpu import FakeNvml

    fake = FakeNvml(n=1, unsupported={"nvmlDeviceGetSamples"})  # kernel-active 37 % from the rates call
    m = Monitor(interval=0.05, gpus="all", nvml=Nvml(fake), net="lo", procs=0.05)
    with m:
        srv = MetricsServer(m, "127.0.0.1", 0).start()
        assert srv.url == f"http://127.0.0.1:{srv.port}/metrics" and srv.port > 0 and srv.warning is None
        time.sleep(0.4)
        fams = scrape(srv.url)
        srv.stop()
    assert samples(fams, "nbbench_gpu_utilization_ratio") == [({"gpu": "0"}, 0.37)]
    assert samples(fams, "nbbench_gpu_memory_used_bytes") == [({"gpu": "0"}, 5 * 2**30)]
    assert samples(fams, "nbbench_gpu_memory_total_bytes") == [({"gpu": "0"}, 80 * 2**30)]
    assert samples(fams, "nbbench_gpu_power_watts") == [({"gpu": "0"}, 251.5)]
    assert fams["nbbench_gpu_utilization_ratio"].type == "gauge"
    ((labels, cpu),) = samples(fams, "nbbench_cpu_utilization_ratio")
    assert labels == {} and 0.0 <= cpu <= 1.0
    disk = samples(fams, "nbbench_disk_read_bytes_per_second")
    assert len(disk) == 1 and disk[0][0]["device"] == (
        m.source("disk").device.name if m.source("disk").device else "system-wide"
    )
    net = dict((lab["interface"], v) for lab, v in samples(fams, "nbbench_network_receive_bytes_per_second"))
    assert list(net) == ["lo"] and net["lo"] >= 0
    assert fams["nbbench_network_receive_bytes"].type == "counter"
    assert fams["nbbench_network_receive_bytes"].samples[0].name == "nbbench_network_receive_bytes_total"
    procs = samples(fams, "nbbench_process_read_bytes_per_second")
    me = [lab for lab, _ in procs if lab["pid"] == str(os.getpid())]
    assert me == [{"pid": str(os.getpid()), "role": "main", "worker": "", "name": me[0]["name"]}]
    assert samples(fams, "nbbench_process_resident_memory_bytes")[0][1] > 10 * 2**20
    assert samples(fams, "nbbench_monitor_samples")[0][1] >= 3
    # the server is gone: its thread joined, its port closed
    assert no_server_threads() and refused(srv.port)


def test_a_worker_process_has_its_role_and_id_in_the_labels():
    import subprocess
    import sys

    from test_monitor_procs import WORKER

    m = Monitor(interval=0.05, gpus="none", net="none", procs=0.05)
    with m, MetricsServer(m) as srv:
        kid = subprocess.Popen([sys.executable, "-c", WORKER, "600"])
        try:
            # another program's child is found by the tree scan (once a second) once it has named itself:
            # scrape until it shows, however slowly a loaded machine starts it
            deadline = time.monotonic() + 90
            while True:
                fams = scrape(srv.url)
                rows = [lab for lab, _ in samples(fams, "nbbench_process_resident_memory_bytes")]
                if any(r["pid"] == str(kid.pid) and r["role"] == "worker" for r in rows) or time.monotonic() > deadline:
                    break
                time.sleep(0.2)  # between scrapes
        finally:
            kid.kill()
            kid.wait()
    rows = [lab for lab, _ in samples(fams, "nbbench_process_resident_memory_bytes")]
    assert {"pid": str(kid.pid), "role": "worker", "worker": "0", "name": "pt_data_worker"} in rows


class ScrapingCell(Context):
    """A notebook-like context whose cell scrapes the URL the command printed."""

    def __init__(self, capsys):
        super().__init__(frontend="magic", cell="scrape()", run_cell=self._run, lasting=True)
        self.capsys = capsys
        self.fams = None
        self.url = None

    def _run(self, body):
        out = self.capsys.readouterr().out
        self.url = re.search(r"metrics for Prometheus at (\S+)", out).group(1)
        time.sleep(0.3)
        self.fams = scrape(self.url)


def test_monitor_cell_with_serve_scrapes_while_it_runs_and_stops_after(capsys):
    ctx = ScrapingCell(capsys)
    inv = commands.parse(
        ["monitor", "--serve", "0", "--gpu", "none", "--interval", "0.05", "--no-plot", "--no-save"], ctx
    )
    res = commands.execute(inv, ctx)
    assert ctx.url.startswith("http://127.0.0.1:") and "nbbench_cpu_utilization_ratio" in ctx.fams
    assert res.params["serve"] == "127.0.0.1:0"
    assert no_server_threads() and refused(int(ctx.url.rsplit(":", 1)[1].split("/")[0]))


def test_binding_beyond_loopback_warns_in_one_sentence(capsys):
    rc = cli.main(["monitor", "--serve", "0.0.0.0:0", "--no-save", "--interval", "0.05", "--gpu", "none", "--", "true"])
    out = capsys.readouterr().out
    assert rc == 0
    warning = [line for line in out.splitlines() if line.startswith("warning: serving metrics on 0.0.0.0")]
    assert len(warning) == 1 and warning[0].endswith(EXPOSED_WARNING)
    assert "metrics for Prometheus at http://0.0.0.0:" in out
    assert no_server_threads()


def test_a_port_in_use_is_a_one_line_error(capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        rc = cli.main(["monitor", "--serve", str(port), "--no-save", "--gpu", "none", "--", "true"])
    err = capsys.readouterr().err
    assert rc == 1 and f"cannot serve metrics on 127.0.0.1:{port}" in err and "Traceback" not in err
    assert no_server_threads()


def test_under_a_launcher_each_hosts_local_rank_0_serves_and_the_others_say_where(tmp_path):
    """torchrun --nproc-per-node 2 … nbbench monitor --serve PORT: both ranks of a host would bind
    one port (the second failing); local rank 0 serves the host's figures, rank 1 says so."""
    import subprocess
    import sys

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for rank in (1, 0):
        env = dict(
            os.environ,
            RANK=str(rank),
            LOCAL_RANK=str(rank),
            WORLD_SIZE="2",
            LOCAL_WORLD_SIZE="2",
            MASTER_ADDR="127.0.0.1",
            MASTER_PORT="29500",
        )
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "nbbench",
                    "monitor",
                    "--serve",
                    f"127.0.0.1:{port}",
                    "--no-save",
                    "--gpu",
                    "none",
                    "--interval",
                    "0.1",
                    "--",
                    sys.executable,
                    "-c",
                    "import time; time.sleep(6)",
                ],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    fams = None
    deadline = time.monotonic() + 30
    while (fams is None or "nbbench_cpu_utilization_ratio" not in fams) and time.monotonic() < deadline:
        try:
            fams = scrape(f"http://127.0.0.1:{port}/metrics")
        except OSError:
            pass
        time.sleep(0.2)
    outs = [p.communicate(timeout=60) for p in procs]
    (out1, err1), (out0, err0) = outs
    assert [p.returncode for p in procs] == [0, 0], (err1, err0)
    assert fams is not None and "nbbench_cpu_utilization_ratio" in fams
    assert f"metrics for Prometheus at http://127.0.0.1:{port}" in out0
    assert "rank 1 of 2 (local rank 1" in out1 and "served by its local rank 0" in out1
    assert "metrics for Prometheus" not in out1
