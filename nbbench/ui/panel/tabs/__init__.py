"""The panel's tabs: GPU · Storage · DataLoader · Monitor · History."""

from .base import Tab

__all__ = ["Tab", "TAB_CLASSES"]


def TAB_CLASSES():
    from .gpu import GpuTab
    from .history import HistoryTab
    from .loader import LoaderTab
    from .monitor import MonitorTab
    from .storage import StorageTab

    return [GpuTab, StorageTab, LoaderTab, MonitorTab, HistoryTab]
