"""What every tab of the panel shares.

A tab draws its own parameter widgets and, when Run is pressed, turns them into a
:class:`~nbbench.panel.runner.Job` — usually a subcommand line such as
``["dd", PATH, "--bs", "1M", "--size", "16M"]`` that :func:`nbbench.commands.parse`
checks, exactly as for ``%iobench dd`` and ``nbbench dd``.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ... import commands
from ...commands import options
from ...results import ProbeError
from ..runner import PanelContext

if TYPE_CHECKING:  # pragma: no cover
    from ..app import ControlPanel
    from ..pathfield import PathInfo
    from ..runner import Job

__all__ = [
    "Tab",
    "size_text",
    "unavailable_reason",
    "need_path",
    "ranks_field",
    "ranks_opts",
    "repeat_field",
    "repeat_opts",
    "COMMON_FIELDS",
    "LEFT_OUT",
    "LEFT_OUT_RUNS",
    "show",
    "FIT",
    "command_options",
    "option_field",
    "option_fields",
    "options_argv",
]

#: a layout width that fits the widget's whole text (its description and its longest option)
FIT = "max-content"

#: the options every subcommand takes that no tab shows as fields, and why: each tab's NOT_FIELDS adds its
#: own (tests/test_panel_options.py fails on an option neither shown nor left out)
LEFT_OUT = {
    "--help": "the tab's own text says what it runs",
    "--json": "the panel shows the card; the result's JSON is in History",
    "--quiet": "no terminal progress in the panel",
    "--details": "the card folds the details itself",
    "--no-save": "the panel's 'save' box",
    "--label": "the panel's 'label' field",
}
#: the same for --repeat and the ranks' options
LEFT_OUT_RUNS = {
    "--repeat": "the 'runs' field (repeat_field), shared by the measuring tabs",
    "--ranks": "the 'ranks' field (ranks_field)",
    **dict.fromkeys(("--nnodes", "--rdzv-host", "--backend", "--no-dist"), "many hosts run from a terminal"),
}


class Tab:
    title: str = ""
    #: subcommands this tab runs (for "not available" notes)
    commands: tuple[str, ...] = ()
    #: the panel's "live plot" box does something here (a probe reporting rates, or its own plot)
    live_plot: bool = True
    #: this tab's run area (:class:`~nbbench.panel.area.RunArea`), given by the panel
    area = None

    def __init__(self, panel: ControlPanel):
        self.panel = panel
        self.widget = self.build()

    # --------------------------------------------------------------- override
    def build(self):
        import ipywidgets as w

        return w.VBox([])

    def run_label(self) -> str | None:
        """Text of the Run button on this tab (None: this tab has no Run)."""
        return None

    def job(self, path: PathInfo, label: str | None) -> Job:
        raise ProbeError(f"nothing to run on the {self.title} tab")

    def on_path(self, info: PathInfo) -> None:
        """The path field changed (called from the checking thread)."""

    def on_shown(self) -> None:
        """The tab was selected."""

    def on_run_finished(self, record) -> None:
        """A run (of any tab) ended."""

    def fields(self) -> dict[str, str]:
        """Each flag this tab's current probe may pass, and the name of the field that sets it
        (errors name the field, not the flag: :mod:`nbbench.panel.wording`)."""
        return {}


#: the flags of the panel's own fields (the controls row) and the ranks box
COMMON_FIELDS = {"--label": "label", "--ranks": "ranks", "--repeat": "runs"}


def show(widget, visible: bool) -> None:
    """Show or hide ``widget`` (hidden: takes no room)."""
    widget.layout.display = None if visible else "none"


def unavailable_reason(name: str) -> str | None:
    """None when subcommand ``name`` imports, else why not (one line)."""
    try:
        commands.get_command(name)
        return None
    except (ImportError, AttributeError) as exc:
        return f"{type(exc).__name__}: {exc}"


def command_options(name: str) -> dict[str, Any]:
    """The subcommand's options as its parser declares them: ``{"--threads": argparse.Action}``
    (the flag, dest, default, choices, type and its limits, help), {} when not available."""

    try:
        ctx = PanelContext()
        parser = commands.build_parser(commands.get_command(name), ctx)
    except Exception:  # noqa: BLE001 - a subcommand not built yet: no fields from it
        return {}
    return {flag: a for a in parser._actions for flag in a.option_strings if flag.startswith("--")}


def _default_text(action) -> str:
    """An option's default as a person types it (1073741824 -> '1G', 10.0 s -> '10s')."""

    d = action.default
    if d is None:
        return ""
    if action.type is options.size:
        return size_text(d, "")
    if action.type is options.duration and isinstance(d, (int, float)) and not isinstance(d, bool):
        return f"{d:g}s"
    if isinstance(d, (list, tuple)):  # a list option ("--batch-size 64,128"): as typed
        return ",".join(str(x).lower() if isinstance(x, bool) else str(x) for x in d)
    return str(d)


def option_field(
    command: str,
    flag: str,
    description: str,
    width: str | None = None,
    labels: dict | None = None,
    choices=None,
    placeholder: str | None = None,
):
    """The widget for one option of ``command``, all of it taken from the command's parser —
    so the panel, the CLI and ``%iobench`` cannot disagree, and an option added or renamed
    there shows up here as it is: choices → a dropdown, a bounded whole number
    (:class:`~nbbench.commands.options.IntRange`) → a bounded field with the parser's
    limits, a switch → a checkbox, anything else → text; its default, and its help as the
    tooltip.  ``description``: the field's name in the panel; ``labels``: words for the
    parser's choices ({"pil": "Pillow decode + crop"}); ``choices``: for an option whose
    type checks a registry (an accelerator's name), that registry's names ("" = not given)."""
    import ipywidgets as w

    action = command_options(command).get(flag)
    if action is None:
        raise KeyError(f"{command} has no option {flag}")
    st = {"description_width": "initial"}
    layout = w.Layout(width=width or FIT)
    tip = (action.help or "").replace("%%", "%")
    if action.choices or choices:
        values = list(choices if choices is not None else action.choices)
        value = action.default if action.default in values else ("" if "" in values else values[0])
        opts = [((labels or {}).get(c, c), c) for c in values]
        widget = w.Dropdown(options=opts, value=value, description=description, style=st, layout=layout, tooltip=tip)
    elif isinstance(action.type, options.IntRange):
        widget = w.BoundedIntText(
            value=int(action.default if action.default is not None else action.type.lo),
            min=action.type.lo,
            max=action.type.hi,
            description=description,
            style=st,
            layout=layout,
            tooltip=tip,
        )
    elif action.nargs == 0:  # a switch; a store_false one ("--no-bench") ticked means what it turns off is on
        negated = isinstance(action, argparse._StoreFalseAction)
        if negated:  # the CLI's help says what the flag turns off; ticked, the box means the opposite
            tip = f"ticked: on (the default); unticked: {flag} — {tip}"
        widget = w.Checkbox(
            value=bool(action.default), indent=False, description=description, layout=layout, tooltip=tip
        )
        widget._nbbench_negated = negated
    else:
        widget = w.Text(
            value=_default_text(action),
            description=description,
            style=st,
            layout=layout,
            placeholder=placeholder if placeholder is not None else "auto" if action.default is None else "",
            tooltip=tip,
        )
    widget.add_class(f"nbbench-{command}-{flag.lstrip('-')}")
    widget._nbbench_flag = flag
    return widget


def option_fields(command: str, spec) -> dict[str, Any]:
    """``{flag: widget}`` for ``spec`` = ``[(flag, description[, width[, {labels/choices/placeholder}]]), …]``
    (:func:`option_field`)."""
    out = {}
    for flag, *rest in spec:
        kw = rest.pop() if rest and isinstance(rest[-1], dict) else {}
        out[flag] = option_field(command, flag, *rest, **kw)
    return out


def options_argv(fields: dict[str, Any]) -> list[str]:
    """The subcommand's options from the fields: ``["--threads", "4", "--cold"]`` — a checkbox
    its flag when ticked (a ``--no-…`` switch's when unticked), an empty text nothing (the parser's
    default), a hidden field nothing."""
    import ipywidgets as w

    out: list[str] = []
    for flag, widget in fields.items():
        if getattr(widget.layout, "display", None) == "none":
            continue
        if isinstance(widget, w.Checkbox):
            out += [flag] if bool(widget.value) != getattr(widget, "_nbbench_negated", False) else []
            continue
        value = widget.value.strip() if isinstance(widget.value, str) else widget.value
        if value == "" or value is None:
            continue
        out += [flag, str(value)]
    return out


def size_text(value: Any, fallback: str) -> str:
    """A size default as the user would type it: 1073741824 -> '1G', '4k' -> '4k'."""
    if value is None:
        return fallback
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        return fallback
    for shift, suffix in ((40, "T"), (30, "G"), (20, "M"), (10, "k")):
        if value >= 1 << shift and value % (1 << shift) == 0:
            return f"{value >> shift}{suffix}"
    return str(value)


def need_path(info: PathInfo, what: str = "this probe") -> str:
    """The checked path, or a ProbeError saying why it cannot be used."""
    if info is None or not info.path:
        raise ProbeError(f"type a PATH for {what} in the field at the top of the panel")
    if not info.ok:
        raise ProbeError(info.error or f"{info.path} cannot be used")
    return info.path


def ranks_field():
    """The "ranks" box of the tabs whose probes run as many ranks (``--ranks N``; 0: this process alone)."""
    import ipywidgets as w

    box = w.BoundedIntText(
        value=0,
        min=0,
        max=1024,
        description="ranks",
        style={"description_width": "initial"},
        layout=w.Layout(width="150px"),
        tooltip="0: this process alone; N: N local ranks as child processes (--ranks N)",
    )
    box.add_class("nbbench-ranks")
    return box


def ranks_opts(field) -> list[str]:
    n = int(field.value or 0)
    return ["--ranks", str(n)] if n > 0 else []


def repeat_field(command: str = "dd"):
    """The "runs" box of the measuring tabs (``--repeat N``: the probe run N times, the median and
    its spread reported; 1: one run), its limits and help taken from ``command``'s parser."""
    box = option_field(command, "--repeat", "runs", "130px")
    box.add_class("nbbench-repeat")
    return box


def repeat_opts(field) -> list[str]:
    n = int(field.value or 1)
    return ["--repeat", str(n)] if n > 1 else []
