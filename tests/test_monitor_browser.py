"""``%%iobench monitor`` and ``%iobench watch`` in a real JupyterLab: the views update while a cell is busy.

Runs a notebook whose monitored cell spins until the test has seen its frames, reads the plot's
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
from jupyterlab_harness import JupyterLab, launch_chromium, require_browser, wait_cells_done, wait_kernel_idle

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ARTIFACTS = Path(__file__).resolve().parent.parent / "artifacts"

#: the busy cells run until the test writes this file (it has seen what it waits for), at most MAX_BUSY_S:
#: the cell's length is the test's event, not a guess at how slow a loaded machine draws frames
STOP = "stop-busy"
MAX_BUSY_S = 150

CELL = f"""%%iobench monitor --interval 0.1 --gpu none --no-save
import os, time
t = time.time()
while not os.path.exists({STOP!r}) and time.time() - t < {MAX_BUSY_S}:
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
                "() => [...document.querySelectorAll('.jp-InputArea-prompt')].some(e => e.textContent.includes('*'))"
            )
            seen = set()
            while busy():  # the cell runs until STOP is written (MAX_BUSY_S at most)
                src = img.get_attribute("src") or ""
                seen.add(src[-200:])
                if len(seen) >= 3:  # the first frame and two live updates
                    break
                time.sleep(0.25)  # a polling interval: nothing waits on it
            still_busy = busy()
            page.screenshot(path=str(ARTIFACTS / "monitor-live.png"))
            (tmp_path / STOP).touch()
            assert still_busy, "the cell ended before three different frames were seen"
            assert len(seen) >= 3, f"only {len(seen)} distinct frame(s) while the cell ran"
            wait_cells_done(page, timeout_ms=(MAX_BUSY_S + 60) * 1000)
            final = page.locator(".jp-OutputArea-output img").first.get_attribute("src") or ""
            assert final[-200:] not in seen
            assert page.locator(".nbbench-result").count() == 1  # the summary table
            page.screenshot(path=str(ARTIFACTS / "monitor-final.png"))
        finally:
            ctx.close()
    shutil.rmtree(tmp_path / "chromium", ignore_errors=True)


WATCH_CELLS = [
    "%load_ext nbbench",
    "%iobench watch --interval 0.2 --gpu none --window 1m",
    # busy until the test has seen its frames (STOP), and at least 8 s: the run's samples (> 20 at 0.2 s)
    f"import os, time\nt = time.time()\nwhile (not os.path.exists({STOP!r}) or time.time() - t < 8) "
    f"and time.time() - t < {MAX_BUSY_S}:\n    sum(range(10000))\nprint('busy done')",
    "r = %iobench watch --stop -o --no-save\nprint(r.params['what'], r.metrics['samples_count'] > 20)",
]


def test_watch_view_updates_while_another_cell_is_busy(tmp_path):
    require_browser()
    from playwright.sync_api import sync_playwright

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in WATCH_CELLS]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, tmp_path / "watch.ipynb")
    ARTIFACTS.mkdir(exist_ok=True)
    with JupyterLab(tmp_path) as lab, sync_playwright() as pw:
        ctx = launch_chromium(pw, str(tmp_path / "chromium"))
        try:
            page = ctx.new_page()
            page.goto(lab.url("watch.ipynb"))
            wait_kernel_idle(page)
            page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
            cells = page.locator(".jp-Notebook .jp-Cell")
            view = cells.nth(1).locator(".jp-OutputArea-output img").first
            view.wait_for(timeout=60_000)

            def busy_cell_running():
                prompt = cells.nth(2).locator(".jp-InputArea-prompt").first.text_content() or ""
                return "*" in prompt

            deadline = time.monotonic() + 60
            while not busy_cell_running() and time.monotonic() < deadline:
                time.sleep(0.1)
            assert busy_cell_running(), "the busy cell never started"
            seen = set()
            while busy_cell_running():  # until STOP is written (MAX_BUSY_S at most)
                seen.add(view.get_attribute("src") or "")
                if len(seen) >= 3:
                    break
                time.sleep(0.3)  # a polling interval: nothing waits on it
            still_busy = busy_cell_running()
            page.screenshot(path=str(ARTIFACTS / "watch-live.png"))
            (tmp_path / STOP).touch()
            assert len(seen) >= 3, f"only {len(seen)} distinct frame(s) of the watch view while the busy cell ran"
            assert still_busy, "the busy cell ended before three different frames were seen"
            wait_cells_done(page, timeout_ms=(MAX_BUSY_S + 60) * 1000)
            out = cells.nth(3).locator(".jp-OutputArea-output").last.text_content() or ""
            assert "watch True" in out
        finally:
            ctx.close()
    shutil.rmtree(tmp_path / "chromium", ignore_errors=True)
