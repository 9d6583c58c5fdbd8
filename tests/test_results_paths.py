"""results/ grouped by subject: the names users hold still resolve.

``nbbench.results.storage`` (the path the guide teaches for ``percentiles_frame``) and
``nbbench.results.present`` are packages now that keep their names; the modules that moved into
a subject (``nbbench.results.monitor`` → ``nbbench.results.system.monitor``) import from the old
path with a DeprecationWarning naming the new one; every built-in kind's class still loads.
"""

from __future__ import annotations

import importlib
import sys

import pytest

from nbbench import _moved
from nbbench.results import KINDS, Result, result_class

RESULTS_MOVES = {old: new for old, new in _moved.MOVED.items() if old.startswith("nbbench.results.")}


def test_every_kind_loads_its_class():
    for kind in KINDS:
        cls = result_class(kind)
        assert issubclass(cls, Result) and cls.__module__ == KINDS[kind].split(":")[0]


@pytest.mark.parametrize("old", sorted(RESULTS_MOVES))
def test_a_moved_results_module_imports_from_its_old_path_with_a_warning(old):
    new = RESULTS_MOVES[old]
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=new.replace(".", r"\.")):
        mod = importlib.import_module(old)
    assert mod is importlib.import_module(new)


def test_the_packages_keep_their_old_names():
    from nbbench.results.present import SEP, Section
    from nbbench.results.present.rule import SEP as rule_sep
    from nbbench.results.storage import DiskResult, percentiles_frame
    from nbbench.results.storage.local import DiskResult as local_disk

    assert SEP is rule_sep and Section.__module__ == "nbbench.results.present.rule"
    assert DiskResult is local_disk and callable(percentiles_frame)
    # the old names of modules that stayed packages are not aliased (that would shadow the package)
    assert not any(old in ("nbbench.results.storage", "nbbench.results.present") for old in RESULTS_MOVES)
