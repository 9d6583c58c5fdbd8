"""The doctor's building blocks: :class:`Check` and small readers over a ``root``.

Every check is a function over a ``root`` directory (``"/"`` on a live system, a
fixture tree in tests) returning one or more :class:`Check`.  A file that is missing
or unreadable gives ``n/a`` with the reason, never an exception.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Check", "CHECK_STATUSES", "na", "read_text", "under", "Unreadable"]

CHECK_STATUSES = ("ok", "warn", "fail", "n/a")


@dataclass
class Check:
    """One finding.

    ``evidence``: the value and where it was read; ``fix``: the command or setting
    that fixes it (also given for ``ok`` findings where a better setting exists).
    ``data`` keeps the raw values read (JSON-compatible).
    """

    name: str
    status: str
    evidence: str
    fix: str = ""
    group: str = ""
    data: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        if self.status not in CHECK_STATUSES:
            raise ValueError(f"check status must be one of {CHECK_STATUSES}, not {self.status!r}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Check":
        return cls(name=d["name"], status=d["status"], evidence=d.get("evidence", ""),
                   fix=d.get("fix", ""), group=d.get("group", ""), data=dict(d.get("data") or {}))

    def __str__(self) -> str:
        s = f"[{self.status}] {self.name}: {self.evidence}"
        if self.fix and self.status in ("warn", "fail"):
            s += f" -> {self.fix}"
        return s


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
