"""``history``, ``compare`` and ``report``: read the store; they save nothing."""

from __future__ import annotations

from . import Command


def _csv(text: str) -> list[str]:
    import argparse

    vals = [t.strip() for t in text.split(",") if t.strip()]
    if not vals:
        raise argparse.ArgumentTypeError(f"need one or more run ids or labels, comma-separated: {text!r}")
    return vals


class HistoryCommand(Command):
    help = "stored runs as a table"
    description = (
        "Stored runs, oldest first, one row each: status (did it run), verdict (what its checks "
        "found), its metrics as columns (base units), and a summary worded from the stored result, "
        "the answer first. In a notebook it is the full DataFrame, returned as the cell's value; a "
        "terminal shows one line per run under a header, at most 100 columns wide (a long path is "
        "shortened in the middle, never a figure)."
    )
    epilog = "Example: df = %iobench history --kind dd   ·   nbbench history --label baseline"
    saves = False
    expression = True

    def add_arguments(self, p) -> None:
        from .options import positive_int

        p.add_argument("--kind", default=None, metavar="K", help="only runs of this kind (dd, randread, loader, …)")
        p.add_argument("--label", default=None, metavar="L", help="only runs with this label")
        p.add_argument("--last", type=positive_int, default=None, metavar="N", help="only the newest N runs")

    def run(self, args, ctx):
        from ..store import default_store

        return default_store().history(kind=args.kind, label=args.label, limit=args.last)

    def show(self, value, args, ctx) -> None:
        from ..store import default_store

        if len(value) == 0:
            what = " and ".join(f"{k} {v!r}" for k, v in (("kind", args.kind), ("label", args.label)) if v)
            ctx.echo(f"no stored runs{' with ' + what if what else ''} in {default_store().path}")
            return
        ctx.echo("\n".join(history_text(value, width=100)))


class CompareCommand(Command):
    help = "compare stored runs: changes against the first, with their 95 % intervals"
    description = (
        "Compare stored runs like for like — same kind; a warning when parameters or the cache mode "
        "differ — as a metric table with the change against the first and a bar chart. Each change "
        "carries the 95 % interval of candidate/baseline over the runs: one whose interval contains 1 "
        "is 'no significant change' (grey); with one run a side the runs' windows give the interval, "
        "else it is 'inconclusive'. Each RUN_OR_LABEL is a run id or a label (per kind, a label's "
        "latest run with its other runs of the same settings, pooled as repeats)."
    )
    epilog = (
        "Example: cmp = %iobench compare nvme nfs   ·   nbbench compare 3 7 --png cmp.png   ·   "
        "nbbench compare main pr --fail-if-worse 5%  (exit 3 on a significant regression)"
    )
    saves = False
    expression = True

    def add_arguments(self, p) -> None:
        p.add_argument("refs", nargs="+", metavar="RUN_OR_LABEL", help="run ids or labels; the first is the baseline")
        p.add_argument(
            "--metrics",
            type=_csv,
            default=None,
            metavar="LIST",
            help="only these metric keys, comma-separated (e.g. read_bytes_per_s,iops)",
        )
        p.add_argument("--png", default=None, metavar="FILE", help="also write the bar chart to FILE (PNG)")
        from .options import percentage

        p.add_argument(
            "--fail-if-worse",
            type=percentage,
            default=None,
            metavar="PCT",
            help="a gate for CI: exit 3 when a headline figure is significantly worse than the "
            "baseline (its 95 %% interval wholly on the worse side) and worse by more than PCT "
            "(e.g. 5%%); else 0",
        )

    def run(self, args, ctx):
        from ..compare import compare
        from ..plots import figure_png
        from ..results import ProbeError

        if len(args.refs) < 2:
            raise ProbeError("compare needs two or more run ids or labels, e.g. compare baseline 12")
        cmp = compare(args.refs, metrics=args.metrics, fail_if_worse=getattr(args, "fail_if_worse", None))
        fig = cmp.figure(0) if args.png else None
        if args.png and fig is None:
            cmp.notes.append("no bar chart: no headline metric has a value")
        elif args.png:
            import os

            path = os.path.abspath(args.png)
            if os.path.exists(path):
                raise ProbeError(f"{path} exists: give another --png file name")
            try:
                with open(path, "xb") as f:
                    f.write(figure_png(fig))
            except OSError as exc:
                raise ProbeError(f"cannot write {path}: {exc.strerror or exc}") from None
            cmp.notes.append(f"bar chart written to {path}")
        return cmp

    def show(self, value, args, ctx) -> None:
        ctx.display_html(value.html(images=False), text=value.text_table())
        from ..compare import chart_metrics

        for g in value.groups:
            if chart_metrics(g):  # a chart only where a metric has a value
                ctx.display_image(lambda g=g: _chart_png(g))  # drawn only where images show


class ReportCommand(Command):
    help = "a shareable report: environment, doctor, results"
    description = (
        "Write a shareable report: the environment fingerprint, the doctor's findings for this "
        "machine and the selected results with their plots (HTML: one self-contained file with "
        "embedded PNGs), plus like-for-like comparisons and disk results as fio-shaped JSON."
    )
    epilog = (
        "Example: %iobench report --runs nvme,nfs --out cmp.html   ·   "
        "nbbench report --format md --out report.md   ·   nbbench report --format json --out -"
    )
    saves = False

    def add_arguments(self, p) -> None:
        from .options import nonneg_int

        p.add_argument(
            "--format",
            dest="fmt",
            choices=("html", "md", "json"),
            default=None,
            help="html (default; or from --out's suffix), md or json",
        )
        p.add_argument(
            "--out",
            default=None,
            metavar="FILE",
            help="where to write it ('-': print it; default nbbench-report-DATE-TIME.EXT here)",
        )
        p.add_argument(
            "--runs",
            type=_csv,
            default=None,
            metavar="LIST",
            help="run ids or labels, comma-separated (default: the latest --last runs)",
        )
        p.add_argument(
            "--last",
            type=nonneg_int,
            default=10,
            metavar="N",
            help="with no --runs: the newest N runs (default 10; 0 = all)",
        )
        p.add_argument("--kind", default=None, metavar="K", help="with no --runs: only runs of this kind")
        p.add_argument("--label", default=None, metavar="L", help="with no --runs: only runs with this label")
        p.add_argument(
            "--path",
            default=None,
            metavar="PATH",
            help="the directory the doctor checks (default: the results' path, else here)",
        )
        p.add_argument("--no-doctor", dest="doctor", action="store_false", help="leave the doctor's findings out")
        p.add_argument("--force", action="store_true", help="replace --out if it exists")

    def run(self, args, ctx):
        from ..report import report

        p = ctx.progress("report")
        try:
            rep = report(
                args.fmt,
                out=args.out,
                runs=args.runs,
                last=args.last,
                kind=args.kind,
                label=args.label,
                path=args.path,
                run_doctor=args.doctor,
                overwrite=args.force,
            )
        except BaseException:
            p.close("failed")
            raise
        p.close("ok")
        return rep

    def show(self, value, args, ctx) -> None:
        if value.path is None:  # --out -: the report itself
            if value.format == "html":
                ctx.display_html(value.text, text=value.text.rstrip("\n"))
            else:
                ctx.echo(value.text.rstrip("\n"))
            return
        ctx.display_html(value._repr_html_(), text="\n".join([str(value)] + [f"  + {f}" for f in value.files]))


def history_text(frame, width: int | None = 100) -> list[str]:
    """The history frame (:meth:`nbbench.store.Store.history`) as lines under a header: run,
    started (local time), kind, label, outcome, summary — each at most ``width`` columns
    (:func:`nbbench.results.present.summaries.history_lines`).  The panel's History list uses it too."""
    import datetime as _dt

    from ..results.present.summaries import history_lines

    def when(ts) -> str:
        try:  # stored as naive UTC timestamps: shown in local time
            return _dt.datetime.fromtimestamp(ts.timestamp()).strftime("%m-%d %H:%M")
        except Exception:  # noqa: BLE001
            return str(ts)[:16]

    return history_lines(frame.to_dict("records"), width=width, when=when)


def _chart_png(group) -> bytes:
    from ..plots import figure_png
    from ..plots.compare import bar_chart

    return figure_png(bar_chart(group))
