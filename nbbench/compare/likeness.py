"""Like for like: which parameters and labels make two runs' delta partly the method's.

Layer: the bottom (inside :mod:`nbbench.compare`); plain data, no drawing."""

from __future__ import annotations

__all__ = ["HIDDEN_PARAMS", "MODE_LABELS", "TARGET_LABELS", "unlike", "caveats"]

# parameters that name the thing measured rather than how: differing is the point of a comparison
HIDDEN_PARAMS = ("path", "target", "device", "label", "command")
# labels that say how it was measured: differing makes the delta partly the method's
MODE_LABELS = ("cache", "engine", "mode", "direct")
# labels that describe the target: differing is noted (it is usually the point)
TARGET_LABELS = ("filesystem", "device")


def unlike(a, b) -> bool:
    """Run ``b`` was measured unlike the baseline ``a`` (another cache mode or engine, memory-backed
    or warm, other parameters): its delta is no gain or loss of the environment alone, and the
    table, the chart and the report show it uncoloured, marked ⚠."""
    if any(str(a.labels.get(k)) != str(b.labels.get(k)) for k in MODE_LABELS):
        return True
    if any(str(r.labels.get("cache")) == "memory" or "warm" in str(r.labels.get("cache", "")) for r in (a, b)):
        return True
    keys = (set(a.params) | set(b.params)) - set(HIDDEN_PARAMS) - set(MODE_LABELS)
    return any(str(a.params.get(k)) != str(b.params.get(k)) for k in keys)


def caveats(g) -> list[str]:
    """A group's warnings in a few words each (what makes its deltas unlike for like), and
    which runs are memory-backed or read a warm page cache: the words the chart draws under
    its title, the report's opening paragraph and the gate's sentence use."""
    out = []
    for w in g.warnings:
        head, _, rest = w.partition(" — ")
        if head == "parameters differ":
            keys = [d.split(" ", 1)[0] for d in rest.rsplit(": the deltas", 1)[0].split("; ")]
            out.append(f"parameters differ ({', '.join(keys)}): the deltas mix settings and environment")
        elif rest:
            out.append(f"{head}: {rest.rsplit(': ', 1)[0]}" if head.endswith("differs") else w.split(" — ")[0])
        else:
            out.append(w)
    memory = [n for n, r in zip(g.names, g.runs) if str(r.labels.get("cache")) == "memory"]
    if memory:
        out.append(f"{', '.join(memory)}: memory-backed (cache=memory): memory speed, not storage")
    warm = [n for n, r in zip(g.names, g.runs) if "warm" in str(r.labels.get("cache", ""))]
    if warm:
        out.append(f"{', '.join(warm)}: read from a warm page cache: memory speed, not storage")
    return out
