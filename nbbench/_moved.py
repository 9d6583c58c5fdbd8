"""Old module paths that users' scripts may hold, kept working for a release with a DeprecationWarning.

The probes were split by subject (``nbbench.probes.disk`` is now ``nbbench.probes.storage.disk``, …)
``nbbench.dist`` became ``nbbench.ranks``, and ``nbbench.results`` was grouped by subject
(``nbbench.results.monitor`` is now ``nbbench.results.system.monitor``, …).  The stable way to call
a probe from Python is the top of the package — ``nbbench.dd(...)``, ``nbbench.randread(...)``,
``nbbench.bench_loader(...)`` — whose names do not move (:data:`nbbench.probes.catalog.PUBLIC`).
Importing an old path still works: a meta path finder maps it to the module's new home and warns
once, naming the new path.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from importlib.machinery import ModuleSpec

#: the modules of probes/ and results/ that moved into a subject's folder, under the same name
_PROBES = {
    "storage": "disk files presets target io_session io_cpu",
    "pipeline": "loader sweep feed feedlimit dataloader imagefolder imagetransform batches steps loadermon",
    "shards": "tarshards tarwalk",
}
_RESULTS = {"storage": "checkpoint shards objects", "pipeline": "loader sweep feed", "system": "gpu monitor doctor env"}
_RESULTS["present"] = "view summaries"  # nbbench.results.storage and .present keep their names: packages now

#: old module -> new module (a package prefix maps every module under it)
MOVED: dict[str, str] = {
    **{f"nbbench.probes.{m}": f"nbbench.probes.{sub}.{m}" for sub, ms in _PROBES.items() for m in ms.split()},
    "nbbench.probes.ckptio": "nbbench.probes.checkpoint.saveload",
    "nbbench.probes.ckptmodels": "nbbench.probes.checkpoint.models",
    "nbbench.dist": "nbbench.ranks",
    **{f"nbbench.results.{m}": f"nbbench.results.{sub}.{m}" for sub, ms in _RESULTS.items() for m in ms.split()},
}


def new_name(old: str) -> str | None:
    """Where ``old`` lives now (None: it did not move)."""
    if old in MOVED:
        return MOVED[old]
    for prefix, new in MOVED.items():
        if old.startswith(prefix + "."):
            return new + old[len(prefix) :]
    return None


class _Alias:
    """A loader (duck-typed: importlib.abc would import importlib.resources, 10 ms at start-up)."""

    def __init__(self, new: str):
        self.new = new

    def create_module(self, spec):
        module = importlib.import_module(self.new)
        self.real_spec = module.__spec__  # the import system sets the alias's spec on it: put its own back
        return module

    def exec_module(self, module) -> None:
        module.__spec__ = self.real_spec
        module.__loader__ = self.real_spec.loader


class MovedFinder:
    """Finds an old path only (every other import goes on to the usual finders at once)."""

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith("nbbench."):
            return None
        new = new_name(fullname)
        if new is None:
            return None
        warnings.warn(
            f"{fullname} has moved to {new}; import that (or call the probe as nbbench.NAME(...)): "
            "the old path goes in a later release",
            DeprecationWarning,
            stacklevel=2,  # the import statement's line (the frames between are importlib's own, skipped)
        )
        return ModuleSpec(fullname, _Alias(new))


def install() -> None:
    if not any(isinstance(f, MovedFinder) for f in sys.meta_path):
        # first: an old package's submodule (nbbench.dist.jobs) must not be found again by the path
        # finder under the old name (a second copy of the module); every other import returns at once
        sys.meta_path.insert(0, MovedFinder())
