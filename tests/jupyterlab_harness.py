"""A real JupyterLab server and a headless chromium driving it, for browser tests.

The server runs on 127.0.0.1 on a free port (``--ServerApp.port_retries=0``: no
silent move to another port) with a random token, and every piece of state a
user's machine would lend it is a fresh temporary directory: Jupyter config, data
and runtime dirs, IPython and matplotlib dirs, JupyterLab's settings and
workspaces, and ``NBBENCH_HOME``.  News and update checks are off, and so is
autosave (the settings file below), so a test never writes to a notebook.

Chromium is Debian's (``/usr/bin/chromium``) driven by Playwright from PyPI with a
fresh user-data dir; nothing is downloaded (no ``playwright install``).

The temporary state (``/tmp/nbbench-lab-state-*``) is removed when the ``with`` block
ends, also when it ends by an exception (the server log's tail is printed first, so a
failing test still shows it); without ``with``, call :meth:`JupyterLab.cleanup` in a
``finally``.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

CHROMIUM = os.environ.get("NBBENCH_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
]

# JupyterLab user settings written before the server starts
LAB_SETTINGS = {
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}


def browser_missing_reason() -> str | None:
    """Why the browser test cannot run here (None when it can)."""
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        return f"{CHROMIUM} is not installed (apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError as exc:
        return f"playwright is not importable: {exc}"
    return None


def require_browser() -> None:
    """Skip when chromium or playwright is missing — except in CI, where the browser tests must run."""
    import pytest

    reason = browser_missing_reason()
    if reason is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"the browser test must run in CI: {reason}")
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class JupyterLab:
    """``with JupyterLab(root) as lab: page.goto(lab.url("nb.ipynb"))``."""

    def __init__(
        self,
        root: str | os.PathLike,
        start_timeout: float = 90.0,
        env: dict | None = None,
        python: str = sys.executable,
        base_url: str = "/",
        extra_args: list[str] | None = None,
        labextensions: dict[str, str | os.PathLike] | None = None,
    ):
        self.root = Path(root)
        self.start_timeout = start_timeout
        self.python = python
        self.token = secrets.token_hex(24)
        self.port = free_port()
        self.state = Path(tempfile.mkdtemp(prefix="nbbench-lab-state-"))
        self.nbbench_home = self.state / "nbbench-home"
        self.log_path = self.state / "server.log"
        self.proc: subprocess.Popen | None = None
        self.extra_env = env or {}
        #: the server's base_url ("/user/someone/": as behind JupyterHub)
        self.base_url = "/" + base_url.strip("/") + "/" if base_url.strip("/") else "/"
        self.extra_args = list(extra_args or [])
        #: prebuilt lab extensions made visible to this server only (name -> its built folder)
        self.labextensions = dict(labextensions or {})

    # -------------------------------------------------------------- state
    def _env(self) -> dict:
        s = self.state
        dirs = {
            "JUPYTER_CONFIG_DIR": s / "config",
            "JUPYTER_DATA_DIR": s / "data",
            "JUPYTER_RUNTIME_DIR": s / "runtime",
            "IPYTHONDIR": s / "ipython",
            "MPLCONFIGDIR": s / "mpl",
            "JUPYTERLAB_SETTINGS_DIR": s / "lab-settings",
            "JUPYTERLAB_WORKSPACES_DIR": s / "lab-workspaces",
            "NBBENCH_HOME": self.nbbench_home,
        }
        for d in dirs.values():
            d.mkdir(parents=True, exist_ok=True)
        for rel, data in LAB_SETTINGS.items():
            f = dirs["JUPYTERLAB_SETTINGS_DIR"] / rel
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(json.dumps(data))
        env = dict(os.environ)
        env.update({k: str(v) for k, v in dirs.items()})
        env.update({"MPLBACKEND": "Agg", "JUPYTER_PLATFORM_DIRS": "1", "PYTHONUNBUFFERED": "1"})
        env.pop("JUPYTER_TOKEN", None)
        env.update(self.extra_env)
        for name, built in self.labextensions.items():
            link = dirs["JUPYTER_DATA_DIR"] / "labextensions" / name
            link.parent.mkdir(parents=True, exist_ok=True)
            if not link.exists():
                link.symlink_to(Path(built).resolve(), target_is_directory=True)
        return env

    # ------------------------------------------------------------ control
    def start(self) -> JupyterLab:
        env = self._env()
        cmd = [
            self.python,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={self.root}",
            "--ServerApp.open_browser=False",
            "--LabApp.news_url=None",
            "--LabApp.expose_app_in_browser=True",
            f"--LabApp.user_settings_dir={env['JUPYTERLAB_SETTINGS_DIR']}",
            f"--LabApp.workspaces_dir={env['JUPYTERLAB_WORKSPACES_DIR']}",
            "--ServerApp.shutdown_no_activity_timeout=600",
            "--MappingKernelManager.cull_idle_timeout=0",
            f"--ServerApp.base_url={self.base_url}",
            *self.extra_args,
        ]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-root")  # CI containers run as root
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            cmd, env=env, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )
        deadline = time.monotonic() + self.start_timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"jupyter lab exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(self.api("status"), timeout=5) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"jupyter lab did not answer within {self.start_timeout:.0f} s:\n{self.log_tail()}")
            time.sleep(0.5)
        return self

    def api(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{self.base_url}api/{path}?token={self.token}"

    def url(self, notebook: str) -> str:
        """A fresh workspace (``?reset``) showing ``notebook`` (relative to the root)."""
        return f"http://127.0.0.1:{self.port}{self.base_url}lab/tree/{notebook}?reset&token={self.token}"

    def log_tail(self, n: int = 4000) -> str:
        try:
            return self.log_path.read_bytes()[-n:].decode(errors="replace")
        except OSError:
            return ""

    def stop(self) -> None:
        """Shut the server (and its kernels) down; kill it if it does not go within 20 s."""
        p = self.proc
        if p is not None and p.poll() is None:
            try:
                req = urllib.request.Request(self.api("shutdown"), method="POST")
                urllib.request.urlopen(req, timeout=10).close()
            except (urllib.error.URLError, ConnectionError, OSError):
                p.send_signal(signal.SIGTERM)
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait(10)
        # kernels are in the server's session; make sure none is left behind
        if p is not None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if getattr(self, "_log", None):
            self._log.close()
            self._log = None

    def cleanup(self) -> None:
        """Remove the temporary state (the server is stopped first if it still runs)."""
        self.stop()
        shutil.rmtree(self.state, ignore_errors=True)

    def __enter__(self) -> JupyterLab:
        try:
            return self.start()
        except BaseException:
            print("---- jupyter server log (tail) ----\n" + self.log_tail(6000))
            self.cleanup()
            raise

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if exc_type is not None:
                print("---- jupyter server log (tail) ----\n" + self.log_tail(6000))
        finally:
            self.cleanup()


def launch_chromium(playwright, user_data_dir: str, viewport=(1280, 1400)):
    """A persistent headless chromium context on Debian's chromium with a fresh profile."""
    return playwright.chromium.launch_persistent_context(
        user_data_dir,
        executable_path=CHROMIUM,
        headless=True,
        args=CHROMIUM_ARGS,
        viewport={"width": viewport[0], "height": viewport[1]},
    )


def wait_kernel_idle(page, timeout_ms: int = 90_000) -> None:
    """Wait until the notebook's kernel is connected and idle (else 'Select Kernel' swallows a run)."""
    page.wait_for_function(
        """() => {
            const app = window.jupyterapp;
            if (!app) return false;
            const w = app.shell.currentWidget;
            if (!w || !w.sessionContext) return false;
            const sc = w.sessionContext;
            return !!(sc.session && sc.session.kernel) && sc.kernelDisplayStatus === 'idle';
        }""",
        timeout=timeout_ms,
    )


def run_all_cells(page) -> None:
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")


def wait_cells_done(page, timeout_ms: int = 120_000) -> None:
    """Wait until no cell shows [*] and the kernel is idle again."""
    page.wait_for_function(
        """() => {
            const app = window.jupyterapp;
            const w = app && app.shell.currentWidget;
            if (!w || !w.content) return false;
            const prompts = [...document.querySelectorAll('.jp-InputArea-prompt')].map(e => e.textContent);
            if (prompts.some(t => t.includes('*'))) return false;
            return w.sessionContext.kernelDisplayStatus === 'idle';
        }""",
        timeout=timeout_ms,
    )
