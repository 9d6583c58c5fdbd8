"""The control panel (``%iobench panel``, ``nbbench.panel()``): every probe behind one ipywidgets app.

Modules: :mod:`.app` (the panel), :mod:`.runner` (background runs, Stop),
:mod:`.pathfield` (the PATH field, checked as you type), :mod:`.tabs` (GPU, Storage,
DataLoader, Monitor, History), :mod:`.views` (HTML of results and errors).
"""

from __future__ import annotations

__all__ = ["panel", "ControlPanel"]


def panel(path=None, **kwargs):
    """A new control panel on ``path`` (a directory, file or block device; may be typed later).

    Returns the :class:`ControlPanel`; as the last line of a cell it shows itself.
    Keyword arguments: ``tab`` (the tab shown first: "GPU", "Storage", "DataLoader",
    "Monitor", "History"), ``store`` (a :class:`nbbench.store.Store`; default the
    user's), ``display`` (True: display it now, for use inside a function).
    """
    show_now = kwargs.pop("display", False)
    from .app import ControlPanel

    p = ControlPanel(path, **kwargs)
    if show_now:
        from IPython.display import display

        display(p)
    return p


def __getattr__(name):
    if name == "ControlPanel":
        from .app import ControlPanel

        return ControlPanel
    raise AttributeError(name)
