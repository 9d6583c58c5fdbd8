"""The sweep's preflight: which DataLoader configurations would crash before they run.

Workers hand batches over in shared memory, so the bytes in flight (workers ×
prefetch factor × batch bytes) must fit in free ``/dev/shm`` (too little is a bus
error); torch's default sharing strategy holds a file descriptor per tensor in
flight, so they must fit under the open-file limit ("too many open files"); and
more workers than usable CPUs (affinity and cgroup quota) share cores.  /dev/shm and
the open-file limit are read through :mod:`nbbench.env`, as the doctor reads them.
"""

from __future__ import annotations

from ...env import nofile_limits, shm_free_bytes
from ...units import format_bytes
from .batches import batch_info, leaves
from .dataloader import sharing_strategy

__all__ = ["preflight", "check_configs", "host_facts", "sample_facts"]


def preflight(
    configs: list[dict],
    sample_bytes: int | None,
    tensors_per_batch,
    shm_free=None,
    nofile=None,
    usable=None,
    sharing=None,
) -> list[dict]:
    """Mark each config ``skip`` (with ``reason``) or add ``warnings`` for what would crash.

    ``tensors_per_batch(config)`` gives how many tensors one batch holds.
    """
    for cfg in configs:
        cfg.setdefault("warnings", [])
        nw, pf, bs = cfg["num_workers"], cfg["prefetch_factor"] or 0, cfg["batch_size"]
        if nw == 0:
            continue
        if sample_bytes is not None and shm_free is not None:
            in_flight = nw * pf * bs * sample_bytes
            cfg["shm_in_flight_bytes"] = in_flight
            if in_flight > shm_free:
                cfg["skip"] = True
                cfg["reason"] = (
                    f"skipped: {nw} workers × prefetch {pf} × batch {format_bytes(bs * sample_bytes)} "
                    f"= {format_bytes(in_flight)} in flight, more than the {format_bytes(shm_free)} "
                    "free in /dev/shm (a bus error): give the container more shared memory "
                    "(docker run --shm-size=16g) or lower workers, prefetch or batch size"
                )
                continue
            if in_flight > 0.5 * shm_free:
                cfg["warnings"].append(
                    f"{format_bytes(in_flight)} in flight uses over half of the "
                    f"{format_bytes(shm_free)} free in /dev/shm"
                )
        if nofile is not None and sharing == "file_descriptor":
            fds = nw * pf * tensors_per_batch(cfg) + 16 * nw + 64
            cfg["fds_estimate"] = fds
            if fds > nofile:
                cfg["skip"] = True
                cfg["reason"] = (
                    f"skipped: about {fds} file descriptors in flight, over the open-file limit "
                    f"{nofile} (too many open files): raise it (ulimit -n 65536) or call "
                    "torch.multiprocessing.set_sharing_strategy('file_system')"
                )
                continue
            if fds > 0.5 * nofile:
                cfg["warnings"].append(f"about {fds} file descriptors in flight, over half the limit {nofile}")
        if usable is not None and nw > usable:
            cfg["warnings"].append(f"{nw} workers on {usable:g} usable CPUs: they share cores")
    return configs


def host_facts() -> dict:
    """Free /dev/shm bytes, the soft open-file limit (None: unlimited or unreadable), the sharing strategy."""
    try:
        nofile = nofile_limits()["soft"]
    except LookupError:
        nofile = None
    return {"shm_free_bytes": shm_free_bytes(), "nofile_soft_limit": nofile, "sharing_strategy": sharing_strategy()}


def sample_facts(dataset) -> tuple[int | None, int]:
    """(bytes per sample, tensors per sample) from the first item, if it can be read."""
    try:
        item = dataset[0]
    except Exception:  # noqa: BLE001 - iterable datasets, odd datasets: unknown
        return None, 1
    _, nb = batch_info(item)
    return (nb or None), max(1, sum(1 for _ in leaves(item)))


def check_configs(configs: list[dict], dataset, collate_fn, usable, skip_unsafe: bool = True) -> dict:
    """Run the preflight over ``configs`` for ``dataset`` on this host; returns what it read.

    With ``skip_unsafe`` False a configuration that would crash is run anyway, its
    reason kept as a warning.
    """
    sample_bytes, tensors_per_sample = sample_facts(dataset)
    cf = collate_fn or getattr(dataset, "collate_fn", None)

    def tensors_per_batch(cfg):
        # the default collate stacks each field into one tensor; a list collate keeps every sample's
        return cfg["batch_size"] + 1 if cf is not None else tensors_per_sample

    facts = host_facts()
    preflight(
        configs,
        sample_bytes,
        tensors_per_batch,
        shm_free=facts["shm_free_bytes"],
        nofile=facts["nofile_soft_limit"],
        usable=usable,
        sharing=facts["sharing_strategy"],
    )
    if not skip_unsafe:
        for c in configs:
            if c.pop("skip", False):
                c["warnings"].append(c.pop("reason"))
    return dict(facts, sample_bytes=sample_bytes)
