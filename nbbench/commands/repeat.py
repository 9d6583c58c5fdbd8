"""``--repeat N``: whole runs of a measuring subcommand, kept in one result.

Declared once (:data:`REPEAT`, which :func:`nbbench.commands.build_parser` adds to
every command whose class sets ``measures = True``) and run once (:func:`run`, which
:func:`nbbench.commands.execute` calls for every command): the command's own ``run`` is called
N times — each run as one run is (a new temporary file, the cache dropped as its options say,
a fresh progress bar "run 2 of 5") — and the N results become one
(:func:`nbbench.results.runs.merge`: medians in ``metrics``, each run in ``runs``, the spread of
the headline figures), whose run quality is said in words (:func:`nbbench.results.quality.assess`).
A single run goes the same way (N = 1): its result states its within-run spread and quality.

With ``--ranks N`` the whole ranked run is repeated (the launcher launches the ranks N times;
the ranks themselves are given the command line without ``--repeat``).  A run that fails or is
interrupted (or Ctrl-C between runs) ends the series: the result keeps the runs so far and says
which run ended it.
"""

from __future__ import annotations

from typing import Any

from .options import Opt, int_range

__all__ = ["REPEAT_MAX", "repeat_count", "REPEAT", "run", "scale_of"]

#: the most runs ``--repeat`` takes
REPEAT_MAX = 100


#: ``--repeat``'s value: a whole number from 1 to :data:`REPEAT_MAX` (else a usage error); an
#: :class:`~nbbench.commands.options.IntRange`, so the panel's "runs" field reads its limits from here
repeat_count = int_range(1, REPEAT_MAX)


#: the one declaration of ``--repeat N``
REPEAT = Opt(
    "--repeat",
    repeat_count,
    1,
    f"run the probe N times (1-{REPEAT_MAX}, default 1), each run as one run is; the result gives the median of "
    "the runs with their spread (min…max), and every run",
    metavar="N",
)


def scale_of(cmd, args) -> tuple[str, Any, str] | None:
    """(option, its value, "size" | "duration" | "count"): what lengthens this command's measured
    phase (``Command.scale``: (option, dest, how)), for the "too short to trust" advice."""
    scale = getattr(cmd, "scale", None)
    if not scale:
        return None
    option, dest, how = scale
    return option, getattr(args, dest, None), how


def run(inv, ctx) -> Any:
    """Run ``inv``'s command: once for a command that does not measure, else ``--repeat`` times,
    the results merged into one (a value that is not a result — the lines printed for several
    hosts — is returned as it is)."""
    from ..results import Result
    from ..results.quality import assess
    from ..results.runs import merge

    cmd, args = inv.command, inv.args
    n = getattr(args, "repeat", None)
    if not getattr(cmd, "measures", False) or not n:
        return cmd.run(args, ctx)
    results, cut = [], None
    try:
        for i in range(n):
            if i and ctx.cancel.is_set():
                cut = i
                break
            ctx.run_of = f"run {i + 1} of {n}" if n > 1 else ""
            value = cmd.run(args, ctx)
            if not isinstance(value, Result):
                return value
            results.append(value)
            if value.status != "ok":
                break
    except KeyboardInterrupt:
        if not results:
            raise
        cut = len(results)  # the runs that ended are kept: a result is never lost
    finally:
        ctx.run_of = ""
    merged = merge(results, planned=n)
    if cut is not None and merged.status == "ok":
        merged.status, merged.reason = "interrupted", f"interrupted in run {cut + 1} of {n}"
    assess(merged, results, scale_of(cmd, args))
    # how many runs is len(runs), not a parameter: a run of 5 and a run of 1 measured the same thing
    return merged
