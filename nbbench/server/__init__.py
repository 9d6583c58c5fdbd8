"""nbbench's Jupyter server extension: live samples, per-kernel figures, history and probe runs as JSON.

Enabled by ``jupyter-config/jupyter_server_config.d/nbbench.json`` (installed with the wheel
into ``etc/jupyter/jupyter_server_config.d/``), or by hand with
``--ServerApp.jpserver_extensions='{"nbbench.server": True}'``.  The routes live under
``<base_url>nbbench/`` (:mod:`nbbench.server.handlers`) on the server's own port, behind its
token or cookie; the sidebar and status bar of the JupyterLab extension (``labextension/``,
built into ``share/jupyter/labextensions/nbbench/``) read them.

One :class:`~nbbench.server.live.LiveSampler` serves every client (1 Hz, stopped after
30 s without a request); one :class:`~nbbench.server.runs.ProbeRuns` runs the sidebar's probes.

Layer: front end.  Nothing imports it; it imports the commands, the monitor and the store.
"""

from __future__ import annotations

__all__ = ["_jupyter_server_extension_points", "_load_jupyter_server_extension"]


def _jupyter_server_extension_points():
    return [{"module": "nbbench.server"}]


def _load_jupyter_server_extension(server_app):
    """Called by jupyter_server when the extension loads: one sampler and one runner for the server."""
    # tornado and the sampler: only when jupyter_server loads the extension
    from .handlers import setup_handlers
    from .live import LiveSampler
    from .runs import ProbeRuns

    cfg = server_app.config.get("NbbenchServer", {}) if hasattr(server_app, "config") else {}
    root = getattr(server_app, "root_dir", None) or None
    live = LiveSampler(
        interval=float(cfg.get("interval", 1.0)),
        idle_s=float(cfg.get("idle_s", 30.0)),
        path=root,
        gpus=cfg.get("gpus", "all"),
    )
    runs = ProbeRuns(root=root)
    routes = setup_handlers(server_app.web_app, live, runs)
    # a function-style extension gets no stop hook from jupyter_server: at the server process's exit,
    # a probe still running (its own process group) is interrupted as Stop would, and the sampler stopped
    import atexit

    atexit.register(runs.stop_all)
    atexit.register(live.stop)
    server_app.log.info("nbbench: %d routes under %s", len(routes), routes[0].rsplit("/api/", 1)[0] + "/")


# jupyter_server < 2 looked for this name
load_jupyter_server_extension = _load_jupyter_server_extension
