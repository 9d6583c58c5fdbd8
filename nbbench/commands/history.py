"""``history``, ``compare`` and ``report``: read the store; they save nothing."""

from __future__ import annotations

from . import Command
from .options import Opt, nonneg_int, percentage, positive_int


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

    arguments = (
        Opt("--kind", None, None, "only runs of this kind (dd, randread, loader, …)", metavar="K"),
        Opt("--label", None, None, "only runs with this label", metavar="L"),
        Opt("--last", positive_int, None, "only the newest N runs", metavar="N"),
    )

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

    arguments = (
        Opt("refs", help="run ids or labels; the first is the baseline", metavar="RUN_OR_LABEL", nargs="+"),
        Opt(
            "--metrics",
            _csv,
            None,
            "only these metric keys, comma-separated (e.g. read_bytes_per_s,iops)",
            metavar="LIST",
        ),
        Opt("--png", None, None, "also write the bar chart to FILE (PNG)", metavar="FILE"),
        Opt(
            "--fail-if-worse",
            percentage,
            None,
            "a gate for CI: exit 3 when a headline figure is significantly worse than the baseline (its 95 %% "
            "interval wholly on the worse side) and worse by more than PCT (e.g. 5%%); else 0",
            metavar="PCT",
        ),
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

    arguments = (
        Opt("--format", ("html", "md", "json"), None, "html (default; or from --out's suffix), md or json", dest="fmt"),
        Opt(
            "--out",
            None,
            None,
            "where to write it ('-': print it; default nbbench-report-DATE-TIME.EXT here)",
            metavar="FILE",
        ),
        Opt(
            "--runs", _csv, None, "run ids or labels, comma-separated (default: the latest --last runs)", metavar="LIST"
        ),
        Opt("--last", nonneg_int, 10, "with no --runs: the newest N runs (default 10; 0 = all)", metavar="N"),
        Opt("--kind", None, None, "with no --runs: only runs of this kind", metavar="K"),
        Opt("--label", None, None, "with no --runs: only runs with this label", metavar="L"),
        Opt(
            "--path",
            None,
            None,
            "the directory the doctor checks (default: the results' path, else here)",
            metavar="PATH",
        ),
        Opt("--no-doctor", "store_false", help="leave the doctor's findings out", dest="doctor"),
        Opt("--force", "store_true", help="replace --out if it exists"),
    )

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
