"""Checks for a PATH: its mount, atime options, O_DIRECT, and the block device behind it."""

from __future__ import annotations

import os
import stat

from .. import tempfiles
from ..probes.storage.target import check_free_space, direct_io_supported, open_read
from ..results import ProbeError
from ..topology import Mount, Unreadable, block_device, find_mount, fs_kind, object_storage_mount
from .base import Check, na

__all__ = ["check_mount", "check_atime", "check_o_direct", "check_block", "FS_CAVEATS", "object_caveat"]

# the memory caveat is for tmpfs and ramfs (devtmpfs and hugetlbfs hold no datasets); these keep
# access times in memory, so atime options cost nothing there
_MEMORY = {"tmpfs", "ramfs"}
_ATIME_IN_MEMORY = _MEMORY | {"proc", "sysfs", "devtmpfs"}

FS_CAVEATS = {
    "overlay": (
        "the container's writable layer (overlayfs): the first write to an image file copies it up "
        "whole, and reads pass through the image layers — not where datasets or checkpoints belong",
        "mount a volume or host directory for data: docker run -v /fast/disk/data:/dataset … "
        "(Kubernetes: a PersistentVolume or hostPath)",
    ),
    "network": (
        "a network filesystem: every open and small read costs a round trip, and throughput is the network's",
        "for NFS mount with nconnect=8,rsize=1048576,wsize=1048576; copy hot data to local NVMe "
        "or pack small files into shards (WebDataset, TFRecord)",
    ),
    "fuse": (
        "a FUSE filesystem (s3fs, gcsfuse, sshfs, …): every read crosses a user-space daemon; O_DIRECT "
        "and large reads are often unsupported and small files are slow",
        "copy the dataset to local disk, or enable the FUSE driver's file cache and larger read sizes",
    ),
    "memory": (
        "RAM-backed (tmpfs): figures here measure memory, not storage; the files count against the "
        "container's memory limit and are gone on restart",
        "benchmark the directory where the dataset really lives",
    ),
    "hostshare": (
        "a host-shared filesystem of a VM (9p / virtiofs): metadata and small reads are slow",
        "put the dataset on a disk attached to the VM",
    ),
}


def object_caveat(client: str, url: str | None) -> tuple[str, str]:
    """What a FUSE mount of object storage means for the probes, and what to measure instead."""
    what = (
        f"object storage through a FUSE client ({client}): O_DIRECT is not honoured, random writes are "
        "unsupported or slow, every open, stat and listing is a request, and a local cache may serve "
        "warm reads"
    )
    target = url or "s3://BUCKET/PREFIX"
    fix = (
        f"measure the bucket itself: nbbench s3 {target} (with --endpoint-url for an S3-compatible store); "
        "read whole files in large blocks (shards) through the mount"
    )
    return what, fix


def _caveat_key(fstype: str) -> str | None:
    kind = fs_kind(fstype)
    if kind == "memory" and fstype not in _MEMORY:
        return None
    return kind if kind in FS_CAVEATS else None


def _where(m: Mount) -> str:
    return f"/proc/self/mountinfo line {m.line}"


def check_mount(path: str, mounts: list[Mount]) -> tuple[Check, Mount | None]:
    name, group = "mount", "storage"
    m = find_mount(path, mounts)
    if m is None:
        return na(name, f"no mount in /proc/self/mountinfo covers {path}", group), None
    data = {
        "path": path,
        "mount_point": m.mount_point,
        "fstype": m.fstype,
        "source": m.source,
        "options": m.options,
        "super_options": m.super_options,
        "device": m.devno,
    }
    src = m.source + (f" (its {m.fs_root}, bind-mounted)" if m.fs_root not in ("/", "") else "")
    ev = f"{path} is on {m.mount_point}: {m.fstype} from {src}, options {','.join(m.options)} ({_where(m)})"
    extra = []
    if m.fstype.startswith("nfs"):
        for k in ("vers", "rsize", "wsize", "nconnect", "proto"):
            v = m.option(k)
            if v:
                extra.append(f"{k}={v}")
        if extra:
            ev += "; " + ",".join(extra)
    obj = object_storage_mount(m.fstype, m.source)
    if obj is not None:
        client, url = obj
        what, fix = object_caveat(client, url)
        return Check(name, "warn", ev + f" — {what}", fix, group, data), m
    key = _caveat_key(m.fstype)
    if key:
        what, fix = FS_CAVEATS[key]
        return Check(name, "warn", ev + f" — {what}", fix, group, data), m
    return Check(name, "ok", ev, "", group, data), m


def check_atime(m: Mount | None) -> Check:
    """noatime (the seed's advice) / relatime / strict atime."""
    name, group = "atime", "storage"
    if m is None:
        return na(name, "the mount is unknown", group)
    opts = set(m.options)
    ev_opts = ",".join(o for o in m.options if "atime" in o or o in ("ro", "rw")) or "none"
    ev = f"{m.mount_point} mounted {ev_opts} ({_where(m)})"
    data = {"options": m.options}
    fix = (
        f"mount -o remount,noatime {m.mount_point} (on the host for a bind mount or volume; "
        "add noatime to its /etc/fstab line)"
    )
    if "ro" in opts:
        return Check(name, "ok", ev + ": read-only, so reads write no access times", "", group, data)
    if m.fstype in _ATIME_IN_MEMORY:
        return Check(name, "ok", ev + f": {m.fstype} keeps access times in memory", "", group, data)
    if "noatime" in opts:
        return Check(name, "ok", ev, "", group, data)
    if "relatime" in opts:
        return Check(
            name,
            "warn",
            ev + ": relatime still writes each file's access time when first read after "
            "a change and then once a day — an inode write per dataset file per epoch-day; noatime "
            "writes none",
            fix,
            group,
            data,
        )
    return Check(name, "warn", ev + ": strict atime — every read of a file also writes its inode", fix, group, data)


def check_o_direct(path: str) -> Check:
    """Try O_DIRECT at ``path`` (a new temporary file in a directory; a read of a file or device)."""
    name, group = "O_DIRECT", "storage"
    fix = (
        "direct-I/O figures cannot be taken here: use the buffered cache modes with a file larger than "
        "RAM, or drop the page cache between runs on the host (echo 3 > /proc/sys/vm/drop_caches)"
    )
    try:
        st = os.stat(path)
    except OSError as exc:
        return na(name, f"cannot look at {path}: {exc.strerror or exc}", group)
    if stat.S_ISDIR(st.st_mode):
        if not os.access(path, os.W_OK | os.X_OK):
            return na(name, f"not tried: no permission to create a file in {path}", group)
        try:
            check_free_space(path, 4096)
        except ProbeError as exc:
            return na(name, f"not tried: {exc}", group)

        try:  # a new .nbbench-doctor-… file, registered before it exists: removed on a signal too
            with tempfiles.temp_file(path, "doctor") as tf:
                ok, why = direct_io_supported(tf.fd, write=True)
        except ProbeError as exc:
            return na(name, f"not tried: {exc}", group)
        how = f"tried: a 4 KiB O_DIRECT write to a new temporary file in {path}"
    elif stat.S_ISREG(st.st_mode) or stat.S_ISBLK(st.st_mode):
        if st.st_size == 0 and stat.S_ISREG(st.st_mode):
            return na(name, f"not tried: {path} is empty", group)
        try:
            fd = open_read(path)
        except ProbeError as exc:
            return na(name, f"not tried: {exc}", group)
        try:
            ok, why = direct_io_supported(fd, write=False)
        finally:
            os.close(fd)
        how = f"tried: a 4 KiB O_DIRECT read of {path}"
    else:
        return na(name, f"not tried: {path} is not a directory, file or block device", group)
    if ok:
        return Check(name, "ok", f"works ({how})", "", group, {"supported": True})
    return Check(name, "warn", f"{why} ({how})", fix, group, {"supported": False, "reason": why})


def check_block(root: str, m: Mount | None, want_read_ahead_kb: int = 2048) -> list[Check]:
    """read-ahead, scheduler, rotational flag and queue depth of the disk behind ``m``."""
    group = "block device"
    names = ("read-ahead", "I/O scheduler", "rotational", "queue depth")
    if m is None:
        return [na(n, "the mount is unknown", group) for n in names]
    try:
        bd = block_device(root, m)
    except Unreadable as exc:
        return [na(n, str(exc), group) for n in names]
    q = bd.queue()
    dev = f"/dev/{bd.disk}"
    desc = bd.name + (f" (dm over {', '.join(bd.physical)})" if bd.physical else "") + f" [{bd.how}]"
    out: list[Check] = []
    base = {"device": bd.name, "disk": bd.disk, "slaves": bd.physical}

    def add(name, status, evidence, fix="", **data):
        out.append(Check(name, status, evidence, fix, group, {**base, **data}))

    # read-ahead: the seed's `blockdev --setra 4096` counts 512-byte sectors = 2048 KiB
    ra = q.read_ahead_kb
    if ra is None:
        out.append(na("read-ahead", q.errors["read_ahead_kb"], group))
    elif ra >= want_read_ahead_kb:
        add("read-ahead", "ok", f"{ra} KiB ({bd.queue_dir}/read_ahead_kb) for {desc}", read_ahead_kb=ra)
    else:
        ev = f"{ra} KiB ({bd.queue_dir}/read_ahead_kb) for {desc}"
        ev += f": below {want_read_ahead_kb} KiB, so sequential reads of large files arrive in small pieces"
        fix = (
            f"blockdev --setra {want_read_ahead_kb * 2} {dev}  ({want_read_ahead_kb * 2} × 512-byte sectors "
            f"= {want_read_ahead_kb} KiB; as root on the host, or echo {want_read_ahead_kb} > "
            f"{bd.queue_dir}/read_ahead_kb)"
        )
        add("read-ahead", "warn", ev, fix, read_ahead_kb=ra)

    rot = q.rotational
    if "scheduler" in q.errors:
        out.append(na("I/O scheduler", q.errors["scheduler"], group))
    else:
        text, sched = q.schedulers, q.scheduler
        ev = f"{sched} ({bd.queue_dir}/scheduler: {text})"
        data = {"scheduler": sched, "available": text}
        if rot == 1 and sched == "none":
            fix = f"echo mq-deadline > {bd.queue_dir}/scheduler (on the host)"
            add("I/O scheduler", "warn", ev + ": a rotational disk without a scheduler seeks more", fix, **data)
        elif rot == 0 and sched == "bfq":
            fix = f"echo none > {bd.queue_dir}/scheduler (on the host)"
            add("I/O scheduler", "warn", ev + ": bfq costs CPU per request on fast SSD/NVMe", fix, **data)
        else:
            add("I/O scheduler", "ok", ev, **data)

    if rot is None:
        out.append(na("rotational", f"{bd.queue_dir}/rotational could not be read", group))
    elif rot == 1:
        ev = f"1 ({bd.queue_dir}/rotational): the kernel treats {bd.disk} as a spinning disk"
        if bd.disk.startswith(("vd", "xvd")):  # nothing to do: the flag says nothing of the host's storage
            why = "; virtual disks report 1 whatever the host's storage is (randread measures it)"
            add("rotational", "info", ev + why, rotational=1)
            return out
        fix = (
            "random reads of many small files are slow on spinning disks: keep datasets on SSD/NVMe, or pack them "
            "into large sequential shards"
        )
        add("rotational", "warn", ev, fix, rotational=1)
    else:
        add("rotational", "ok", f"0 ({bd.queue_dir}/rotational): solid-state", rotational=0)

    nr = q.nr_requests
    if nr is None:
        out.append(na("queue depth", q.errors["nr_requests"], group))
    elif nr < 64:
        ev = f"{nr} requests ({bd.queue_dir}/nr_requests): a short queue limits parallel reads from many workers"
        add("queue depth", "warn", ev, f"echo 256 > {bd.queue_dir}/nr_requests (on the host)", nr_requests=nr)
    else:
        add("queue depth", "ok", f"{nr} requests ({bd.queue_dir}/nr_requests)", nr_requests=nr)
    return out
