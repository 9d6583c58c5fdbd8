"""A Figure as PNG bytes."""

from __future__ import annotations

import io

from .style import MIN_WIDTH_PX

__all__ = ["figure_png"]


def figure_png(fig, dpi: int = 100) -> bytes:
    """A Figure as PNG bytes (Agg), at least :data:`~.style.MIN_WIDTH_PX` wide (a narrower
    figure is saved at a higher dpi)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    if not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)
    dpi = max(float(dpi), MIN_WIDTH_PX / fig.get_figwidth())
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()
