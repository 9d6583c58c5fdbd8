"""Local ranks open no network port: every socket that any process of a ``--ranks 2`` run listens
on, sampled every 0.1 s from the launch to the end, is on a loopback address (and the run made
its listeners at all: gloo's pair sockets, which must be on 127.0.0.1)."""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import threading

import psutil
import pytest
from rankproc import PY, clean_env

TIMEOUT = 240


def _tree(pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _listeners(procs) -> set[tuple[int, str, int]]:
    """(pid, address, port) of every TCP/UDP socket these processes listen on (or have bound, for UDP)."""
    out = set()
    for p in procs:
        try:
            conns = p.net_connections(kind="inet")
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
        for c in conns:
            if c.status == psutil.CONN_LISTEN or (c.type == 2 and not c.raddr and c.laddr):  # 2: SOCK_DGRAM
                out.add((p.pid, c.laddr.ip, c.laddr.port))
    return out


def _sampled_run(*args) -> tuple[subprocess.CompletedProcess, set, int]:
    """Run ``nbbench ARGS`` and sample its process tree's listeners every 0.1 s while it runs."""
    proc = subprocess.Popen(
        [PY, "-m", "nbbench", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env(),
        stdin=subprocess.DEVNULL,
    )
    seen: set = set()
    samples = [0]
    done = threading.Event()

    def sample():
        while not done.is_set():
            seen.update(_listeners(_tree(proc.pid)))
            samples[0] += 1
            done.wait(0.1)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        done.set()
        t.join(5)
        if proc.poll() is None:
            proc.kill()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), seen, samples[0]


def _not_loopback(seen) -> list:
    return sorted(s for s in seen if not ipaddress.ip_address(s[1].split("%")[0]).is_loopback)


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv",
    [
        ("dd", "--size", "16M"),
        ("randread", "--size", "16M", "--runtime", "1", "--ramp", "0"),
        ("checkpoint", "--size", "16M"),
    ],
    ids=lambda a: a[0],
)
def test_local_ranks_listen_on_loopback_only(tmp_path, argv):
    if not psutil.LINUX:
        pytest.skip("per-process sockets are read from /proc here (Linux)")
    out, seen, samples = _sampled_run(argv[0], tmp_path, *argv[1:], "--ranks", "2", "--json", "--no-save")
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout)["labels"]["ranks"] == 2
    assert samples >= 10, f"only {samples} samples: the run ended before it could be watched"
    assert _not_loopback(seen) == [], f"listeners on non-loopback addresses: {_not_loopback(seen)}"
    assert seen, "no listener seen at all: gloo's pair sockets should have been (on 127.0.0.1)"
    assert [n for n in os.listdir(tmp_path) if n.startswith(".nbbench-")] == []


def test_local_rank_environment_binds_sockets_to_loopback(monkeypatch):
    from nbbench.ranks.spawn import loopback_interface, rank_environ, socket_env

    lo = loopback_interface()
    if lo is None:
        pytest.skip("no loopback interface found")
    extra, warnings = socket_env({}, "nccl")
    assert extra == {"GLOO_SOCKET_IFNAME": lo, "NCCL_SOCKET_IFNAME": lo} and warnings == []
    extra, warnings = socket_env({"GLOO_SOCKET_IFNAME": "eth9"}, "gloo")
    assert "GLOO_SOCKET_IFNAME" not in extra and warnings[0].startswith("GLOO_SOCKET_IFNAME=eth9")
    env = rank_environ(
        {"MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500", "TORCHELASTIC_RUN_ID": "x", "KEEP": "1"},
        1,
        2,
        "/tmp/d",
        "tok",
        extra,
    )
    assert "MASTER_ADDR" not in env and "MASTER_PORT" not in env and "TORCHELASTIC_RUN_ID" not in env
    assert (env["RANK"], env["WORLD_SIZE"], env["LOCAL_RANK"], env["LOCAL_WORLD_SIZE"]) == ("1", "2", "1", "2")
    assert env["NBBENCH_LAUNCH_STORE"] == "file:/tmp/d" and env["KEEP"] == "1" and env["OMP_NUM_THREADS"] == "1"

    from nbbench.ranks.rankenv import detect

    r = detect(env, modules={})
    assert (r.rank, r.world_size, r.source, r.store, r.init_method) == (1, 2, "nbbench", "/tmp/d", "file:///tmp/d/pg")
