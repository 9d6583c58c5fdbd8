"""`make lab`'s banner (tools/lab.sh, in its dry-run mode): the link with its token, the
notebook to open, the SSH tunnel, how to stop — printed before JupyterLab starts."""

import os
import socket
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tools" / "lab.sh"


def run_lab(extra_env, *args):
    env = {**os.environ, "NBBENCH_LAB_DRY_RUN": "1", **extra_env}
    out = subprocess.run(
        ["bash", str(SCRIPT), ".venv/bin/jupyter", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_banner_comes_first_with_the_link_the_notebook_the_tunnel_and_the_stop():
    port = _free_port()
    out = run_lab({"NBBENCH_LAB_TOKEN": "t0k3n", "NBBENCH_LAB_PORT": str(port)}, "--allow-root")
    lines = out.splitlines()
    run = next(i for i, ln in enumerate(lines) if ln.startswith("would run:"))
    banner = "\n".join(lines[:run])  # all of it before JupyterLab would start
    assert f"http://127.0.0.1:{port}/lab/tree/01-quickstart.ipynb?token=t0k3n" in banner
    assert "01-quickstart.ipynb, then 02" in banner
    last = sorted(p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))[-1][:2]
    assert f"then 02 … {last} in order" in banner  # every tutorial, 08 today
    assert f"ssh -L {port}:127.0.0.1:{port} HOST" in banner
    assert "Ctrl-C twice" in banner and f"lab stop {port}" in banner
    cmd = lines[run]
    # the server is started as the banner says: that port only, loopback, the notebook folder
    assert f"--ServerApp.port={port}" in cmd and "--ServerApp.port_retries=0" in cmd
    assert "--ServerApp.ip=127.0.0.1" in cmd and "--notebook-dir=notebooks" in cmd and cmd.endswith("--allow-root")
    assert "t0k3n" not in cmd  # the token goes in the environment, not on the command line


def test_a_taken_port_moves_the_banner_to_the_next_free_one():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        taken = s.getsockname()[1]
        out = run_lab({"NBBENCH_LAB_TOKEN": "x", "NBBENCH_LAB_PORT": str(taken)})
    assert f"127.0.0.1:{taken}/" not in out and f"port {taken} is taken" in out
    moved = int(out.split("http://127.0.0.1:")[1].split("/")[0])
    assert moved > taken and f"--ServerApp.port={moved}" in out


def test_a_new_token_each_time_unless_given():
    a = run_lab({"NBBENCH_LAB_PORT": str(_free_port())})
    b = run_lab({"NBBENCH_LAB_PORT": str(_free_port())})
    tok = [x.split("token=")[1].split()[0] for x in (a, b)]
    assert tok[0] != tok[1] and all(len(t) >= 32 for t in tok)
