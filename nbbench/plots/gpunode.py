"""A collectives run's busbw against size: one line per operation (its first placement that ran:
out-of-place where torch has it), log-scaled sizes, the spread of the timed calls as a band, and the
expected link's own speed as a dashed line where it is known (NVLink, PCIe; none on gloo / CPU)."""

from __future__ import annotations

from ..probes.gpunode.table import primary_rows
from .png import figure_png
from .style import FONT, draw_measured, draw_target, figsize

__all__ = ["busbw_figure", "busbw_png", "matrix_figure"]

_COLOURS = ("#1565c0", "#2e7d32", "#ef6c00", "#6a1b9a", "#00838f", "#c62828")


def busbw_figure(res, ax=None):
    """busbw (GB/s) by size of a :class:`~nbbench.results.system.collectives.CollectivesResult`; None without rows."""
    from matplotlib.figure import Figure

    rows = res.rows
    if not any(r.get("busbw_bytes_per_s") for r in rows):
        return None
    fig = None
    if ax is None:
        fig = Figure(figsize=figsize(9.0, 4.8, 100), dpi=100)
        ax = fig.add_subplot(1, 1, 1)
    ops = list(dict.fromkeys(r["op"] for r in rows))
    for i, op in enumerate(ops):
        got = primary_rows(rows, op)
        if not got:
            continue
        c = _COLOURS[i % len(_COLOURS)]
        xs = [r["size_bytes"] for r in got]
        draw_measured(
            ax,
            xs,
            [r["busbw_bytes_per_s"] / 1e9 for r in got],
            label=f"{op} ({got[0]['placement']})",
            color=c,
            fmt=lambda v: f"{v:.2f}",
        )
        lo = [r.get("busbw_min_bytes_per_s") for r in got]
        hi = [r.get("busbw_max_bytes_per_s") for r in got]
        if all(v is not None for v in lo + hi) and len(xs) > 1:
            ax.fill_between(xs, [v / 1e9 for v in lo], [v / 1e9 for v in hi], color=c, alpha=0.12, linewidth=0)
    exp = res.extra.get("expected_link") or {}
    if exp.get("bytes_per_s"):
        draw_target(ax, exp["bytes_per_s"] / 1e9, f"{exp['name']}: {exp['bytes_per_s'] / 1e9:.0f} GB/s one way")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("size (bytes, log scale)", fontsize=FONT["label"])
    ax.set_ylabel("busbw (GB/s)", fontsize=FONT["label"])
    n = res.labels.get("ranks", "?")
    where = res.labels.get("backend", "?")
    title = f"collectives busbw by size — {n} ranks, {where}"
    if not exp.get("bytes_per_s"):
        title += " (no GPU link to compare with)" if where != "nccl" else " (expected link not known)"
    ax.set_title(title, fontsize=FONT["title"], loc="left")
    ax.tick_params(labelsize=FONT["tick"])
    ax.grid(True, alpha=0.3)
    ax.set_ylim(bottom=0)
    ax.xaxis.set_major_formatter(_size_formatter())
    ax.legend(fontsize=FONT["legend"], loc="upper left")
    if fig is not None:
        fig.tight_layout()
    return fig if fig is not None else ax.figure


def _size_formatter():
    from matplotlib.ticker import FuncFormatter

    def fmt(v, _pos):
        for unit, f in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
            if v >= f:
                return f"{v / f:g}{unit}"
        return f"{v:g}"

    return FuncFormatter(fmt)


def busbw_png(res) -> bytes:
    """:func:`busbw_figure` as PNG bytes (its own dpi, or more where it is narrow: :func:`.png.figure_png`)."""
    fig = busbw_figure(res)
    if fig is None:
        raise ValueError("no busbw figures: nothing to plot")
    return figure_png(fig, dpi=fig.dpi)


def matrix_figure(res):
    """The GPU-to-GPU bandwidth matrix of a :class:`~nbbench.results.system.copies.CopiesResult` as a heat map
    (direct copies; GB/s written in each cell); None with fewer than two GPUs."""
    from matplotlib.figure import Figure

    mx = res.extra.get("matrix")
    if not mx or len(mx.get("bw") or []) < 2:
        return None
    n = len(mx["bw"])
    import matplotlib

    nan = float("nan")
    vals = [[nan if v is None else v / 1e9 for v in row] for row in mx["bw"]]
    top = max((v for row in vals for v in row if v == v), default=1.0)
    fig = Figure(figsize=figsize(max(8.0, 1.1 * n + 3), max(4.0, 0.9 * n + 2), 100), dpi=100)
    ax = fig.add_subplot(1, 1, 1)
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad="#eeeeee")  # the diagonal: no copy to itself
    im = ax.imshow(vals, cmap=cmap, vmin=0)
    for i in range(n):
        for j in range(n):
            v = vals[i][j]
            text = "—" if v != v else f"{v:.0f}"
            ink = "black" if v != v or v > 0.6 * top else "white"  # readable on yellow and on purple
            ax.text(j, i, text, ha="center", va="center", color=ink, fontsize=FONT["value"])
    ax.set_xticks(range(n))
    ax.set_yticks(range(n))
    ax.set_xticklabels([f"GPU {j}" for j in range(n)], fontsize=FONT["tick"])
    ax.set_yticklabels([f"GPU {i}" for i in range(n)], fontsize=FONT["tick"])
    ax.set_xlabel("destination", fontsize=FONT["label"])
    ax.set_ylabel("source", fontsize=FONT["label"])
    ax.set_title("GPU→GPU copy bandwidth, direct (GB/s)", fontsize=FONT["title"], loc="left")
    cb = fig.colorbar(im, ax=ax)
    cb.set_label("GB/s", fontsize=FONT["label"])
    fig.tight_layout()
    return fig
