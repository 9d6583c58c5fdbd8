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


def batch_info(batch: Any) -> tuple[int | None, int]:
    """``(samples, bytes)`` in a batch; samples is None when no array has a first dimension.

    A list of per-sample arrays (variable-length records collated into a list) counts
    its length as the batch size when it comes first.
    """
    size: int | None = None
    total = 0
    if isinstance(batch, (list, tuple)) and batch and all(_nbytes(v) is not None for v in batch):
        # either default-collated fields (images, labels) or a list of per-sample records:
        # fields share their first dimension, per-sample records usually do not
        dims = {_first_dim(v) for v in batch}
        if len(dims) > 1 and len(batch) > 2:
            size = len(batch)
    for leaf in leaves(batch):
        total += _nbytes(leaf) or 0
        if size is None:
            size = _first_dim(leaf)
    return size, total
