"""What every tab of the panel shares.

A tab draws its own parameter widgets and, when Run is pressed, turns them into a
:class:`~nbbench.panel.runner.Job` — usually a subcommand line such as
``["dd", PATH, "--bs", "1M", "--size", "16M"]`` that :func:`nbbench.commands.parse`
checks, exactly as for ``%iobench dd`` and ``nbbench dd``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ... import commands
from ...results import ProbeError

if TYPE_CHECKING:  # pragma: no cover
    from ..app import ControlPanel
    from ..pathfield import PathInfo
    from ..runner import Job

__all__ = ["Tab", "command_defaults", "size_text", "unavailable_reason", "need_path", "ranks_field", "ranks_opts",
           "COMMON_FIELDS", "show", "FIT"]

#: a layout width that fits the widget's whole text (its description and its longest option)
FIT = "max-content"


class Tab:
    title: str = ""
    #: subcommands this tab runs (for "not available" notes)
    commands: tuple[str, ...] = ()
    #: the panel's "live plot" box does something here (a probe reporting rates, or its own plot)
    live_plot: bool = True
    #: this tab's run area (:class:`~nbbench.panel.area.RunArea`), given by the panel
    area = None

    def __init__(self, panel: "ControlPanel"):
        self.panel = panel
        self.widget = self.build()

    # --------------------------------------------------------------- override
    def build(self):
        import ipywidgets as w

        return w.VBox([])

    def run_label(self) -> str | None:
        """Text of the Run button on this tab (None: this tab has no Run)."""
        return None

    def job(self, path: "PathInfo", label: str | None) -> "Job":
        raise ProbeError(f"nothing to run on the {self.title} tab")

    def on_path(self, info: "PathInfo") -> None:
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
COMMON_FIELDS = {"--label": "label", "--ranks": "ranks"}


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


def command_defaults(name: str) -> dict[str, Any]:
    """The defaults the subcommand's parser declares (dest -> default), {} when not available.

    From :func:`nbbench.commands.defaults`: the parser :func:`nbbench.commands.parse` uses."""
    from ..runner import PanelContext

    try:
        return commands.defaults(name, PanelContext())
    except Exception:  # noqa: BLE001 - a subcommand not built yet: the tab's own fallbacks
        return {}


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


def need_path(info: "PathInfo", what: str = "this probe") -> str:
    """The checked path, or a ProbeError saying why it cannot be used."""
    if info is None or not info.path:
        raise ProbeError(f"type a PATH for {what} in the field at the top of the panel")
    if not info.ok:
        raise ProbeError(info.error or f"{info.path} cannot be used")
    return info.path


def ranks_field():
    """The "ranks" box of the tabs whose probes run as many ranks (``--ranks N``; 0: this process alone)."""
    import ipywidgets as w

    box = w.BoundedIntText(value=0, min=0, max=1024, description="ranks", style={"description_width": "initial"},
                           layout=w.Layout(width="150px"),
                           tooltip="0: this process alone; N: N local ranks as child processes (--ranks N)")
    box.add_class("nbbench-ranks")
    return box


def ranks_opts(field) -> list[str]:
    n = int(field.value or 0)
    return ["--ranks", str(n)] if n > 0 else []
