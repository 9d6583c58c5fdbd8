"""The doctor's building blocks: :class:`Check` and small readers over a ``root``.

Every check is a function over a ``root`` directory (``"/"`` on a live system, a
fixture tree in tests) returning one or more :class:`Check`.  A file that is missing
or unreadable gives ``n/a`` with the reason, never an exception.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..results.doctor import CHECK_STATUSES, Check

__all__ = ["Check", "CHECK_STATUSES", "na", "read_text", "under", "Unreadable"]


class Unreadable(Exception):
    """A file the doctor needs is missing or unreadable; the message is the reason."""


def under(root: str | os.PathLike, path: str) -> Path:
    """``path`` (absolute, as on a live system) inside ``root``."""
    return Path(root) / path.lstrip("/")


def read_text(root: str | os.PathLike, path: str) -> str:
    """The text of ``path`` under ``root``; :class:`Unreadable` with the reason otherwise."""
    p = under(root, path)
    try:
        return p.read_text()
    except FileNotFoundError:
        raise Unreadable(f"{path} does not exist") from None
    except PermissionError:
        raise Unreadable(f"{path} is not readable (permission denied)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise Unreadable(f"{path} could not be read: {exc}") from None


def na(name: str, reason: str, group: str = "", fix: str = "") -> Check:
    return Check(name=name, status="n/a", evidence=reason, fix=fix, group=group)
