"""Monitor tab: sample GPU, CPU and disk with a live plot until Stop."""

from __future__ import annotations

from .base import Tab


class MonitorTab(Tab):
    title = "Monitor"

    def build(self):
        import ipywidgets as w

        return w.VBox([w.HTML("<span style='color:#c62828'>not available yet</span>")])
