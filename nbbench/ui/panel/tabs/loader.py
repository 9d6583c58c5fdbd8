"""DataLoader tab: ``feed`` and ``sweep`` on the dataset folder at PATH."""

from __future__ import annotations

from .base import Tab, unavailable_reason


class LoaderTab(Tab):
    title = "DataLoader"
    commands = ("feed", "sweep")

    def build(self):
        import ipywidgets as w

        notes = [f"{n}: {r}" for n in self.commands if (r := unavailable_reason(n))]
        text = "<br>".join(notes) or ""
        return w.VBox([w.HTML(f"<span style='color:#c62828'>not available yet: {text}</span>")])
