"""The s3 probe's concurrency sweep: GET throughput against streams, the knee marked."""

from __future__ import annotations

from .style import FONT, display_unit, figsize, value_text

__all__ = ["s3_sweep_figure"]


def s3_sweep_figure(res, ax=None):
    """GET bytes/s against concurrent streams of an :class:`~nbbench.results.storage.objects.S3Result`'s
    sweep (log2 x axis), the knee starred; a line through 5 levels or more, markers with their
    values below that.  None without a sweep of two levels or more (the table says it all)."""
    from matplotlib.figure import Figure

    rows = [r for r in (res.samples.get("sweep") or []) if r.get("get_bytes_per_s")]
    if len(rows) < 2:
        return None
    fig = None
    if ax is None:
        fig = Figure(figsize=figsize(8.0, 4.2, 100), dpi=100)
        ax = fig.add_subplot(1, 1, 1)
    xs = [r["streams"] for r in rows]
    vmax = max(r["get_bytes_per_s"] for r in rows)
    f, unit = display_unit("bytes/s", vmax)
    ys = [r["get_bytes_per_s"] * f for r in rows]
    if len(rows) >= 5:
        ax.plot(xs, ys, marker="o", color="#1565c0", label="GET throughput")
    else:
        ax.plot(xs, ys, marker="o", linestyle="none", color="#1565c0", label="GET throughput")
        for x, y in zip(xs, ys):
            ax.annotate(
                value_text(y), (x, y), textcoords="offset points", xytext=(0, 6), ha="center", fontsize=FONT["value"]
            )
    k = res.metrics.get("knee_streams_count")
    if k in xs:
        y = ys[xs.index(k)]
        ax.plot(
            [k],
            [y],
            marker="*",
            markersize=16,
            color="#f9a825",
            markeredgecolor="black",
            linestyle="none",
            label=f"knee: {k} streams (within 5 % of the best)",
            zorder=5,
        )
    ax.set_xscale("log", base=2)
    ax.set_xticks(xs)
    ax.set_xticklabels([str(x) for x in xs])
    ax.set_ylim(0, max(ys) * 1.15)
    ax.set_xlabel("concurrent GET streams", fontsize=FONT["label"])
    ax.set_ylabel(f"GET throughput [{unit}]", fontsize=FONT["label"])
    ax.set_title(f"{res.headline()} — concurrency sweep", fontsize=FONT["title"], fontweight="bold")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=FONT["legend"], loc="lower right")
    return fig if fig is not None else ax.figure
