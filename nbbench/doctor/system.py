"""Memory, limits, kernel writeback, swap and CPU checks."""

from __future__ import annotations

import os
import re

from ..env import cgroup_memory_limit, nofile_limits, parse_limits, shm_usage, usable_cpus
from ..topology import Mount, find_mount, read_mounts
from ..units import format_bytes
from .base import Check, Unreadable, na, read_text, under

__all__ = [
    "check_shm",
    "check_nofile",
    "check_dirty",
    "check_swap",
    "check_cpus",
    "check_memory",
    "shm_need_bytes",
    "parse_limits",
    "parse_meminfo",
    "DOCKER_SHM_BYTES",
]

DOCKER_SHM_BYTES = 64 * 2**20
# one batch of 256 RGB 224x224 float32 images: what a DataLoader worker hands over through /dev/shm
DEFAULT_BATCH_BYTES = 256 * 3 * 224 * 224 * 4
SHM_FIX = (
    "give the container a larger /dev/shm: docker run --shm-size=16g … (or --ipc=host); "
    "Kubernetes: an emptyDir with medium: Memory mounted at /dev/shm"
)


def _gib(n) -> str:
    return format_bytes(n, binary=True)


def shm_need_bytes(workers: int, batch_bytes: int = DEFAULT_BATCH_BYTES, prefetch_factor: int = 2) -> int:
    """What DataLoader workers keep in /dev/shm at once: workers × prefetch_factor batches."""
    return max(1, workers) * max(1, prefetch_factor) * int(batch_bytes)


def _tmpfs_size(m: Mount) -> int | None:
    v = m.option("size")
    if not v:
        return None
    mm = re.fullmatch(r"(\d+)([kmgt]?)", v.lower())
    if not mm:
        return None
    return int(mm.group(1)) * {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}[mm.group(2)]


def check_shm(
    root: str = "/",
    mounts: list[Mount] | None = None,
    workers: int | None = None,
    batch_bytes: int = DEFAULT_BATCH_BYTES,
    prefetch_factor: int = 2,
) -> Check:
    name, group = "/dev/shm size", "memory"
    try:
        mounts = mounts if mounts is not None else read_mounts(root)
    except Unreadable as exc:
        return na(name, str(exc), group)
    shm = [m for m in mounts if m.mount_point == "/dev/shm"]
    if workers is None:
        workers = min(8, usable_cpus(root)["usable_int"])
    need = shm_need_bytes(workers, batch_bytes, prefetch_factor)
    if not shm:
        why = "/dev/shm is not a mount point in /proc/self/mountinfo: DataLoader workers (num_workers > 0) pass "
        return Check(name, "fail", why + "batches through shared memory there", SHM_FIX, group, {"need_bytes": need})
    m = shm[-1]
    size = used = None
    where = f"/proc/self/mountinfo ({m.fstype} size={m.option('size')})"
    usage = shm_usage("/dev/shm") if str(root) == "/" else None
    if usage is not None:
        size, used, where = usage["size_bytes"], usage["used_bytes"], "statvfs(/dev/shm)"
    if size is None:
        size = _tmpfs_size(m)
    if size is None:
        return na(name, f"/dev/shm ({m.fstype}) shows no size in /proc/self/mountinfo", group)
    data = {
        "size_bytes": size,
        "used_bytes": used,
        "need_bytes": need,
        "workers": workers,
        "batch_bytes": batch_bytes,
        "prefetch_factor": prefetch_factor,
    }
    ev = (
        f"{_gib(size)} ({where})"
        + (f", {_gib(used)} used" if used else "")
        + f"; {workers} workers × {prefetch_factor} prefetched batches of {_gib(batch_bytes)} "
        f"need about {_gib(need)}"
    )
    if size <= 2 * DOCKER_SHM_BYTES:
        why = f" — this is Docker's {_gib(DOCKER_SHM_BYTES)} default: DataLoader workers die with 'Bus error' or "
        return Check(name, "fail", ev + why + "'No space left on device'", SHM_FIX, group, data)
    if size < need:
        fix = SHM_FIX + f" (at least {_gib(need)}), or lower num_workers / batch size"
        return Check(name, "warn", ev, fix, group, data)
    return Check(name, "ok", ev, "", group, data)


def check_nofile(root: str = "/", want: int = 65536) -> Check:
    name, group = "open-file limit", "limits"
    try:
        lim = nofile_limits(root)
    except LookupError as exc:
        return na(name, str(exc), group)
    s, h, where = lim["soft"], lim["hard"], lim["source"]
    show = lambda v: "unlimited" if v is None else str(v)  # noqa: E731
    ev = f"soft {show(s)}, hard {show(h)} ({where})"
    data = {"soft": s, "hard": h, "want": want}
    fix = (
        f"ulimit -n {want} before starting Jupyter, or docker run --ulimit nofile={want}:{want}; "
        "in Python the soft limit can be raised to the hard one: "
        "resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))"
    )
    if s is not None and s < 1024:
        why = ": many DataLoader workers over many files fail with 'Too many open files'"
        return Check(name, "fail", ev + why, fix, group, data)
    if (s is not None and s < want) or (h is not None and h < want):
        if s is not None and h is not None and s < h and h >= want:
            fix = f"raise the soft limit to the hard one: ulimit -n {h} (no privilege needed)"
        return Check(name, "warn", ev + f": below {want}", fix, group, data)
    return Check(name, "ok", ev, "", group, data)


def _int_file(root, path) -> int:
    text = read_text(root, path).strip()
    try:
        return int(text)
    except ValueError:
        raise Unreadable(f"{path} holds {text!r}, not a number") from None


def proc_sys_read_only(root: str = "/") -> bool:
    """Whether /proc/sys cannot be written here (a container mounts it read-only): from the
    mount table under ``root`` (its ``ro`` option), or on a live system from access(2)."""
    try:
        m = find_mount("/proc/sys/vm", read_mounts(root))
    except Exception:  # noqa: BLE001 - no mount table: ask the kernel when live
        m = None
    if m is not None and m.mount_point.startswith("/proc/sys"):
        return "ro" in m.options
    if root == "/":
        return not os.access("/proc/sys/vm/dirty_ratio", os.W_OK)
    return False


def check_dirty(root: str = "/", ratio: int = 15, background: int = 5) -> Check:
    """vm.dirty_ratio / vm.dirty_background_ratio against the seed's 15 and 5."""
    name, group = "vm.dirty ratios", "kernel"
    try:
        r = _int_file(root, "/proc/sys/vm/dirty_ratio")
        b = _int_file(root, "/proc/sys/vm/dirty_background_ratio")
    except Unreadable as exc:
        return na(name, str(exc), group)
    try:
        rb = _int_file(root, "/proc/sys/vm/dirty_bytes")
        bb = _int_file(root, "/proc/sys/vm/dirty_background_bytes")
    except Unreadable:
        rb = bb = 0
    data = {"dirty_ratio": r, "dirty_background_ratio": b, "dirty_bytes": rb, "dirty_background_bytes": bb}
    ev = f"vm.dirty_ratio {r}, vm.dirty_background_ratio {b} (/proc/sys/vm/)"
    if rb or bb:
        ev = (
            f"vm.dirty_bytes {_gib(rb) if rb else 'unset'}, vm.dirty_background_bytes "
            f"{_gib(bb) if bb else 'unset'} (/proc/sys/vm/; the *_bytes settings override the ratios)"
        )
        return Check(name, "ok", ev, "", group, data)
    fix = (
        f"on the host: sysctl -w vm.dirty_ratio={ratio} vm.dirty_background_ratio={background} "
        f"(persist in /etc/sysctl.d/)"
    )
    if r > ratio or b > background:
        why = f": above {ratio} / {background}, so large writes (checkpoints) pile up and then stall in one long flush"
        if proc_sys_read_only(root):  # one note: only the host can change it
            why += "; /proc/sys is read-only here: a host setting"
            return Check(name, "info", ev + why, "", group, {**data, "read_only": True})
        return Check(name, "warn", ev + why, fix, group, data)
    return Check(name, "ok", ev, "", group, data)


def parse_meminfo(text: str) -> dict[str, int]:
    """/proc/meminfo -> {'MemTotal': bytes, …}."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"^(\w+(?:\(\w+\))?):\s+(\d+)(?:\s+kB)?", line)
        if m:
            out[m.group(1)] = int(m.group(2)) * (1024 if line.rstrip().endswith("kB") else 1)
    return out


def check_swap(root: str = "/") -> Check:
    name, group = "swap", "memory"
    try:
        mi = parse_meminfo(read_text(root, "/proc/meminfo"))
    except Unreadable as exc:
        return na(name, str(exc), group)
    if "SwapTotal" not in mi:
        return na(name, "/proc/meminfo has no SwapTotal line", group)
    total, free = mi["SwapTotal"], mi.get("SwapFree", 0)
    used = max(0, total - free)
    try:
        swappiness = _int_file(root, "/proc/sys/vm/swappiness")
    except Unreadable:
        swappiness = None
    data = {"total_bytes": total, "used_bytes": used, "swappiness": swappiness}
    sw = f", vm.swappiness {swappiness}" if swappiness is not None else ""
    if total == 0:
        why = "running out of memory ends in the OOM killer, not a slow crawl"
        return Check(name, "ok", f"no swap (/proc/meminfo SwapTotal 0){sw}: {why}", "", group, data)
    ev = f"{_gib(total)} swap, {_gib(used)} in use (/proc/meminfo){sw}"
    if used > max(256 * 2**20, 0.25 * total):
        fix = (
            "lower num_workers / prefetch_factor or batch size, or give the machine more memory; "
            "sysctl -w vm.swappiness=10 on the host makes the kernel prefer dropping cache"
        )
        return Check(
            name,
            "warn",
            ev + ": memory is short, so workers and the page cache are being swapped out",
            fix,
            group,
            data,
        )
    return Check(name, "ok", ev, "", group, data)


def _cpu_source(root) -> str:
    if under(root, "/sys/fs/cgroup/cpu.max").exists():
        return "/sys/fs/cgroup/cpu.max"
    for base in ("/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpu"):
        if under(root, base + "/cpu.cfs_quota_us").exists():
            return base + "/cpu.cfs_quota_us"
    return "no cgroup CPU quota file"


def check_cpus(root: str = "/") -> Check:
    name, group = "usable CPUs", "cpu"
    c = usable_cpus(root)
    quota = c["cgroup_quota"]
    src = _cpu_source(root)
    q = f"{quota:g}" if quota is not None else "none"
    ev = (
        f"os.cpu_count() {c['logical']}, affinity {c['affinity']} (sched_getaffinity), "
        f"cgroup quota {q} ({src}) → {c['usable']:g} usable"
    )
    data = dict(c)
    if c["usable"] < c["logical"]:
        n = c["usable_int"]
        why = ": tools that size themselves by os.cpu_count() (DataLoader num_workers recipes, torch's thread pool) "
        fix = (
            f"use num_workers ≤ {n} and torch.set_num_threads({n}) (nbbench.env.usable_cpus()['usable_int']), or "
            "raise the container's CPU limit (docker --cpus, Kubernetes resources.limits.cpu)"
        )
        return Check(name, "warn", ev + why + "oversubscribe", fix, group, data)
    return Check(name, "ok", ev, "", group, data)


def check_memory(root: str = "/", shm_bytes: int | None = None) -> Check:
    name, group = "memory limit", "memory"
    limit = cgroup_memory_limit(root)
    try:
        total = parse_meminfo(read_text(root, "/proc/meminfo")).get("MemTotal")
    except Unreadable:
        total = None
    src = (
        "/sys/fs/cgroup/memory.max"
        if under(root, "/sys/fs/cgroup/memory.max").exists()
        else "/sys/fs/cgroup/memory/memory.limit_in_bytes"
        if under(root, "/sys/fs/cgroup/memory/memory.limit_in_bytes").exists()
        else None
    )
    data = {"limit_bytes": limit, "total_bytes": total, "shm_bytes": shm_bytes}
    tot = f"{_gib(total)} RAM (/proc/meminfo)" if total else "RAM unknown"
    if src is None and total is None:
        return na(name, "neither a cgroup memory file nor /proc/meminfo could be read", group)
    if limit is None:
        return Check(name, "ok", f"no cgroup memory limit ({src or 'no cgroup memory file'}); {tot}", "", group, data)
    ev = f"cgroup limit {_gib(limit)} ({src}); {tot}"
    if shm_bytes and shm_bytes > limit:
        why = f"; /dev/shm ({_gib(shm_bytes)}) is larger than the limit and its pages count against it: filling it "
        fix = "raise the container's memory limit (docker --memory, resources.limits.memory) or size /dev/shm below it"
        return Check(name, "warn", ev + why + "gets the container OOM-killed", fix, group, data)
    if total and limit < 0.25 * total:
        why = ": DataLoader workers, pinned memory and the page cache all count against it"
        fix = "raise the container's memory limit (docker --memory, Kubernetes resources.limits.memory)"
        return Check(name, "warn", ev + why, fix, group, data)
    return Check(name, "ok", ev, "", group, data)
