"""What nbbench knows about ``torch.utils.data.DataLoader`` objects.

Building one from options (:func:`make_loader`), the labels that describe one
(:func:`describe_loader`), shutting its workers down deterministically
(:func:`close_loader`), and turning a worker crash into a sentence with the fix
(:func:`worker_failure_reason`, :func:`worker_exit_note`).  torch is imported only
inside the functions that need it; the rest works on any object with the same
attributes.  torch is an optional dependency (``pip install 'nbbench[torch]'``):
:func:`require_torch` turns its absence into one sentence (a
:class:`~nbbench.results.ProbeError`) before anything is built.
"""

from __future__ import annotations

from typing import Any

from ...results import ProbeError

__all__ = [
    "require_torch",
    "TORCH_INSTALL",
    "make_loader",
    "is_dataloader",
    "loader_parts",
    "describe_loader",
    "close_loader",
    "worker_failure_reason",
    "worker_exit_note",
    "is_iterable_dataset",
    "sharing_strategy",
    "check_worker_tempdir",
]


#: how to get torch, in the words every "needs torch" sentence uses
TORCH_INSTALL = "pip install 'nbbench[torch]' (inside a PyTorch image it is already there)"


def require_torch(what: str) -> None:
    """Raise a one-sentence :class:`ProbeError` unless ``torch.utils.data`` imports.

    what: what needs it, as the sentence starts ("sweep", "feed", "loader on a folder").
    torch missing: the sentence says how to install it; torch present but broken (a
    library it loads is missing): the sentence gives import's own first line.
    """
    import importlib

    try:
        importlib.import_module("torch.utils.data")
    except ImportError as exc:
        first = (str(exc).splitlines() or [""])[0]
        name = getattr(exc, "name", None) or ""
        missing = isinstance(exc, ModuleNotFoundError) and (
            name == "torch" or name.startswith("torch.") or (not name and "'torch" in first)
        )
        if missing:
            raise ProbeError(
                f"{what} needs PyTorch (torch), which is not installed in this Python environment: {TORCH_INSTALL}"
            ) from None
        raise ProbeError(
            f"{what} needs PyTorch, and torch is installed but does not import ({first}): "
            "reinstall it, or use the environment it was built for"
        ) from None


def make_loader(
    dataset,
    batch_size: int,
    num_workers: int,
    pin_memory: bool = False,
    prefetch_factor: int | None = 2,
    persistent_workers: bool = True,
    shuffle: bool = True,
    collate_fn=None,
    **kwargs,
):
    """A ``torch.utils.data.DataLoader`` with these settings (prefetch/persistence only with workers).

    Without torch: a :class:`ProbeError` saying how to install it.
    """
    require_torch("building a DataLoader")
    from torch.utils.data import DataLoader

    if collate_fn is None:
        collate_fn = getattr(dataset, "collate_fn", None)
    kw: dict[str, Any] = dict(
        batch_size=batch_size, num_workers=num_workers, pin_memory=pin_memory, collate_fn=collate_fn
    )
    if not is_iterable_dataset(dataset):
        kw["shuffle"] = shuffle
    if num_workers > 0:
        kw["prefetch_factor"] = prefetch_factor
        kw["persistent_workers"] = persistent_workers
    kw.update(kwargs)
    check_worker_tempdir(num_workers)
    if num_workers == 0:  # torch refuses a multiprocessing context without worker processes
        kw.pop("multiprocessing_context", None)
    return DataLoader(dataset, **kw)


def is_dataloader(obj) -> bool:
    """Whether ``obj`` is a ``torch.utils.data.DataLoader`` (False without torch)."""
    try:
        from torch.utils.data import DataLoader

        return isinstance(obj, DataLoader)
    except ImportError:  # pragma: no cover
        return False


_PLAIN_SAMPLERS = ("SequentialSampler", "RandomSampler", "_InfiniteConstantSampler")


def loader_parts(loader) -> dict:
    """What a sweep keeps of a DataLoader and what it replaces or drops.

    Returns ``dataset`` (``loader.dataset``), ``kwargs`` (what is carried over to the
    sweep's loaders: a collate_fn other than torch's default, worker_init_fn,
    multiprocessing_context, drop_last), ``kept`` (their names), ``replaced`` (the
    loader's own settings the sweep's take the place of) and ``dropped`` (sentences
    for what is not carried over: a custom or DistributedSampler sampler, a custom
    batch_sampler, batch_size=None).
    """
    from torch.utils.data import BatchSampler, default_collate, default_convert

    kwargs: dict[str, Any] = {}
    cf = getattr(loader, "collate_fn", None)
    if cf is not None and cf is not default_collate and cf is not default_convert:
        kwargs["collate_fn"] = cf
    for attr in ("worker_init_fn", "multiprocessing_context"):
        if getattr(loader, attr, None) is not None:
            kwargs[attr] = getattr(loader, attr)
    if getattr(loader, "drop_last", False):
        kwargs["drop_last"] = True
    replaced = {
        k: getattr(loader, k, None)
        for k in ("num_workers", "batch_size", "pin_memory", "prefetch_factor", "persistent_workers")
    }
    dropped = []
    sampler = getattr(loader, "sampler", None)
    if sampler is not None and type(sampler).__name__ not in _PLAIN_SAMPLERS:
        dropped.append(
            f"its sampler ({type(sampler).__name__}) is not carried over: the sweep reads the whole "
            "dataset, as a single process would"
        )
    bs = getattr(loader, "batch_sampler", None)
    if bs is not None and type(bs) is not BatchSampler:
        dropped.append(f"its batch_sampler ({type(bs).__name__}) is not carried over: the sweep batches by batch_size")
    if getattr(loader, "batch_size", 1) is None and bs is None:
        dropped.append("it had batch_size=None (each item a whole batch): the sweep batches items by batch_size")
    return {"dataset": loader.dataset, "kwargs": kwargs, "kept": list(kwargs), "replaced": replaced, "dropped": dropped}


def is_iterable_dataset(ds) -> bool:
    """Whether ``ds`` is a torch IterableDataset (no shuffling, no ``len``/indexing)."""
    try:
        from torch.utils.data import IterableDataset

        return isinstance(ds, IterableDataset)
    except ImportError:  # pragma: no cover
        return False


def sharing_strategy() -> str | None:
    """torch.multiprocessing's sharing strategy ("file_descriptor" holds a descriptor per tensor in flight)."""
    try:
        import torch.multiprocessing as tmp

        return tmp.get_sharing_strategy()
    except Exception:  # noqa: BLE001
        return None


#: what Python adds to the temp directory for a worker's Unix socket: "/pymp-XXXXXXXX/listener-XXXXXXXX"
_SOCKET_SUFFIX = 32
#: the longest path a Unix socket may have on Linux (sun_path, 108 bytes with its NUL)
_SOCKET_MAX = 107


def check_worker_tempdir(num_workers: int, tempdir: str | None = None) -> None:
    """DataLoader workers hand a batch's tensors back by passing descriptors over a Unix socket that Python makes
    under the temp directory (torch's "file_descriptor" sharing).  Where that path is too long for a socket the
    worker's send fails in a background thread and PyTorch waits for the batch for ever: refuse first, in one line."""
    if num_workers <= 0 or sharing_strategy() != "file_descriptor":
        return
    import tempfile

    d = tempdir or tempfile.gettempdir()
    if len(d.encode()) + _SOCKET_SUFFIX > _SOCKET_MAX:
        raise ProbeError(
            f"the temporary directory {d} ({len(d.encode())} characters) is too long for the Unix "
            f"socket DataLoader workers hand their batches back through (at most "
            f"{_SOCKET_MAX - _SOCKET_SUFFIX}): PyTorch would wait for ever; set TMPDIR to a shorter "
            "directory (e.g. TMPDIR=/tmp) or use --workers 0"
        )


def describe_loader(loader) -> dict[str, Any]:
    """Labels for a loader: its type and, for a DataLoader, the settings that matter."""
    out: dict[str, Any] = {"loader": type(loader).__name__}
    ds = getattr(loader, "dataset", None)
    if ds is not None:
        out["dataset"] = type(ds).__name__
    for attr in ("batch_size", "num_workers", "pin_memory", "prefetch_factor", "persistent_workers", "drop_last"):
        if hasattr(loader, attr):
            v = getattr(loader, attr)
            if isinstance(v, (int, float, bool, str)) or v is None:
                out[attr] = v
    return out


def worker_failure_reason(exc: BaseException) -> str | None:
    """A sentence for a DataLoader worker crash (bus error, killed worker, open files); None otherwise."""
    msg = str(exc)
    low = msg.lower()
    if not isinstance(exc, RuntimeError):
        return None
    if "bus error" in low or "shared memory" in low or "shm" in low:
        return (
            f"a DataLoader worker crashed with a bus error ({msg.splitlines()[0]}): /dev/shm is too small "
            "for the batches in flight; give the container more (docker run --shm-size=16g, or a bigger "
            "emptyDir medium: Memory in Kubernetes) or lower num_workers × prefetch_factor × batch size"
        )
    if "too many open files" in low or "ancdata" in low:
        return (
            f"DataLoader workers ran out of file descriptors ({msg.splitlines()[0]}): raise the limit "
            "(ulimit -n 65536, docker run --ulimit nofile=65536) or call "
            "torch.multiprocessing.set_sharing_strategy('file_system')"
        )
    if "killed by signal" in low or "exited unexpectedly" in low or "dataloader worker" in low:
        hint = ""
        if "killed by signal: killed" in low:
            hint = " (SIGKILL is often the out-of-memory killer: check dmesg and the container's memory limit)"
        return f"a DataLoader worker died: {msg.splitlines()[0]}{hint}"
    return None


def worker_exit_note(it) -> str:
    """'; worker 0 killed by SIGKILL …' from a DataLoader iterator's dead workers, else ''."""
    import signal

    notes = []
    for i, w in enumerate(getattr(it, "_workers", None) or []):
        code = getattr(w, "exitcode", None)
        if code is None or code == 0:
            continue
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            note = f"worker {i} killed by {name}"
            if name == "SIGKILL":
                note += " (often the out-of-memory killer: check dmesg and the container's memory limit)"
            elif name == "SIGBUS":
                note += " (a bus error: /dev/shm is too small)"
        else:
            note = f"worker {i} exited with code {code}"
        notes.append(note)
    return f"; {'; '.join(notes)}" if notes else ""


def close_loader(loader, it=None, force: bool = False) -> None:
    """Shut down a DataLoader iterator's workers deterministically.

    A non-persistent iterator is always closed; a persistent one (kept on the loader
    for the next epoch) only when ``force`` — after a worker died it is unusable, so
    the loader is told to start fresh workers next time.
    """
    persistent = bool(getattr(loader, "persistent_workers", False))
    targets = []
    if it is not None and (force or not persistent):
        targets.append(it)
    if force and getattr(loader, "_iterator", None) is not None:
        targets.append(loader._iterator)
    for t in targets:
        shutdown = getattr(t, "_shutdown_workers", None)
        if callable(shutdown):
            try:
                shutdown()
            except Exception:  # noqa: BLE001 - already dead workers may complain
                pass
    if force and hasattr(loader, "_iterator"):
        try:
            loader._iterator = None
        except Exception:  # noqa: BLE001
            pass
