"""Advice as data: "do this, with that subcommand", worded by whoever shows it.

A probe knows that a user should, say, sweep ``num_workers``; it does not know
whether that user types ``%iobench sweep`` in a notebook, ``nbbench sweep`` in a
terminal or presses a button in the control panel.  So a probe records an advice
entry, a plain dict that round-trips through JSON and the store::

    {"text": "find the num_workers that keeps up", "command": "sweep", "args": "DATASET"}

and the front end words the command (``ctx.command_text(command, args)``) when it
shows the result.  ``text`` may hold ``{command}`` where the command goes
("run {command} to see why"); without it the command follows after a colon.
With no front end (a plain ``repr``) the command is written neutrally, in
backticks: ```sweep DATASET```.
"""

from __future__ import annotations

import html as _html
from collections.abc import Callable

__all__ = ["entry", "neutral", "word", "word_html", "CommandText"]

#: ``command_text(name, args)`` -> how a front end writes a subcommand
CommandText = Callable[[str, str], str]


def entry(text: str, command: str, args: str = "") -> dict:
    """One advice entry: ``text`` (a phrase), the subcommand ``command`` and its ``args``."""
    return {"text": str(text), "command": str(command), "args": str(args or "")}


def neutral(name: str, args: str = "") -> str:
    """A subcommand named with no front end: ```sweep --workers 0,2,4```."""
    return "`" + " ".join(p for p in (name, args) if p) + "`"


def _command(item: dict, command_text: CommandText | None) -> str:
    return (command_text or neutral)(str(item.get("command", "")), str(item.get("args", "") or ""))


def word(item: dict, command_text: CommandText | None = None) -> str:
    """The entry as one phrase of text, its command worded by ``command_text`` (neutral: None)."""
    cmd = _command(item, command_text)
    text = str(item.get("text", ""))
    if "{command}" in text:
        return text.replace("{command}", cmd)
    return f"{text}: {cmd}" if text else cmd


def word_html(item: dict, command_text: CommandText | None = None) -> str:
    """The entry as HTML: the text escaped, the command in ``<code>``."""
    cmd = f"<code>{_html.escape(_command(item, command_text))}</code>"
    text = str(item.get("text", ""))
    if "{command}" in text:
        return cmd.join(_html.escape(part) for part in text.split("{command}"))
    return f"{_html.escape(text)}: {cmd}" if text else cmd
