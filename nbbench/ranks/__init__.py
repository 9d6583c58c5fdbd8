"""Many ranks, many hosts: a probe run by every process of a torch.distributed job.

A launcher — ``torchrun``, Slurm's ``srun``, a Kubernetes PyTorchJob, or nbbench's own
``--ranks N`` — starts one process per rank.  Each one detects that it is a rank
(:mod:`.rankenv`), joins a process group (gloo by default, :mod:`.group`), meets the
others at a start barrier, runs the probe on its own part (:mod:`.jobs`,
:mod:`.ckptjobs`, :mod:`.loaderjobs`, :mod:`.sweepfeed`), records its progress on the common clock
and sends a plain dict of
numbers and strings to rank 0, which computes the aggregate (:mod:`.aggregate`: the
"first done" window in which every rank was running and the "last done" span, the
slowest and fastest rank, the per-host table) and prints or hands back exactly one result.

* :mod:`.rankenv`   is this process a rank? (torchrun / PyTorchJob / srun), host names, Slurm node lists
* :mod:`.aggregate` the arithmetic over per-rank series (pure, no torch)
* :mod:`.control`   the small key-value protocol on a torch ``Store``: heartbeats, stop, progress, records
* :mod:`.group`     joining the process group, the start barrier and common clock, gathering
* :mod:`.rank`      one rank's run, start to finish (:func:`~.rank.run_rank`)
* :mod:`.rankjob`   a probe's rank part (:class:`~.rankjob.RankJob`: its hooks and helpers)
* :mod:`.jobs`      the storage probes' rank parts (dd, randread, files) and the registry ``JOBS``;
  :mod:`.ckptjobs` checkpoint, shards; :mod:`.loaderjobs` loader (:mod:`.syncedstep` its per-step meeting);
  :mod:`.sweepfeed` sweep, feed
* :mod:`.hoststats` CPU and disk busy % around the run, on each host's local rank 0
* :mod:`.launch`    ``--ranks N``: N local ranks as child processes of nbbench's own spawner
  (:mod:`.spawn`: FileStores in a private directory, gloo/NCCL on loopback, no network port);
  :mod:`.cmdlines` the torchrun / srun lines to run on several hosts

Layer: ranks, above measure (probes, monitor, doctor) and below plots, ui and commands.
It may import the core and the measure layers; never plots, ui, report, commands or a
front end.  torch is imported only inside the functions that need it, so importing this
package stays light.
"""

from __future__ import annotations

__all__ = ["detect", "RankEnv", "hostname"]


def __getattr__(name):
    if name in ("detect", "RankEnv", "hostname"):
        # loaded when first named (the package's lazy API)
        from . import rankenv

        return getattr(rankenv, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
