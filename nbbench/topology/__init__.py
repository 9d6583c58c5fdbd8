"""Storage topology: the mount table, the block devices behind it, their queues.

One model of "where does this path live" for the probes, the doctor and the monitor:

* the **mount table** (:func:`read_mounts`, :func:`parse_mountinfo`): proc(5)'s
  ``/proc/self/mountinfo`` with its octal escapes undone, the options, read-only
  flag and device number of each mount; :func:`find_mount` gives the mount a path
  lives on (the longest mount point above it; of stacked mounts the last one wins,
  as the kernel shows the top one);
* the **block device** behind a device number, a mount or a path
  (:func:`device_by_devno`, :func:`block_device`, :func:`device_of_path`): its
  kernel name (as in ``/proc/diskstats``), the disk whose ``queue/`` applies (a
  partition's parent), a dm / md device's slaves and the physical disks under them,
  and its queue attributes (:meth:`BlockDevice.queue`: read-ahead, scheduler,
  rotational, nr_requests and the request limits);
* the **kind of filesystem** (:func:`fs_kind`, :func:`is_memory_backed`, :func:`is_pseudo`).

Everything is read under a ``root`` (``"/"`` for the live system, a fixture tree in
tests): ``root/proc/self/mountinfo``, ``root/sys/dev/block/MAJ:MIN``,
``root/sys/block/…``.  A path is looked at (``stat``) on the live system.

* :mod:`.mounts`    the mount table, the kinds of filesystem, and reading a file under a root
* :mod:`.blockdev`  the block device behind a device number, a mount or a path, and its queue

The names are imported from ``nbbench.topology`` (the one model); the submodules are how it is kept.

Layer: the bottom (with units, results, store, env).  Only the standard library; nothing of nbbench.
"""

from __future__ import annotations

from . import blockdev as _blockdev
from . import mounts as _mounts
from .blockdev import *  # noqa: F403  (the names each submodule's __all__ lists)
from .mounts import *  # noqa: F403

__all__ = [*_mounts.__all__, *_blockdev.__all__]
