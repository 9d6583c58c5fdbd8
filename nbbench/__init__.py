"""nbbench: Jupyter-native benchmarks for GPU training containers.

``%load_ext nbbench`` registers ``%iobench``; the same probes are a terminal CLI (``nbbench``) and
plain functions at the top of this package, under the subcommands' names — ``nbbench.dd(...)``,
``nbbench.randread(...)``, ``nbbench.files(...)``, ``nbbench.disk(...)``, ``nbbench.checkpoint(...)``,
``nbbench.shards(...)``, ``nbbench.s3(...)``, ``nbbench.gpu()``, ``nbbench.bench_loader(...)``,
``nbbench.sweep(...)``, ``nbbench.feed(...)`` — each returning a result (:data:`nbbench.probes.catalog.PUBLIC`:
the same table the commands and the ranks call through, so these names do not move when modules do).
Importing this package is cheap: torch, pynvml, matplotlib and ipywidgets load only when used.
"""

from __future__ import annotations

from . import _moved
from .results import ProbeError, Result, drawing  # light: stdlib only
from .version import __version__

_moved.install()  # old deep paths (nbbench.probes.disk, nbbench.dist…) import with a DeprecationWarning

#: the probes callable from the top of the package (names as the subcommands; see nbbench.probes.catalog)
PROBE_NAMES = (
    "gpu",
    "dd",
    "randread",
    "files",
    "disk",
    "checkpoint",
    "shards",
    "s3",
    "bench_loader",
    "loader",
    "sweep",
    "feed",
)
#: the datasets and loaders the probes read, for a user's own DataLoader
HELPERS = {
    "ImageFolderDataset": "nbbench.probes.pipeline.imagefolder",
    "TarShardDataset": "nbbench.probes.shards.tarshards",
    "make_loader": "nbbench.probes.pipeline.dataloader",
}

# a result's .plot() / .figure() and a comparison's chart are drawn by the drawers this module
# registers, imported the first time something is drawn (the core names no drawing module)
drawing.use("nbbench.plots.backend")

__all__ = [
    "__version__",
    "Result",
    "ProbeError",
    "load_ipython_extension",
    "default_store",
    "history",
    "panel",
    "monitor",
    "watch",
    "mark",
    *PROBE_NAMES,
    *HELPERS,
]


def load_ipython_extension(ipython) -> None:
    """``%load_ext nbbench``."""
    # loaded when called: `import nbbench` stays light
    from .magics import load_ipython_extension as _load

    _load(ipython)


def default_store():
    """The default results store (see :mod:`nbbench.store`)."""
    # loaded when called: `import nbbench` stays light
    from .store import default_store as _default

    return _default()


def history(kind=None, label=None):
    """Stored runs as a pandas DataFrame (see :meth:`nbbench.store.Store.history`)."""
    return default_store().history(kind=kind, label=label)


def watch(stop: bool = False, **options):
    """The dashboard that stays, from Python: ``%iobench watch`` (see :mod:`nbbench.commands.monitors.watch`).

    ``nbbench.watch(interval=1.0, window="10m", serve=None, gpus="all", path=None, net="auto",
    procs=1.0, no_plot=False)`` starts this process's background monitor and, in a Jupyter
    kernel, shows its live view; returns the running background monitor.
    ``nbbench.watch(stop=True, label=None, no_save=False)`` stops it and returns the
    saved :class:`~nbbench.results.system.monitor.MonitorResult`.  The sampler lives in
    :mod:`nbbench.monitor.background` (no widgets); this function is the front end that draws.
    """
    # loaded when called: `import nbbench` stays light
    from . import commands
    from .commands.context import Context
    from .commands.monitors.watch import invocation
    from .ui.kernel import in_kernel

    if in_kernel():
        from .magics import NotebookContext

        ctx = NotebookContext(quiet=bool(options.get("quiet", False)))
    else:
        ctx = Context(frontend="api", lasting=True, quiet=bool(options.get("quiet", False)))
    inv = invocation(ctx, "watch", stop=stop, **options)
    return commands.execute(inv, ctx)


def mark(text: str = ""):
    """A labelled mark on the background monitor's timeline (``%iobench mark TEXT``); returns
    ``(monotonic t, text)``.  Raises RuntimeError when no :func:`watch` runs."""
    # loaded when called: `import nbbench` stays light
    from .monitor import background

    try:
        return background.mark(text)
    except background.NotWatching:
        raise RuntimeError("no background monitor is running: start one with nbbench.watch()") from None


def __getattr__(name):
    # submodules on first use, so `nbbench.monitor(...)`, `nbbench.panel(...)`, `nbbench.probes.storage.disk` work
    # (`monitor` and `panel` are callable packages: the call opens a monitor / the control panel)
    import importlib

    if name in PROBE_NAMES:
        # the probe table, looked up when nbbench.NAME is first used
        from .probes import catalog

        return catalog.function(name)
    if name in HELPERS:
        return getattr(importlib.import_module(HELPERS[name]), name)
    if name in (
        "monitor",
        "panel",
        "probes",
        "env",
        "datasets",
        "doctor",
        "ui",
        "units",
        "store",
        "results",
        "commands",
        "compare",
        "report",
    ):
        mod = importlib.import_module(f".{name}", __name__)
        return mod
    raise AttributeError(f"module 'nbbench' has no attribute {name!r}")
