"""Screenshots of result cards as the notebook and the panel draw them (headless chromium).

    PYTHONPATH=$PWD .venv/bin/python tools/card_screenshots.py [OUT_DIR]   # default docs/screenshots

Draws each card's HTML (``result._repr_html_()``, what a notebook cell, the control panel's
tabs and the HTML report show) on a plain page and screenshots the card element:
the GPU check without CUDA, a loader run and a checkpoint run (the stored runs under
tests/fixtures/results), and a monitor of a busy cell run here (one core hashing for
a few seconds), with its timeline under the card as the Monitor tab shows it.
Saved as OUT_DIR/card-<name>.png.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from jupyterlab_harness import launch_chromium  # noqa: E402

PAGE = (
    "<html><head><meta charset='utf-8'><style>body{{font-family:system-ui,sans-serif;font-size:14px;"
    "margin:16px;max-width:1100px}}</style></head><body><div id='card'>{}</div></body></html>"
)


def _busy_monitor():
    import nbbench

    with nbbench.monitor(interval=0.2) as m:
        block = os.urandom(1 << 20)
        for _ in range(400):  # a cell that keeps about one core busy
            hashlib.sha256(block * 4).digest()
    return m.result(params={"what": "cell: sha256 of 1.6 GB"})


def main(out_dir: str = "docs/screenshots") -> None:
    from playwright.sync_api import sync_playwright

    from nbbench.results import Result

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    fixtures = REPO / "tests" / "fixtures" / "results"
    cards = {
        k: Result.from_dict(json.loads((fixtures / f"{k}.json").read_text())) for k in ("gpu", "loader", "checkpoint")
    }
    cards["monitor"] = _busy_monitor()
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        ctx = launch_chromium(pw, tmp, viewport=(1200, 900))
        page = ctx.new_page()
        for name, res in cards.items():
            body = res._repr_html_()
            if name == "monitor":
                png = res.png(dpi=80)
                if png:
                    body += f"<img src='data:image/png;base64,{base64.b64encode(png).decode()}'/>"
            page.set_content(PAGE.format(body))
            page.locator("#card").screenshot(path=str(out / f"card-{name}.png"))
            print(out / f"card-{name}.png", "·", res.summary(120))
        ctx.close()


if __name__ == "__main__":
    main(*sys.argv[1:])
