"""A notebook saved with the panel shows the panel where widgets cannot (GitHub, nbviewer): its
static snapshot, refreshed after each run — also when the run was started from a later cell."""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parent.parent
NB05 = REPO / "notebooks" / "05-control-panel.ipynb"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def _snapshot_outputs(nb):
    return [
        (i, o)
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code"
        for o in c.outputs
        if "nbbench-snapshot" in str(o.get("data", {}).get("text/html", ""))
    ]


def test_notebook_05_is_committed_without_widget_state_but_with_the_snapshot():
    raw = json.loads(NB05.read_text())
    assert "widgets" not in raw["metadata"]
    assert WIDGET_VIEW not in NB05.read_text()  # nothing that needs a live kernel to show
    nb = nbformat.reads(NB05.read_text(), as_version=4)
    ((i, snap),) = _snapshot_outputs(nb)
    assert "nbbench.panel()" in nb.cells[i].source
    html = snap.data["text/html"]
    text = re.sub(r"<[^>]+>", " ", html)
    # refreshed after the runs of the later cells: the GPU check's and the dd's answers are in it
    assert "GPU" in text and "Storage" in text and "B/s write" in text and "after dd" in text
    assert "<script" not in html
    # the picture alone: no stray "<nbbench control panel: …>" line above it (the widget's text repr, which
    # tools/notebook_outputs.py leaves out of the committed outputs)
    panel_out = [o for o in nb.cells[i].outputs if o is not snap]
    assert not any("<nbbench control panel" in str(o.get("data", {}).get("text/plain", "")) for o in panel_out)
    assert nb.cells[-1].cell_type == "markdown" and "On your own data" in nb.cells[-1].source


@pytest.mark.slow
def test_a_run_from_a_later_cell_refreshes_the_saved_snapshot(tmp_path):
    """nbclient (nbconvert --execute, nbmake) listens only to the cell it runs: the refresh of a
    run started in cell 2 must reach the snapshot displayed by cell 1."""
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(c)
        for c in (
            "import nbbench\np = nbbench.panel()\np",
            "from nbbench.panel.runner import Job\nfrom nbbench.results import Result\n"
            "p.save.value = False\n"
            "p.run(Job('answer', fn=lambda ctx: Result(kind='t', metrics={'read_bytes_per_s': 4.2e8}).finish()))\n"
            "p.wait(60)\nprint(p.last.status)",
        )
    ]
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    assert nb.cells[1].outputs[0].text.strip() == "ok"
    ((i, snap),) = _snapshot_outputs(nb)
    assert i == 0
    html = snap.data["text/html"]
    assert "420 MB/s read" in html and "after answer" in html and "nbbench-status-ok" in html
