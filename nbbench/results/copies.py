"""Result of the copies probe (kind ``copies``): bandwidthTest's and p2pBandwidthLatencyTest's questions.

Metrics: ``h2d_pageable_bytes_per_s``, ``h2d_pinned_bytes_per_s``, ``d2h_pageable_bytes_per_s``,
``d2h_pinned_bytes_per_s`` (median of the timed copies on GPU 0; each copy's rate in ``samples``),
``h2d_pinned_gain_pct`` / ``d2h_pinned_gain_pct`` (what pinned memory buys), ``p2p_min_bytes_per_s``,
``p2p_median_bytes_per_s`` (the direct GPU-to-GPU copies).  ``extra["matrix"]``: ``bw`` (direct,
src row → dst column), ``bw_host`` (staged through pinned host memory: peer access off), ``lat_us``
(a 4-byte copy), ``peer`` (``torch.cuda.can_device_access_peer``).
"""

from __future__ import annotations

from ..units import format_many, format_rate
from .base import Result, register
from .present import SEP, Section

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
        out = []
        mx = self.extra.get("matrix")
        if mx:
            n = len(mx["bw"])
            for key, title, fmt in (
                ("bw", "GPU→GPU bandwidth, direct (src row → dst column)", "bw"),
                ("bw_host", "GPU→GPU bandwidth through host memory (peer access off)", "bw"),
                ("lat_us", "GPU→GPU latency, 4-byte copy (µs)", "lat"),
            ):
                rows = []
                for i in range(n):
                    vals = mx[key][i]
                    if fmt == "bw":
                        cells = format_many([v for v in vals], "B/s")
                        cells = ["—" if vals[j] is None else cells[j] for j in range(n)]
                    else:
                        cells = ["—" if v is None else f"{v:.1f}" for v in vals]
                    rows.append([f"GPU {i}"] + cells)
                out.append(Section(title, rows, head=["src \\ dst"] + [f"GPU {j}" for j in range(n)], folded=False))
            peer = mx.get("peer") or []
            if peer:
                rows = [
                    [f"GPU {i}"] + ["—" if v is None else ("on" if v else "off") for v in r] for i, r in enumerate(peer)
                ]
                out.append(Section("peer access", rows, head=["src \\ dst"] + [f"GPU {j}" for j in range(n)]))
        return out + super().sections()

    def figure(self):
        from ..plots.gpunode import matrix_figure

        return matrix_figure(self)
