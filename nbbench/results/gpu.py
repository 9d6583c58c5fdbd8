"""The GPU check's result (kind ``gpu``)."""

from __future__ import annotations

from typing import Any

from ..nvml import is_na
from ..units import format_bytes, format_metric, metric_label
from .base import Result, register
from .verdict import verdict_badge, worst_verdict

__all__ = ["GpuCheckResult", "device_line"]

@register("gpu")
class GpuCheckResult(Result):
    """The outcome of :func:`check`.  ``available``, ``reason``, ``devices``, ``verdicts``."""

    SUMMARY = ("device_count", "matmul_bf16_flop_per_s", "matmul_tf32_flop_per_s", "h2d_pinned_bytes_per_s")

    @property
    def available(self) -> bool:
        return bool(self.extra.get("available"))

    @property
    def devices(self) -> list[dict]:
        return self.extra.get("devices", [])

    @property
    def verdicts(self) -> list[dict]:
        return self.extra.get("verdicts", [])

    @property
    def versions(self) -> dict:
        return self.extra.get("versions", {})

    def judge(self) -> str | None:
        """fail when CUDA is not usable, else the worst of :attr:`verdicts`; None before the check ran."""
        if "available" in self.extra and not self.available:
            return "fail"
        return worst_verdict(v.get("status") for v in self.verdicts)

    def headline(self) -> str:
        if self.available:
            names = ", ".join(d.get("name") or "?" for d in self.devices)
            return f"gpu: CUDA available — {names}"
        return "gpu: CUDA not available"

    def __str__(self) -> str:
        if not self.available:
            return f"{self.headline()}: {self.reason}"
        return super().__str__()

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d["available"] = self.available
        return d

    def text_table(self) -> str:
        lines = [self.headline() + (f"  [checks: {self.verdict}]" if self.verdict else "")]
        if not self.available and self.reason:
            lines.append(f"  why: {self.reason}")
        v = self.versions
        lines.append("  " + "  ".join(f"{k}={v.get(k) if v.get(k) is not None else 'N/A'}"
                                       for k in ("torch", "cuda_build", "cudnn", "driver", "driver_cuda")))
        for dev in self.devices:
            lines.append(f"  [{dev.get('index')}] {device_line(dev)}")
        for k, val in self.metrics.items():
            lines.append(f"  {metric_label(k):<22}  {format_metric(k, val)}")
        for ver in self.verdicts:
            lines.append(f"  {ver['status'].upper():<4}  {ver['check']}: {ver['message']}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        import html

        esc = html.escape
        colour = {"ok": "#2e7d32", "warn": "#ef6c00", "fail": "#c62828"}
        out = [f"<div class='nbbench-result'><b>{esc(self.headline())}</b> {verdict_badge(self.verdict)}"]
        if not self.available and self.reason:
            out.append(f"<div>why: {esc(self.reason)}</div>")
        v = self.versions
        out.append("<div style='font-size:90%'>" + " · ".join(
            f"{k}: <code>{esc(str(v.get(k)) if v.get(k) is not None else 'N/A')}</code>"
            for k in ("torch", "cuda_build", "cudnn", "driver", "driver_cuda")) + "</div>")
        if self.devices:
            out.append("<ul>" + "".join(f"<li>[{d.get('index')}] {esc(device_line(d))}</li>"
                                        for d in self.devices) + "</ul>")
        base = Result._repr_html_(self)
        if self.metrics:
            start = base.find("<table")
            end = base.find("</table>") + len("</table>")
            out.append(base[start:end])
        out.append("<table>" + "".join(
            f"<tr><td style='color:{colour.get(x['status'], '#000')};font-weight:bold'>{esc(x['status'])}</td>"
            f"<td style='text-align:left'>{esc(x['check'])}</td><td style='text-align:left'>{esc(x['message'])}</td></tr>"
            for x in self.verdicts) + "</table></div>")
        return "".join(out)


def _fmt(v, fn=str):
    return "N/A" if v is None or is_na(v) else fn(v)


def device_line(d: dict) -> str:
    parts = [d.get("name") or "unknown"]
    if d.get("compute_capability"):
        parts.append(f"sm_{d['compute_capability'].replace('.', '')}")
    if d.get("memory_total_bytes"):
        parts.append(f"{format_bytes(d.get('memory_free_bytes'), True)} free of "
                     f"{format_bytes(d['memory_total_bytes'], True)}")
    if d.get("pcie_gen") is not None:
        parts.append(f"PCIe gen{d['pcie_gen']} x{d.get('pcie_width')}"
                     + (f" (max gen{d.get('pcie_gen_max')} x{d.get('pcie_width_max')})"
                        if d.get("pcie_width_max") else ""))
    if d.get("mig_mode") is not None:
        parts.append(f"MIG {'on' if d['mig_mode'] else 'off'}")
    for key, unit in (("utilization_pct", "% busy"), ("temperature_c", " °C"), ("power_w", " W")):
        if d.get(key) is not None:
            parts.append(f"{d[key]:.0f}{unit}")
    return ", ".join(parts)
