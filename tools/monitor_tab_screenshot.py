"""A screenshot of the control panel's Monitor tab after a busy cell, in a real JupyterLab.

    PYTHONPATH=$PWD .venv/bin/python tools/monitor_tab_screenshot.py [OUT_DIR] [--writes]   # default docs/screenshots

A notebook shows the panel on the Monitor tab and starts a 6-second monitor
(``p.select('Monitor'); p.run()``: the panel's own Run), then the cell after it keeps
one core busy hashing for 5 s while the monitor samples in the background; when the
run has ended the panel (its status line, the answer, the timeline) is saved as
OUT_DIR/panel-monitor-busy-cell.png.  With ``--writes`` the cell writes instead: 8 MB blocks to a new
file in the panel's folder, each fsync'd, for 5 s (the file removed at the end), and the picture is
OUT_DIR/panel-monitor-writes.png — the answer then gives the tree's write() and to-storage bytes.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "tools"))

from jupyterlab_harness import JupyterLab, launch_chromium, run_all_cells, wait_cells_done, wait_kernel_idle  # noqa: E402
from panel_screenshots import _shrink  # noqa: E402

CELLS = [
    "import nbbench\np = nbbench.panel({data!r})\np.select('Monitor')\np.tab('Monitor').duration.value = '6'\n"
    "p.tab('Monitor').interval.value = '0.25'\np.run()\np",
    "import hashlib, os, time\nblock = os.urandom(1 << 22)\nt = time.monotonic()\nwhile time.monotonic() - t < 5:\n"
    "    hashlib.sha256(block).digest()   # a busy cell: one core hashing\n",
    "p.wait(60)\nprint(p.result.summary(120))",
]
#: the cell that writes (``--writes``): fsync'd 8 MB blocks for 5 s into a new file, removed after
WRITE_CELL = (
    "import os, time\npath = os.path.join({data!r}, 'written-by-the-cell.bin')\nblock = bytes(8 << 20)\n"
    "t = time.monotonic()\nwith open(path, 'wb') as f:\n    while time.monotonic() - t < 5:\n"
    "        f.write(block)\n        f.flush()\n        os.fsync(f.fileno())   # to storage now\n"
    "        time.sleep(0.1)\nos.unlink(path)\n"
)


def main(out: Path, writes: bool = False) -> None:
    import nbformat
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="nbbench-shots-"))
    root = tmp / "lab"
    root.mkdir()
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    cells = [CELLS[0], WRITE_CELL, CELLS[2]] if writes else CELLS
    nb.cells = [nbformat.v4.new_code_cell(c.format(data=str(root))) for c in cells]
    nbformat.write(nb, root / "busy.ipynb")
    lab = JupyterLab(root, start_timeout=90)
    try:
        lab.start()
        with sync_playwright() as pw:
            browser = launch_chromium(pw, str(tmp / "chromium"), viewport=(1280, 2600))
            page = browser.pages[0] if browser.pages else browser.new_page()
            page.set_default_timeout(120_000)
            page.goto(lab.url("busy.ipynb"))
            wait_kernel_idle(page)
            page.evaluate("() => window.jupyterapp.commands.execute('application:toggle-left-area')")
            run_all_cells(page)
            panel = page.locator(".nbbench-panel").first
            panel.wait_for()
            wait_cells_done(page, 180_000)
            line = panel.locator(".nbbench-controls .nbbench-status-line")
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and "running" in (line.inner_text() or ""):
                time.sleep(0.5)
            page.wait_for_timeout(2000)  # the last frame and the layout settle
            panel.scroll_into_view_if_needed()
            png = _shrink(panel.screenshot())
            (out / ("panel-monitor-writes.png" if writes else "panel-monitor-busy-cell.png")).write_bytes(png)
            print("status:", line.inner_text())
            print(page.locator(".jp-OutputArea-output pre").last.inner_text())
            browser.close()
    finally:
        lab.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--writes"]
    main(Path(args[0]) if args else REPO / "docs" / "screenshots", writes="--writes" in sys.argv[1:])
