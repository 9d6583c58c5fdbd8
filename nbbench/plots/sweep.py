"""A DataLoader sweep's throughput by num_workers: one line per batch size, failed
configurations as crosses, the recommendation as a star, the accelerator's need as a line."""

from __future__ import annotations

from .loader import need_label
from .png import figure_png
from .style import FONT, draw_measured, draw_target, figsize

__all__ = ["sweep_figure", "sweep_png"]


def sweep_figure(res, ax=None):
    """Throughput against num_workers of a :class:`~nbbench.results.pipeline.sweep.SweepResult`,
    one line per batch size (configurations are points on it, never joined across batch
    sizes); on ``ax`` when given (returns its figure), else a new Figure.  None when no
    configuration was tried or only one (a lone dot: the table says it all)."""
    from matplotlib.figure import Figure

    configs = res.configs
    if len(configs) < 2:
        return None
    fig = None
    if ax is None:
        fig = Figure(figsize=figsize(8.0, 4.4, 100), dpi=100)
        ax = fig.add_subplot(1, 1, 1)
    extra_keys = [
        k
        for k in ("pin_memory", "prefetch_factor")
        if len({c[k] for c in configs if c["num_workers"] > 0 or k == "pin_memory"}) > 1
    ]
    groups: dict[tuple, list[dict]] = {}
    for c in configs:
        key = (c["batch_size"],) + tuple(c[k] for k in extra_keys if not (k == "prefetch_factor"))
        groups.setdefault(key, []).append(c)
    for key, cs in sorted(groups.items(), key=lambda kv: tuple(str(x) for x in kv[0])):
        ok = sorted(
            (c for c in cs if c.get("status") == "ok" and c.get("samples_per_s")), key=lambda c: c["num_workers"]
        )
        label = f"batch {key[0]}" + "".join(
            f", {k.replace('_memory', '')}={v}"
            for k, v in zip([k for k in extra_keys if k != "prefetch_factor"], key[1:])
        )
        if ok:
            # several prefetch factors at one worker count: show the best of them
            best: dict[int, dict] = {}
            for c in ok:
                if c["num_workers"] not in best or c["samples_per_s"] > best[c["num_workers"]]["samples_per_s"]:
                    best[c["num_workers"]] = c
            xs = sorted(best)
            draw_measured(ax, xs, [best[x]["samples_per_s"] for x in xs], label=label, marker="o")
        bad = [c for c in cs if c.get("status") != "ok"]
        if bad:
            ax.plot(
                [c["num_workers"] for c in bad],
                [0] * len(bad),
                linestyle="none",
                marker="x",
                color="#c62828",
                markersize=10,
                label=f"{label}: failed/skipped",
            )
    rec = res.recommended
    if rec and rec.get("samples_per_s"):
        ax.plot(
            [rec["num_workers"]],
            [rec["samples_per_s"]],
            marker="*",
            markersize=16,
            color="#f9a825",
            markeredgecolor="black",
            linestyle="none",
            label="recommended",
            zorder=5,
        )
    need = res.metrics.get("needed_samples_per_s")
    if need:
        au = (res.params or {}).get("au_target_pct") or 90.0
        draw_target(ax, need, need_label(res.labels.get("accelerator"), au, need))
    ax.set_xlabel("num_workers", fontsize=FONT["label"])
    ax.set_ylabel("samples/s", fontsize=FONT["label"])
    ax.set_title("DataLoader throughput by num_workers", fontsize=FONT["title"], loc="left")
    ax.tick_params(labelsize=FONT["tick"])
    ax.grid(True, alpha=0.3)
    ax.set_ylim(bottom=0)
    xs_all = sorted({c["num_workers"] for c in configs})
    if xs_all:
        ax.set_xticks(xs_all)
    ax.legend(fontsize=FONT["legend"], loc="best")
    if fig is not None:
        fig.tight_layout()
    return fig if fig is not None else ax.figure


def sweep_png(res) -> bytes:
    """:func:`sweep_figure` as PNG bytes (its own dpi, or more where it is narrow: :func:`.png.figure_png`)."""
    fig = sweep_figure(res)
    if fig is None:
        raise ValueError("fewer than two configurations: nothing to plot")
    return figure_png(fig, dpi=fig.dpi)
