"""The request limits of the block device behind a path, and what they do to one I/O.

The block layer hands the device requests of at most ``max_segments`` physically
contiguous pieces of memory and at most ``max_sectors_kb`` KiB (``max_hw_sectors_kb``:
the device's own ceiling); a larger O_DIRECT I/O is split.  How many segments an I/O
needs depends on its buffer: a page-aligned buffer of ordinary 4 KiB pages — what dd
and fio use — needs up to one segment per page (256 for 1 MiB; fewer only where pages
happen to be physically contiguous), a buffer on a 2 MiB huge page needs one.  On
virtio-blk (``max_segments`` 254) a 1 MiB I/O from ordinary pages therefore reaches the
device as two requests and from a huge page as one: a different request shape, and a
different figure.  Buffered I/O is formed by the page cache, not by the user's buffer.

:func:`read_limits` (a kernel device name; a partition resolves to its disk) and
:func:`limits_for_path` (the device behind a path) read the queue through
:mod:`nbbench.topology`, the one model of mounts and block devices; :func:`annotate`
puts the limits, the buffer kind and the split (labels, in one stable wording; a warning
only where huge pages make the figure incomparable with dd's and fio's) on a result.
"""

from __future__ import annotations

import mmap
import os
import stat
from dataclasses import dataclass

from ... import topology
from ...results import ProbeError
from ...units import format_bytes
from . import registry

__all__ = [
    "RequestLimits",
    "read_limits",
    "limits_for_path",
    "requests_per_io",
    "split_sentence",
    "annotate",
    "BUFFERS",
    "buffers_label",
    "check_buffers",
    "SYS_ROOT",
]

#: where sysfs is read when no ``sys_root`` is given (tests point it at a fixture tree)
SYS_ROOT = "/sys"
HUGE = 2 << 20

#: the builtin engine's buffer kinds and their labels
BUFFERS = {"pages": "page-aligned (4 KiB pages)", "huge": "2 MiB huge pages"}


def check_buffers(buffers: str) -> None:
    """ProbeError unless ``buffers`` is a known kind (which engine has which: the engine registry,
    :func:`~.registry.check`)."""
    if buffers not in BUFFERS:
        raise ProbeError(f"buffers must be {' or '.join(BUFFERS)}, not {buffers!r}")


@dataclass
class RequestLimits:
    """One disk's request limits (``None`` where sysfs does not say)."""

    device: str  # the name asked for (vda1)
    disk: str  # whose queue/ applies (vda)
    max_segments: int | None = None
    max_sectors_kb: int | None = None
    max_hw_sectors_kb: int | None = None
    max_segment_size: int | None = None
    logical_block_size: int | None = None


def _size(n: int) -> str:
    """1048576 -> "1 MiB", 4096 -> "4 KiB" (whole units as dd writes them), else format_bytes."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return format_bytes(n, binary=True)


def _root(sys_root: str | None) -> str:
    """The filesystem root whose ``/sys`` is ``sys_root`` (``/sys`` -> ``/``; a fixture's ``T/sys`` -> ``T``)."""
    return os.path.dirname((sys_root or SYS_ROOT).rstrip("/")) or "/"


def _limits(dev, name: str) -> RequestLimits | None:
    q = dev.queue()
    if all(getattr(q, a) is None for a in ("max_segments", "max_sectors_kb", "logical_block_size")):
        return None  # no queue/ for it
    return RequestLimits(
        device=name,
        disk=dev.disk,
        max_segments=q.max_segments,
        max_sectors_kb=q.max_sectors_kb,
        max_hw_sectors_kb=q.max_hw_sectors_kb,
        max_segment_size=q.max_segment_size,
        logical_block_size=q.logical_block_size,
    )


def read_limits(name: str, sys_root: str | None = None) -> RequestLimits | None:
    """The request limits of kernel device ``name`` (``vda``, ``nvme0n1p2``, ``dm-0``): its
    disk's queue as :mod:`nbbench.topology` reads it (a partition's are its disk's).  None
    when sysfs has no queue for it."""
    dev = topology.device_by_name(name, _root(sys_root))
    return None if dev is None else _limits(dev, name)


def limits_for_path(
    path: str, source: str | None = None, sys_root: str | None = None
) -> tuple[RequestLimits | None, str]:
    """(limits, "") for the block device holding ``path`` (a block device: itself), or
    (None, why not), through :func:`nbbench.topology.device_of_path`.  A filesystem with
    an anonymous device number (overlay, tmpfs, NFS, btrfs) is looked up through its mount
    ``source`` when that is a ``/dev/`` node."""
    root = _root(sys_root)
    try:
        st = os.stat(path)
        if stat.S_ISBLK(st.st_mode):
            dev = topology.device_by_devno(os.major(st.st_rdev), os.minor(st.st_rdev), root)
        else:
            dev, _mount = topology.device_of_path(path, root)
    except OSError as exc:
        return None, f"cannot stat {exc.filename}: {exc.strerror}"
    if dev is None and source and source.startswith("/dev/"):
        name, _ = topology.device_of_source(source, root)
        dev = topology.device_by_name(name, root) if name else None
    if dev is None:
        return None, f"{path} is on a filesystem without a block device of its own ({source or 'no source'})"
    lim = _limits(dev, dev.name)
    return (
        (lim, "") if lim is not None else (None, f"no queue limits under {root.rstrip('/')}/sys/block for {dev.name}")
    )


def _segments(bs: int, buffers: str, lim: RequestLimits, measured: int | None = None) -> int:
    """Segments one ``bs`` I/O carries: ``measured`` (the buffer's physically contiguous
    pieces) where known, else at most a page each (ordinary memory) or one per huge page
    it touches — each piece cut by ``max_segment_size``."""
    seg_max = lim.max_segment_size or (1 << 62)
    if measured is not None:
        return max(measured, -(-bs // seg_max))
    if buffers == "huge":
        piece = min(HUGE, seg_max)
        return -(-bs // piece) + (1 if HUGE % bs and bs < HUGE else 0)
    return -(-bs // min(mmap.PAGESIZE, seg_max))


def requests_per_io(
    lim: RequestLimits, bs: int, buffers: str = "pages", segments: int | None = None
) -> tuple[int, str]:
    """(requests one ``bs`` O_DIRECT I/O becomes — at most, unless ``segments`` (the
    buffer's measured physical pieces) is given — and the limit that splits it, or "")."""
    by_seg = -(-_segments(bs, buffers, lim, segments) // lim.max_segments) if lim.max_segments else 1
    by_size = -(-bs // (lim.max_sectors_kb << 10)) if lim.max_sectors_kb else 1
    if by_seg <= 1 and by_size <= 1:
        return 1, ""
    return (by_seg, "max_segments") if by_seg >= by_size else (by_size, "max_sectors_kb")


def _limits_text(lim: RequestLimits, buffers: str) -> str:
    unit = f" of {_size(mmap.PAGESIZE)} pages" if buffers == "pages" else ""
    parts = [
        f"max {lim.max_segments} segments{unit}" if lim.max_segments else "max_segments unknown",
        f"max_sectors_kb {lim.max_sectors_kb}" if lim.max_sectors_kb else "max_sectors_kb unknown",
    ]
    return ", ".join(parts)


def _in(n: int) -> str:
    return "in two" if n == 2 else f"in {n}"


def split_sentence(
    lim: RequestLimits, bs: int, buffers: str = "pages", whose: str = "", segments: int | None = None
) -> str | None:
    """A sentence saying how a ``bs`` O_DIRECT I/O is split on this device; None when it is not.

    ``whose``: whose buffers ("dd's", "fio's"; "" for the builtin engine's); ``segments``:
    the buffer's measured physically contiguous pieces (None: count a page each)."""
    n, why = requests_per_io(lim, bs, buffers, segments)
    if n <= 1:
        return None
    size = _size(bs)
    head = f"a {size} request on {lim.disk} ({_limits_text(lim, buffers)}) is split {_in(n)}"
    if why == "max_sectors_kb":
        return (
            f"{head}: each {size} I/O goes to the device as {n} requests of at most {lim.max_sectors_kb} KiB, "
            "whatever the buffers (dd and fio alike)"
        )
    segs = _segments(bs, buffers, lim, segments)
    if buffers == "huge":
        return (
            f"{head}: even on 2 MiB huge pages each {size} I/O carries {segs} segments and goes to the "
            f"device as {n} requests"
        )
    who = f"{whose} page-aligned buffers" if whose else "page-aligned buffers, as dd and fio use"
    if segments is None:
        how = f"up to {segs} segments, fewer only where pages happen to be physically contiguous"
    else:
        how = f"this run's buffer: {segments} pieces of physically contiguous memory"
    return f"{head}: with {who}, each {size} I/O goes to the device as {n} requests ({how})"


def buffers_label(buffers: str, engine: str = registry.DEFAULT, huge_fraction: float | None = None) -> str:
    """The ``buffers`` label: the builtin engine's kind (with the share of huge pages the
    kernel granted), or the external tool's own."""
    if not registry.get(engine).in_process:  # an external tool: its own buffers
        return f"{engine}'s own: {BUFFERS['pages']}"
    text = BUFFERS.get(buffers, buffers)
    if buffers == "huge" and huge_fraction is not None and huge_fraction < 0.999:
        text += f" (MADV_HUGEPAGE; the kernel granted {huge_fraction * 100:.0f} %, the rest 4 KiB pages)"
    return text


def annotate(
    res,
    path: str,
    bs: int,
    buffers: str,
    engine: str,
    direct: bool,
    outs=(),
    source: str | None = None,
    sys_root: str | None = None,
    target=None,
) -> None:
    """Put the buffer kind, the device's request limits and the split of one ``bs`` I/O on
    ``res``: labels ``buffers``, ``buffer_segments`` (measured, builtin engine, where
    physical addresses are readable), ``device_max_segments``, ``device_max_sectors_kb``,
    ``device_max_hw_sectors_kb``, ``request_split`` and ``request_shape`` (the split in one
    sentence: the bound for the buffer kind, the same wording on every run); a warning only
    when huge pages make the figure incomparable with dd's and fio's.  ``outs``:
    the job outputs (their ``extra``: ``huge_fraction``, ``buffer_segments``)."""
    outs = [o for o in outs if o is not None]
    fracs = [o.extra["huge_fraction"] for o in outs if "huge_fraction" in o.extra]
    segs = [o.extra["buffer_segments"] for o in outs if "buffer_segments" in o.extra]
    ours = registry.get(engine).in_process  # the job used our buffer pool (else a tool's own buffers)
    measured = max(segs) if segs and ours else None
    label = buffers_label(buffers, engine, min(fracs) if fracs else None)
    own = [o.extra["buffers_used"] for o in outs if "buffers_used" in o.extra] if ours else []
    if own:  # buffered reads into os.pread's own bytes objects, not into the pool
        label = own[0] if len(own) == len(outs) else f"{label}; reads: {own[0]}"
    res.labels["buffers"] = label
    if measured is not None:
        res.labels["buffer_segments"] = measured
    if target is not None and sys_root is None and SYS_ROOT == "/sys":
        # the probe's StorageTarget already knows its device: no second look-up (tests that point
        # SYS_ROOT at a fixture sysfs look the device up there instead)
        dev = target.blockdev
        lim = _limits(dev, dev.name) if dev is not None else None
        why = (
            f"no queue limits under /sys/block for {dev.name}"
            if dev is not None
            else f"{path} is on a filesystem without a block device of its own "
            f"({target.extra.get('source') or 'no source'})"
        )
    else:
        lim, why = limits_for_path(path, source, sys_root)
    if lim is None:
        res.labels["request_split"] = f"unknown: {why}"
        return
    res.labels["device_queue"] = lim.disk
    res.labels["device_max_segments"] = lim.max_segments
    res.labels["device_max_sectors_kb"] = lim.max_sectors_kb
    res.labels["device_max_hw_sectors_kb"] = lim.max_hw_sectors_kb
    if not direct:
        res.labels["request_split"] = "not applicable: buffered I/O, the page cache forms the device's requests"
        return
    eff = "pages" if not ours or (fracs and min(fracs) < 0.999) else buffers
    # one stable wording, in "how it was measured": the bound for the buffer kind, never this
    # run's luck (how contiguous its buffer happened to be is the buffer_segments label)
    n, limit = requests_per_io(lim, bs, eff)
    size = _size(bs)
    if n <= 1:
        res.labels["request_split"] = f"no: one request per {size} I/O"
    else:
        res.labels["request_split"] = f"yes: up to {n} requests per {size} I/O ({limit})"
    text = split_sentence(lim, bs, eff, "" if ours else f"{engine}'s")
    if text:
        res.labels["request_shape"] = text
    pn, _ = requests_per_io(lim, bs, "pages")
    if eff == "huge" and pn > n:  # the one case that changes how to read the figure
        res.warn(
            f"buffers 'huge': {n} request(s) per {size} I/O on {lim.disk} where dd's and fio's page buffers "
            f"make {pn}: not comparable with their figures"
        )
