"""Screenshots of the documentation site as a reader sees it (headless chromium).

    make docs && PYTHONPATH=$PWD .venv/bin/python tools/docs_screenshots.py [SITE_DIR] [OUT_DIR]

Serves the built site (default site/) on 127.0.0.1 (a free port, for the length of the run),
opens three pages in Debian's chromium through Playwright — the home page, a guide page
(storage probes) and a rendered tutorial (02, at its randread section, with its committed
outputs) — and saves what shows of each as docs/screenshots/site-{home,guide,tutorial}.png, reduced to a 256-colour
palette with Pillow so each stays small.
"""

from __future__ import annotations

import functools
import http.server
import io
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from jupyterlab_harness import launch_chromium  # noqa: E402

#: name: (path under the site, the heading to scroll to — None: the top)
PAGES = {
    "home": ("", None),
    "guide": ("guide/storage/", None),
    "tutorial": ("tutorials/02-storage-probes/", "randread: IOPS and latency"),
}


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def main(argv: list[str]) -> int:
    from PIL import Image
    from playwright.sync_api import sync_playwright

    site = Path(argv[0]) if argv else ROOT / "site"
    out = Path(argv[1]) if len(argv) > 1 else ROOT / "docs" / "screenshots"
    if not (site / "index.html").exists():
        print(f"{site}/index.html missing: run `make docs` first", file=sys.stderr)
        return 1
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        with tempfile.TemporaryDirectory(prefix="nbbench-docshots-") as profile, sync_playwright() as pw:
            browser = launch_chromium(pw, profile, viewport=(1280, 900))
            page = browser.new_page()
            for name, (path, heading) in PAGES.items():
                page.goto(base + path, wait_until="networkidle")
                if heading:  # a section with outputs, not the notebook's introduction
                    page.get_by_role("heading", name=heading).first.evaluate(
                        "h => window.scrollTo(0, h.getBoundingClientRect().top + window.scrollY - 70)"
                    )
                png = page.screenshot(full_page=False)
                img = Image.open(io.BytesIO(png)).convert("RGB").quantize(colors=256)
                target = out / f"site-{name}.png"
                img.save(target, optimize=True)
                print(f"{target.relative_to(ROOT)}: {base + path} ({target.stat().st_size // 1024} KiB)")
            browser.close()
    finally:
        server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
