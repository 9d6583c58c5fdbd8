"""Sweep DataLoader settings and recommend one.

:func:`sweep` builds a ``torch.utils.data.DataLoader`` for every combination of
``num_workers`` × ``batch_size`` × ``pin_memory`` × ``prefetch_factor``, measures each
with :func:`~nbbench.probes.pipeline.loader.bench_loader` on a short window after warm-up, and
recommends the smallest configuration within 3 % of the best throughput — or, with an
emulated accelerator as the step, the first that keeps it at AU >= 90 %
(:mod:`nbbench.probes.pipeline.sweepconfigs`: the grid and the recommendation).

Before running, a preflight (:mod:`nbbench.probes.pipeline.preflight`) checks what would
crash: the bytes in flight against free ``/dev/shm``, file descriptors against the
open-file limit, workers against the usable CPUs.  Configurations that would crash
are skipped with the reason; a worker that crashes anyway (bus error, killed, out of
file descriptors) is that configuration's failure, and the sweep goes on.  The
loaders are built by :func:`nbbench.probes.pipeline.dataloader.make_loader`.

Given a DataLoader, the sweep runs over its dataset: its collate_fn (and
worker_init_fn, multiprocessing context, drop_last) are kept, its own settings are
replaced by the sweep's, and a sampler it cannot carry over (DistributedSampler, a
custom one) is named in the result's note (``extra["note"]``).  torch is needed
(``pip install 'nbbench[torch]'``): without it the sweep fails once, before any
configuration.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from ...accelerators import AU_TARGET_PCT, get_accelerator
from ...env import usable_cpus
from ...progress import call_progress
from ...results import ProbeError
from ...results.pipeline.sweep import SweepResult
from .dataloader import (
    close_loader,
    describe_loader,
    is_dataloader,
    loader_parts,
    make_loader,
    require_torch,
    worker_failure_reason,
)
from .imagefolder import ImageFolderDataset
from .loader import bench_loader
from .loadermon import start_monitor, stop_monitor
from .preflight import check_configs, preflight
from .stallwindow import quota_note
from .steps import resolve_step
from .sweepconfigs import as_list, config_text, default_workers, grid, recommend

__all__ = ["sweep", "SweepResult", "preflight", "make_loader"]


def sweep(
    dataset,
    num_workers: Iterable[int] | None = None,
    batch_size=(64,),
    pin_memory=(False,),
    prefetch_factor=(2,),
    persistent_workers: bool = True,
    step=None,
    duration: float = 2.0,
    warmup: int = 2,
    accelerator=None,
    shuffle: bool = True,
    collate_fn=None,
    within_pct: float = 3.0,
    au_target_pct: float = AU_TARGET_PCT,
    skip_unsafe: bool = True,
    decode: str = "auto",
    progress=None,
    cancel=None,
    monitor="auto",
    device=None,
    loader_kwargs: dict | None = None,
    on_config=None,
) -> SweepResult:
    """Measure a DataLoader over ``dataset`` for each combination of the settings.

    dataset: a map-style or iterable dataset, or a folder path (the built-in
        :class:`~nbbench.probes.pipeline.imagefolder.ImageFolderDataset`, ``decode`` as given), or a
        DataLoader: its dataset is swept, its collate_fn kept, its settings replaced (see
        ``extra["note"]``).
    num_workers: default 0, 1, 2, 4 … up to the usable CPUs.
    step: as for bench_loader (None, a callable, "gpu", "emulate:h100-resnet50").
    duration / warmup: each configuration's measured window (s) and warm-up steps.
    within_pct: the recommendation is the smallest configuration within this much of the best.
    skip_unsafe: skip configurations the preflight says would crash (else warn and run them).
    monitor: "auto" (one GPU monitor for the whole sweep when NVML works), False, or a
        running Monitor; rows get the mean GPU utilisation over their windows.
    on_config: called with each configuration's row as it finishes (live tables).
    """
    require_torch("sweep")  # once, here: not a ModuleNotFoundError per configuration
    source = None
    if is_dataloader(dataset):
        source = loader_parts(dataset)
        source["describe"] = describe_loader(dataset)
        dataset = source["dataset"]
        collate_fn = collate_fn if collate_fn is not None else source["kwargs"].get("collate_fn")
        loader_kwargs = {**{k: v for k, v in source["kwargs"].items() if k != "collate_fn"}, **(loader_kwargs or {})}
    if isinstance(dataset, (str, os.PathLike)):
        dataset = ImageFolderDataset(dataset, decode=decode)
    cpus = usable_cpus()
    usable = cpus["usable"]
    workers = as_list(num_workers, "num_workers") if num_workers is not None else default_workers(cpus["usable_int"])
    batches = as_list(batch_size, "batch_size")
    pins = as_list(pin_memory, "pin_memory")
    prefetches = as_list(prefetch_factor, "prefetch_factor")
    for name, vals, lo in (("num_workers", workers, 0), ("batch_size", batches, 1), ("prefetch_factor", prefetches, 1)):
        for v in vals:
            if not isinstance(v, int) or isinstance(v, bool) or v < lo:
                raise ProbeError(f"{name} values must be whole numbers >= {lo}, not {v!r}")
    if duration <= 0:
        raise ProbeError(f"duration must be positive, not {duration}")

    stepper_probe = resolve_step(step, cancel=cancel, device=device)  # validates the step early
    acc_name = accelerator
    if acc_name is None and stepper_probe is not None and getattr(stepper_probe, "kind", "") == "emulate":
        acc_name = stepper_probe.accelerator.name

    configs = grid(workers, batches, pins, prefetches)
    pre = check_configs(configs, dataset, collate_fn, usable, skip_unsafe)

    res = SweepResult(
        params={
            "num_workers": workers,
            "batch_size": batches,
            "pin_memory": [bool(p) for p in pins],
            "prefetch_factor": prefetches,
            "persistent_workers": persistent_workers,
            "step": step if isinstance(step, str) or step is None else "callable",
            "duration_s": duration,
            "warmup": warmup,
            "within_pct": within_pct,
            "au_target_pct": au_target_pct,
            "shuffle": shuffle,
        }
    )
    res.labels["dataset"] = repr(dataset) if type(dataset).__name__ == "ImageFolderDataset" else type(dataset).__name__
    if source is not None:
        res.labels["from_loader"] = source["describe"]["loader"]
        res.params["loader_settings"] = source["replaced"]
        res.extra["note"] = _loader_note(source)
    res.labels["step"] = "none" if stepper_probe is None else stepper_probe.label
    if acc_name:
        acc = get_accelerator(acc_name)
        res.labels["accelerator"] = acc.name
        res.metrics["needed_samples_per_s"] = acc.needed_samples_per_s(au_target_pct)
    res.labels["usable_cpus"] = f"{usable:g}"
    res.extra["preflight"] = dict(pre, usable_cpus=cpus)

    # one monitor for the whole sweep: each row gets the mean GPU utilisation over its own window
    mon, mon_started, mon_reason = start_monitor(monitor)
    if mon is None:
        res.labels["gpu_util"] = f"N/A: {mon_reason}"
    status, reason = "ok", None
    n = len(configs)
    # what every configuration's loader is made with (loader_kwargs beside them: a clash fails each
    # configuration, as a loader that cannot be made does), and how each is timed
    made = dict(persistent_workers=persistent_workers, shuffle=shuffle, collate_fn=collate_fn)
    timed = dict(
        duration=duration,
        warmup=warmup,
        step=step,
        cancel=cancel,
        monitor=mon if mon is not None else False,
        device=device,
        accelerator=acc_name,
        au_target_pct=au_target_pct,
        epochs=None,
    )
    try:
        for i, cfg in enumerate(configs):
            if cancel is not None and cancel.is_set():
                status, reason = "interrupted", f"cancelled after {i} of {n} configurations"
                break
            row = dict(cfg)
            row.setdefault("warnings", [])
            if row.pop("skip", False):
                row["status"] = "skipped"
            else:
                _measure(row, dataset, made, loader_kwargs or {}, timed)
                if row.get("status") == "interrupted":
                    res.samples.setdefault("configs", []).append(row)
                    status, reason = "interrupted", f"cancelled during configuration {i + 1} of {n}"
                    break
            res.samples.setdefault("configs", []).append(row)
            if on_config is not None:
                try:
                    on_config(dict(row))
                except Exception:  # noqa: BLE001
                    pass
            # tagged with the configuration: a live plot draws each one apart, never joined by a line
            call_progress(
                progress,
                (i + 1) / n,
                {
                    "config": config_text(row),
                    **{k: row[k] for k in ("samples_per_s",) if row.get(k)},
                    "done": i + 1,
                    "total": n,
                    "unit": "configs",
                },
            )
    finally:
        stop_monitor(mon, mon_started)

    recommend(res, within_pct, au_target_pct)
    quota_note(res, max((c.get("num_workers") or 0 for c in configs), default=None))
    rows = res.configs
    res.metrics["configs_count"] = len(rows)
    res.metrics["failed_count"] = sum(1 for r in rows if r["status"] == "failed")
    res.metrics["skipped_count"] = sum(1 for r in rows if r["status"] == "skipped")
    for r in rows:
        if r["status"] in ("failed", "skipped"):
            res.warn(f"{config_text(r)}: {r.get('reason')}")
    if all(r["status"] != "ok" for r in rows) and rows and status == "ok":
        status, reason = "failed", "no configuration could be measured (see the table's reasons)"
    res.finish(status, reason)
    return res


def _loader_note(source: dict) -> str:
    """The sentence saying what a sweep over a DataLoader kept, replaced and dropped."""
    ds = type(source["dataset"]).__name__
    s = f"Swept the DataLoader's dataset ({ds})"
    if source["kept"]:
        s += f", keeping its {', '.join(source['kept'])}"
    settings = ", ".join(f"{k}={v}" for k, v in source["replaced"].items() if v is not None)
    s += f"; the loader's own settings ({settings}) were replaced by the sweep's"
    for d in source["dropped"]:
        s += f"; {d}"
    return s + "."


def _measure(row, dataset, made: dict, loader_kwargs: dict, timed: dict) -> None:
    """Measure one configuration into ``row``; worker crashes become its failure."""
    dl = None
    try:
        try:
            dl = make_loader(
                dataset,
                row["batch_size"],
                row["num_workers"],
                row["pin_memory"],
                row["prefetch_factor"],
                **made,
                **loader_kwargs,
            )
            # a small dataset is gone round again (persistent workers: as in training, the restart counts)
            r = bench_loader(dl, **timed)
        finally:
            if dl is not None:
                close_loader(dl, force=True)
    except ProbeError:
        raise
    except RuntimeError as exc:  # a worker death reported outside bench_loader's loop (SIGCHLD)
        row["status"] = "failed"
        row["reason"] = worker_failure_reason(exc) or f"{type(exc).__name__}: {exc}"
        return
    except Exception as exc:  # noqa: BLE001 - the dataset's own error: this configuration fails
        row["status"] = "failed"
        row["reason"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")
        return
    m = r.metrics
    row["status"] = r.status
    row["reason"] = r.reason
    for k in (
        "samples_per_s",
        "batches_per_s",
        "bytes_per_s",
        "au_pct",
        "data_wait_pct",
        "startup_s",
        "measured_s",
        "steps_count",
        "gpu_util_mean_pct",
        "cpu_throttled_pct",
    ):
        row[k] = m.get(k)
    row["input_bound"] = r.labels.get("input_bound")
    row["warnings"] = list(row.get("warnings", [])) + list(r.warnings)
