"""Errors in the panel's words: the fields as the panel names them, never the CLI's flags.

A tab turns its fields into a subcommand line (``dd PATH --size 16Q``) that the very
parser of ``%iobench`` and ``nbbench`` checks, so a refusal comes back in the CLI's
words: "dd: argument --size: unknown size unit 'Q' …", or, from a probe, "… use a
smaller --size".  In the panel nobody typed ``--size``: they typed into a field labelled
*size* (or *region*, on randread's tab).  A :class:`~nbbench.panel.runner.Job` carries
``fields`` — each flag it passed and the name of the field that set it — and
:func:`panel_words` rewrites the message with them.
"""

from __future__ import annotations

import re

__all__ = ["panel_words", "field_names"]

# argparse's "PROG: argument --flag: message" (also "argument -q/--quiet: …")
_ARGUMENT = re.compile(r"^(?:[\w-]+: )?argument (?:-\w/)?(--[\w-]+): ")
_FLAG = re.compile(r"(?<![\w-])(--[a-z][\w-]*)(?![\w-])")


def panel_words(message: str, fields: dict[str, str] | None) -> str:
    """``message`` with every flag named in ``fields`` replaced by its field's name.

    "dd: argument --size: unknown size unit 'Q'" → "size: unknown size unit 'Q'";
    "use a smaller --size or another directory" → "use a smaller “region” or another
    directory".  Flags not in ``fields`` are left as they are.
    """
    if not fields or not message:
        return message
    m = _ARGUMENT.match(message)
    if m and m.group(1) in fields:
        message = f"{fields[m.group(1)]}: {message[m.end() :]}"

    def name(match: re.Match) -> str:
        flag = match.group(1)
        return f"“{fields[flag]}”" if flag in fields else flag

    return _FLAG.sub(name, message)


def field_names(pairs) -> dict[str, str]:
    """``{flag: field name}`` from (flag, widget-or-name) pairs: a widget is named by its description."""
    out = {}
    for flag, w in pairs:
        label = w if isinstance(w, str) else getattr(w, "description", "") or ""
        if label:
            out[flag] = label
    return out
