"""Result of the copies probe (kind ``copies``): bandwidthTest's and p2pBandwidthLatencyTest's questions.

Metrics: ``h2d_pageable_bytes_per_s``, ``h2d_pinned_bytes_per_s``, ``d2h_pageable_bytes_per_s``,
``d2h_pinned_bytes_per_s`` (median of the timed copies on GPU 0; each copy's rate in ``samples``),
``h2d_pinned_gain_pct`` / ``d2h_pinned_gain_pct`` (what pinned memory buys), ``p2p_min_bytes_per_s``,
``p2p_median_bytes_per_s`` (the direct GPU-to-GPU copies).  ``extra["matrix"]``: ``bw`` (direct,
src row → dst column), ``bw_host`` (staged through pinned host memory: peer access off), ``lat_us``
(a 4-byte copy), ``peer`` (``torch.cuda.can_device_access_peer``).
"""

from __future__ import annotations

from ...units import format_many, format_rate
from .. import drawing
from ..base import Result, register
from ..present import SEP, Section

__all__ = ["CopiesResult"]


@register("copies")
class CopiesResult(Result):
    SUMMARY = ("h2d_pinned_bytes_per_s", "h2d_pageable_bytes_per_s", "d2h_pinned_bytes_per_s", "p2p_min_bytes_per_s")
    QUALIFIERS = ("device", "timing")

    def headline(self) -> str:
        return f"copies on {self.extra.get('gpus', '?')} GPU(s)"

    def answer_line(self) -> str:
        m = self.metrics
        if self.status == "failed":
            return f"copies failed: {self.reason}"
        bits = []
        for way, words in (("h2d", "host→device"), ("d2h", "device→host")):
            pin, page = m.get(f"{way}_pinned_bytes_per_s"), m.get(f"{way}_pageable_bytes_per_s")
            if pin is not None and page is not None:
                a, b = format_many([pin, page], "B/s")
                bits.append(f"{words} {a} pinned, {b} pageable")
        if m.get("p2p_min_bytes_per_s") is not None:
            bits.append(f"GPU→GPU ≥ {format_rate(m['p2p_min_bytes_per_s'], 'bytes/s')}")
        return SEP.join(bits) or "no figures"

    def sections(self) -> list[Section]:
        """The GPU-to-GPU pairs (the matrix as rows; the heat map is :meth:`figure`)."""
        mx = self.extra.get("matrix")
        if not mx:
            return super().sections()
        n = len(mx["bw"])
        rows = []
        for i in range(n):
            for j in range(n):
                if i == j:
                    continue
                peer = (mx.get("peer") or [[None] * n] * n)[i][j]
                lat = mx["lat_us"][i][j]
                rows.append(
                    [
                        f"GPU {i} → GPU {j}",
                        "N/A" if mx["bw"][i][j] is None else format_rate(mx["bw"][i][j], "bytes/s"),
                        "N/A" if mx["bw_host"][i][j] is None else format_rate(mx["bw_host"][i][j], "bytes/s"),
                        "N/A" if lat is None else f"{lat:.1f}",
                        "N/A" if peer is None else ("on" if peer else "off"),
                    ]
                )
        head = ["pair", "direct", "through host memory", "latency µs (4 B)", "peer access"]
        out = [
            Section(f"GPU→GPU copies of {mx.get('bytes', 0) >> 20} MiB", rows, head=head, folded=False, align="lrrrl")
        ]
        return out + super().sections()

    def figure(self):
        """The GPU→GPU copy matrix (the "copy_matrix" drawer: :mod:`nbbench.results.drawing`)."""
        return drawing.draw("copy_matrix", self)
