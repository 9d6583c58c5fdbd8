"""History tab: the stored runs, filtered by kind and label; select two or more to compare.

The comparison (metric table with changes against the first selected run, grey within the noise, the
warnings about unlike runs, the bar chart) is :mod:`nbbench.compare`'s — the same
one ``%iobench compare`` and ``nbbench compare`` show.
"""

from __future__ import annotations

import html

from nbbench.plots import figure_png

from ...commands.history import history_text
from ...compare import compare
from ...results import ProbeError
from ...store import default_store
from ...units import metric_label
from ..views import error_html, to_html
from .base import Tab

ALL = "all kinds"
#: the list's rows are cut to this many characters (a long path in the middle, never a figure)
ROW_WIDTH = 120


class HistoryTab(Tab):
    title = "History"
    limit = 500

    def build(self):
        import ipywidgets as w

        st = {"description_width": "initial"}
        self.kind = w.Dropdown(options=[ALL], value=ALL, description="kind", style=st, layout=w.Layout(width="200px"))
        self.label_filter = w.Combobox(
            value="",
            options=[],
            description="label",
            placeholder="any label",
            ensure_option=False,
            style=st,
            layout=w.Layout(width="230px"),
        )
        self.refresh_button = w.Button(description="Refresh", icon="refresh", layout=w.Layout(width="auto"))
        self.runs = w.SelectMultiple(options=[], rows=8, layout=w.Layout(width="100%"))
        self.runs.add_class("nbbench-history-runs")
        # the list's column names, in the list's monospace font, over its columns
        self.header = w.HTML("", layout=w.Layout(margin="0 0 -4px 0"))
        self.header.add_class("nbbench-history-header")
        self.compare_button = w.Button(
            description="Compare selected",
            icon="bar-chart",
            disabled=True,
            button_style="info",
            layout=w.Layout(width="auto"),
            tooltip="select two or more runs (ctrl/shift-click): % against the first",
        )
        self.compare_button.add_class("nbbench-compare")
        self.show_button = w.Button(
            description="Show selected", icon="eye", disabled=True, layout=w.Layout(width="auto")
        )
        self.hint = w.HTML(
            "<span style='color:#555'>Select runs with ctrl/shift-click; the oldest selected is "
            "the baseline.</span><style>.nbbench-history-runs select{font-family:"
            "var(--jp-code-font-family,monospace);font-size:var(--jp-code-font-size,12px)}</style>"
        )
        self.out = w.HTML("")
        self.out.add_class("nbbench-history-out")
        self.charts = w.VBox([])
        self.charts.add_class("nbbench-history-chart")
        self.kind.observe(lambda c: self.refresh(), names="value")
        self.label_filter.observe(lambda c: self.refresh(), names="value")
        self.refresh_button.on_click(lambda b: self.refresh())
        self.runs.observe(self._selected, names="value")
        self.compare_button.on_click(lambda b: self.compare())
        self.show_button.on_click(lambda b: self.show_selected())
        self._frame = None
        self.refresh()
        return w.VBox(
            [
                w.HBox([self.kind, self.label_filter, self.refresh_button]),
                self.header,
                self.runs,
                w.HBox([self.compare_button, self.show_button, self.hint]),
                self.out,
                self.charts,
            ]
        )

    # ----------------------------------------------------------------- data
    def store(self):
        if self.panel.store is not None:
            return self.panel.store

        return default_store()

    def refresh(self) -> None:
        """Re-read the store with the current filters."""
        try:
            st = self.store()
            everything = st.history(limit=self.limit)
            kind = None if self.kind.value == ALL else self.kind.value
            label = self.label_filter.value.strip() or None
            frame = st.history(kind=kind, label=label, limit=self.limit)
        except Exception as exc:  # noqa: BLE001 - shown, not swallowed
            self.out.value = _error(f"cannot read the store: {type(exc).__name__}: {exc}")
            return
        kinds = sorted({k for k in everything.get("kind", []) if k}) if len(everything) else []
        opts = [ALL] + kinds
        if list(self.kind.options) != opts:
            keep = self.kind.value if self.kind.value in opts else ALL
            self.kind.options = opts
            self.kind.value = keep
        labels = (
            sorted({str(x) for x in everything.get("label", []) if isinstance(x, str) and x}) if len(everything) else []
        )
        self.label_filter.options = labels
        self._frame = frame
        selected = set(self.runs.value)
        newest = frame.iloc[::-1]
        head, *lines = history_text(newest, width=ROW_WIDTH)  # the CLI's rows: the answer first
        self.header.value = (
            f"<pre style='margin:0;padding:0 5px;font-family:var(--jp-code-font-family,monospace);"
            f"font-size:var(--jp-code-font-size,12px);color:#555'>{html.escape(head)}</pre>"
        )
        options = [(text, int(rid)) for text, rid in zip(lines, newest["run_id"])]
        self.runs.options = options
        self.runs.value = tuple(v for _, v in options if v in selected)
        self._selected()

    def selected_ids(self) -> list[int]:
        """Selected run ids, oldest first (the first is the baseline)."""
        return sorted(int(v) for v in self.runs.value)

    def _selected(self, change=None) -> None:
        n = len(self.runs.value)
        self.compare_button.disabled = n < 2
        self.show_button.disabled = n < 1

    # -------------------------------------------------------------- actions
    def show_selected(self) -> None:

        st = self.store()
        self._clear_charts()
        try:
            self.out.value = to_html([st.get(i) for i in self.selected_ids()])
        except Exception as exc:  # noqa: BLE001
            self.out.value = _error(f"{type(exc).__name__}: {exc}")

    def compare(self, ids: list[int] | None = None):
        """Compare the selected runs (or ``ids``) with :func:`nbbench.compare.compare`; shows and returns it."""
        ids = ids or self.selected_ids()
        try:
            if len(ids) < 2:
                raise ProbeError("select two or more runs to compare (ctrl/shift-click)")

            st = self.store()
            comparison = compare([st.get(i) for i in ids], store=st)
        except ProbeError as exc:
            self._clear_charts()
            self.out.value = _error(str(exc))
            return None
        except Exception as exc:  # noqa: BLE001 - shown, never swallowed
            import traceback

            self._clear_charts()
            self.out.value = error_html(f"{type(exc).__name__}: {exc}", traceback.format_exc())
            return None
        self.show_comparison(comparison)
        return comparison

    def show_comparison(self, comparison) -> None:
        """The sentences, the table (% against the first) and one bar chart per kind."""
        import ipywidgets as w

        self.out.value = headline_html(comparison) + comparison.html(images=False)
        images = []
        for fig in comparison.figures():
            img = w.Image(value=figure_png(fig), format="png", layout=w.Layout(max_width="100%"))
            img.add_class("nbbench-history-chart-png")
            images.append(img)
        self.charts.children = images

    def _clear_charts(self) -> None:
        self.charts.children = ()

    # ---------------------------------------------------------------- hooks
    def on_shown(self) -> None:
        self.refresh()

    def on_run_finished(self, record) -> None:
        self.refresh()


def _error(msg: str) -> str:

    return error_html(msg)


def headline_html(comparison, max_metrics: int = 3) -> str:
    """'new-disk: read 943 MB/s, +17.9 % (95 % CI …) against the baseline (baseline: 800 MB/s)'; a
    change within the noise says 'no significant change' in grey (:mod:`nbbench.compare.noise`).

    One line per later run and throughput-like metric (higher is better; up to
    ``max_metrics`` per kind), taken from the comparison's rows: the figures are
    already formatted by ``units.format_metric``, the deltas computed by
    :mod:`nbbench.compare`.
    """
    import html

    esc = html.escape
    lines = []
    for g in comparison.groups:
        rows = [r for r in g.rows if r["better"] == "higher" and r["value"] is not None]
        metrics = list(dict.fromkeys(r["metric"] for r in rows))[:max_metrics]
        for metric in metrics:
            mine = [r for r in rows if r["metric"] == metric]
            if not mine or mine[0]["ref"] != g.names[0]:  # the baseline has no value for it
                continue
            base = mine[0]
            for r in mine[1:]:
                i = g.names.index(r["ref"])
                if g.interval(metric, i) is None:
                    continue
                colour = g.delta_paint(metric, i, "#444")  # grey within the noise, never green/red
                weight = "bold" if r["significant"] else "normal"
                lines.append(
                    f"<div class='nbbench-compare-headline'><b>{esc(r['ref'])}</b>: "
                    f"{esc(metric_label(metric))} {esc(r['display'])}, "
                    f"<span style='color:{colour};font-weight:{weight}' title='{esc(r['change'] or '')}'>"
                    f"{esc(g.delta_cell(metric, i))}</span> against the "
                    f"baseline ({esc(base['ref'])}: {esc(base['display'])})</div>"
                )
    return "".join(lines)
