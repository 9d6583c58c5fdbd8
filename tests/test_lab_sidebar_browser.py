"""The JupyterLab extension in a real JupyterLab behind a base_url, driven by headless chromium.

JupyterLab runs on 127.0.0.1 under ``/user/someone/`` (as behind JupyterHub) with the built
extension (``nbbench/labextension/``, made by ``make labextension``) and the server extension
enabled by the repository's own config file.  A notebook keeps a kernel busy in a child
process (as a DataLoader's worker is); the test opens the sidebar, sees its CPU figure
change, sees the kernel listed with a verdict and the status-bar item, runs a dd from the
form on a temporary directory and sees its result appear in the list, opens its report in a
tab, and sees a bad path answered with one error line.  Screenshots go to docs/screenshots/
(lab-sidebar.png, lab-statusbar.png, lab-sidebar-run.png).  Skips without chromium, Playwright
or the built extension, except in CI.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import nbformat
import pytest
from jupyterlab_harness import JupyterLab, launch_chromium, require_browser, wait_kernel_idle

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REPO = Path(__file__).resolve().parent.parent
BUILT = REPO / "nbbench" / "labextension"
SHOTS = REPO / "docs" / "screenshots"
STOP = "stop-busy"

BUSY = f"""import multiprocessing as mp, os, time

def spin(stop):
    t = time.time()
    while not os.path.exists(stop) and time.time() - t < 240:
        sum(range(20000))

worker = mp.get_context("fork").Process(target=spin, args=({STOP!r},))
worker.start()
"""


def _require_built() -> None:
    if (BUILT / "package.json").exists():
        return
    msg = f"{BUILT} is not built (make labextension)"
    if os.environ.get("CI"):
        pytest.fail(msg)
    pytest.skip(msg)


def test_sidebar_status_bar_and_a_dd_from_the_form(tmp_path):
    require_browser()
    _require_built()
    from playwright.sync_api import sync_playwright

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(BUSY)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, tmp_path / "train.ipynb")
    data = tmp_path / "data"
    data.mkdir()
    SHOTS.mkdir(parents=True, exist_ok=True)
    lab = JupyterLab(tmp_path, base_url="/user/someone/", labextensions={"nbbench": BUILT})
    conf = lab.state / "config" / "jupyter_server_config.d"
    conf.mkdir(parents=True)
    shutil.copy(REPO / "jupyter-config" / "jupyter_server_config.d" / "nbbench.json", conf)
    with lab, sync_playwright() as pw:
        ctx = launch_chromium(pw, str(tmp_path / "chromium"), viewport=(1400, 1000))
        try:
            page = ctx.new_page()
            page.goto(lab.url("train.ipynb"))
            wait_kernel_idle(page)
            page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
            page.evaluate("() => window.jupyterapp.commands.execute('nbbench:open-sidebar')")
            # a wider right-hand area for the screenshots (the user drags it; here Lumino's split sizes)
            page.evaluate(
                "() => { const p = window.jupyterapp.shell._hsplitPanel;"
                " if (p) p.setRelativeSizes([0.15, 0.5, 0.35]); }"
            )
            side = page.locator("#nbbench-sidebar")
            side.wait_for(state="visible", timeout=30_000)
            page.wait_for_function(
                "() => { const v = document.querySelector('#nbbench-sidebar .jp-nbbench-verdict');"
                " return v && !v.textContent.startsWith('waiting') && document.querySelectorAll("
                "'#nbbench-sidebar .jp-nbbench-chart canvas').length >= 4; }",
                timeout=60_000,
            )
            assert "server extension" not in side.locator(".jp-nbbench-verdict").inner_text()
            # the figures (the charts' latest values and the facts above them) change with the samples
            figures = lambda: (
                side.locator(".jp-nbbench-facts").inner_text()
                + " | ".join(  # noqa: E731
                    side.locator(".jp-nbbench-chart-last").all_inner_texts()
                )
            )
            seen = {figures()}
            deadline = time.monotonic() + 30
            while len(seen) < 3 and time.monotonic() < deadline:
                time.sleep(1.0)
                seen.add(figures())
            assert len(seen) >= 3, seen

            # the busy kernel: listed by its notebook, with its child process and a verdict
            page.wait_for_function(
                "() => [...document.querySelectorAll('#nbbench-sidebar tr.jp-nbbench-busy')]"
                ".some(r => r.textContent.includes('train.ipynb') && r.textContent.includes('+1'))",
                timeout=60_000,
            )
            row = side.locator("tr.jp-nbbench-busy").first.inner_text()
            assert "idle" not in row.split("\t")[-1] and row.split("\t")[-1].strip()
            status = page.locator(".jp-nbbench-status")
            page.wait_for_function(
                "() => (document.querySelector('.jp-nbbench-status') || {}).textContent?.includes('kernel CPU')",
                timeout=30_000,
            )
            assert "GPU" in status.inner_text()
            time.sleep(8.0)  # a few more samples in the charts
            side.screenshot(path=str(SHOTS / "lab-sidebar.png"))
            page.locator("#jp-main-statusbar").screenshot(path=str(SHOTS / "lab-statusbar.png"))

            # a click on the status-bar item opens the sidebar
            page.evaluate("() => window.jupyterapp.shell.collapseRight()")
            side.wait_for(state="hidden", timeout=10_000)
            status.click()
            side.wait_for(state="visible", timeout=10_000)

            # the browser holds the login cookie: a POST carrying it without the XSRF token is refused
            code = page.evaluate(
                "async () => (await fetch('/user/someone/nbbench/api/runs', {method: 'POST',"
                " credentials: 'same-origin', body: JSON.stringify({probe: 'doctor'})})).status"
            )
            assert code == 403
            assert page.evaluate("async () => (await fetch('/user/someone/nbbench/api/history')).status") == 200

            # a bad path: one error line, nothing runs
            side.locator(".jp-nbbench-probe").select_option("dd")
            side.locator(".jp-nbbench-target").fill(str(tmp_path / "no-such-dir"))
            side.locator(".jp-nbbench-run-button").click()
            err = side.locator(".jp-nbbench-error")
            page.wait_for_function(
                "() => document.querySelector('#nbbench-sidebar .jp-nbbench-error')"
                ".textContent.includes('no-such-dir')",
                timeout=15_000,
            )
            assert "\n" not in err.inner_text().strip()

            # a dd from the form: progress, then its result in the list
            side.locator(".jp-nbbench-target").fill(str(data))
            side.locator(".jp-nbbench-size").fill("8M")
            side.locator(".jp-nbbench-run-button").click()
            page.wait_for_function(
                "() => document.querySelector('#nbbench-sidebar .jp-nbbench-progress').dataset.state === 'done'",
                timeout=180_000,
            )
            assert "saved as #" in side.locator(".jp-nbbench-progress").inner_text()
            page.wait_for_function(
                "() => [...document.querySelectorAll('#nbbench-sidebar .jp-nbbench-result-link')]"
                ".some(a => a.textContent.includes(' dd'))",
                timeout=30_000,
            )
            assert not [p for p in data.iterdir() if p.name.startswith(".nbbench")]
            side.evaluate("e => { e.scrollTop = e.scrollHeight; }")  # the lower half: kernels, results, the form
            time.sleep(1.0)
            side.screenshot(path=str(SHOTS / "lab-sidebar-run.png"))

            # its report opens in a Lab tab, under the base_url
            side.locator(".jp-nbbench-result-link").first.click()
            frame = page.locator(".jp-nbbench-report iframe")
            frame.wait_for(timeout=30_000)
            assert "/user/someone/nbbench/report/" in frame.get_attribute("src")
            body = page.frame_locator(".jp-nbbench-report iframe").locator("h1")
            body.wait_for(timeout=60_000)
            assert "nbbench" in body.inner_text()
            # the palette's "open the last report": a second report tab
            page.evaluate("() => window.jupyterapp.commands.execute('nbbench:open-last-report')")
            page.wait_for_function("() => document.querySelectorAll('.jp-nbbench-report iframe').length >= 2")

            # the settings: charts off, after a reload the sidebar shows none (the other sections stay)
            page.evaluate(
                "async () => window.jupyterapp.serviceManager.settings.save('nbbench:plugin',"
                " JSON.stringify({showCharts: false}))"
            )
            page.goto(lab.url("train.ipynb"))
            page.wait_for_function(
                "() => !!window.jupyterapp && window.jupyterapp.commands.hasCommand('nbbench:open-sidebar')"
            )
            page.evaluate("() => window.jupyterapp.commands.execute('nbbench:open-sidebar')")
            side.wait_for(state="visible", timeout=30_000)
            page.wait_for_function(
                "() => document.querySelector('#nbbench-sidebar .jp-nbbench-charts').hidden === true", timeout=30_000
            )
            assert side.locator(".jp-nbbench-run").is_visible()
        finally:
            (tmp_path / STOP).write_text("")
            ctx.close()
