"""A figure measured at each size of a ladder (the collectives' ``{op}_busbw_at_{size}_bytes_per_s``) compared
in one sentence: from which size on the candidate differs from the baseline beyond the noise — "nodeB's
all_reduce busbw is 41 % below nodeA's at 64MiB and above, beyond the noise" (:func:`size_notes`).

Pure: it reads a :class:`~nbbench.compare.model.ComparisonGroup`'s intervals (:mod:`.noise`).
"""

from __future__ import annotations

import re
import statistics

__all__ = ["size_notes", "tag_bytes"]

_KEY = re.compile(r"^(?P<op>[a-z_]+?)_busbw_at_(?P<tag>\d+(?:B|KiB|MiB|GiB))_bytes_per_s$")
_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def tag_bytes(tag: str) -> int:
    """'64MiB' -> 67108864."""
    m = re.fullmatch(r"(\d+)(B|KiB|MiB|GiB)", tag)
    if not m:
        raise ValueError(tag)
    return int(m.group(1)) * _UNITS[m.group(2)]


def size_notes(g) -> list[str]:
    """One sentence per candidate and operation whose change holds, beyond the noise and the same way, at
    the largest size and every size down to some size; nothing where the largest size is within the noise."""
    ladders: dict[str, list[tuple[int, str, str]]] = {}
    for m in g.metrics:
        hit = _KEY.match(m)
        if hit:
            ladders.setdefault(hit.group("op"), []).append((tag_bytes(hit.group("tag")), hit.group("tag"), m))
    out = []
    for i in range(1, len(g.names)):
        for op, ladder in ladders.items():
            run = []
            for _size, tag, metric in sorted(ladder, reverse=True):  # from the largest size down
                ri = g.interval(metric, i)
                if ri is None or not ri.significant or ri.ratio is None:
                    break
                if run and (ri.ratio < 1) != (run[0][1] < 1):
                    break
                run.append((tag, ri.ratio))
            if not run:
                continue
            ratio = statistics.median(r for _, r in run)
            way = "below" if ratio < 1 else "above"
            where = f"at {run[-1][0]} and above" if len(run) > 1 else f"at {run[0][0]}, the largest size"
            if len(run) == len(ladder) and len(run) > 1:
                where = f"at every size ({run[-1][0]} to {run[0][0]})"
            out.append(
                f"{g.names[i]}'s {op} busbw is {abs(ratio - 1) * 100:.0f} % {way} {g.names[0]}'s {where}, "
                "beyond the noise"
            )
    return out
