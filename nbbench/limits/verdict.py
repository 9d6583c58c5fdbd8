"""Verdicts from measured stalls: what the kernel's counters say held a run back.

One function, :func:`stall_verdict`, makes the words for the monitor's answer, the feed and loader
diagnosis and the doctor: the measured findings first (:func:`stall_findings`: the container's CPU
quota throttling, PSI waits on CPU, I/O and memory, memory-limit events), else the utilisation
inference it is given, *labelled as inferred*.  :func:`describe_limits` lists the limits (the
doctor's lines), :func:`limits_difference` says how two environments' limits differ (compare), and
:func:`worker_bound` names the quota where it bounds a DataLoader's workers.
"""

from __future__ import annotations

from typing import Any

from ..units import format_bytes

__all__ = [
    "stall_findings",
    "stall_verdict",
    "measured",
    "quota_words",
    "describe_limits",
    "limits_summary",
    "limits_difference",
    "worker_bound",
    "THROTTLED_PCT",
    "PSI_CPU_PCT",
    "PSI_IO_PCT",
    "PSI_MEMORY_PCT",
]

#: throttled time per wall second above which a run was held back by the quota
THROTTLED_PCT = 5.0
#: share of periods throttled worth a verdict where only the periods are known (no time base)
THROTTLED_PERIODS_PCT = 20.0
#: PSI "some" shares worth a verdict: CPU (others' load shows here too), I/O, memory
PSI_CPU_PCT = 20.0
PSI_IO_PCT = 10.0
PSI_MEMORY_PCT = 5.0

_STALL_KEYS = (
    "cpu_throttled_pct",
    "cpu_throttled_periods_pct",
    "psi_cpu_some_pct",
    "psi_io_some_pct",
    "psi_memory_some_pct",
    "memory_limit_events_count",
)


def _n(x) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def _g(x: float) -> str:
    return f"{x:.0f}" if abs(x) >= 10 else f"{x:.2g}"


def quota_words(cpus: float | None) -> str:
    """'0.5-CPU quota', '4-CPU quota'; '' without a quota."""
    return f"{cpus:g}-CPU quota" if cpus else ""


def _gib(n: int) -> str:
    return format_bytes(n, binary=True)


def measured(fig: dict[str, Any]) -> bool:
    """Any stall counter was read for these figures."""
    return any(_n(fig.get(k)) is not None for k in _STALL_KEYS)


def stall_findings(fig: dict[str, Any], limits: dict[str, Any] | None = None, workers: int | None = None) -> list[str]:
    """The measured stalls worth saying, strongest first, each with its figure and source:
    "throttled by the container's 0.5-CPU quota 48 % of the time (cpu.stat)", "tasks waited on I/O
    27 % of the time (PSI io, system-wide)", "memory pressure: reclaim stalls 12 % …", "the memory
    limit was hit 3 times".  ``fig``: a window's or run's figures (:data:`~.counters.FIGURES` keys);
    ``limits``: :func:`~.cgroups.read_limits` (for the quota and the PSI scope); ``workers``: the
    DataLoader workers, named beside the quota they share."""
    lim = limits or {}
    scope = fig.get("psi_scope") or lim.get("psi")
    where = ", system-wide" if scope == "system" else ", the cgroup's" if scope == "cgroup" else ""
    quota = _n(fig.get("cpu_quota")) or _n(lim.get("cpu_quota"))
    out: list[tuple[float, str]] = []
    thr, per = _n(fig.get("cpu_throttled_pct")), _n(fig.get("cpu_throttled_periods_pct"))
    if thr is not None and thr >= THROTTLED_PCT:
        q = f"the container's {quota_words(quota)}" if quota else "the container's CPU quota"
        if thr <= 100:
            text = f"throttled by {q} {_g(thr)} % of the time"
        else:
            text = f"throttled by {q} in {_g(per or 0)} % of its periods ({thr / 100:.2g} CPU-s waiting per s)"
        if per is not None and thr <= 100:
            text += f" ({_g(per)} % of periods, cpu.stat)"
        else:
            text += " (cpu.stat)"
        if workers and quota:
            text += f": the DataLoader's {workers} workers share {quota:g} CPUs"
        out.append((max(thr, 100.0 if per and per > 50 else 0), text))
    elif thr is None and per is not None and per >= THROTTLED_PERIODS_PCT:  # periods alone (the doctor's tally)
        q = f"the container's {quota_words(quota)}" if quota else "the container's CPU quota"
        out.append((per, f"throttled by {q} in {_g(per)} % of its periods (cpu.stat{fig.get('since') or ''})"))
    io = _n(fig.get("psi_io_some_pct"))
    if io is not None and io >= PSI_IO_PCT:
        full = _n(fig.get("psi_io_full_pct"))
        extra = f", all of them {_g(full)} %" if full and full >= 1 else ""
        who = "the machine's tasks" if scope == "system" else "tasks"
        out.append((io, f"{who} waited on I/O {_g(io)} % of the time{extra} (PSI io{where})"))
    mem, memfull = _n(fig.get("psi_memory_some_pct")), _n(fig.get("psi_memory_full_pct"))
    if mem is not None and mem >= PSI_MEMORY_PCT:
        limit = lim.get("memory_limit_bytes")
        by = f" — the page cache is being squeezed by the {_gib(limit)} limit" if limit else ""
        full_txt = f", all tasks {_g(memfull)} %" if memfull and memfull >= 1 else ""
        out.append((mem, f"memory pressure: reclaim stalls {_g(mem)} %{full_txt} (PSI memory{where}){by}"))
    cpu = _n(fig.get("psi_cpu_some_pct"))
    throttled = bool(out) and out[0][1].startswith("throttled")
    if cpu is not None and cpu >= PSI_CPU_PCT and not throttled:
        who = "the machine's tasks" if scope == "system" else "tasks"
        out.append((cpu, f"{who} waited for a CPU {_g(cpu)} % of the time (PSI cpu{where})"))
    events, kills = _n(fig.get("memory_limit_events_count")), _n(fig.get("memory_oom_kills_count"))
    if kills:
        out.append((1000.0, f"the OOM killer ended {kills:.0f} process{'es' if kills != 1 else ''} in the cgroup"))
    elif events:
        out.append((50.0, f"the memory limit was hit {events:.0f} time{'s' if events != 1 else ''}"))
    out.sort(key=lambda p: -p[0])
    return [t for _, t in out]


def stall_verdict(
    fig: dict[str, Any],
    limits: dict[str, Any] | None = None,
    inferred: str = "",
    workers: int | None = None,
) -> str:
    """The verdict from measured stalls, else ``inferred`` (a utilisation-based verdict) labelled so.

    - stalls measured: the findings, joined by "; " (a "partly busy" or "waiting for CPU" inference
      is dropped: the measurement says why; another is kept after them, marked "inferred");
    - counters read but nothing stalled: ``inferred`` + " (inferred from utilisation; no throttling
      or pressure stalls measured)";
    - no counters (the kernel exposes none of them here): ``inferred`` + " (inferred from utilisation)".
    """
    found = stall_findings(fig, limits, workers)
    if found:
        keep = inferred and not inferred.startswith(("partly busy", "waiting for CPU", "idle"))
        return "; ".join(found) + (f"; {inferred} (inferred)" if keep else "")
    if not inferred:
        return ""
    if measured(fig):
        return f"{inferred} (inferred from utilisation; no throttling or pressure stalls measured)"
    return f"{inferred} (inferred from utilisation)"


def describe_limits(lim: dict[str, Any]) -> list[str]:
    """The limits as lines, each with its source; 'no quota' / 'no limit' where none is set; one line
    'not available' where neither a cgroup nor pressure stall information was found."""
    if not lim.get("cgroup") and not lim.get("psi"):
        return ["container limits and stall counters not available (no cgroup files, no /proc/pressure)"]
    out = []
    q = lim.get("cpu_quota")
    if q:
        out.append(
            f"CPU quota {q:g} CPUs ({lim.get('cpu_quota_us')} µs per {lim.get('cpu_period_us')} µs period, "
            f"{lim.get('cpu_quota_source')})"
        )
    else:
        src = lim.get("cpu_quota_source")
        out.append("CPU quota: no quota" + (f" ({src})" if src and src != "no quota set" else ""))
    if lim.get("cpuset"):
        out.append(f"cpuset {lim['cpuset']} ({lim.get('cpuset_count')} CPUs)")
    m = lim.get("memory_limit_bytes")
    out.append(f"memory limit {_gib(m)} ({lim.get('memory_limit_source')})" if m else "memory limit: no limit")
    p = lim.get("pids_max")
    out.append(f"pids.max {p} ({lim.get('pids_source')})" if p else "pids limit: no limit")
    if lim.get("shm_bytes"):
        out.append(f"/dev/shm {_gib(lim['shm_bytes'])}")
    thr = lim.get("throttling")
    out.append(f"throttling counters: {thr}" if thr else "throttling counters: not available (no cpu.stat)")
    psi = lim.get("psi")
    out.append(
        f"pressure stall information: {'the cgroup' if psi == 'cgroup' else 'system-wide'} ({lim.get('psi_source')})"
        if psi
        else "pressure stall information: not available (no /proc/pressure, no cgroup *.pressure)"
    )
    return out


def limits_summary(lim: dict[str, Any] | None) -> str:
    """The limits in one short line (the environment card's row): 'cgroup v2 · 4-CPU quota · cpuset of 8
    CPUs · memory 8.00 GiB · pids 4096 · /dev/shm 64.0 MiB · throttling counters · PSI (the cgroup's)'."""
    if not lim:
        return ""
    if not lim.get("cgroup") and not lim.get("psi"):
        return "not available (no cgroup files, no /proc/pressure)"
    q, m, p = lim.get("cpu_quota"), lim.get("memory_limit_bytes"), lim.get("pids_max")
    parts = [
        f"cgroup {lim['cgroup']}" if lim.get("cgroup") else "no cgroup",
        quota_words(q) if q else "no CPU quota",
        f"cpuset of {lim['cpuset_count']} CPUs" if lim.get("cpuset_count") else "",
        f"memory {_gib(m)}" if m else "no memory limit",
        f"pids {p}" if p else "",
        f"/dev/shm {_gib(lim['shm_bytes'])}" if lim.get("shm_bytes") else "",
        "throttling counters" if lim.get("throttling") else "no throttling counters",
        {"cgroup": "PSI (the cgroup's)", "system": "PSI (system-wide)"}.get(lim.get("psi") or "", "no PSI"),
    ]
    return " · ".join(x for x in parts if x)


def _quota_of(lim: dict[str, Any] | None) -> str:
    q = (lim or {}).get("cpu_quota")
    return f"a {q:g}-CPU quota" if q else "none"


def limits_difference(a: dict[str, Any] | None, b: dict[str, Any] | None) -> list[str]:
    """How run ``b``'s container limits differ from the baseline ``a``'s: "measured under a 4-CPU
    quota against none", the memory limit, the cpuset, /dev/shm.  [] when alike or unknown."""
    if not a or not b:
        return []
    out = []
    if a.get("cpu_quota") != b.get("cpu_quota"):
        out.append(f"measured under {_quota_of(b)} against {_quota_of(a)}")
    ma, mb = a.get("memory_limit_bytes"), b.get("memory_limit_bytes")
    if ma != mb:
        out.append(
            f"memory limit {_gib(mb) if mb else 'none'} against {_gib(ma) if ma else 'none'}",
        )
    if a.get("cpuset_count") != b.get("cpuset_count") and a.get("cpuset_count") and b.get("cpuset_count"):
        out.append(f"cpuset of {b['cpuset_count']} CPUs against {a['cpuset_count']}")
    if a.get("shm_bytes") and b.get("shm_bytes") and a["shm_bytes"] != b["shm_bytes"]:
        out.append(f"/dev/shm {_gib(b['shm_bytes'])} against {_gib(a['shm_bytes'])}")
    return out


def worker_bound(lim: dict[str, Any] | None, workers: int | None = None) -> str:
    """Where a CPU quota bounds a DataLoader: "4 CPUs of quota: num_workers above 3 only adds
    throttling" (the main process needs one); '' without a quota or where ``workers`` stay within it."""
    q = (lim or {}).get("cpu_quota")
    if not q:
        return ""
    top = max(1, int(q) - 1) if q >= 2 else 1
    if workers is not None and workers <= top:
        return ""
    return f"{q:g} CPUs of quota: num_workers above {top} only adds throttling"
