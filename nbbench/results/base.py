"""The result model shared by every probe.

A :class:`Result` keeps what was asked (``params``), what was measured (``metrics``
in base units, the unit in the key), how it was measured (``labels``: engine, cache
mode, device, path…), what the user should do about it (``warnings``, each a
sentence, and ``advice``: which subcommand to run next, as data a front end words —
see :mod:`nbbench.results.advice`), the raw ``samples`` (never only summaries),
timestamps, a status and the environment fingerprint id.  Probe-specific subclasses add derived properties, the
way IPython's ``TimeitResult`` keeps the runs and derives statistics.

Two things a result says about how it went, kept apart: ``status`` — did the probe
*run* (:data:`STATUSES`: ok / interrupted / failed) — and ``verdict`` — what its
*checks found* (:data:`VERDICTS`: ok / warn / fail; None for a result without checks,
such as a plain measurement).  ``nbbench gpu`` on a machine without CUDA ran fine
(status ok) and found CUDA unusable (verdict fail).  A result with checks derives its
verdict from them (:meth:`Result.judge`, the worst of its checks: fail > warn > ok).

Results know nothing of IPython or widgets; the ``_repr_*_`` hooks are plain
methods any front end may call.  How a result is shown follows one rule,
:mod:`nbbench.results.present.rule`: the answer first (:meth:`Result.answer_line`), then what
qualifies it, then the details folded (:meth:`Result.sections`).
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..units import format_metric, unit_of
from . import advice as _advice
from .present.view import ResultView
from .verdict import VERDICTS, worst_verdict

__all__ = ["Result", "register", "result_class", "STATUSES", "VERDICTS", "worst_verdict", "ProbeError", "KINDS"]

#: did the probe run: to the end, stopped early, or not to a result
STATUSES = ("ok", "interrupted", "failed")

#: Every built-in result kind and the class that holds it, by name, like
#: :data:`nbbench.commands.REGISTRY`: the store rebuilds a stored run as its class
#: without importing any probe.  A module named here that fails to import is an
#: error, never silently a plain :class:`Result`.
KINDS: dict[str, str] = {
    "dd": "nbbench.results.storage.local:DiskResult",
    "io": "nbbench.results.storage.local:IoJobResult",
    "randread": "nbbench.results.storage.local:RandreadResult",
    "disk": "nbbench.results.storage.local:DiskPresetResult",
    "files": "nbbench.results.storage.local:FilesResult",
    "checkpoint": "nbbench.results.storage.checkpoint:CheckpointResult",
    "shards": "nbbench.results.storage.shards:ShardsResult",
    "s3": "nbbench.results.storage.objects:S3Result",
    "loader": "nbbench.results.pipeline.loader:LoaderResult",
    "sweep": "nbbench.results.pipeline.sweep:SweepResult",
    "feed": "nbbench.results.pipeline.feed:FeedResult",
    "gpu": "nbbench.results.system.gpu:GpuCheckResult",
    "monitor": "nbbench.results.system.monitor:MonitorResult",
    "doctor": "nbbench.results.system.doctor:DoctorResult",
    "env": "nbbench.results.system.env:EnvResult",
    "vs": "nbbench.results.interleave:InterleaveResult",
    "collectives": "nbbench.results.system.collectives:CollectivesResult",
    "copies": "nbbench.results.system.copies:CopiesResult",
}
#: kinds registered at run time with :func:`register` (user code, tests)
_REGISTRY: dict[str, type[Result]] = {}


class ProbeError(Exception):
    """A probe cannot run as asked (bad path, no space, missing tool).

    The message is a sentence for the user; front ends show it without a traceback.
    ``advice``: entries of :mod:`nbbench.results.advice` ("see the stored runs:
    ``history``"), worded by the front end with :meth:`text`; ``str()`` words them
    neutrally.
    """

    def __init__(self, message: Any = "", advice: list[dict] | None = None):
        super().__init__(message)
        self.message = message
        self.advice = list(advice or [])

    def text(self, command_text: Callable[[str, str], str] | None = None) -> str:
        """The message with its advice, commands worded by ``command_text`` (a front end's)."""
        msg = str(self.message)
        if not self.advice:
            return msg
        return f"{msg} ({'; '.join(_advice.word(a, command_text) for a in self.advice)})"

    def __str__(self) -> str:
        return self.text()


class metric:
    """A read-only attribute that is ``metrics[KEY]`` (``labels[KEY]`` with ``store="labels"``: :func:`label`),
    None where it is absent; KEY is the attribute's own name unless given."""

    def __init__(self, key: str | None = None, store: str = "metrics"):
        self.key, self.store = key, store

    def __set_name__(self, owner, name: str) -> None:
        self.key = self.key or name

    def __get__(self, obj, owner=None):
        return self if obj is None else getattr(obj, self.store).get(self.key)

    def __set__(self, obj, value) -> None:
        raise AttributeError(f"{self.key} is read from the result's {self.store}: set {self.store}[{self.key!r}]")


def label(key: str | None = None) -> metric:
    """A read-only attribute that is ``labels[KEY]`` (see :class:`metric`)."""
    return metric(key, "labels")


def register(kind: str):
    """Class decorator: results of ``kind`` are rebuilt as this class by from_dict.

    Built-in kinds are listed in :data:`KINDS`; this is for kinds defined elsewhere.
    """

    def deco(cls):
        cls.KIND = kind
        _REGISTRY[kind] = cls
        return cls

    return deco


def result_class(kind: str) -> type[Result]:
    """The class for ``kind``: a built-in one from :data:`KINDS`, a registered one,
    else the base class.  A built-in kind whose module cannot be imported raises."""
    if kind in _REGISTRY:
        return _REGISTRY[kind]
    target = KINDS.get(kind)
    if target is None:
        return Result
    import importlib

    mod, _, name = target.partition(":")
    cls = getattr(importlib.import_module(mod), name)
    _REGISTRY[kind] = cls
    return cls


def _now() -> float:
    return time.time()


@dataclass(repr=False)  # repr, str, _repr_pretty_: the presentation rule's (ResultView)
class Result(ResultView):
    """One probe run.  How it is shown: :class:`~nbbench.results.present.view.ResultView` (the one
    presentation rule: the answer first, then what qualifies it, then the details)."""

    kind: str = "result"
    params: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    labels: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    samples: dict[str, Any] = field(default_factory=dict)
    started_at: float = field(default_factory=_now)
    ended_at: float | None = None
    status: str = "ok"
    reason: str | None = None
    env_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    run_id: int | None = None
    #: what to run next, as data: ``{"text", "command", "args"}`` (see :mod:`nbbench.results.advice`)
    advice: list[dict] = field(default_factory=list)
    #: what the result's checks found (:data:`VERDICTS`), None without checks; ``status`` says whether it ran
    verdict: str | None = None
    #: each run's own metrics when the probe ran several times (``--repeat N``:
    #: :func:`nbbench.results.runs.merge`; ``metrics`` then holds their medians); empty: one run
    runs: list[dict] = field(default_factory=list)

    KIND: ClassVar[str] = "result"
    #: how this result's advice names a command, ``(name, args) -> text``: set by the front end
    #: that shows it (``%iobench sweep`` / ``nbbench sweep`` / a tab); None: neutral (```sweep```)
    wording: ClassVar[Callable[[str, str], str] | None] = None

    def __post_init__(self):
        if self.kind == "result" and self.KIND != "result":
            self.kind = self.KIND
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, not {self.status!r}")
        if self.verdict is None:
            self.verdict = self.judge()
        if self.verdict is not None and self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS} or None, not {self.verdict!r}")

    def judge(self) -> str | None:
        """The verdict this result's own checks give (:func:`worst_verdict` of them); None
        for a result without checks.  Subclasses with checks (the GPU check, the doctor)
        override it; :meth:`finish` and :meth:`from_dict` of an old stored run call it."""
        return None

    # ----------------------------------------------------------------- building
    def warn(self, sentence: str) -> None:
        """Add a warning (a sentence telling the user what to do), once."""
        if sentence not in self.warnings:
            self.warnings.append(sentence)

    def advise(self, text: str, command: str, args: str = "") -> None:
        """Add advice (once): ``text`` ("find the num_workers that keeps up", or with
        ``{command}`` where the command goes) and the subcommand to run with its args."""
        item = _advice.entry(text, command, args)
        if item not in self.advice:
            self.advice.append(item)

    def advice_lines(self) -> list[str]:
        """The advice as phrases, commands worded by :attr:`wording`."""
        return [_advice.word(a, self.wording) for a in self.advice]

    def advice_html(self) -> str:
        """The advice as an HTML list ('' when there is none)."""
        if not self.advice:
            return ""
        items = "".join(f"<li>{_advice.word_html(a, self.wording)}</li>" for a in self.advice)
        return f"<ul class='nbbench-advice' style='color:#1565c0'>{items}</ul>"

    def finish(self, status: str = "ok", reason: str | None = None) -> Result:
        """Stamp the end time and status; returns self."""
        if status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, not {status!r}")
        self.status = status
        if reason is not None:
            self.reason = reason
        judged = self.judge()
        if judged is not None:
            self.verdict = judged
        self.ended_at = _now()
        return self

    def fail(self, reason: str) -> Result:
        return self.finish("failed", reason)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def duration_s(self) -> float | None:
        if self.ended_at is None:
            return None
        return self.ended_at - self.started_at

    # ---------------------------------------------------------- serialisation
    def to_dict(self) -> dict[str, Any]:
        """A JSON-compatible dict; ``from_dict(to_dict())`` gives an equal result."""
        return {
            "kind": self.kind,
            "status": self.status,
            "verdict": self.verdict,
            "reason": self.reason,
            "params": copy.deepcopy(self.params),
            "metrics": copy.deepcopy(self.metrics),
            "labels": copy.deepcopy(self.labels),
            "warnings": list(self.warnings),
            "samples": copy.deepcopy(self.samples),
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "env_id": self.env_id,
            "extra": copy.deepcopy(self.extra),
            "run_id": self.run_id,
            "advice": copy.deepcopy(self.advice),
            # every run's metrics (one entry for a single run), and the printed headline line
            "runs": copy.deepcopy(self.runs) if self.runs else [copy.deepcopy(self.metrics)],
            "summary": self._summary_text(),
        }

    def _summary_text(self) -> str | None:
        try:
            return self.summary()
        except Exception:  # noqa: BLE001 - a result whose line cannot be worded is still kept
            return None

    @classmethod
    def from_dict(cls, data: dict[str, Any], copy_data: bool = True) -> Result:
        """The result ``to_dict`` gave; ``copy_data=False`` shares ``data``'s dicts and lists
        (a read-only view, e.g. to word a stored run's summary without copying its samples)."""
        kind = data.get("kind", "result")
        target = cls if cls is not Result else result_class(kind)
        cp = copy.deepcopy if copy_data else (lambda x: x)
        return target(
            kind=kind,
            params=cp(data.get("params", {})),
            metrics=cp(data.get("metrics", {})),
            labels=cp(data.get("labels", {})),
            warnings=list(data.get("warnings", [])),
            samples=cp(data.get("samples", {})),
            started_at=data.get("started_at", 0.0),
            ended_at=data.get("ended_at"),
            status=data.get("status", "ok"),
            reason=data.get("reason"),
            env_id=data.get("env_id"),
            extra=cp(data.get("extra", {})),
            run_id=data.get("run_id"),
            advice=cp(list(data.get("advice") or [])),  # runs stored before advice existed: []
            verdict=data.get("verdict"),  # runs stored before verdicts existed: judged from their checks
            runs=_runs_of(data, cp),
        )

    def to_json(self, **kw) -> str:
        import json  # stdlib, but 2 ms: kept out of `import nbbench` and `nbbench --help`

        return json.dumps(self.to_dict(), default=_json_default, allow_nan=True, **kw)

    @classmethod
    def from_json(cls, text: str) -> Result:
        import json

        return cls.from_dict(json.loads(text))

    def __eq__(self, other):
        if not isinstance(other, Result):
            return NotImplemented
        mine, theirs = self.to_dict(), other.to_dict()
        mine.pop("summary", None)  # words, drawn from the rest by each class's own rule
        theirs.pop("summary", None)
        return _canon(mine) == _canon(theirs)

    # ------------------------------------------------------------- per-window samples
    def windows(self, key: str) -> list[float]:
        """The per-window samples of figure ``key`` (the live plot's windows): the one source the
        card's ±, the spread of one run, compare's one-run interval, reports and plots read.
        A ``samples`` entry holding ``t_s`` (or a ``window_s``) and a list under ``key``; when
        several do, the one of the figure's phase (``write_bw`` for ``write_bytes_per_s``), never a
        warm-up when another holds the key; [] when the probe keeps none.  A kind whose windows
        live elsewhere overrides this (the GPU check's per-iteration rates)."""
        found = [
            (name, series[key])
            for name, series in (self.samples or {}).items()
            if isinstance(series, dict) and ("t_s" in series or "window_s" in series)
            if isinstance(series.get(key), list)
        ]
        if not found:
            return []
        phase = key.split("_")[0]
        name, vals = next(((n, v) for n, v in found if n.startswith(phase)), found[0])
        if len(found) > 1 and not name.startswith(phase) and any(n.startswith("warm") for n, _ in found):
            name, vals = next(((n, v) for n, v in found if not n.startswith("warm")), found[0])
        return [float(v) for v in vals if _finite(v)]

    # ------------------------------------------------------------- tabular views
    def to_frame(self):
        """Metrics as a pandas DataFrame: metric (the key), value (base unit), unit, display
        (the figure as people read it), indexed by the metric's human name."""
        import pandas as pd

        rows = [
            {"metric": k, "value": v, "unit": unit_of(k), "display": format_metric(k, v)}
            for k, v in self.metrics.items()
        ]
        frame = pd.DataFrame(rows, columns=["metric", "value", "unit", "display"])
        frame.index = pd.Index([self.metric_name(k) for k in self.metrics], name="name")
        return frame

    def samples_frame(self, name: str | None = None):
        """Raw samples as a DataFrame (``name``: which series; default the first)."""
        import pandas as pd

        if not self.samples:
            return pd.DataFrame()
        if name is None:
            name = next(iter(self.samples))
        data = self.samples[name]
        if isinstance(data, dict):
            return pd.DataFrame(data)
        if data and isinstance(data[0], dict):
            return pd.DataFrame.from_records(data)
        return pd.DataFrame({name: data})


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _runs_of(data: dict[str, Any], cp) -> list[dict]:
    """The runs a stored result kept: [] for one run (its metrics are ``metrics``)."""
    runs = data.get("runs") or []
    return cp(list(runs)) if len(runs) > 1 else []


def _json_default(o):
    try:
        import numpy as np

        if isinstance(o, np.generic):
            return o.item()
        if isinstance(o, np.ndarray):
            return o.tolist()
    except ImportError:  # pragma: no cover
        pass
    if isinstance(o, (set, tuple)):
        return list(o)
    return str(o)


def _canon(obj):
    """Normalise for equality: NaN == NaN, tuples == lists."""
    if isinstance(obj, dict):
        return {k: _canon(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_canon(v) for v in obj]
    if isinstance(obj, float) and math.isnan(obj):
        return "NaN"
    return obj
