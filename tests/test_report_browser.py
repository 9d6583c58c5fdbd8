"""A generated HTML report opened in headless chromium: images decode, nothing is fetched,
the page lays out; the screenshot goes to artifacts/report.png."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import pytest

from nbbench.report import report
from nbbench.results import Result
from nbbench.store import default_store

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).resolve().parent.parent / "artifacts"

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _dd(w, r, cache):
    t = [0.5 * i for i in range(1, 13)]
    res = Result(
        kind="dd",
        params={"path": "/dataset", "bs": "1M", "size": "256M"},
        metrics={"write_bytes_per_s": w, "read_bytes_per_s": r},
        labels={"cache": cache, "engine": "sync"},
        samples={
            "write": {"t_s": t, "write_bytes_per_s": [w * (1 + 0.08 * math.sin(i)) for i in range(12)]},
            "read": {"t_s": t, "read_bytes_per_s": [r * (1 + 0.05 * math.cos(i)) for i in range(12)]},
        },
    )
    return res.finish()


def test_report_renders_in_chromium(tmp_path):
    from jupyterlab_harness import require_browser

    require_browser()
    from playwright import sync_api

    st = default_store()
    st.save(_dd(4.1e8, 6.3e8, "direct"), label="direct")
    st.save(_dd(4.0e8, 2.8e9, "buffered-warm"), label="buffered")
    out = tmp_path / "report.html"
    report(
        "html",
        out=out,
        runs=["direct", "buffered"],
        path=str(tmp_path),
        doctor_checks=["shm", "nofile", "mount", "vm", "cpu", "memory", "ssh"],
    )
    requests = []
    with sync_api.sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(
            tempfile.mkdtemp(dir=tmp_path),
            executable_path=CHROMIUM,
            headless=True,
            args=ARGS,
            viewport={"width": 1200, "height": 900},
        )
        try:
            page = ctx.new_page()
            page.on("request", lambda req: requests.append(req.url))
            page.goto(out.as_uri())
            page.wait_for_load_state("load")
            imgs = page.evaluate("Array.from(document.images).map(i => [i.complete, i.naturalWidth, i.naturalHeight])")
            widths = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
            heads = page.evaluate("Array.from(document.querySelectorAll('h2')).map(h => h.textContent)")
            badge = page.evaluate("document.querySelectorAll('.nbbench-doctor-table tbody tr').length")
            summary = page.evaluate("document.querySelector('main > .summary p').textContent")
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "report.png"), full_page=True)
        finally:
            ctx.close()
    assert len(imgs) == 3 and all(c and w >= 400 and h >= 150 for c, w, h in imgs), imgs
    assert [u for u in requests if not u.startswith(("file:", "data:"))] == []
    assert widths[0] <= widths[1], "the page scrolls sideways"
    # the answer first: the results and their comparison, then the environment and the doctor's full table
    assert heads[:4] == ["Results", "Comparisons", "Environment", "Doctor"]
    # the answer first: a change within the noise said as such, a real one as a ratio with its interval
    assert summary.startswith("no significant change in write (400 MB/s vs 410 MB/s), 4.44× faster read (95 % CI ")
    assert "2.80 GB/s vs 630 MB/s) for buffered against direct (dd, one run each)" in summary
    assert badge >= 7
    assert (ARTIFACTS / "report.png").stat().st_size > 10_000
