"""Pay the first live plot's import cost early (the control panel does it in the background)."""

from __future__ import annotations

__all__ = ["preload_plotting"]


def preload_plotting() -> None:
    """Import matplotlib's Agg canvas and Figure, which the first live plot needs; never raises."""
    import importlib

    try:
        for name in ("matplotlib.backends.backend_agg", "matplotlib.figure"):
            importlib.import_module(name)
    except Exception:  # noqa: BLE001 - the plot itself will say what is wrong
        pass
