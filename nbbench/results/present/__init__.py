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
from . import rule as _rule
from .rule import *  # noqa: F403

__all__ = list(_rule.__all__)
