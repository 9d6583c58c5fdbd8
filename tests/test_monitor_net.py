"""The network source: /proc/net/dev parsing, which interfaces count, a real download over loopback
under ``nbbench monitor --net lo -- CMD``, and two monitor runs compared like the seed's mirror table."""

import functools
import http.server
import json
import os
import shutil
import socket
import sys
import threading
import time

import pytest

from nbbench import cli
from nbbench.monitor import Monitor
from nbbench.monitor.net import NetSource, default_interfaces, metric_name, parse_interfaces
from nbbench.monitor.procfs import ProcFile, read_net_dev

NET_DEV = """Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo: 116468785   63731    0    0    0     0          0         0 116468785   63731    0    0    0     0       0          0
  eth0: 270235129    8574    0    0    0     0          0         0   570419    6165    0    0    0     0       0          0
veth1a2b:1000 10 0 0 0 0 0 0 2000 20 0 0 0 0 0 0
"""


def test_proc_net_dev_is_parsed_per_interface(tmp_path):
    f = tmp_path / "dev"
    f.write_text(NET_DEV)
    got = read_net_dev(ProcFile(str(f)))
    assert list(got) == ["lo", "eth0", "veth1a2b"]
    assert got["eth0"].bytes_recv == 270235129 and got["eth0"].packets_recv == 8574
    assert got["eth0"].bytes_sent == 570419 and got["eth0"].packets_sent == 6165
    assert got["veth1a2b"] == (1000, 10, 2000, 20)  # "name:number" with no space after the colon


def _sysfs(root, physical=(), bridges=(), plain=()):
    for n in physical:
        (root / "sys/class/net" / n / "device").mkdir(parents=True)
    for n in bridges:
        (root / "sys/class/net" / n / "bridge").mkdir(parents=True)
    for n in plain:
        (root / "sys/class/net" / n).mkdir(parents=True)
    return str(root)


def test_auto_counts_each_byte_once(tmp_path):
    # a Docker host: the NIC carries what the veths and the bridge also carry
    host = _sysfs(tmp_path / "host", physical=["eth0"], bridges=["docker0"], plain=["veth9"])
    chosen, why = default_interfaces(["lo", "eth0", "docker0", "veth9"], host)
    assert chosen == ["eth0"] and "physical" in why
    # a container: eth0 is a veth and the only way out — it counts; lo and ifb mirrors never do
    box = _sysfs(tmp_path / "box", plain=["eth0", "ifb0"])
    chosen, _ = default_interfaces(["lo", "eth0", "ifb0"], box)
    assert chosen == ["eth0"]


def test_interface_option_values():
    assert parse_interfaces(None) == "auto" and parse_interfaces("auto") == "auto"
    assert parse_interfaces("none") == "none" and parse_interfaces("all") == "all"
    assert parse_interfaces("lo") == ["lo"] and parse_interfaces("eth0, lo") == ["eth0", "lo"]
    with pytest.raises(ValueError):
        parse_interfaces("../etc")
    assert metric_name("eth0.100") == "eth0_100"
    assert cli.main(["monitor", "--net", "../x", "--", "true"]) == 2  # a usage error, as argparse words it


@pytest.mark.parametrize("fast", [True, False], ids=["procfs", "psutil"])
def test_loopback_traffic_shows_in_both_directions(fast):
    src = NetSource("lo", fast=fast)
    src.open()
    assert src.fast == fast and src.interfaces == ["lo"]
    assert any("loopback" in n for n in src.notes)
    first = src.sample(time.monotonic())
    assert first["net.rx_bytes_per_s"] is None  # no rate before a second sample
    with socket.create_server(("127.0.0.1", 0)) as srv:
        c = socket.create_connection(srv.getsockname())
        s, _ = srv.accept()
        payload = b"x" * (2 << 20)
        t = threading.Thread(target=lambda: c.sendall(payload))
        t.start()
        got = 0
        while got < len(payload):
            got += len(s.recv(1 << 20))
        t.join()
        c.close()
        s.close()
    time.sleep(0.05)
    rec = src.sample(time.monotonic())
    assert rec["net.lo.rx_bytes_per_s"] > 0 and rec["net.rx_bytes_per_s"] == rec["net.lo.rx_bytes_per_s"]
    summ = src.summary()
    assert summ["net_lo_rx_bytes"] >= len(payload) and summ["net_rx_bytes"] >= len(payload)
    assert summ["net_tx_bytes"] >= len(payload)  # loopback: every byte leaves and arrives here
    src.close()


# ------------------------------------------------------------------ a real download over loopback
class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def http_dir(tmp_path):
    """A local HTTP server on 127.0.0.1 (port 0) serving tmp_path/www; yields (base URL, www dir)."""
    www = tmp_path / "www"
    www.mkdir()
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(www)))
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}", www
    finally:
        srv.shutdown()
        srv.server_close()
        t.join(5)


DOWNLOAD = (
    "import sys, urllib.request\n"
    "with urllib.request.urlopen(sys.argv[1]) as r, open(sys.argv[2], 'wb') as f:\n"
    "    n = 0\n"
    "    while True:\n"
    "        b = r.read(1 << 20)\n"
    "        if not b:\n"
    "            break\n"
    "        n += f.write(b)\n"
    "    f.flush()\n"
    "    import os; os.fsync(f.fileno())\n"
    "assert n == int(sys.argv[3]), n\n"
)


def _downloader(kind, url, dest, size):
    if kind == "curl":
        return ["curl", "-sS", "-o", str(dest), url]
    return [sys.executable, "-c", DOWNLOAD, url, str(dest), str(size)]


@pytest.mark.parametrize("kind", ["python", "curl"])
def test_download_under_monitor_net_lo_counts_the_bytes(http_dir, tmp_path, capsys, kind):
    if kind == "curl" and shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    base, www = http_dir
    size = 6 * 2**20
    (www / "image.tar").write_bytes(os.urandom(size))
    cmd = _downloader(kind, f"{base}/image.tar", tmp_path / "got.tar", size)
    rc = cli.main(
        [
            "monitor",
            "--net",
            "lo",
            "--json",
            "--no-save",
            "--interval",
            "0.1",
            "--gpu",
            "none",
            "--path",
            str(tmp_path),
            "--",
            *cmd,
        ]
    )
    data = json.loads(capsys.readouterr().out)
    assert rc == 0, data
    m = data["metrics"]
    assert (tmp_path / "got.tar").stat().st_size == size
    assert m["net_rx_bytes"] >= size and m["net_lo_rx_bytes"] >= size
    assert m["net_tx_bytes"] >= size  # loopback counts each byte in rx and tx
    assert m["net_rx_peak_bytes_per_s"] > 0 and m["net_rx_mean_bytes_per_s"] > 0
    assert m["net_rx_mean_bytes_per_s"] == pytest.approx(m["net_rx_bytes"] / m["wall_s"], rel=0.1)
    assert data["labels"]["net_interfaces"].startswith("lo:")
    assert data["params"]["net"] == ["lo"]
    tl = data["samples"]["timeline"]
    assert max(v for v in tl["net.lo.rx_bytes_per_s"] if v is not None) == m["net_rx_peak_bytes_per_s"]


def test_two_mirrors_compare_like_the_seed_table(http_dir, tmp_path, capsys):
    """``nbbench monitor --label mirror-a -- DOWNLOAD`` twice, then ``nbbench compare mirror-a mirror-b``:
    the rows of the seed's mirror table are there — mean and peak download MB/s, total time, disk writes."""
    base, www = http_dir
    sizes = {"mirror-a": 4 * 2**20, "mirror-b": 8 * 2**20}
    for label, size in sizes.items():
        (www / f"{label}.tar").write_bytes(os.urandom(size))
        cmd = _downloader("python", f"{base}/{label}.tar", tmp_path / f"{label}.tar", size)
        assert (
            cli.main(
                [
                    "monitor",
                    "-q",
                    "--label",
                    label,
                    "--net",
                    "lo",
                    "--interval",
                    "0.1",
                    "--gpu",
                    "none",
                    "--path",
                    str(tmp_path),
                    "--",
                    *cmd,
                ]
            )
            == 0
        )
    capsys.readouterr()
    assert cli.main(["compare", "mirror-a", "mirror-b", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    group = data["groups"][0]
    assert group["kind"] == "monitor"
    rows = {(r["metric"], r["ref"]): r for r in group["rows"]}
    for metric in ("net_rx_mean_bytes_per_s", "net_rx_peak_bytes_per_s", "wall_s", "disk_write_bytes"):
        assert (metric, "mirror-a") in rows and (metric, "mirror-b") in rows, metric
    assert rows[("net_rx_bytes", "mirror-b")]["value"] > rows[("net_rx_bytes", "mirror-a")]["value"]
    # a monitor observes a workload: its figures have no better/worse direction (no arrows, no
    # green or red), the deltas are still shown — the reader knows which mirror they want
    assert rows[("net_rx_mean_bytes_per_s", "mirror-b")]["better"] is None
    assert rows[("wall_s", "mirror-b")]["better"] is None
    assert rows[("net_rx_mean_bytes_per_s", "mirror-b")]["delta_pct"] is not None
    assert cli.main(["compare", "mirror-a", "mirror-b"]) == 0
    text = capsys.readouterr().out
    for row in ("net rx mean", "net rx peak", "wall", "disk write"):
        assert row in text, row
    assert "↑" not in text and "↓" not in text


def test_net_none_leaves_the_source_out_and_monitor_plot_has_a_network_panel():
    from nbbench.plots.monitor import monitor_plot_kwargs

    m = Monitor(interval=0.05, gpus="none", net="lo").open()
    titles = [p.title for p in monitor_plot_kwargs(m)["subplots"]]
    assert titles[-1] == "Network (lo)"
    m.stop()
    m = Monitor(interval=0.05, gpus="none", net="none").open()
    assert not any(t.startswith("Network") for t in (p.title for p in monitor_plot_kwargs(m)["subplots"]))
    m.stop()
