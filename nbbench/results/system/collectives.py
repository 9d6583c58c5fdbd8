"""Result of the collectives probe (kind ``collectives``): nccl-tests' table on the ranks of a run.

``samples["rows"]``: one row per operation, size and placement — ``size_bytes``, ``count``,
``dtype``, ``redop``, ``placement`` (out-of-place / in-place), ``time_us`` (one call, the mean over
the ranks and the timed calls), ``algbw_bytes_per_s`` (size / time), ``busbw_bytes_per_s`` (algbw ×
the operation's factor: all-reduce 2(n−1)/n; all-gather, reduce-scatter, alltoall (n−1)/n;
broadcast, sendrecv 1), the busbw of the slowest / median / fastest call, ``time_cv_pct``,
``wrong`` (elements wrong, summed over the ranks; None unchecked); or ``error`` (why the row did
not run: the backend lacks the operation, torch has no such form).

Metrics: ``{op}_busbw_bytes_per_s`` (the plateau: median of the three largest sizes),
``{op}_algbw_bytes_per_s``, ``{op}_avg_busbw_bytes_per_s`` (nccl-tests' "Avg bus bandwidth"),
``{op}_busbw_at_{size}_bytes_per_s`` (each size: what compare compares across runs), ``wrong_count``.
``extra``: ``verdicts`` (the plateau against the expected link, the correctness check),
``transport`` (what NCCL said it used), ``nccl_env`` (the NCCL variables in force),
``expected_link``, ``links``.
"""

from __future__ import annotations

from ...units import format_bytes, format_rate
from .. import drawing
from ..base import Result, register
from ..present import SEP, Section
from ..verdict import worst_verdict

__all__ = ["CollectivesResult", "table_rows", "spread_rows", "TABLE_HEAD"]

#: nccl-tests' columns: the operation and size, then out-of-place and in-place side by side
TABLE_HEAD = [
    "op",
    "size",
    "count",
    "type",
    "redop",
    "out-of-place µs",
    "algbw",
    "busbw",
    "#wrong",
    "in-place µs",
    "algbw",
    "busbw",
    "#wrong",
    "note",
]
_PLACES = ("out-of-place", "in-place")


def _size(n) -> str:
    return format_bytes(n, binary=True) if n else "0 B"


def _rate(v) -> str:
    return "N/A" if v is None else format_rate(v, "bytes/s")


def table_rows(rows: list[dict]) -> list[list[str]]:
    """nccl-tests' table: one line per operation and size, out-of-place and in-place side by side ("—"
    where torch.distributed has no such form); a row that did not run says why in the note."""
    lines: dict[tuple, dict] = {}
    for r in rows:
        lines.setdefault((r["op"], r.get("asked_bytes")), {})[r.get("placement")] = r
    out = []
    for pair in lines.values():
        first = next(iter(pair.values()))
        cells = [first["op"], _size(first.get("size_bytes")), str(first.get("count")), first.get("dtype") or ""]
        cells.append(first.get("redop") or "—")
        notes = []
        for place in _PLACES:
            r = pair.get(place)
            if r is None or r.get("error"):
                cells += ["—"] * 4
                if r is not None:
                    notes.append(r["error"])
                continue
            wrong = "N/A" if r.get("wrong") is None else str(r["wrong"])
            cells += [
                f"{r['time_us']:.1f}",
                _rate(r.get("algbw_bytes_per_s")),
                _rate(r.get("busbw_bytes_per_s")),
                wrong,
            ]
        out.append(cells + ["; ".join(dict.fromkeys(notes))])
    return out


def spread_rows(rows: list[dict]) -> list[list[str]]:
    """Each timed row's busbw over its calls (slowest … fastest) and the calls' coefficient of variation."""
    out = []
    for r in rows:
        lo, hi = r.get("busbw_min_bytes_per_s"), r.get("busbw_max_bytes_per_s")
        if lo is None or hi is None:
            continue
        cv = r.get("time_cv_pct")
        out.append(
            [
                r["op"],
                _size(r.get("size_bytes")),
                r["placement"],
                f"{_rate(lo)} … {_rate(hi)}",
                "N/A" if cv is None else f"{cv:.0f} %",
            ]
        )
    return out


@register("collectives")
class CollectivesResult(Result):
    """One collectives run on N ranks."""

    SUMMARY = ("all_reduce_busbw_bytes_per_s", "all_gather_busbw_bytes_per_s", "wrong_count")
    QUALIFIERS = ("backend", "ranks", "hosts", "device")
    FINDINGS = "checks"

    @property
    def rows(self) -> list[dict]:
        return self.samples.get("rows") or []

    @property
    def verdicts(self) -> list[dict]:
        return self.extra.get("verdicts") or []

    def judge(self) -> str | None:
        return worst_verdict(v.get("status") for v in self.verdicts if v.get("status"))

    def headline(self) -> str:
        p = self.params
        return f"collectives {p.get('dtype', 'float')} {p.get('redop', 'sum')} ×{self.labels.get('ranks', '?')} ranks"

    def findings(self) -> dict[str, int] | None:
        found: dict[str, int] = {}
        for v in self.verdicts:
            if v.get("status"):
                found[v["status"]] = found.get(v["status"], 0) + 1
        return found or None

    def answer_line(self) -> str:
        """'all_reduce 4.21 GB/s busbw · all_gather 2.10 GB/s busbw · … · 0 wrong'."""
        if self.status == "failed":
            return f"collectives failed: {self.reason}"
        bits = []
        for op in dict.fromkeys(r["op"] for r in self.rows):
            v = self.metrics.get(f"{op}_busbw_bytes_per_s")
            if v is not None:
                bits.append(f"{op} {format_rate(v, 'bytes/s')} busbw")
            else:
                err = next((r.get("error") for r in self.rows if r["op"] == op and r.get("error")), None)
                bits.append(f"{op}: {err or 'no figure'}")
        w = self.metrics.get("wrong_count")
        if w is not None:
            bits.append(f"{w} wrong")
        return SEP.join(bits) if bits else "no figures"

    def story(self) -> list[str]:
        """The plateau's meaning, the transport NCCL used and the variables in force."""
        if self.status == "failed" or not self.rows:
            return []  # the reason is the answer
        out = ["busbw: the plateau, median of the three largest sizes (algbw × the operation's factor)."]
        t = self.extra.get("transport")
        if t and t.get("main"):
            from_lines = ", ".join(f"{k} {n}" for k, n in t["transports"].items())
            out.append(
                f"NCCL used {t['main']} (channels: {from_lines})"
                + (f"; network {t['network']}" if t.get("network") else "")
                + "."
            )
        elif self.labels.get("backend") == "nccl":
            out.append(
                "NCCL's transport is not known: NCCL_DEBUG was set outside nbbench, so its lines went where it says."
            )
        env = self.extra.get("nccl_env") or {}
        if env and self.labels.get("backend") == "nccl":
            out.append("NCCL variables in force: " + ", ".join(f"{k}={v}" for k, v in env.items()) + ".")
        missing = self.extra.get("missing_forms") or []
        if missing:
            out.append("Not in the table (nccl-tests has both placements): " + "; ".join(missing) + ".")
        if self.labels.get("injected"):
            out.append(self.labels["injected"] + ".")
        return out

    def sections(self) -> list[Section]:
        out = []
        if self.verdicts:
            shown = self.verdicts
            out.append(
                Section(
                    "checks",
                    [[(v.get("status") or "info").upper(), v["check"], v["message"]] for v in shown],
                    head=None,
                    folded=False,
                    align="lll",
                    marks=[v.get("status") for v in shown],
                    css="nbbench-checks",
                )
            )
        if self.rows:
            out.append(
                Section(
                    "nccl-tests table",
                    table_rows(self.rows),
                    head=list(TABLE_HEAD),
                    folded=False,
                    align="lrrll" + "r" * 8 + "l",
                    note="µs: one call, mean over the ranks and the timed calls; busbw = algbw × factor "
                    "(all_reduce 2(n−1)/n; all_gather, reduce_scatter, alltoall (n−1)/n; broadcast, sendrecv 1)",
                )
            )
            out.append(
                Section(
                    "busbw over the timed calls",
                    spread_rows(self.rows),
                    head=["op", "size", "placement", "slowest … fastest call", "time CV"],
                    align="lrlrr",
                )
            )
        return out + [s for s in super().sections() if s.css != "nbbench-metrics"]

    def figure(self):
        """busbw by size, one line per operation, the expected link dashed (the "busbw" drawer:
        :mod:`nbbench.results.drawing`)."""
        return drawing.draw("busbw", self)

    def png(self) -> bytes:
        """:meth:`figure` as PNG bytes (``IPython.display.Image(r.png())``)."""
        return drawing.draw("busbw_png", self)
