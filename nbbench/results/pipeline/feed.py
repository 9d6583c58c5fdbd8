"""The result class of the ``feed`` probe: how many accelerators storage and CPU can feed.

Also the "why / fix" wording by what limits a feed (:data:`CPU_HELP`, :data:`STORAGE_HELP`),
shared with :mod:`nbbench.probes.pipeline.feedlimit`.
"""

from __future__ import annotations

from ...units import format_metric
from ..base import Result, label, metric, register
from ..present.rule import SEP, Section
from .loader import _accelerator_names, feeds_phrase

__all__ = ["FeedResult", "CPU_HELP", "STORAGE_HELP"]

#: what helps when CPU preparation limits a feed, and when storage fetch does
CPU_HELP = "more CPU cores / workers or cheaper decoding (smaller or pre-resized images, DALI on the GPU)"
STORAGE_HELP = "faster storage or caching the dataset in memory"
#: the feed's "why / fix" line by what limits it (``labels["limiter_basis"]``)
FEED_WHY = {
    "warm short": f"even from memory (warm cache) preparation falls short: {CPU_HELP} help; faster storage or "
    "caching does not, until preparation keeps up",
    "cold short": f"from memory (warm cache) it would keep up: {STORAGE_HELP} helps more than CPUs",
    "storage ceiling": f"from memory (warm cache) it would feed more: {STORAGE_HELP} helps more than CPUs",
    "CPU ceiling": f"reading from storage costs little: {CPU_HELP} help feed more",
}


@register("feed")
class FeedResult(Result):
    """Storage + CPU against accelerators' appetite: how many can be fed at AU >= 90 %."""

    SUMMARY = ("accelerators_fed_count", "cold_samples_per_s", "warm_samples_per_s", "needed_samples_per_s")
    INLINE_SPREAD = False

    def headline(self) -> str:
        return f"feed {self.params.get('path', '')} → {self.labels.get('accelerator', '')}".strip()

    accelerators_fed = metric("accelerators_fed_count")

    limiter = label()

    @property
    def answer(self) -> str:
        return self.extra.get("answer") or self.labels.get("answer", "")

    def accelerators_frame(self):
        """Every emulated accelerator of the same workload: need and how many are fed."""
        return self.samples_frame("accelerators")

    def metric_name(self, key: str) -> str:
        """Names that say which accelerator: "one h100-resnet50's AU at this rate", "h100-resnet50 consumes"."""
        own = {"samples_per_s": "throughput (cold cache)", **_accelerator_names(self)}
        return own.get(key) or super().metric_name(key)

    def answer_line(self) -> str:
        """'feeds 3 × h100-resnet50 · storage fetch limits it', 'feeds no h100-resnet50 (one would
        run at AU 3.06 %) · CPU preparation limits it' (the rates are the table under it)."""
        m, acc = self.metrics, self.labels.get("accelerator") or "accelerator"
        n = m.get("accelerators_fed_count")
        head = feeds_phrase(n, acc)
        if n == 0 and m.get("au_one_accelerator_pct") is not None:
            head += f" (one would run at AU {format_metric('au_pct', m['au_one_accelerator_pct'])})"
        out = [head]
        if self.limiter:
            out.append(f"{self.limiter} limits it")
        elif m.get("cold_samples_per_s") is not None:
            out.append(f"{format_metric('samples_per_s', m['cold_samples_per_s'])} from storage")
        return SEP.join(out)

    def story(self) -> list[str]:
        """The one "why / fix" line that follows what limits it (the figures are in the answer
        and the rates table; :attr:`answer` keeps the whole sentence)."""
        why = FEED_WHY.get(self.labels.get("limiter_basis") or "")
        if why:
            return [f"why: {why}."]
        return [self.answer] if self.answer else []  # a run stored before the basis was kept

    def sections(self) -> list[Section]:
        """Cold and warm rates against the need (open), then every accelerator of the same
        workload, every figure and how it was measured (folded)."""
        m, acc = self.metrics, self.labels.get("accelerator") or "accelerator"

        def cells(name, sps, bps):
            return [
                name,
                format_metric("samples_per_s", m.get(sps)),
                format_metric("bytes_per_s", m.get(bps)) if bps else "",
            ]

        rows = [
            cells("from storage (cold cache)", "cold_samples_per_s", "cold_bytes_per_s"),
            cells("from memory (warm cache)", "warm_samples_per_s", "warm_bytes_per_s"),
            cells(f"one {acc} needs", "needed_samples_per_s", None),
            cells(f"one {acc} consumes", "accelerator_samples_per_s", None),
        ]
        out = [Section("rates", rows, head=["", "samples/s", "bandwidth"], folded=False, css="nbbench-feed")]
        accs = self.samples.get("accelerators")
        if isinstance(accs, dict) and accs.get("accelerator"):
            cols = [c for c in ("accelerator", "needed_samples_per_s", "fed_count", "fed_warm_count") if c in accs]
            head = {
                "accelerator": "accelerator",
                "needed_samples_per_s": "one needs",
                "fed_count": "fed from storage",
                "fed_warm_count": "fed from memory",
            }
            rows = [[_cell(k, accs[k][i]) for k in cols] for i in range(len(accs["accelerator"]))]
            out.append(Section("every accelerator of this workload", rows, head=[head[c] for c in cols]))
        return out + super().sections()


def _cell(key: str, v) -> str:
    return v if isinstance(v, str) else format_metric(key, v)
