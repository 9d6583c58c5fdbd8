"""What is in a batch: how many samples and how many bytes.

A batch is whatever a loader yields: a tensor, a NumPy array, bytes, or tuples,
lists and dicts of them (nested).  The batch size is the first dimension of the
first array found walking the structure in order (for ``(images, labels)`` that is
``images.shape[0]``); the bytes are the sum over every array.  Nothing here imports
torch or NumPy: arrays are recognised by their attributes.
"""

from __future__ import annotations

from typing import Any

__all__ = ["batch_info", "leaves"]


def _nbytes(x) -> int | None:
    """Bytes held by an array-like leaf, None when ``x`` is not one."""
    numel = getattr(x, "numel", None)
    esize = getattr(x, "element_size", None)
    if callable(numel) and callable(esize):  # torch.Tensor
        try:
            return int(numel()) * int(esize())
        except Exception:  # noqa: BLE001 - an odd tensor subclass: count nothing
            return 0
    nb = getattr(x, "nbytes", None)
    if isinstance(nb, int) and hasattr(x, "shape"):  # numpy.ndarray (and friends)
        return nb
    if isinstance(x, (bytes, bytearray)):
        return len(x)
    if isinstance(x, memoryview):
        return x.nbytes
    return None


def _first_dim(x) -> int | None:
    shape = getattr(x, "shape", None)
    if shape is None:
        return None
    try:
        return int(shape[0]) if len(shape) >= 1 else None
    except (TypeError, IndexError):
        return None


def leaves(batch: Any, _depth: int = 0):
    """The array-like leaves of a nested batch, in order."""
    if _depth > 32:
        return
    if _nbytes(batch) is not None:
        yield batch
        return
    if isinstance(batch, dict):
        for v in batch.values():
            yield from leaves(v, _depth + 1)
    elif isinstance(batch, (list, tuple)):
        for v in batch:
            yield from leaves(v, _depth + 1)
    else:
        # dataclasses / namedtuple-like objects with __dict__ of tensors (e.g. a "Batch" class)
        d = getattr(batch, "__dict__", None)
        if isinstance(d, dict) and d and not callable(batch):
            for v in d.values():
                yield from leaves(v, _depth + 1)


# type -> how to read it: "t" tensor, "a" numpy-like array, "b" bytes-like, "d" dict, "s" sequence, "o" other
_KINDS: dict[type, str] = {}


def _kind(x) -> str:
    t = type(x)
    k = _KINDS.get(t)
    if k is None:
        if callable(getattr(x, "numel", None)) and callable(getattr(x, "element_size", None)):
            k = "t"
        elif isinstance(getattr(x, "nbytes", None), int) and hasattr(x, "shape"):
            k = "a"
        elif isinstance(x, (bytes, bytearray, memoryview)):
            k = "b"
        elif isinstance(x, dict):
            k = "d"
        elif isinstance(x, (list, tuple)):
            k = "s"
        else:
            k = "o"
        _KINDS[t] = k
    return k


def _walk(x, acc: list, depth: int = 0) -> None:
    """Add ``x``'s bytes to acc[1]; set acc[0] from the first array with a first dimension."""
    k = _kind(x)
    if k == "t":
        try:
            acc[1] += x.numel() * x.element_size()
            if acc[0] is None and x.dim():
                acc[0] = int(x.shape[0])
        except Exception:  # noqa: BLE001 - an odd tensor subclass: count nothing
            pass
    elif k == "s":
        if depth < 32:
            for v in x:
                _walk(v, acc, depth + 1)
    elif k == "d":
        if depth < 32:
            for v in x.values():
                _walk(v, acc, depth + 1)
    elif k == "a":
        acc[1] += x.nbytes
        if acc[0] is None:
            acc[0] = _first_dim(x)
    elif k == "b":
        acc[1] += _nbytes(x)
    elif depth < 32:
        d = getattr(x, "__dict__", None)
        if isinstance(d, dict) and d and not callable(x):
            for v in d.values():
                _walk(v, acc, depth + 1)


def batch_info(batch: Any) -> tuple[int | None, int]:
    """``(samples, bytes)`` in a batch; samples is None when no array has a first dimension.

    A list of per-sample arrays (variable-length records collated into a list) counts
    its length as the batch size when it comes first.  Cheap: a few microseconds for
    the usual (images, labels) batch, so it runs on every step.
    """
    acc: list = [None, 0]
    if type(batch) in (list, tuple) and len(batch) > 2:
        first = batch[0]
        if _kind(first) in "tab" and all(_kind(v) in "tab" for v in batch):
            # either default-collated fields sharing their first dimension, or per-sample records
            dims = {_first_dim(v) for v in batch}
            if len(dims) > 1:
                acc[0] = len(batch)
    _walk(batch, acc)
    return acc[0], acc[1]
