"""nbbench: Jupyter-native benchmarks for GPU training containers.

``%load_ext nbbench`` registers ``%iobench``; the same probes are plain functions
in :mod:`nbbench.probes` and a terminal CLI (``nbbench``).  Importing this package
is cheap: torch, pynvml, matplotlib and ipywidgets load only when used.
"""

from __future__ import annotations

from .version import __version__  # noqa: E402

from .results import ProbeError, Result  # noqa: E402  (light: stdlib only)

__all__ = ["__version__", "Result", "ProbeError", "load_ipython_extension", "default_store", "history", "panel",
           "monitor"]


def load_ipython_extension(ipython) -> None:
    """``%load_ext nbbench``."""
    from .magics import load_ipython_extension as _load

    _load(ipython)


def default_store():
    """The default results store (see :mod:`nbbench.store`)."""
    from .store import default_store as _default

    return _default()


def history(kind=None, label=None):
    """Stored runs as a pandas DataFrame (see :meth:`nbbench.store.Store.history`)."""
    return default_store().history(kind=kind, label=label)


def __getattr__(name):
    # submodules on first use, so `nbbench.monitor(...)`, `nbbench.panel(...)`, `nbbench.probes.disk` work
    # (`monitor` and `panel` are callable packages: the call opens a monitor / the control panel)
    import importlib

    if name in ("monitor", "panel", "probes", "env", "datasets", "doctor", "ui", "units", "store", "results",
                "commands", "compare", "report"):
        mod = importlib.import_module(f".{name}", __name__)
        return mod
    raise AttributeError(f"module 'nbbench' has no attribute {name!r}")
