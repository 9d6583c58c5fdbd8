"""Screenshots of each control-panel tab after a run, in a real JupyterLab (headless chromium).

    PYTHONPATH=$PWD .venv/bin/python tools/panel_screenshots.py [OUT_DIR]   # default docs/screenshots

Starts a JupyterLab of its own (tests/jupyterlab_harness.py: 127.0.0.1, a token, fresh
temporary Jupyter / IPython / matplotlib state and NBBENCH_HOME), opens a scratch
notebook that makes a small image folder and displays the panel on it, then clicks
through the tabs as a person would: the GPU check; dd twice (labels "first", "second")
then a short randread; feed; a 4-second monitor; History with the two dd runs compared.
Each tab is screenshotted (the panel element only, 1280 px viewport) after its run and
saved as docs/screenshots/panel-<tab>.png, reduced to a 256-colour palette with Pillow
so each stays small.  Nothing is written outside OUT_DIR and temporary directories.
"""

from __future__ import annotations

import io
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from jupyterlab_harness import (  # noqa: E402
    JupyterLab,
    launch_chromium,
    run_all_cells,
    wait_cells_done,
    wait_kernel_idle,
)


def _notebook(path: Path, data: Path) -> None:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(f"import nbbench\np = nbbench.panel({str(data)!r})\np")]
    nbformat.write(nb, path)


def _shrink(png: bytes, max_width: int = 1280) -> bytes:
    from PIL import Image

    img = Image.open(io.BytesIO(png)).convert("RGB")
    if img.width > max_width:
        img = img.resize((max_width, round(img.height * max_width / img.width)), Image.LANCZOS)
    out = io.BytesIO()
    img.quantize(colors=256, method=Image.MEDIANCUT, dither=Image.NONE).save(out, "PNG", optimize=True)
    return out.getvalue()


def _run_and_wait(panel, timeout_s: float = 300) -> str:
    """Click Run, wait until the tab's status line says this run started, then that it ended."""
    line = panel.locator(".nbbench-controls .nbbench-status-line")
    line.locator(".nbbench-status").first.wait_for()
    before = line.inner_text()
    panel.locator(".nbbench-run").click()
    deadline = time.monotonic() + timeout_s
    started = False
    while time.monotonic() < deadline:
        cls = line.locator(".nbbench-status").first.get_attribute("class") or ""
        busy = re.search(r"nbbench-status-(running|stopping)\b", cls)
        started = started or bool(busy) or line.inner_text() != before
        if started and not busy and "idle" not in cls:
            return line.inner_text()
        time.sleep(0.2)
    raise RuntimeError("the run did not end: " + line.inner_text())


def _fill(panel, css: str, value: str) -> None:
    box = panel.locator(css)
    box.fill(value)
    box.press("Tab")


def _shot(page, panel, out: Path, name: str) -> None:
    page.wait_for_timeout(1200)  # the last plot frame and the layout settle
    panel.scroll_into_view_if_needed()
    png = _shrink(panel.screenshot())
    (out / f"panel-{name}.png").write_bytes(png)
    print(f"panel-{name}.png: {len(png) // 1024} KiB")


def main(out: Path) -> None:
    from playwright.sync_api import sync_playwright

    from nbbench import datasets

    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="nbbench-shots-"))
    data = tmp / "images"
    datasets.make_image_folder(str(data), files=400, jpeg=True)
    root = tmp / "lab"
    root.mkdir()
    _notebook(root / "panel.ipynb", data)
    lab = JupyterLab(root, start_timeout=90)
    try:
        lab.start()
        with sync_playwright() as pw:
            # tall enough for the whole panel: an element screenshot shows only what the notebook's
            # scrolling area shows
            browser = launch_chromium(pw, str(tmp / "chromium"), viewport=(1280, 2600))
            page = browser.pages[0] if browser.pages else browser.new_page()
            page.set_default_timeout(120_000)
            page.goto(lab.url("panel.ipynb"))
            wait_kernel_idle(page)
            page.evaluate("() => window.jupyterapp.commands.execute('application:toggle-left-area')")
            run_all_cells(page)
            panel = page.locator(".nbbench-panel").first
            panel.wait_for()
            wait_cells_done(page)
            panel.locator(".nbbench-path-status .nbbench-path-ok").wait_for(timeout=30_000)

            # GPU
            panel.get_by_role("tab", name="GPU").click()
            print("GPU:", _run_and_wait(panel))
            _shot(page, panel, out, "gpu")

            # Storage: dd twice (the two runs History compares)
            panel.get_by_role("tab", name="Storage", exact=True).click()
            panel.locator(".nbbench-storage-probe button", has_text="dd").click()
            _fill(panel, ".nbbench-dd-size input", "1G")
            for label in ("first", "second"):
                _fill(panel, ".nbbench-label input", label)
                print("dd:", _run_and_wait(panel))
            _shot(page, panel, out, "storage")

            # DataLoader: feed
            panel.get_by_role("tab", name="DataLoader").click()
            _fill(panel, ".nbbench-label input", "")
            print("feed:", _run_and_wait(panel, 600))
            _shot(page, panel, out, "dataloader")

            # Monitor: a few seconds
            panel.get_by_role("tab", name="Monitor").click()
            _fill(panel, ".nbbench-monitor-duration input", "4")
            print("monitor:", _run_and_wait(panel))
            _shot(page, panel, out, "monitor")

            # History: compare the two dd runs
            panel.get_by_role("tab", name="History").click()
            runs = panel.locator(".nbbench-history-runs select")
            runs.wait_for()
            labels = [o for o in runs.locator("option").all_inner_texts()]
            picks = [t for t in labels if re.search(r"\bdd\b", t)][:2]
            runs.select_option(label=picks)
            panel.locator(".nbbench-compare").click()
            panel.locator(".nbbench-history-chart-png").first.wait_for()
            _shot(page, panel, out, "history")
            browser.close()
    finally:
        lab.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)  # the image folder, the lab root, chromium's profile


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "docs" / "screenshots")
