"""The loader benchmark's figure: throughput and GPU kernel-active % on one time axis,
with the target lines that answer the question (the samples/s an accelerator needs, AU
90 %), and an AU gauge with its target line (drawn through a :class:`~.timeline.Timeline`'s
``annotate`` hook)."""

from __future__ import annotations

from ..units import format_metric
from .style import FONT, TARGET
from .subplot import Subplot

__all__ = ["loader_subplots", "need_label", "need_targets", "AUGauge"]


def need_label(accelerator: str | None, au_target_pct: float = 90.0, need: float | None = None) -> str:
    """The target line's text: 'needed by h100-resnet50 at AU 90 %: 1.79 ksamples/s'."""
    who = f"needed by {accelerator}" if accelerator else "needed"
    return f"{who} at AU {au_target_pct:g} %" + (f": {format_metric('samples_per_s', need)}" if need else "")


def need_targets(need: float | None, accelerator: str | None = None, au_target_pct: float = 90.0) -> dict:
    """A throughput subplot's ``targets``: the need line, labelled (:func:`need_label`); none without a need."""
    return {need_label(accelerator, au_target_pct, need): need} if need else {}


def loader_subplots(
    gpu_note: str = "", need: float | None = None, accelerator: str | None = None, au_target_pct: float = 90.0
) -> list[Subplot]:
    """Throughput over 1 s windows, with the samples/s the accelerator needs (``need``) as a
    target line; AU per window with GPU kernel-active % and the AU target line
    (``gpu_note``: why the GPU is N/A, in the subplot's title)."""
    return [
        Subplot(
            "throughput over 1 s windows",
            ["loader.samples_per_s"],
            unit="samples/s",
            labels={"loader.samples_per_s": "samples/s"},
            styles={"loader.samples_per_s": {"color": "#1565c0"}},
            targets=need_targets(need, accelerator, au_target_pct),
        ),
        Subplot(
            "AU per window and GPU kernel-active %" + (" (GPU N/A)" if gpu_note else ""),
            ["gpu*.util_pct", "loader.au_pct"],
            unit="%",
            ylim=(0, 105),
            labels={"loader.au_pct": "AU", **{f"gpu{i}.util_pct": f"GPU{i} busy" for i in range(8)}},
            styles={"loader.au_pct": {"color": "#6a1b9a"}},  # measured: solid; the AU target is dashed
            targets={f"AU target {au_target_pct:g} %": au_target_pct},
        ),
    ]


class AUGauge:
    """A bar from 0 to 100 % beside the subplots: the AU, green at or above ``target_pct``
    (drawn as a line), orange below it, "—" without a value."""

    def __init__(self, target_pct: float = 90.0):
        self.target_pct = target_pct
        self.ax = None
        self.bar = None
        self.label = None

    def draw(self, fig, au: float | None) -> None:
        """Add the gauge to ``fig`` on first use, then show ``au``."""
        if self.ax is None:
            ax = fig.add_axes([0.885, 0.075, 0.035, 0.17])  # under the AU subplot's legend
            ax.set_xlim(0, 1)
            ax.set_ylim(0, 100)
            ax.set_xticks([])
            ax.tick_params(labelsize=FONT["tick"])
            ax.set_title("AU %", fontsize=FONT["label"])
            ax.axhline(self.target_pct, color=TARGET, linewidth=1.8)
            ax.text(
                1.15,
                self.target_pct,
                f"{self.target_pct:g}%",
                transform=ax.get_yaxis_transform(),
                fontsize=FONT["note"],
                va="center",
                color=TARGET,
            )
            self.bar = ax.bar([0.5], [0.0], width=0.9, color="#9e9e9e")[0]
            self.label = ax.text(0.5, 2, "", ha="center", va="bottom", fontsize=FONT["value"], weight="bold")
            self.ax = ax
        if au is None:
            self.bar.set_height(0.0)
            self.label.set_text("—")
            return
        self.bar.set_height(au)
        self.bar.set_color("#2e7d32" if au >= self.target_pct else "#ef6c00")
        inside = au >= 25  # the figure inside the bar (white), else above it
        self.label.set_y(au - 2 if inside else au + 1)
        self.label.set_va("top" if inside else "bottom")
        self.label.set_color("white" if inside else "black")
        self.label.set_text(f"{au:.0f}")
