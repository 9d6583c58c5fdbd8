"""The loader benchmark's figure: throughput and GPU kernel-active % on one time axis,
and an AU gauge with its target line (drawn through a :class:`~.timeline.Timeline`'s
``annotate`` hook)."""

from __future__ import annotations

from .panel import Panel

__all__ = ["loader_panels", "AUGauge"]


def loader_panels(gpu_note: str = "") -> list[Panel]:
    """Throughput over 1 s windows; AU per window with GPU kernel-active % (``gpu_note``:
    why the GPU is N/A, shown in the title)."""
    return [
        Panel("throughput over 1 s windows", ["loader.samples_per_s"], unit="samples/s",
              labels={"loader.samples_per_s": "samples/s"}, styles={"loader.samples_per_s": {"color": "#1565c0"}}),
        Panel("AU per window and GPU kernel-active %" + (f" (GPU N/A: {gpu_note})" if gpu_note else ""),
              ["gpu*.util_pct", "loader.au_pct"], unit="%",
              ylim=(0, 105), labels={"loader.au_pct": "AU"},
              styles={"loader.au_pct": {"color": "#2e7d32", "linestyle": "--"}}),
    ]


class AUGauge:
    """A bar from 0 to 100 % beside the panels: the AU, green at or above ``target_pct``
    (drawn as a red line), orange below it, "—" without a value."""

    def __init__(self, target_pct: float = 90.0):
        self.target_pct = target_pct
        self.ax = None
        self.bar = None
        self.label = None

    def draw(self, fig, au: float | None) -> None:
        """Add the gauge to ``fig`` on first use, then show ``au``."""
        if self.ax is None:
            ax = fig.add_axes([0.90, 0.09, 0.035, 0.25])
            ax.set_xlim(0, 1)
            ax.set_ylim(0, 100)
            ax.set_xticks([])
            ax.tick_params(labelsize=7)
            ax.set_title("AU %", fontsize=8)
            ax.axhline(self.target_pct, color="#c62828", linewidth=1.5)
            ax.text(1.15, self.target_pct, f"{self.target_pct:g}%", transform=ax.get_yaxis_transform(),
                    fontsize=7, va="center", color="#c62828")
            self.bar = ax.bar([0.5], [0.0], width=0.9, color="#9e9e9e")[0]
            self.label = ax.text(0.5, 2, "", ha="center", va="bottom", fontsize=7, weight="bold")
            self.ax = ax
        if au is None:
            self.bar.set_height(0.0)
            self.label.set_text("—")
            return
        self.bar.set_height(au)
        self.bar.set_color("#2e7d32" if au >= self.target_pct else "#ef6c00")
        self.label.set_y(min(au, 88) + 1)
        self.label.set_text(f"{au:.0f}")
