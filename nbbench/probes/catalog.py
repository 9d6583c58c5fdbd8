"""The probes a subcommand runs, declared once: name -> the function, by its import path.

The same table serves the three ways a probe is called, so none can fall out of step:

- a command (:attr:`nbbench.commands.Command.probe`) calls it with its parameter object, the
  values of every option its parser declares (:meth:`~nbbench.commands.Command.params`);
- a rank (:class:`nbbench.ranks.rankjob.RankJob`) calls it with the same parameter object,
  which travelled to it unchanged;
- the Python API: ``nbbench.dd(...)``, ``nbbench.randread(...)``, … are these functions
  (:data:`PUBLIC`, looked up by ``nbbench.__getattr__``).

Nothing is imported until a probe is called: listing the table costs nothing.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Probe", "PROBES", "PUBLIC", "get", "function"]


@dataclass(frozen=True)
class Probe:
    """One probe: ``target`` ("module:function"), and the parameters a many-rank run reads itself
    (``rank_only``: options of the command that the rank's job uses and the function does not take)."""

    name: str
    target: str
    rank_only: tuple[str, ...] = ()

    def function(self) -> Callable[..., Any]:
        mod, _, attr = self.target.partition(":")
        return getattr(importlib.import_module(mod), attr)

    def call(self, params: dict[str, Any], **runtime: Any) -> Any:
        """The function called with ``params`` (less :attr:`rank_only`) and ``runtime`` (progress, cancel,
        ready, or a value a rank sets for itself, such as its own seed), which win over ``params``."""
        kwargs = {k: v for k, v in params.items() if k not in self.rank_only}
        kwargs.update(runtime)
        return self.function()(**kwargs)


PROBES: dict[str, Probe] = {
    p.name: p
    for p in (
        Probe("gpu", "nbbench.probes.gpu:check"),
        Probe("dd", "nbbench.probes.storage.disk:dd"),
        Probe("randread", "nbbench.probes.storage.randread:randread", rank_only=("file_per_rank",)),
        Probe("files", "nbbench.probes.storage.files:read_files"),
        Probe("disk", "nbbench.probes.storage.presets:preset"),
        Probe("checkpoint", "nbbench.probes.checkpoint.probe:checkpoint"),
        Probe("shards", "nbbench.probes.shards.probe:shards"),
        Probe("s3", "nbbench.probes.objects.s3probe:s3"),
        Probe("loader", "nbbench.probes.pipeline.loader:bench_loader"),
        Probe("sweep", "nbbench.probes.pipeline.sweep:sweep"),
        Probe("feed", "nbbench.probes.pipeline.feed:feed"),
    )
}

#: the Python API, ``nbbench.NAME(...)``: the subcommands' names, and ``bench_loader`` as the loader's
#: function has always been called
PUBLIC: dict[str, str] = {**{name: name for name in PROBES}, "bench_loader": "loader"}


def get(name: str) -> Probe:
    return PROBES[name]


def function(name: str) -> Callable[..., Any]:
    """The probe function behind ``nbbench.NAME`` (:data:`PUBLIC`)."""
    return PROBES[PUBLIC[name]].function()
