"""The GPU validation kit's lines: one :class:`Line` per thing checked, and the summary.

A line holds the check's name, PASS / FAIL / N/A / SKIP, the figure with its unit, the
expected range with its source, and why (the reason, or what else was seen).  N/A: the
GPU or driver cannot give the figure (no GPM before Hopper, no published peak for this
GPU); SKIP: the check did not run (no CUDA, a package missing, the time budget spent).
Only FAIL makes the kit's exit code 1.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

PASS, FAIL, NA, SKIP = "PASS", "FAIL", "N/A", "SKIP"
STATUSES = (PASS, FAIL, NA, SKIP)
GB = 1e9
MiB, GiB = 2**20, 2**30


@dataclass
class Line:
    """One check's outcome: ``name``, ``status``, the ``figure`` with its unit, the
    ``expected`` range with its source, and ``why`` (the reason, or what else was seen)."""

    name: str
    status: str
    figure: str = ""
    expected: str = ""
    why: str = ""
    values: dict = field(default_factory=dict)

    def text(self) -> str:
        rest = [p for p in (self.figure, f"expected {self.expected}" if self.expected else "", self.why) if p]
        return f"{self.status:<4}  {self.name}" + (": " + " — ".join(rest) if rest else "")

    def to_dict(self) -> dict:
        return asdict(self)


def installed(module: str) -> bool:
    """Is ``module`` importable here (found, without importing it)?"""
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def one_line(exc: BaseException) -> str:
    """An exception as one line: its type and the first line of its message."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def summary(lines: list[Line]) -> tuple[dict[str, int], int]:
    """(count per status, exit code): 0 when no line failed, else 1."""
    counts = {s: sum(1 for ln in lines if ln.status == s) for s in STATUSES}
    return counts, (1 if counts[FAIL] else 0)


def summary_text(counts: dict[str, int]) -> str:
    return ", ".join(f"{counts[s]} {s}" for s in STATUSES)
