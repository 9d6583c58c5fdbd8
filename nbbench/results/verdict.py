"""A result's verdict: what its checks found, apart from whether it ran (its status).

``status`` (:data:`nbbench.results.base.STATUSES`) says whether the probe ran: ok,
interrupted, failed.  ``verdict`` says what its checks found: ok, warn or fail — the
worst of them — or None for a result without checks (a plain measurement).  The
CLI's exit code, the panel's status line and the reports follow both
(:func:`nbbench.commands.exit_code`).
"""

from __future__ import annotations

__all__ = ["VERDICTS", "worst_verdict"]

#: what a result's checks found, best first (a result without checks has verdict None)
VERDICTS = ("ok", "warn", "fail")


def worst_verdict(statuses) -> str | None:
    """The worst of check statuses (fail > warn > ok); others ("n/a") do not count.
    None when none counts (no checks, or only n/a)."""
    found = [s for s in statuses if s in VERDICTS]
    return max(found, key=VERDICTS.index) if found else None
