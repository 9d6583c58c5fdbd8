"""A result draws itself through the drawing registry: the core imports no plots module.

``Result.plot()`` / ``.figure()`` and a comparison's chart look their drawer up by name in
:mod:`nbbench.results.drawing`; :mod:`nbbench.plots.backend` registers the built-in drawers
and is imported the first time something is drawn (the facade names it), as pandas loads
its plotting backend.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from nbbench.results import drawing


def test_the_plots_load_only_when_something_is_drawn():
    code = (
        "import sys\n"
        "from nbbench.results.pipeline.sweep import SweepResult\n"
        "from nbbench.compare import compare\n"
        "print(sorted(m for m in sys.modules if m.startswith('nbbench.plots')))\n"
        "res = SweepResult(samples={'configs': []})\n"
        "print(res.plot())\n"
        "print('nbbench.plots.backend' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == "[]", out
    assert out[1] == "None"  # a sweep without configurations has nothing to draw
    assert out[2] == "True"


def test_a_registered_drawer_is_the_one_called(monkeypatch):
    monkeypatch.setattr(drawing, "_DRAWERS", dict(drawing._DRAWERS))
    calls = []
    drawing.register("sweep", lambda res, ax=None: calls.append((res, ax)) or "drawn")
    from nbbench.results.pipeline.sweep import SweepResult

    res = SweepResult()
    assert res.plot(ax="AX") == "drawn"
    assert calls == [(res, "AX")]


def test_an_unknown_drawer_says_so():
    with pytest.raises(drawing.NoDrawer, match="no drawer for 'no-such-figure'"):
        drawing.draw("no-such-figure")


def test_every_drawer_the_package_asks_for_is_registered():
    import re
    from pathlib import Path

    from nbbench.plots import backend

    root = Path(backend.__file__).resolve().parents[1]
    asked = {
        m.group(1)
        for p in root.rglob("*.py")
        for m in re.finditer(r"drawing\.draw(?:er)?\(\s*\"([a-z_0-9]+)\"", p.read_text())
    }
    assert asked and asked <= set(backend.DRAWERS), sorted(asked - set(backend.DRAWERS))
    assert all(drawing.drawer(name) is fn for name, fn in backend.DRAWERS.items())
