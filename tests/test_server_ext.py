"""The server extension's handlers in a real jupyter_server (pytest-jupyter's fixtures).

pytest-jupyter's default ``base_url`` is ``/a%40b/`` (not the root), so every request here
already goes through a non-root base_url; one test also runs under ``/user/someone/``.
"""

from __future__ import annotations

import asyncio
import functools
import json
import time

import pytest
import tornado.httpclient

# pytest-jupyter's fixtures (jp_fetch, jp_serverapp, jp_base_url, …) imported into this module only.  Not
# `pytest_plugins = ["pytest_jupyter.jupyter_server"]`: that registers the plugin for the whole session, and its
# autouse fixtures (a new event loop and a ServerApp clean-up around every test) and its hooks (it calls every
# test function itself) would reach the rest of the suite.  So its coroutine tests run through _run below.
from pytest_jupyter.jupyter_server import *  # noqa: E402, F403


def _run(test):
    """Run an ``async def`` test on the event loop pytest-jupyter's autouse ``jp_asyncio_loop`` set."""

    @functools.wraps(test)
    def wrapper(*args, **kwargs):
        return asyncio.get_event_loop().run_until_complete(test(*args, **kwargs))

    return wrapper


@pytest.fixture
def jp_server_config(tmp_path):
    return {
        "ServerApp": {"jpserver_extensions": {"nbbench.server": True}},
        "NbbenchServer": {"idle_s": 1.5, "interval": 0.25, "gpus": "all"},
    }


async def _json(jp_fetch, *parts, **kw):
    r = await jp_fetch("nbbench", *parts, **kw)
    assert r.code in (200, 202), r.code
    assert r.headers["Content-Type"].startswith("application/json")
    return json.loads(r.body)


async def _status_without_token(jp_fetch, *parts, method="GET", body=None):
    with pytest.raises(tornado.httpclient.HTTPClientError) as err:
        await jp_fetch("nbbench", *parts, method=method, body=body, headers={"Authorization": ""})
    return err.value.code


@pytest.mark.parametrize("path", [("api", "metrics"), ("api", "kernels"), ("api", "history"), ("api", "runs")])
@_run
async def test_every_route_refuses_a_request_without_a_token(jp_fetch, path):
    assert await _status_without_token(jp_fetch, *path) == 403


@_run
async def test_a_post_without_token_or_xsrf_is_refused(jp_fetch):
    code = await _status_without_token(jp_fetch, "api", "runs", method="POST", body=json.dumps({"probe": "doctor"}))
    assert code == 403


@_run
async def test_metrics_shape_and_figures_that_move(jp_fetch):
    first = await _json(jp_fetch, "api", "metrics")
    for key in ("cpu", "memory", "disk", "disks", "net", "gpus", "verdict", "history", "sampler"):
        assert key in first, key
    assert first["sampler"]["running"] is True
    assert first["cpu"]["logical"] >= 1 and first["cpu"]["usable"] > 0
    await asyncio.sleep(1.0)
    later = await _json(jp_fetch, "api", "metrics")
    assert later["samples"] > first["samples"]  # the one sampler kept sampling between the requests
    assert 0 <= later["cpu"]["util_pct"] <= 100
    assert later["memory"]["used_bytes"] > 0 and later["memory"]["cached_bytes"] is not None
    assert len(later["history"]["t"]) == len(later["history"]["cpu_pct"]) == later["samples"]
    if later["gpus"]:
        assert all("util_pct" in g and "mem_used_bytes" in g for g in later["gpus"])
    else:  # no GPU here: said, with the reason
        assert later["gpu_note"].startswith("no GPU visible")
    assert isinstance(later["verdict"]["line"], str) and later["verdict"]["machine"]


@_run
async def test_the_sampler_is_shared_and_stops_when_no_client_asks(jp_fetch, jp_serverapp):
    live = jp_serverapp.web_app.settings["nbbench_live"]
    await _json(jp_fetch, "api", "metrics")
    await _json(jp_fetch, "api", "metrics")
    assert live.running and live.starts == 1  # one monitor for both requests
    deadline = time.monotonic() + 10
    while live.running and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    assert not live.running and live.stops == 1  # idle_s 1.5 passed without a request
    await _json(jp_fetch, "api", "metrics")
    assert live.running and live.starts == 2  # the next client starts a fresh one


@_run
async def test_kernels_lists_a_running_kernel_with_its_figures(jp_fetch):
    r = await jp_fetch("api", "kernels", method="POST", body=json.dumps({"name": "python3"}))
    kid = json.loads(r.body)["id"]
    try:
        data = await _json(jp_fetch, "api", "kernels")
        mine = [k for k in data["kernels"] if k["id"] == kid]
        assert len(mine) == 1 and mine[0]["pid"] > 0
        deadline = time.monotonic() + 15
        while "cpu_pct" not in mine[0] and time.monotonic() < deadline:
            await asyncio.sleep(0.5)
            data = await _json(jp_fetch, "api", "kernels")
            mine = [k for k in data["kernels"] if k["id"] == kid]
        k = mine[0]
        assert k["rss_bytes"] > 1e6  # a Python kernel holds megabytes
        assert k["cpu_pct"] is None or k["cpu_pct"] >= 0
        assert k["verdict"]
    finally:
        await jp_fetch("api", "kernels", kid, method="DELETE")


@_run
async def test_history_lists_stored_results_with_their_summary(jp_fetch):
    from nbbench.results import Result
    from nbbench.store import default_store

    empty = await _json(jp_fetch, "api", "history")
    assert empty["runs"] == []
    res = Result(kind="dd", status="ok", metrics={"read_bytes_per_s": 1.5e9, "write_bytes_per_s": 9e8})
    rid = default_store().save(res)
    data = await _json(jp_fetch, "api", "history")
    assert [r["run_id"] for r in data["runs"]] == [rid]
    assert data["runs"][0]["metrics"]["read_bytes_per_s"] == 1.5e9
    page = await jp_fetch("nbbench", "report", str(rid))
    assert page.code == 200 and b"<html" in page.body
    with pytest.raises(tornado.httpclient.HTTPClientError) as err:  # no token: no page (a redirect to the login)
        await jp_fetch("nbbench", "report", str(rid), headers={"Authorization": ""}, follow_redirects=False)
    assert err.value.code in (302, 403)
    with pytest.raises(tornado.httpclient.HTTPClientError) as err:
        await jp_fetch("nbbench", "report", str(rid + 100))
    assert err.value.code == 404
    # two picked in the sidebar: one page with both and their comparison
    other = default_store().save(Result(kind="dd", status="ok", metrics={"read_bytes_per_s": 1.2e9}))
    page = await jp_fetch("nbbench", "report", f"{rid},{other}")
    text = page.body.decode()
    assert page.code == 200 and "2 results" in text and "compar" in text.lower()


@_run
async def test_a_run_with_a_bad_path_is_one_error_line(jp_fetch):
    with pytest.raises(tornado.httpclient.HTTPClientError) as err:
        await jp_fetch("nbbench", "api", "runs", method="POST", body=json.dumps({"probe": "dd", "target": "/no/such"}))
    assert err.value.code == 400
    msg = json.loads(err.value.response.body)["error"]
    assert "/no/such" in msg and "\n" not in msg


@_run
async def test_a_dd_run_lands_in_the_store_and_can_be_stopped(jp_fetch, tmp_path):
    body = json.dumps({"probe": "dd", "target": str(tmp_path), "size": "4M"})
    run = await _json(jp_fetch, "api", "runs", method="POST", body=body)
    assert run["state"] == "running" and run["argv"][:2] == ["nbbench", "dd"]
    deadline = time.monotonic() + 120
    while run["state"] == "running" and time.monotonic() < deadline:
        await asyncio.sleep(0.5)
        run = await _json(jp_fetch, "api", "runs", str(run["id"]))
    assert run["state"] == "done", run
    assert len(run["result_ids"]) == 1
    hist = await _json(jp_fetch, "api", "history")
    assert hist["runs"][0]["run_id"] == run["result_ids"][0] and hist["runs"][0]["kind"] == "dd"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".nbbench")]  # its temp file removed
    # Stop: a long randread is interrupted
    body = json.dumps({"probe": "randread", "target": str(tmp_path), "size": "8M"})
    run = await _json(jp_fetch, "api", "runs", method="POST", body=body)
    await asyncio.sleep(1.0)
    r = await jp_fetch("nbbench", "api", "runs", str(run["id"]), method="DELETE")
    assert r.code == 200
    deadline = time.monotonic() + 30
    while run["state"] == "running" and time.monotonic() < deadline:
        await asyncio.sleep(0.3)
        run = await _json(jp_fetch, "api", "runs", str(run["id"]))
    assert run["state"] == "stopped"


class TestUnderAJupyterHubPrefix:
    @pytest.fixture
    def jp_base_url(self):
        return "/user/someone/"

    @_run
    async def test_metrics_under_the_prefix(self, jp_fetch, jp_serverapp):
        assert jp_serverapp.base_url == "/user/someone/"
        data = await _json(jp_fetch, "api", "metrics")
        assert "cpu" in data
        assert await _status_without_token(jp_fetch, "api", "metrics") == 403


@pytest.fixture
def read_only_authorizer():
    """An Authorizer that lets users read nbbench's figures but not run probes (a custom Jupyter deployment)."""
    from jupyter_server.auth.authorizer import Authorizer

    class ReadOnly(Authorizer):
        def is_authorized(self, handler, user, action, resource):
            return not (resource == "nbbench" and action == "execute")

    return ReadOnly


@_run
async def test_jupyters_authorizer_decides_who_may_run_a_probe(jp_fetch, jp_serverapp, read_only_authorizer):
    """Authenticated is not authorised: with an Authorizer that refuses nbbench's 'execute', figures are
    read but a run is refused (403) and none starts."""
    jp_serverapp.web_app.settings["authorizer"] = read_only_authorizer(parent=jp_serverapp)
    metrics = await _json(jp_fetch, "api", "metrics")
    assert "cpu" in metrics
    with pytest.raises(tornado.httpclient.HTTPClientError) as err:
        await jp_fetch("nbbench", "api", "runs", method="POST", body=json.dumps({"probe": "doctor"}))
    assert err.value.code == 403
    listed = await _json(jp_fetch, "api", "runs")
    assert listed["runs"] == []
