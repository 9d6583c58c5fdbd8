"""The path checks of the storage probes, under their old name: see :mod:`nbbench.probes.target`.

Kept for the panel's PathField (``ui/panel/pathfield.py``) until it moves; new code
imports :mod:`nbbench.probes.target`.
"""

from __future__ import annotations

from .target import (MIN_FREE_BYTES, MIN_FREE_FRACTION, STAT_TIMEOUT_S, StorageTarget, check_free_space,
                     direct_io_supported, inspect, open_read)

__all__ = ["inspect", "check_free_space", "open_read", "direct_io_supported", "StorageTarget",
           "MIN_FREE_BYTES", "MIN_FREE_FRACTION", "STAT_TIMEOUT_S"]
