"""The rank part of a probe: :class:`RankJob`, the hooks every probe's part fills in.

A :class:`RankJob` says, for one probe:

* ``preflight(env)`` — on every rank, before anything is written: the path is there and
  usable, and the free space holds N × the size (a ProbeError otherwise);
  ``local_checks(n)`` the same in the launching process before any rank starts;
* ``setup(env)`` / ``teardown(env)`` — shared state made by rank 0 (randread's one file);
* ``run(progress, cancel)`` — the probe on this rank's own part, returning its Result;
* ``tracks(res, clock)`` — its progress per phase on the common clock
  (:mod:`nbbench.ranks.aggregate`), from the probe's 500 ms series and the wall-clock
  anchor of each phase's t = 0 (``res.extra["t0_unix"]``, written by the probes;
  when a probe gives none, the time of the phase's last progress report minus its
  elapsed time);
* ``phases`` — the phases and the rates rank 0 aggregates; ``finish(res, records)`` —
  what else it adds (the latency histograms merged);
* ``sweep_left()`` — after a rank was killed: what it left in the directory (the stale
  temporary files of dead processes of this host), removed.

The parts themselves: :mod:`.jobs` (dd, randread, files), :mod:`.ckptjobs` (checkpoint,
shards), :mod:`.loaderjobs` (loader), :mod:`.sweepfeed` (sweep, feed).
"""

from __future__ import annotations

from typing import Any

from ..probes import catalog
from ..probes.storage.target import inspect
from ..results import Result
from ..results.hist import LatencyHistogram
from .aggregate import Phase, track_from_windows

# The probes are imported inside the jobs' methods: a rank, which unpickles its job, loads only
# the probe that job runs.

__all__ = ["RankJob", "merge_hists", "sum_metrics", "rank_metric"]


class RankJob:
    """One probe as a rank runs it (see the module doc)."""

    kind = "result"
    phases: list[Phase] = []
    #: bytes each rank writes in the directory (the launcher and the preflight count N × this)
    write_bytes = 0

    def __init__(self, params: dict[str, Any]):
        self.params = dict(params)
        self.rank = 0
        self.world_size = 1
        self.last_report: dict[str, float] = {}  # metric key -> wall time of its last progress report
        #: ``ready(phase)``: the ranks meet just before each timed phase (set by the rank runner)
        self.ready = None

    # ------------------------------------------------------------ hooks
    def bind(self, env) -> None:
        self.rank, self.world_size = env.rank, env.world_size

    def local_checks(self, nranks: int) -> None:
        """In the launching process, before any rank starts (the free space for N ranks)."""
        self._room(nranks)

    def preflight(self, env) -> None:
        self._room(env.world_size)

    def setup(self, env) -> None:
        pass

    def teardown(self, env) -> None:
        pass

    def run(self, progress, cancel) -> Result:
        """The probe on this rank's part: the probe of :attr:`kind`, called with the parameter object as it
        came and what this rank sets for itself (:meth:`own`)."""
        return self.call_probe(progress=progress, cancel=cancel, ready=self.ready, **self.own())

    def own(self) -> dict[str, Any]:
        """The parameters this rank sets for itself (its seed, its shard, its share of the host): none by
        default; they win over the parameter object's."""
        return {}

    def call_probe(self, **runtime) -> Result:
        """The probe :attr:`kind` names (:data:`nbbench.probes.catalog.PROBES`) called with :attr:`params`,
        the command's parameter object unchanged, and ``runtime`` (progress, cancel, ready, and what
        this rank sets for itself: its seed, its shard), which wins over a parameter of the same name."""

        return catalog.get(self.kind).call(self.params, **runtime)

    #: phase name -> (the metric holding its seconds, rate -> the metric holding its total): what the
    #: default :meth:`tracks` needs to put each of :attr:`phases`' windows on the common clock
    tracked: dict[str, tuple[str, dict[str, str]]] = {}

    def tracks(self, res: Result, clock) -> dict[str, dict]:
        """Each tracked phase's rates over its windows, on the common clock (what the aggregate sums)."""
        out = {}
        for ph in self.phases:
            if ph.name in self.tracked:
                elapsed_key, totals = self.tracked[ph.name]
                tr = self._track(res, clock, ph.name, ph.series, {k: k for k in ph.keys}, elapsed_key, totals)
                if tr is not None:
                    out[ph.name] = tr
        return out

    def finish(self, res: Result, records: list[dict]) -> None:
        pass

    def sweep_left(self) -> int:
        """What a killed rank of this host left (its process gone), removed; how many entries.  Called
        by the launcher after the ranks ended and by rank 0 when a peer went silent."""
        return 0

    def monitor_path(self) -> str | None:
        """Where the host's disk is watched (the probe's path)."""
        return self.params.get("path")

    # ----------------------------------------------------------- helpers
    def _room(self, nranks: int) -> None:
        if not self.write_bytes:
            return

        target = inspect(self.params["path"], write=False, read=False)
        if target.kind == "dir":
            target.ensure_room(self.write_bytes * nranks)

    def _anchor(self, res: Result, op: str, elapsed: float | None, key: str) -> float | None:
        """The wall-clock time of phase ``op``'s t = 0 on this rank."""
        t0 = (res.extra.get("t0_unix") or {}).get(op)
        if t0 is None and elapsed is not None and key in self.last_report:
            t0 = self.last_report[key] - elapsed
        return t0

    def _track(
        self, res: Result, clock, op: str, series: str, rates: dict[str, str], elapsed_key: str, totals: dict[str, str]
    ) -> dict | None:
        data = res.samples.get(series) or {}
        elapsed = res.metrics.get(elapsed_key)
        first = next(iter(rates))
        t0 = self._anchor(res, op, elapsed, first)
        if t0 is None or not elapsed:
            return None
        return track_from_windows(
            clock.at(t0),
            data.get("t_s") or [],
            {k: data.get(src) or [] for k, src in rates.items()},
            end=elapsed,
            totals={k: res.metrics.get(src) for k, src in totals.items()},
        )


def merge_hists(res: Result, records: list[dict], name: str = "lat_hist", prefix: str | None = "lat"):
    """Every rank's latency histogram merged: the percentiles of all ranks' I/Os together (``prefix``:
    their metrics under it; None: the merged histogram only, returned)."""
    merged = LatencyHistogram()
    for rec in records:
        d = ((rec.get("result") or {}).get("samples") or {}).get(name)
        if d:
            merged.merge(LatencyHistogram.from_dict(d))
    if merged.n and prefix:
        res.metrics.update(merged.metrics(prefix))
    if merged.n:
        res.samples[name] = merged.to_dict()
    return merged


def rank_metric(records: list[dict], key: str) -> list:
    """Metric ``key`` of every rank's own result (None where a rank has none)."""
    return [((r.get("result") or {}).get("metrics") or {}).get(key) for r in records]


def sum_metrics(res: Result, records: list[dict], keys) -> None:
    """Amounts summed over the ranks (bytes, files, samples), under their own names."""
    for k in keys:
        vals = rank_metric(records, k)
        if any(v is not None for v in vals):
            res.metrics[k] = sum(v or 0 for v in vals)
