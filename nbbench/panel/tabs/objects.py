"""Object storage tab: ``nbbench s3 s3://BUCKET/PREFIX`` — GET throughput, TTFB and the concurrency sweep.

The bucket's URL is its own field (the panel's PATH is a local path); every other field is an
option of the ``s3`` subcommand, built from its parser (:func:`~.base.option_fields`), so the
panel, the CLI and ``%iobench`` cannot disagree.  Reads only, unless "write test" is ticked.
"""

from __future__ import annotations

from ...results import ProbeError
from ..runner import command_job
from ..wording import field_names
from .base import COMMON_FIELDS, FIT, LEFT_OUT, Tab, option_fields, options_argv, unavailable_reason

#: the subcommand's options shown as fields: (flag, the field's name in the panel, width)
OPTION_FIELDS = {
    "s3": [
        ("--endpoint-url", "endpoint", "360px", {"placeholder": "AWS S3 (or http://HOST:PORT)"}),
        ("--region", "region", "200px"),
        ("--streams", "streams", "150px"),
        ("--max-streams", "sweep up to", "170px"),
        ("--runtime", "runtime", "150px"),
        ("--part-size", "ranged part", "170px"),
        ("--no-sweep", "concurrency sweep (1, 2, 4, … streams; untick: measure at 'streams' only)"),
        ("--write", "write test: PUTs under a new prefix, all deleted"),
    ]
}
#: left out on purpose (tests/test_panel_options.py fails on an option neither shown nor here)
NOT_FIELDS = {
    *LEFT_OUT,
    "--repeat",
    "--sweep-runtime",
    "--no-ranged",
    "--max-keys",
    "--seed",
    "--write-size",
    "--write-count",
}


class ObjectsTab(Tab):
    title = "Object storage"
    commands = ("s3",)

    def build(self):
        import ipywidgets as w

        self.url = w.Text(
            value="",
            description="bucket",
            placeholder="s3://BUCKET/PREFIX",
            style={"description_width": "initial"},
            layout=w.Layout(width="420px"),
        )
        self.opts = option_fields("s3", OPTION_FIELDS["s3"])
        o = self.opts
        about = w.HTML(
            "<span style='color:#555'>GETs the objects under a prefix at N concurrent streams: "
            "throughput, requests/s, time to first byte; a sweep of 1, 2, 4, … streams names the knee. "
            "Credentials come from the standard AWS chain and are never shown.</span>"
        )
        kids = [
            about,
            self.url,
            w.HBox([o["--endpoint-url"], o["--region"]]),
            w.HBox([o["--streams"], o["--max-streams"], o["--runtime"], o["--part-size"]]),
            o["--no-sweep"],
            o["--write"],
        ]
        note = unavailable_reason("s3")
        if note:
            kids.append(w.HTML(f"<span style='color:#c62828'>not available: {note}</span>"))
        return w.VBox(kids, layout=w.Layout(width=FIT))

    def run_label(self) -> str:
        return "Run s3"

    def fields(self) -> dict[str, str]:

        return {**COMMON_FIELDS, **field_names(list(self.opts.items())), "url": self.url.description}

    def job(self, path, label):
        url = self.url.value.strip()
        if not url:
            raise ProbeError("type the bucket's URL, s3://BUCKET/PREFIX, in the 'bucket' field")
        return command_job(f"s3 {url}", "s3", url, *options_argv(self.opts), label=label, fields=self.fields())
