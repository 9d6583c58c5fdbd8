"""Emulated accelerators: how long one training step takes, as MLPerf Storage does.

MLPerf Storage does not train a model: each simulated accelerator sleeps for the
time the real GPU would compute on a batch, so the benchmark measures only whether
storage and the input pipeline keep it fed.  The figures are MLPerf Storage's
(v1.0) per-batch compute times at its reference batch sizes; a different batch size
scales them linearly (per-sample time × batch size).

=================  ===========  ====================  ======================
name               workload     reference batch       compute per batch
=================  ===========  ====================  ======================
h100-resnet50      resnet50     400 samples           0.224 s
a100-resnet50      resnet50     400 samples           0.435 s
h100-unet3d        unet3d       7 samples             0.323 s
a100-unet3d        unet3d       7 samples             0.636 s
h100-cosmoflow     cosmoflow    1 sample              0.0035 s
=================  ===========  ====================  ======================

An accelerator "keeps up" at AU >= 90 % (accelerator utilisation: compute time /
wall time), so the input pipeline must deliver at least 90 % of the rate the
accelerator consumes.  How input-bound a pipeline is reads the share of wall time
spent waiting for data (:func:`input_bound_band`): under 5 % not input-bound, 5–20 %
moderately, 20 % or more highly; :func:`predicted_au_pct` is the AU the arithmetic
predicts for a loader's preparation time, step time and workers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = [
    "Accelerator",
    "ACCELERATORS",
    "get_accelerator",
    "names",
    "AU_TARGET_PCT",
    "input_bound_band",
    "predicted_au_pct",
    "BAND_MODERATE_PCT",
    "BAND_HIGH_PCT",
]

#: the AU line MLPerf Storage uses to call an accelerator "fed"
AU_TARGET_PCT = 90.0

#: data-wait share (% of wall time) at which a pipeline is moderately / highly input-bound
BAND_MODERATE_PCT = 5.0
BAND_HIGH_PCT = 20.0


@dataclass(frozen=True)
class Accelerator:
    """One emulated accelerator running one workload."""

    name: str
    gpu: str
    workload: str
    ref_batch: int
    ref_step_s: float

    @property
    def per_sample_s(self) -> float:
        """Compute time per sample (s)."""
        return self.ref_step_s / self.ref_batch

    def step_s(self, batch_size: int | None = None) -> float:
        """Compute time of one step on a batch of ``batch_size`` samples (default: the reference batch)."""
        b = self.ref_batch if not batch_size else int(batch_size)
        return self.per_sample_s * b

    @property
    def samples_per_s(self) -> float:
        """The rate the accelerator consumes samples when never kept waiting."""
        return 1.0 / self.per_sample_s

    def needed_samples_per_s(self, au_pct: float = AU_TARGET_PCT) -> float:
        """The input rate that keeps this accelerator at ``au_pct`` utilisation."""
        return self.samples_per_s * au_pct / 100.0

    def how_many(self, samples_per_s: float, au_pct: float = AU_TARGET_PCT) -> int:
        """How many such accelerators a pipeline delivering ``samples_per_s`` keeps at ``au_pct``."""
        if samples_per_s is None or not math.isfinite(samples_per_s) or samples_per_s <= 0:
            return 0
        # a tiny tolerance so 2.0000001 counts as 2, not 1.9999999 as 1
        return int(math.floor(samples_per_s / self.needed_samples_per_s(au_pct) + 1e-9))

    def describe(self) -> str:
        return (
            f"{self.gpu.upper()} {self.workload}: {self.ref_step_s:g} s per batch of {self.ref_batch} "
            f"({self.samples_per_s:,.0f} samples/s)"
        )


ACCELERATORS: dict[str, Accelerator] = {
    a.name: a
    for a in (
        Accelerator("h100-resnet50", "h100", "resnet50", 400, 0.224),
        Accelerator("a100-resnet50", "a100", "resnet50", 400, 0.435),
        Accelerator("h100-unet3d", "h100", "unet3d", 7, 0.323),
        Accelerator("a100-unet3d", "a100", "unet3d", 7, 0.636),
        Accelerator("h100-cosmoflow", "h100", "cosmoflow", 1, 0.0035),
    )
}


def names() -> list[str]:
    return list(ACCELERATORS)


def get_accelerator(name) -> Accelerator:
    """An :class:`Accelerator` by name (``"h100-resnet50"``; ``"resnet50-h100"`` and case are accepted).

    Raises ValueError with the known names.
    """
    if isinstance(name, Accelerator):
        return name
    key = str(name).strip().lower()
    if key.startswith("emulate:"):
        key = key[len("emulate:") :]
    if key in ACCELERATORS:
        return ACCELERATORS[key]
    parts = key.split("-")
    if len(parts) == 2 and f"{parts[1]}-{parts[0]}" in ACCELERATORS:
        return ACCELERATORS[f"{parts[1]}-{parts[0]}"]
    raise ValueError(f"unknown accelerator {name!r}: choose from {', '.join(ACCELERATORS)}")


def input_bound_band(data_wait_pct: float | None) -> str | None:
    """'not input-bound' (< 5 %), 'moderately input-bound' (5–20 %), 'highly input-bound' (>= 20 %)."""
    if data_wait_pct is None or (isinstance(data_wait_pct, float) and math.isnan(data_wait_pct)):
        return None
    if data_wait_pct < BAND_MODERATE_PCT:
        return "not input-bound"
    if data_wait_pct < BAND_HIGH_PCT:
        return "moderately input-bound"
    return "highly input-bound"


def predicted_au_pct(data_s: float, compute_s: float, num_workers: int = 0) -> float:
    """AU the arithmetic predicts for a loader whose batches cost ``data_s`` to prepare
    and a step of ``compute_s``.

    Without workers preparation and compute alternate: AU = compute / (data + compute).
    With ``n`` workers preparing in parallel (prefetching), a batch is ready every
    ``data / n`` seconds and the step overlaps it: AU = compute / max(compute, data / n).
    """
    if compute_s <= 0:
        return 0.0
    if num_workers <= 0:
        return 100.0 * compute_s / (compute_s + data_s)
    return 100.0 * compute_s / max(compute_s, data_s / num_workers)
