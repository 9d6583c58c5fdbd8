"""The notebook view of :class:`nbbench.progress.Progress`: an ipywidgets bar with the
same fields as the terminal's line.  Like ``tqdm.notebook`` it is a thin subclass of the
core that only renders the core's ``format_dict``: the description (whole, never cut),
the bar, then "43% · 512 MiB/1.00 GiB · 2.1s<2.8s · 306 MB/s write"; the bar turns red on
failure, amber when interrupted, and the object keeps a text ``__repr__``.
"""

from __future__ import annotations

import html

from ..progress import Progress, meter_parts

__all__ = ["NotebookProgress"]

_STYLE = {"ok": "success", "failed": "danger", "interrupted": "warning", "running": ""}


class NotebookProgress(Progress):
    """``desc`` (an HTML label, whole), ``bar`` (a FloatProgress 0..1) and ``label`` (the
    figures) in ``widget`` (an HBox), redrawn from :meth:`~nbbench.progress.Progress.format_dict`."""

    min_interval = 0.1

    def __init__(self, desc: str = "", display_now: bool = True):
        super().__init__(desc)
        import ipywidgets as w

        self.desc_label = w.HTML(
            value=f"<span style='white-space:nowrap'>{html.escape(desc)}</span>", layout=w.Layout(margin="0 6px 0 0")
        )
        self.desc_label.add_class("nbbench-progress-desc")
        self.bar = w.FloatProgress(value=0.0, min=0.0, max=1.0, layout=w.Layout(width="30%", min_width="160px"))
        self.label = w.Label(value="")
        self.widget = w.HBox([self.desc_label, self.bar, self.label])
        if display_now:
            from IPython.display import display

            display(self.widget)

    def label_text(self) -> str:
        """The figures beside the bar: '43% · 512 MiB/1.00 GiB · 2.1s<2.8s · 306 MB/s write · ok'."""
        p = meter_parts(self.format_dict())
        return " · ".join(x for x in (p["pct"].strip(), p["count"], p["times"], p["rates"], p["status"]) if x)

    def draw(self) -> None:
        if self.fraction is None:
            self.bar.value = 1.0
            self.bar.bar_style = "info" if self.status == "running" else _STYLE.get(self.status, "")
        else:
            self.bar.value = self.fraction
            self.bar.bar_style = _STYLE.get(self.status, "")
        self.label.value = self.label_text()
