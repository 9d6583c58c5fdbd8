"""Option types shared by the magics and the CLI.

Each turns a string into a value or raises ``argparse.ArgumentTypeError`` with a
sentence; :func:`nbbench.commands.parse` raises it as a ``UsageProblem``, which the
magic shows as a one-line ``UsageError``, the CLI as argparse does (exit code 2)
and the panel in red.
"""

from __future__ import annotations

import argparse

from .. import units
from ..probes import limits as _limits

__all__ = [
    "Opt",
    "Group",
    "size",
    "duration",
    "positive_int",
    "nonneg_int",
    "int_list",
    "bool_list",
    "size_list",
    "fraction",
    "choice_list",
    "percentage",
    "int_range",
    "IntRange",
]


def size(text: str) -> int:
    try:
        return units.parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def duration(text: str) -> float:
    try:
        return units.parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _int_at_least(text: str, low: int) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if v < low:
        raise argparse.ArgumentTypeError(f"must be {low} or more, not {v}")
    return v


class IntRange:
    """An argparse ``type``: a whole number within ``[lo, hi]``, the bounds kept as attributes
    so that other front ends (the panel's bounded fields) read them from the parser."""

    def __init__(self, lo: int, hi: int):
        self.lo, self.hi = int(lo), int(hi)
        self.__name__ = f"int {self.lo}–{self.hi}"  # argparse names a bad value by it

    def __call__(self, text: str) -> int:
        v = _int_at_least(text, self.lo)
        if v > self.hi:
            raise argparse.ArgumentTypeError(f"must be between {self.lo} and {self.hi}, not {v}")
        return v

    def __repr__(self) -> str:
        return f"int_range({self.lo}, {self.hi})"


def int_range(lo: int | tuple[int, int], hi: int | None = None) -> IntRange:
    """``int_range(1, 256)`` or ``int_range(limits.RANDREAD_QD)``."""
    if hi is None:
        lo, hi = lo
    return IntRange(lo, hi)


#: ``--jobs``: 1 to 256 processes (the probes' own limit, :data:`nbbench.probes.limits.JOBS`)
jobs = IntRange(*_limits.JOBS)


def positive_int(text: str) -> int:
    return _int_at_least(text, 1)


def nonneg_int(text: str) -> int:
    return _int_at_least(text, 0)


def percentage(text: str) -> float:
    """'5%', '5 %' or '5': how much worse a gate allows (:func:`nbbench.compare.gate.parse_pct`)."""
    from ..compare.gate import parse_pct

    try:
        return parse_pct(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def fraction(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= v <= 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, not {v}")
    return v


def int_list(text: str) -> list[int]:
    """'0,2,4,8' -> [0, 2, 4, 8]."""
    try:
        vals = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of whole numbers: {text!r}") from None
    if not vals or any(v < 0 for v in vals):
        raise argparse.ArgumentTypeError(f"need one or more whole numbers >= 0, like 0,2,4: {text!r}")
    return vals


def size_list(text: str) -> list[int]:
    return [size(t.strip()) for t in text.split(",") if t.strip()]


_TRUE = {"1", "true", "yes", "on", "y", "t"}
_FALSE = {"0", "false", "no", "off", "n", "f"}


def bool_list(text: str) -> list[bool]:
    """'true,false' -> [True, False]."""
    out = []
    for t in text.split(","):
        t = t.strip().lower()
        if t in _TRUE:
            out.append(True)
        elif t in _FALSE:
            out.append(False)
        elif t:
            raise argparse.ArgumentTypeError(f"not true/false: {t!r}")
    if not out:
        raise argparse.ArgumentTypeError("need one or more of true,false")
    return out


def choice_list(choices):
    def parse(text: str) -> list[str]:
        vals = [t.strip() for t in text.split(",") if t.strip()]
        bad = [v for v in vals if v not in choices]
        if bad or not vals:
            raise argparse.ArgumentTypeError(f"choose from {', '.join(choices)}: {text!r}")
        return vals

    return parse


_UNSET = object()


class Opt:
    """One option of a subcommand, declared as data: ``Opt(FLAG, KIND, DEFAULT, HELP, **argparse)``.

    KIND is how its text is read: a function (argparse's ``type``), a list or tuple of choices, or an
    action name (``"store_true"``, ``"store_false"``, ``"store_const"``); a FLAG without dashes is a
    positional argument; a ``short`` flag the front end already uses itself (the notebook's ``-o``) is left
    out, the long one stays.  A command lists its options in its ``arguments`` table
    (:attr:`nbbench.commands.Command.arguments`); calling one adds it to a parser, so a table holds
    :class:`Group` entries and parser helpers beside them.
    """

    __slots__ = ("flags", "kind", "default", "help", "kw")

    def __init__(self, flag: str, kind=None, default=_UNSET, help: str | None = None, short: str = "", **kw):
        self.flags = (short, flag) if short else (flag,)
        self.kind, self.default, self.help, self.kw = kind, default, help, kw

    def __call__(self, parser):
        kw = dict(self.kw)
        if isinstance(self.kind, str):
            kw["action"] = self.kind
        elif isinstance(self.kind, (list, tuple)):
            kw["choices"] = self.kind
        elif self.kind is not None:
            kw["type"] = self.kind
        if self.default is not _UNSET:  # a list default copied: each parser its own
            kw["default"] = list(self.default) if isinstance(self.default, list) else self.default
        taken = getattr(parser, "_option_string_actions", {})
        flags = [f for f in self.flags[:-1] if f not in taken] + [self.flags[-1]]
        return parser.add_argument(*flags, help=self.help, **kw)

    def __repr__(self) -> str:
        return f"Opt({'/'.join(self.flags)})"


class Group:
    """Options shown under one heading (``title``) or of which one at most is given (``exclusive``)."""

    def __init__(self, *items, title: str | None = None, exclusive: bool = False):
        self.items, self.title, self.exclusive = items, title, exclusive

    def __call__(self, parser):
        g = parser.add_mutually_exclusive_group() if self.exclusive else parser.add_argument_group(self.title)
        for add in self.items:
            add(g)
        return g
