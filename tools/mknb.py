"""Write a notebook from a compact cell list (markdown cells start with '#md').

Usage from Python: write_notebook(path, cells) — writes a notebook's cells without outputs;
tools/notebook_outputs.py (make notebooks-outputs) then runs it and keeps its outputs.
"""

from __future__ import annotations

import sys

import nbformat


def write_notebook(path, cells):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    for c in cells:
        if c.startswith("#md\n"):
            nb.cells.append(nbformat.v4.new_markdown_cell(c[4:].strip()))
        else:
            nb.cells.append(nbformat.v4.new_code_cell(c.strip()))
    nbformat.write(nb, path)


if __name__ == "__main__":  # pragma: no cover
    print(__doc__, file=sys.stderr)
