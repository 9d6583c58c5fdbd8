"""Drawing a result without importing any drawing code: a registry of drawers.

Layer: core.  As pandas' ``DataFrame.plot`` hands the frame to a plotting backend it looks up
by name (``pd.options.plotting.backend``), a result's ``.plot()`` / ``.figure()`` /
``.png()`` and a comparison's bar chart hand themselves to the drawer registered under a name
("sweep", "monitor", "compare", "png", …).  The core never names a drawing module: the
package's front (``nbbench/__init__.py``) says which module registers the built-in drawers
(:func:`use`: :mod:`nbbench.plots.backend`), imported the first time something is drawn;
other code may :func:`register` a drawer of its own.  So importing a result stays light, and
the package graph has no cycle through the plots.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

__all__ = ["register", "use", "drawer", "draw", "NoDrawer"]

_DRAWERS: dict[str, Callable[..., Any]] = {}
#: modules that register drawers when imported, in the order :func:`use` named them; each imported once
_BACKENDS: list[str] = []
_LOADED: set[str] = set()


class NoDrawer(LookupError):
    """Nothing registered draws this: the plotting backend is not installed or not named."""


def register(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """Register ``fn`` as the drawer called ``name`` (a later registration replaces it); returns ``fn``."""
    _DRAWERS[name] = fn
    return fn


def use(module: str) -> None:
    """Name a module that registers drawers when imported; imported when a drawer is first asked for."""
    if module not in _BACKENDS:
        _BACKENDS.append(module)


def drawer(name: str) -> Callable[..., Any]:
    """The drawer called ``name``, importing the named backends the first time; :class:`NoDrawer` when none is."""
    if name not in _DRAWERS:
        for module in [m for m in _BACKENDS if m not in _LOADED]:
            importlib.import_module(module)
            _LOADED.add(module)
    try:
        return _DRAWERS[name]
    except KeyError:
        raise NoDrawer(f"no drawer for {name!r}: backends {_BACKENDS or 'none named'}") from None


def draw(name: str, *args, **kwargs):
    """Call the drawer called ``name`` with the arguments (a figure, PNG bytes, or None: nothing to draw)."""
    return drawer(name)(*args, **kwargs)
