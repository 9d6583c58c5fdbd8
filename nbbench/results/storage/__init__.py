"""Results of the storage probes: local storage, checkpoints, shards, object storage.

Layer: core (inside :mod:`nbbench.results`; imports only the core).

* :mod:`.local`      dd, randread, io, disk presets, files (``nbbench.results.storage``
  names them too: the path the guide teaches for :func:`percentiles_frame`)
* :mod:`.checkpoint` a checkpoint's save and load
* :mod:`.shards`     reading a dataset's shards
* :mod:`.objects`    S3-compatible object storage
"""

from __future__ import annotations

from .local import DiskPresetResult, DiskResult, FilesResult, IoJobResult, RandreadResult, percentiles_frame

__all__ = ["DiskResult", "IoJobResult", "RandreadResult", "DiskPresetResult", "FilesResult", "percentiles_frame"]
