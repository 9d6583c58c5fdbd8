"""The control panel (``%iobench panel``, ``nbbench.panel()``): every probe behind one ipywidgets app.

Layer: front end, beside the magic (:mod:`nbbench.magics`) and the CLI
(:mod:`nbbench.cli`).  Like them it reaches the probes only through
:mod:`nbbench.commands`: each Run parses its tab's subcommand line with
:func:`nbbench.commands.parse`, runs and ends it with :func:`nbbench.commands.execute`;
the PATH field is described by :func:`nbbench.commands.storage.pathinfo.describe_path`.  It
may import everything below it (commands, report, ui, plots, measure, core),
ipywidgets and IPython.

Modules: :mod:`.app` (the panel), :mod:`.drawing` (how its runs draw in a tab's run area),
:mod:`.runner` (background runs, Stop, the panel's
Context), :mod:`.pathfield` (the PATH field, checked as you type), :mod:`.tabs` (GPU,
Storage, DataLoader, Monitor, History), :mod:`.views` (HTML of results and errors).

``nbbench.panel(...)`` calls :func:`panel`: this package is callable, like
``nbbench.monitor``.
"""

from __future__ import annotations

import sys
import types

__all__ = ["panel", "ControlPanel"]


def panel(path=None, **kwargs):
    """A new control panel on ``path`` (a directory, file or block device; may be typed later).

    Returns the :class:`ControlPanel`; as the last line of a cell it shows itself.
    Keyword arguments: ``tab`` (the tab shown first: "GPU", "Storage", "DataLoader",
    "Monitor", "History"), ``store`` (a :class:`nbbench.store.Store`; default the
    user's), ``display`` (True: display it now, for use inside a function).
    """
    show_now = kwargs.pop("display", False)
    # the app loads ipywidgets: only when a panel is opened
    from .app import ControlPanel

    p = ControlPanel(path, **kwargs)
    if show_now:
        from IPython.display import display

        display(p)
    return p


def __getattr__(name):
    if name == "ControlPanel":
        # the app loads ipywidgets: only when it is named
        from .app import ControlPanel

        return ControlPanel
    raise AttributeError(name)


class _CallableModule(types.ModuleType):
    """Lets ``nbbench.panel(...)`` work although ``nbbench.panel`` is a package."""

    def __call__(self, path=None, **kwargs):
        return panel(path, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
