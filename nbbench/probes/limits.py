"""The limits a probe accepts for its whole-number options, declared once.

The probe refuses a value outside them (:class:`~nbbench.results.ProbeError`), the
subcommand's parser declares them in its option's type
(:func:`nbbench.commands.options.int_range`), and the control panel's fields take their
bounds from that parser: the CLI, ``%iobench`` and the panel cannot disagree.  Plain data,
no imports: the parsers read it without importing the probes.
"""

from __future__ import annotations

from ..results import ProbeError

__all__ = [
    "RANDREAD_QD",
    "JOBS",
    "FILES_THREADS",
    "FILES_SAMPLE",
    "GPU_MATMUL_SIZE",
    "GPU_ITERS",
    "MONITOR_INTERVAL_S",
    "check",
]

#: (lowest, highest) accepted
RANDREAD_QD = (1, 4096)
JOBS = (1, 256)  # --jobs: independent I/O processes (dd, randread, disk)
FILES_THREADS = (1, 512)
FILES_SAMPLE = (1, 10**9)
GPU_MATMUL_SIZE = (64, 65536)  # gpu --size: the N of the N×N matmul
GPU_ITERS = (1, 1000)  # gpu --iters: timed iterations per benchmark
#: monitor / watch --interval, seconds (a float: the parser and the monitor check it)
MONITOR_INTERVAL_S = (0.01, 3600.0)


def check(name: str, value: int, bounds: tuple[int, int]) -> int:
    """``value`` as an int when within ``bounds``, else the probe's refusal (one sentence)."""
    v = int(value)
    lo, hi = bounds
    if not lo <= v <= hi:
        raise ProbeError(f"{name} must be between {lo} and {hi}, not {v}")
    return v
