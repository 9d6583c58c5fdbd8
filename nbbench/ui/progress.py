"""The notebook view of :class:`nbbench.progress.Progress`: an ipywidgets bar with
the live rate.  Like ``tqdm.notebook`` it is a thin subclass of the core: the bar
turns red on failure, orange when interrupted, and keeps a text ``__repr__``.
"""

from __future__ import annotations

from ..progress import Progress

__all__ = ["NotebookProgress"]

_STYLE = {"ok": "success", "failed": "danger", "interrupted": "warning", "running": ""}


class NotebookProgress(Progress):
    min_interval = 0.1

    def __init__(self, desc: str = "", display_now: bool = True):
        super().__init__(desc)
        import ipywidgets as w

        self.bar = w.FloatProgress(value=0.0, min=0.0, max=1.0, description=desc[:20],
                                   layout=w.Layout(width="40%"))
        self.label = w.Label(value="")
        self.widget = w.HBox([self.bar, self.label])
        if display_now:
            from IPython.display import display

            display(self.widget)

    def draw(self) -> None:
        if self.fraction is None:
            self.bar.bar_style = "info"
            self.bar.value = 1.0
        else:
            self.bar.value = self.fraction
        self.bar.bar_style = _STYLE.get(self.status, "")
        self.label.value = self.text().replace(self.desc, "", 1).strip()
