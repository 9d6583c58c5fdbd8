"""Pay first-use costs early, in the background: the first live plot's matplotlib import and the first
save's environment fingerprint (the control panel calls :func:`warm_up` when it opens)."""

from __future__ import annotations

import threading

from ..env import fingerprint

__all__ = ["preload_plotting", "warm_up"]


def preload_plotting() -> None:
    """Import matplotlib's Agg canvas and Figure, which the first live plot needs; never raises."""
    import importlib

    try:
        for name in ("matplotlib.backends.backend_agg", "matplotlib.figure"):
            importlib.import_module(name)
    except Exception:  # noqa: BLE001 - the plot itself will say what is wrong
        pass


_warmed = threading.Event()


def warm_up(plotting: bool = True) -> None:
    """Once per kernel, in a background thread at low priority: compute the environment
    fingerprint (the first save of a process needs it: package list, torch versions — seconds)
    and import matplotlib's Agg canvas (the first live plot), so neither delays the end of
    the panel's first run."""
    if _warmed.is_set():
        return
    _warmed.set()

    def load():
        try:
            import os

            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)  # Linux: this thread only
        except (AttributeError, OSError):
            pass
        try:
            fingerprint()
        except Exception:  # noqa: BLE001 - the save will say what is wrong
            pass
        if plotting:
            preload_plotting()

    threading.Thread(target=load, name="nbbench-panel-warmup", daemon=True).start()
