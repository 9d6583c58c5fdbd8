"""tools/notebook_outputs.py's clean-up of committed outputs: widget reprs and links to the run's files."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import nbformat

_spec = importlib.util.spec_from_file_location(
    "notebook_outputs", Path(__file__).resolve().parent.parent / "tools" / "notebook_outputs.py"
)
notebook_outputs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(notebook_outputs)


def test_links_to_local_files_become_code_and_web_links_stay():
    html = (
        "<b>report</b> <a href='../../nbbench-06-x/compare.html' target='_blank'>../../nbbench-06-x/compare.html</a>"
        " and <a href='https://example.org/a'>docs</a>"
    )
    out = notebook_outputs.unlink_files(html)
    assert "<code>../../nbbench-06-x/compare.html</code>" in out
    assert "href='../../" not in out
    assert "<a href='https://example.org/a'>docs</a>" in out


def test_the_panels_widget_repr_is_dropped_and_its_snapshot_kept():
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("p")
    cell.outputs = [
        nbformat.v4.new_output(
            "display_data", data={"text/plain": "<nbbench control panel: tab 'GPU', path not set, no run in progress>"}
        ),
        nbformat.v4.new_output(
            "display_data", data={"text/html": "<div>snapshot</div>", "text/plain": "nbbench control panel (static)"}
        ),
    ]
    nb.cells = [cell]
    notebook_outputs.strip_widget_state(nb)
    assert [o["data"].get("text/html") for o in nb.cells[0].outputs] == ["<div>snapshot</div>"]
