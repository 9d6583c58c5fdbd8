"""How every front end ends a subcommand: run → show → save → return, and how it went.

:func:`execute` runs an :class:`~nbbench.commands.Invocation` and hands what it
returned to :func:`finish`: the result is shown first (``--json``: its JSON; else
the command's ``show`` unless ``--quiet``), then saved to the store unless
``--no-save``, then returned.  A store that cannot be written never costs the
result: it has been shown, and one line says why it was not saved
(:class:`nbbench.store.StoreError`, through :meth:`Context.note`).

How a run went is two things, each with one rule here: :func:`outcome` — did it
run (ok / interrupted / failed) — and :func:`verdict` — what its checks found
(ok / warn / fail, None without checks).  :func:`exit_code` combines them into the
CLI's exit code (:data:`EXIT_CODES`); the panel's status line follows both.
"""

from __future__ import annotations

from typing import Any

from ..results import Result, worst_verdict

__all__ = [
    "execute",
    "finish",
    "show",
    "save_results",
    "outcome",
    "verdict",
    "exit_code",
    "returns_value",
    "to_json",
    "RaiseAfterFinish",
    "EXIT_OK",
    "EXIT_FAILED",
    "EXIT_USAGE",
    "EXIT_CHECK_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_CODES",
]

EXIT_OK = 0  # ran; its checks (if any) found nothing worse than a warning
EXIT_FAILED = 1  # the probe failed (or could not run)
EXIT_USAGE = 2  # a usage error: unknown subcommand, bad option or value
EXIT_CHECK_FAILED = 3  # ran, and a check failed (verdict fail; a compare gate that failed)
EXIT_INTERRUPTED = 130  # interrupted (Ctrl-C, SIGINT)
#: the exit codes, as ``nbbench --help`` and the README list them
EXIT_CODES = (
    (EXIT_OK, "ran (its checks, if any, found nothing worse than a warning)"),
    (EXIT_FAILED, "the probe failed"),
    (EXIT_USAGE, "usage error"),
    (
        EXIT_CHECK_FAILED,
        "ran, and a check failed (verdict fail: e.g. nbbench gpu without CUDA, "
        "compare --fail-if-worse on a significant regression)",
    ),
    (EXIT_INTERRUPTED, "interrupted"),
)


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
    from .repeat import run as run_repeated

    try:
        value = run_repeated(inv, ctx)
    except RaiseAfterFinish as late:
        error = late.error
        try:
            finish(inv, late.value, ctx, store)
        except Exception:  # noqa: BLE001 - a failing save must not hide the error being passed on
            pass
    else:
        return finish(inv, value, ctx, store)
    raise error


def returns_value(inv, ctx) -> bool:
    """Whether front end ``ctx`` hands what ``inv`` gave back as the expression's value:
    with ``-o`` (shown and returned, like ``%timeit -o``), and for a command whose value
    is the answer (``Command.expression``: ``h = %iobench history``) unless ``--json``."""
    return ctx.returns_result and (getattr(inv.args, "return_result", False) or _value_only(inv, ctx))


def _value_only(inv, ctx) -> bool:
    """An expression command without -o / --json where values are returned: it is only
    returned, not shown — IPython displays it when it is the cell's value (no double display)."""
    args = inv.args
    return (
        ctx.returns_result
        and bool(getattr(inv.command, "expression", False))
        and not getattr(args, "return_result", False)
        and not getattr(args, "json", False)
    )


def finish(inv, value: Any, ctx, store=None) -> Any:
    """The end of every front end's run: show ``value``, then save its Results (unless
    ``--no-save``), then return it.  The label is put on the results before they are
    shown, so what is shown is what is stored.  A store that cannot be written
    (:class:`~nbbench.store.StoreError`) is one line through ``ctx.note``: "not saved: …"."""
    from ..store import StoreError

    ctx.worded(value)
    label = getattr(inv.args, "label", None)
    saving = _saving(inv)
    if saving and label is not None:
        for r in _results(value):
            r.labels["label"] = label
    if not _value_only(inv, ctx):
        show(inv, value, ctx)
    if saving:
        try:
            save_results(value, label, store)
        except StoreError as exc:
            ctx.note(f"not saved: {exc}")
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
    code = _program_code(value)
    if code is not None:
        return "ok" if code == 0 else ("interrupted" if code == EXIT_INTERRUPTED else "failed")
    return "ok"


def verdict(value: Any) -> str | None:
    """What a run's checks found, from what it returned: the worst verdict among its
    Results ("fail" > "warn" > "ok"), None when none has checks; for another value (a
    comparison gated with ``--fail-if-worse``) its own ``verdict`` string, if it has one."""
    results = _results(value)
    if not results and not isinstance(value, (list, tuple)):
        own = getattr(type(value), "verdict", None)  # a declared attribute, never a frame's column
        own = getattr(value, "verdict", None) if own is not None else None
        return own if isinstance(own, str) and own in ("ok", "warn", "fail") else None
    return worst_verdict(r.verdict for r in results)


def exit_code(value: Any) -> int:
    """The CLI's exit code for what a run returned (:data:`EXIT_CODES`): a program's own code
    (``nbbench monitor -- CMD``), else 130 interrupted, 1 failed (:func:`outcome`), 3 ran but
    a check failed (:func:`verdict` "fail"), 0 ran.  Usage errors (2) never get this far."""
    code = _program_code(value)
    if code is not None:
        return code
    how = outcome(value)
    if how == "interrupted":
        return EXIT_INTERRUPTED
    if how == "failed":
        return EXIT_FAILED
    return EXIT_CHECK_FAILED if verdict(value) == "fail" else EXIT_OK


def _program_code(value: Any) -> int | None:
    code = value if isinstance(value, int) else getattr(value, "exit_code", None)
    return code if isinstance(code, int) and not isinstance(code, bool) else None


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
