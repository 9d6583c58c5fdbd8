"""How every front end ends a subcommand: run → show → save → return, and how it went.

:func:`execute` runs an :class:`~nbbench.commands.Invocation` and hands what it
returned to :func:`finish`: the result is shown first (``--json``: its JSON; else
the command's ``show`` unless ``--quiet``), then saved to the store unless
``--no-save``, then returned.  :func:`outcome` is the one rule for how a run went,
from what it returned: the CLI's exit code and the panel's status line follow it.
"""

from __future__ import annotations

from typing import Any

from ..results import Result

__all__ = ["execute", "finish", "show", "save_results", "outcome", "to_json", "RaiseAfterFinish"]


class RaiseAfterFinish(Exception):
    """Raised by a command whose run has a result *and* an exception to pass on — a
    monitored cell that raised: :func:`execute` finishes ``value`` (shows and saves
    it, a failing save not hiding the cell's error), then raises ``error``."""

    def __init__(self, value: Any, error: BaseException):
        super().__init__(str(error))
        self.value = value
        self.error = error


def _results(value: Any) -> list[Result]:
    return [r for r in (value if isinstance(value, (list, tuple)) else [value]) if isinstance(r, Result)]


def _saving(inv) -> bool:
    return bool(inv.command.saves) and not getattr(inv.args, "no_save", False)


def execute(inv, ctx, store=None) -> Any:
    """Run ``inv`` (an Invocation) in front end ``ctx``, then :func:`finish` it; returns what it returned."""
    try:
        value = inv.command.run(inv.args, ctx)
    except RaiseAfterFinish as late:
        error = late.error
        try:
            finish(inv, late.value, ctx, store)
        except Exception:  # noqa: BLE001 - a failing save must not hide the error being passed on
            pass
    else:
        return finish(inv, value, ctx, store)
    raise error


def finish(inv, value: Any, ctx, store=None) -> Any:
    """The end of every front end's run: show ``value``, then save its Results (unless
    ``--no-save``), then return it.  The label is put on the results before they are
    shown, so what is shown is what is stored."""
    ctx.worded(value)
    label = getattr(inv.args, "label", None)
    saving = _saving(inv)
    if saving and label is not None:
        for r in _results(value):
            r.labels["label"] = label
    show(inv, value, ctx)
    if saving:
        save_results(value, label, store)
    return value


def show(inv, value: Any, ctx) -> None:
    """Show what ``inv`` returned: its JSON with ``--json``, else the command's own view unless ``--quiet``."""
    args = inv.args
    ctx.worded(value)
    if getattr(args, "json", False):
        ctx.write(to_json(value))
    elif not getattr(args, "quiet", False):
        inv.command.show(value, args, ctx)


def save_results(value: Any, label: str | None = None, store=None) -> list[int]:
    """Save the Results in ``value`` (one, or a list) to ``store`` (default: the user's); their run ids."""
    to_save = _results(value)
    if not to_save:
        return []
    from ..store import default_store

    st = store or default_store()
    return [st.save(r, label=label) for r in to_save]


def outcome(value: Any) -> str:
    """How a run went, from what it returned: "failed", "interrupted" or "ok".

    The worst status among its Results (a Result, or a list of them); with no Result,
    an exit code (an int, or an ``exit_code`` attribute): 0 ok, 130 interrupted
    (SIGINT), anything else failed; otherwise ok.
    """
    statuses = {r.status for r in _results(value)}
    for s in ("failed", "interrupted"):
        if s in statuses:
            return s
    if statuses:
        return "ok"
    code = value if isinstance(value, int) else getattr(value, "exit_code", None)
    if isinstance(code, int) and not isinstance(code, bool):
        return "ok" if code == 0 else ("interrupted" if code == 130 else "failed")
    return "ok"


def to_json(value: Any) -> str:
    """JSON text for what a command returned: a Result's dict, a list of them, a DataFrame's records."""
    import json

    if isinstance(value, Result):
        return value.to_json(indent=2)
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, Result) for v in value):
        return json.dumps([v.to_dict() for v in value], indent=2, default=str)
    if hasattr(value, "to_json"):
        try:
            return value.to_json(orient="records", indent=2, date_format="iso")
        except TypeError:
            return value.to_json()
    return json.dumps(value, indent=2, default=str)
