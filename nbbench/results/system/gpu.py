"""The GPU check's result (kind ``gpu``)."""

from __future__ import annotations

from typing import Any

from ...nvml import is_na
from ...units import format_bytes
from ..base import Result, register
from ..present.rule import SEP, Section
from ..verdict import worst_verdict

__all__ = ["GpuCheckResult", "device_line", "first_clause"]


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

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d["available"] = self.available
        return d

    def headline(self) -> str:
        return "gpu check"

    def windows(self, key: str) -> list[float]:
        """The benchmark's per-iteration rates of figure ``key`` (``matmul_bf16_flop_per_s`` from
        ``samples["matmul_bf16_ms"]``: the figure's work over each timed iteration), for the
        within-run spread; a figure without iterations: :meth:`Result.windows`."""
        stem = key.replace("_flop_per_s", "").replace("_bytes_per_s", "")
        times = self.samples.get(f"{stem}_ms")
        value = self.metrics.get(key)
        if not isinstance(times, list) or not times or not value:
            return super().windows(key)
        import statistics

        work = value * statistics.median(times)  # the figure is the work over the median time
        return [work / t for t in times if t and t > 0]

    def findings(self) -> dict[str, int] | None:
        found: dict[str, int] = {}
        for v in self.verdicts:
            found[v.get("status")] = found.get(v.get("status"), 0) + 1
        return found or None

    def answer_line(self) -> str:
        """'CUDA available on 8 × NVIDIA H100 80GB HBM3 · 756 TFLOP/s matmul bf16 · …', or why not:
        'CUDA not available: this torch (2.13.0+cpu) is a CPU-only build'."""
        if not self.available:
            if "available" not in self.extra:
                return "not checked"
            return f"CUDA not available: {first_clause(self.reason or 'no reason given')}"
        names: dict[str, int] = {}
        for d in self.devices:
            names[d.get("name") or "unknown GPU"] = names.get(d.get("name") or "unknown GPU", 0) + 1
        where = ", ".join(f"{n} × {name}" for name, n in names.items()) or "no device listed"
        figs = [self.phrase(k) for k in self.SUMMARY[1:] if self.metrics.get(k) is not None]
        return SEP.join([f"CUDA available on {where}"] + figs)

    def qualifiers(self) -> list[tuple[str, str]]:
        """torch's version and build, cuDNN, the driver and the CUDA it supports."""
        v = self.versions
        out = [
            ("torch", str(v.get("torch") or "not installed")),
            ("CUDA build", str(v.get("cuda_build") or "none (CPU-only)")),
        ]
        out += [
            (name, str(v[k]))
            for name, k in (("cuDNN", "cudnn"), ("driver", "driver"), ("driver's CUDA", "driver_cuda"))
            if v.get(k) is not None
        ]
        return out

    def story(self) -> list[str]:
        """What to do about it: the rest of the reason after what the answer said ("fix: install
        a CUDA build, e.g. pip install torch …"); nothing said twice."""
        out = [
            f"health: {f['message']}"
            for f in (self.extra.get("health") or {}).get("findings") or []
            if f.get("gpu") is None and f.get("status") is None  # "no GPU visible: …": said once
        ]
        if self.available or not self.reason:
            return out
        said = first_clause(self.reason)
        rest = self.reason[len(said) :].lstrip(": ").strip()
        return ([f"fix: {rest}"] if rest else []) + out

    def sections(self) -> list[Section]:
        """The checks (open, each with its status) but the one the answer already says, the
        devices, then every figure (folded)."""
        out = []
        shown = [x for x in self.verdicts if self.available or x.get("message") != self.reason]
        if shown:
            title = "checks" if len(shown) == len(self.verdicts) else "other checks"
            out.append(
                Section(
                    title,
                    [[x["status"].upper(), x["check"], x["message"]] for x in shown],
                    head=None,
                    folded=False,
                    align="lll",
                    marks=[x["status"] for x in shown],
                    css="nbbench-checks",
                )
            )
        if self.devices:
            out.append(
                Section(
                    "devices", [[f"[{d.get('index')}]", device_line(d)] for d in self.devices], folded=False, align="ll"
                )
            )
        return out + [s for s in super().sections() if s.css == "nbbench-metrics"]


def first_clause(text: str) -> str:
    """The part of a sentence before its first ': ' outside brackets ('no NVIDIA driver found
    (NVML: not found): run …' -> 'no NVIDIA driver found (NVML: not found)')."""
    depth = 0
    for i, ch in enumerate(text):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth = max(0, depth - 1)
        elif ch == ":" and depth == 0 and text[i + 1 : i + 2] == " ":
            return text[:i]
    return text


def _fmt(v, fn=str):
    return "N/A" if v is None or is_na(v) else fn(v)


def device_line(d: dict) -> str:
    parts = [d.get("name") or "unknown"]
    if d.get("compute_capability"):
        parts.append(f"sm_{d['compute_capability'].replace('.', '')}")
    if d.get("memory_total_bytes"):
        parts.append(
            f"{format_bytes(d.get('memory_free_bytes'), True)} free of {format_bytes(d['memory_total_bytes'], True)}"
        )
    if d.get("pcie_gen") is not None:
        parts.append(
            f"PCIe gen{d['pcie_gen']} x{d.get('pcie_width')}"
            + (f" (max gen{d.get('pcie_gen_max')} x{d.get('pcie_width_max')})" if d.get("pcie_width_max") else "")
        )
    if d.get("mig_mode") is not None:
        parts.append(f"MIG {'on' if d['mig_mode'] else 'off'}")
    for key, unit in (("utilization_pct", "% busy"), ("temperature_c", " °C"), ("power_w", " W")):
        if d.get(key) is not None:
            parts.append(f"{d[key]:.0f}{unit}")
    return ", ".join(parts)
