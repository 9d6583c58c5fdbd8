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

#: old module -> new module (a package prefix maps every module under it)
MOVED: dict[str, str] = {
    **{
        f"nbbench.probes.{old}": f"nbbench.probes.{new}"
        for old, new in {
            "disk": "storage.disk",
            "files": "storage.files",
            "presets": "storage.presets",
            "target": "storage.target",
            "io_session": "storage.io_session",
            "io_cpu": "storage.io_cpu",
            "loader": "pipeline.loader",
            "sweep": "pipeline.sweep",
            "feed": "pipeline.feed",
            "feedlimit": "pipeline.feedlimit",
            "dataloader": "pipeline.dataloader",
            "imagefolder": "pipeline.imagefolder",
            "imagetransform": "pipeline.imagetransform",
            "batches": "pipeline.batches",
            "steps": "pipeline.steps",
            "loadermon": "pipeline.loadermon",
            "ckptio": "checkpoint.saveload",
            "ckptmodels": "checkpoint.models",
            "tarshards": "shards.tarshards",
            "tarwalk": "shards.tarwalk",
        }.items()
    },
    "nbbench.dist": "nbbench.ranks",
    # results/ grouped by subject (nbbench.results.storage and .present keep their names: packages now)
    **{
        f"nbbench.results.{old}": f"nbbench.results.{new}"
        for old, new in {
            "checkpoint": "storage.checkpoint",
            "shards": "storage.shards",
            "objects": "storage.objects",
            "loader": "pipeline.loader",
            "sweep": "pipeline.sweep",
            "feed": "pipeline.feed",
            "gpu": "system.gpu",
            "monitor": "system.monitor",
            "doctor": "system.doctor",
            "env": "system.env",
            "view": "present.view",
            "summaries": "present.summaries",
        }.items()
    },
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
