"""How a result is shown: one presentation rule, the view every result has, its one-liners.

Layer: core (inside :mod:`nbbench.results`; imports only the core).

* :mod:`.rule`      the rule — the answer first, then what qualifies it, then the details
  folded — as a model (:class:`~.rule.Presentation`, :class:`~.rule.Section`) and its text
  and HTML renderers
* :mod:`.view`      :class:`~.view.ResultView`, the presentation side of every result
* :mod:`.summaries` one-line summaries and count lines (history, the store)
"""

from __future__ import annotations

# the rule's names, as nbbench.results.present named them before it was a package
from .rule import (
    ANSWER_SEP,
    SEP,
    TONE_COLOURS,
    TONES,
    Presentation,
    Rendered,
    Section,
    render_html,
    render_text,
    tone_of,
)

__all__ = [
    "Section",
    "Presentation",
    "Rendered",
    "TONES",
    "TONE_COLOURS",
    "tone_of",
    "render_text",
    "render_html",
    "SEP",
    "ANSWER_SEP",
]
