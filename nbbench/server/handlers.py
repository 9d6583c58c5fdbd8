"""The server extension's handlers, under ``<base_url>nbbench/``, every one behind Jupyter's authentication.

- ``GET api/metrics``   the live samples (:meth:`~nbbench.server.live.LiveSampler.snapshot`)
- ``GET api/kernels``   per local kernel: pid, notebook path, CPU %, read/write B/s, RSS of the
  kernel and its children, the monitor's verdict when it is busy
- ``GET api/history``   the store's recent results (``?limit=N``, default 20): figures and spread
- ``GET api/runs``, ``POST api/runs`` (``{"probe", "target", "size"}``), ``GET api/runs/<id>``,
  ``DELETE api/runs/<id>`` (Stop): probe runs (:mod:`nbbench.server.runs`); a POST or DELETE
  carries Jupyter's XSRF token (``ServerConnection.makeRequest`` adds it)
- ``GET report/<ids>``  one stored result's report as HTML (``report/3``), or a comparison
  (``report/3,7``), from :mod:`nbbench.exporters.html`

``APIHandler`` answers 403 to a request without a token or cookie; the JSON handlers never
print or store a credential.  Nothing here measures: the monitor and the commands do.
"""

from __future__ import annotations

import json
import math
import time

import tornado.web
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler, JupyterHandler
from jupyter_server.utils import url_path_join

from ..report import report
from ..results import ProbeError
from ..store import StoreError, default_store
from .runs import PROBES, ProbeRuns, RunError

__all__ = ["setup_handlers"]


def _clean(value):
    """JSON-safe: NaN and infinities become None (JSON has neither)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):  # numpy scalars
        return _clean(value.item())
    return value


class _Base(APIHandler):
    #: Jupyter's authorizer is asked for 'nbbench' (read; execute for starting or stopping a probe)
    auth_resource = "nbbench"

    @property
    def live(self):
        return self.settings["nbbench_live"]

    @property
    def runs(self) -> ProbeRuns:
        return self.settings["nbbench_runs"]

    def send(self, data, status: int = 200) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.set_header("Cache-Control", "no-store")
        self.finish(json.dumps(_clean(data)))

    async def watch_kernels(self) -> dict[int, dict]:
        """A client asked: the sampler runs on, and follows the server's local kernels (returned)."""
        self.live.touch()
        kernels = await self.kernel_pids()
        self.live.track_kernels({pid: k["path"] or k["id"][:8] for pid, k in kernels.items()})
        return kernels

    async def kernel_pids(self) -> dict[int, dict]:
        """pid -> {kernel id, name, notebook path, execution state} of the server's local kernels."""
        km = self.kernel_manager
        paths: dict[str, str] = {}
        try:
            for s in await self.session_manager.list_sessions():
                kid = (s.get("kernel") or {}).get("id")
                if kid:
                    paths[kid] = s.get("path") or s.get("name") or ""
        except Exception:  # noqa: BLE001 - no session manager: kernels without their notebooks
            pass
        out = {}
        for kid in km.list_kernel_ids():
            try:
                kernel = km.get_kernel(kid)
            except KeyError:
                continue
            pid = None
            prov = getattr(kernel, "provisioner", None)
            proc = getattr(prov, "process", None)
            pid = getattr(proc, "pid", None)
            if pid is None:  # older jupyter_client: the Popen on the manager
                pid = getattr(getattr(kernel, "kernel", None), "pid", None)
            if pid is None:
                continue
            out[int(pid)] = {
                "id": kid,
                "kernel_name": getattr(kernel, "kernel_name", None),
                "path": paths.get(kid, ""),
                "execution_state": getattr(kernel, "execution_state", None),
            }
        return out


class MetricsHandler(_Base):
    @tornado.web.authenticated
    @authorized
    async def get(self):
        await self.watch_kernels()
        self.send(self.live.snapshot())


class KernelsHandler(_Base):
    @tornado.web.authenticated
    @authorized
    async def get(self):
        kernels = await self.watch_kernels()
        figures = {f["pid"]: f for f in self.live.kernel_figures()}
        out = []
        for pid, k in kernels.items():
            f = figures.get(pid, {})
            out.append({**k, "pid": pid, **{key: v for key, v in f.items() if key not in ("pid", "name")}})
        self.send({"time": time.time(), "kernels": out, "pending": [k["pid"] for k in out if "cpu_pct" not in k]})


def history_rows(limit: int = 20) -> dict:
    """The store's newest ``limit`` results: id, kind, label, status, verdict, the summary line
    (the answer with its spread, as the result words it) and the numeric metrics."""

    try:
        store = default_store()
        frame = store.history(limit=limit)
    except StoreError as exc:
        return {"runs": [], "error": str(exc)}
    base = ("run_id", "kind", "label", "status", "verdict", "started", "duration_s", "env_id", "summary")
    rows = []
    for _, r in frame.iloc[::-1].iterrows():
        metrics = {k: r[k] for k in frame.columns if k not in base and r[k] == r[k]}  # r[k] == r[k]: not NaN
        rows.append(
            {
                "run_id": int(r["run_id"]),
                "kind": r["kind"],
                "label": r["label"],
                "status": r["status"],
                "verdict": r["verdict"],
                "started": r["started"].timestamp() if hasattr(r["started"], "timestamp") else None,
                "duration_s": r["duration_s"],
                "summary": r["summary"],
                "metrics": metrics,
            }
        )
    return {"runs": rows, "store": str(store.path)}


class HistoryHandler(_Base):
    @tornado.web.authenticated
    @authorized
    def get(self):
        try:
            limit = max(1, min(200, int(self.get_argument("limit", "20"))))
        except ValueError:
            raise tornado.web.HTTPError(400, "limit must be a whole number") from None
        self.send(history_rows(limit))


class RunsHandler(_Base):
    @tornado.web.authenticated
    @authorized
    def get(self):
        self.send({"probes": PROBES, "runs": self.runs.list()})

    @tornado.web.authenticated
    @authorized("execute")  # runs a probe on this machine, or stops one
    def post(self):
        try:
            body = json.loads(self.request.body or b"{}")
        except ValueError:
            return self.send({"error": "the body is not JSON"}, 400)
        try:
            run = self.runs.start(str(body.get("probe", "")), body.get("target"), body.get("size"))
        except RunError as exc:
            return self.send({"error": str(exc)}, 409 if "still running" in str(exc) else 400)
        self.send(run.to_dict(), 202)


class RunHandler(_Base):
    def _run(self, run_id: str):
        run = self.runs.get(int(run_id))
        if run is None:
            raise tornado.web.HTTPError(404, f"no run {run_id}")
        return run

    @tornado.web.authenticated
    @authorized
    def get(self, run_id: str):
        self.send(self._run(run_id).to_dict())

    @tornado.web.authenticated
    @authorized("execute")  # runs a probe on this machine, or stops one
    def delete(self, run_id: str):
        self._run(run_id)
        self.send(self.runs.stop(int(run_id)).to_dict())


class ReportHandler(JupyterHandler):
    auth_resource = "nbbench"
    """A stored result's report (or two results' comparison) as a page the sidebar opens in a tab."""

    @tornado.web.authenticated
    @authorized
    async def get(self, ids: str):
        import asyncio
        import functools

        runs = [int(i) for i in ids.split(",") if i]
        make = functools.partial(report, fmt="html", out="-", runs=runs, run_doctor=False, title=f"nbbench — run {ids}")
        try:  # off the server's event loop: the environment fingerprint and the figures take a moment
            rep = await asyncio.get_running_loop().run_in_executor(None, make)
        except (ProbeError, StoreError, KeyError) as exc:
            raise tornado.web.HTTPError(404, str(exc)) from None
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.finish(rep.text)


def setup_handlers(web_app, live, runs) -> list[str]:
    """Register the handlers under ``<base_url>nbbench/``; returns the route patterns."""
    base = url_path_join(web_app.settings["base_url"], "nbbench")
    web_app.settings["nbbench_live"] = live
    web_app.settings["nbbench_runs"] = runs
    routes = [
        (url_path_join(base, "api", "metrics"), MetricsHandler),
        (url_path_join(base, "api", "kernels"), KernelsHandler),
        (url_path_join(base, "api", "history"), HistoryHandler),
        (url_path_join(base, "api", "runs"), RunsHandler),
        (url_path_join(base, "api", "runs", r"(\d+)"), RunHandler),
        (url_path_join(base, "report", r"(\d+(?:(?:,|%2C|%2c)\d+)*)"), ReportHandler),  # the comma, or escaped
    ]
    web_app.add_handlers(".*$", routes)
    return [r for r, _ in routes]
