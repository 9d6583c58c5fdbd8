"""History tab: stored runs, filtered by kind and label."""

from __future__ import annotations

from .base import Tab


class HistoryTab(Tab):
    title = "History"

    def build(self):
        import ipywidgets as w

        return w.VBox([w.HTML("history")])
