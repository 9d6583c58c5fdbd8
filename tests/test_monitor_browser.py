"""``%%iobench monitor`` in a real JupyterLab: the plot updates while the cell is busy.

Runs a notebook whose monitored cell spins for several seconds, reads the plot's
<img> src while the cell still shows [*], and checks that it changed (live frames
arrived through the display handle) and that the picture after the cell ends is
another frame again (the final one).  Screenshots go to artifacts/monitor-live.png
and artifacts/monitor-final.png.  Skips without chromium/Playwright unless CI is set.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import nbformat
import pytest

from jupyterlab_harness import JupyterLab, require_browser, launch_chromium, wait_cells_done, \
    wait_kernel_idle

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ARTIFACTS = Path(__file__).resolve().parent.parent / "artifacts"

CELL = """%%iobench monitor --interval 0.1 --gpu none --no-save
import time
t = time.time()
while time.time() - t < 9:
    sum(range(10000))
"""


def test_monitor_plot_updates_live_while_the_cell_runs(tmp_path):
    require_browser()
    from playwright.sync_api import sync_playwright

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("%load_ext nbbench"), nbformat.v4.new_code_cell(CELL)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, tmp_path / "monitor.ipynb")
    ARTIFACTS.mkdir(exist_ok=True)
    with JupyterLab(tmp_path) as lab, sync_playwright() as pw:
        ctx = launch_chromium(pw, str(tmp_path / "chromium"))
        try:
            page = ctx.new_page()
            page.goto(lab.url("monitor.ipynb"))
            wait_kernel_idle(page)
            # start the run without awaiting it (the command's promise resolves when the run ends)
            page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
            img = page.locator(".jp-OutputArea-output img").first
            img.wait_for(timeout=60_000)
            busy = lambda: page.evaluate(  # noqa: E731
                "() => [...document.querySelectorAll('.jp-InputArea-prompt')].some(e => e.textContent.includes('*'))")
            seen = set()
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and busy():
                src = img.get_attribute("src") or ""
                seen.add(src[-200:])
                if len(seen) >= 3:  # the first frame and two live updates
                    break
                time.sleep(0.25)
            still_busy = busy()
            page.screenshot(path=str(ARTIFACTS / "monitor-live.png"))
            assert still_busy, "the cell ended before three different frames were seen"
            assert len(seen) >= 3, f"only {len(seen)} distinct frame(s) while the cell ran"
            wait_cells_done(page)
            final = page.locator(".jp-OutputArea-output img").first.get_attribute("src") or ""
            assert final[-200:] not in seen
            assert page.locator(".nbbench-result").count() == 1  # the summary table
            page.screenshot(path=str(ARTIFACTS / "monitor-final.png"))
        finally:
            ctx.close()
    shutil.rmtree(tmp_path / "chromium", ignore_errors=True)
