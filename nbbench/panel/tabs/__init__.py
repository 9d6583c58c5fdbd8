"""The panel's tabs: GPU · Storage · DataLoader · Object storage · Monitor · History.

Layer: front end (part of :mod:`nbbench.panel`).  A tab turns its widgets into a
subcommand line that :func:`nbbench.commands.parse` checks, exactly as ``%iobench``
and ``nbbench`` would; it may import what the panel may, never a probe directly.
"""

from .base import Tab

__all__ = ["Tab", "TAB_CLASSES"]


def TAB_CLASSES():
    # the tabs load ipywidgets: only when the panel is built
    from .gpu import GpuTab
    from .history import HistoryTab
    from .loader import LoaderTab
    from .monitor import MonitorTab
    from .objects import ObjectsTab
    from .storage import StorageTab

    return [GpuTab, StorageTab, LoaderTab, ObjectsTab, MonitorTab, HistoryTab]
