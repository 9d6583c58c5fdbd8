"""The doctor's building blocks: :class:`Check` and small readers over a ``root``.

Every check is a function over a ``root`` directory (``"/"`` on a live system, a
fixture tree in tests) returning one or more :class:`Check`.  A file that is missing
or unreadable gives ``n/a`` with the reason, never an exception (the readers under a
root, :func:`read_text` and :class:`Unreadable`, are :mod:`nbbench.topology`'s).
"""

from __future__ import annotations

from ..results.system.doctor import CHECK_STATUSES, Check
from ..topology import Unreadable, read_text, under

__all__ = ["Check", "CHECK_STATUSES", "na", "read_text", "under", "Unreadable"]


def na(name: str, reason: str, group: str = "", fix: str = "") -> Check:
    return Check(name=name, status="n/a", evidence=reason, fix=fix, group=group)
