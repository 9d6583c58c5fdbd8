"""The container's limits and the stall counters from fixture trees in the kernel's documented formats
(Documentation/admin-guide/cgroup-v2.rst, cgroup-v1/, accounting/psi.rst): cgroup v2 with its own
pressure files, v1 without PSI, a kernel without PSI, and a plain /sys with nothing — plus the one
verdict function's wording and compare's "measured under a 4-CPU quota against none"."""

from __future__ import annotations

from pathlib import Path

import pytest

from nbbench import env, limits
from nbbench.doctor import limits as doclimits
from nbbench.limits import counters, verdict

PSI_ZERO = "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"


def psi(some_us: int, full_us: int, avg60: float = 0.0) -> str:
    return (
        f"some avg10=0.00 avg60={avg60:.2f} avg300=0.00 total={some_us}\n"
        f"full avg10=0.00 avg60=0.00 avg300=0.00 total={full_us}\n"
    )


def v2_cpu_stat(periods: int, throttled: int, usec: int) -> str:
    return (
        f"usage_usec 9000000\nuser_usec 8000000\nsystem_usec 1000000\nnr_periods {periods}\n"
        f"nr_throttled {throttled}\nthrottled_usec {usec}\nnr_bursts 0\nburst_usec 0\n"
    )


def write(root: Path, rel: str, text: str) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


POD = "sys/fs/cgroup/kubepods.slice/pod1"
CTR = POD + "/ctr"


@pytest.fixture
def v2(tmp_path):
    """A pod under cgroup v2: a 4-CPU quota on the pod, 8 CPUs on the container (the pod's wins), its own
    pressure files, memory.max 8 GiB, pids.max 4096, a cpuset of 4 CPUs."""
    write(tmp_path, "proc/self/cgroup", "0::/kubepods.slice/pod1/ctr\n")
    write(
        tmp_path,
        "proc/self/mountinfo",
        "30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 "
        "rw,nsdelegate,memory_recursiveprot\n",
    )
    write(tmp_path, "sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids\n")
    write(tmp_path, POD + "/cpu.max", "400000 100000\n")
    write(tmp_path, POD + "/cpu.stat", v2_cpu_stat(1000, 380, 30_000_000))
    write(tmp_path, CTR + "/cpu.max", "800000 100000\n")
    write(tmp_path, CTR + "/cpu.stat", v2_cpu_stat(1000, 0, 0))
    write(tmp_path, CTR + "/memory.max", str(8 * 2**30) + "\n")
    write(tmp_path, CTR + "/memory.events", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n")
    write(tmp_path, CTR + "/pids.max", "4096\n")
    write(tmp_path, CTR + "/cpuset.cpus.effective", "0-3\n")
    for r in ("cpu", "io", "memory"):
        write(tmp_path, f"{CTR}/{r}.pressure", PSI_ZERO)
        write(tmp_path, f"proc/pressure/{r}", PSI_ZERO)
    return tmp_path


def test_v2_limits_take_the_tightest_quota_and_the_cgroups_own_pressure(v2):
    lim = limits.read_limits(v2)
    assert lim["cgroup"] == "v2"
    assert lim["cpu_quota"] == 4.0 and lim["cpu_period_us"] == 100000
    assert lim["cpu_quota_source"] == "/" + POD + "/cpu.max"
    assert lim["memory_limit_bytes"] == 8 * 2**30 and lim["pids_max"] == 4096
    assert lim["cpuset"] == "0-3" and lim["cpuset_count"] == 4
    assert lim["psi"] == "cgroup" and lim["psi_source"] == "/" + CTR
    assert lim["throttling"] == "/" + POD + "/cpu.stat"  # the cgroup that carries the quota
    assert lim["memory_events"] == "/" + CTR + "/memory.events"
    # env reads the quota and the memory limit through the same reader
    assert env.cgroup_cpu_limit(v2) == 4.0 and env.cgroup_memory_limit(v2) == 8 * 2**30
    lines = verdict.describe_limits(lim)
    assert lines[0].startswith("CPU quota 4 CPUs (400000 µs per 100000 µs period")
    assert "pressure stall information: the cgroup" in lines[-1]


def test_v2_window_figures_from_two_samples(v2):
    with limits.StallReader(v2) as r:
        assert r.available == ["throttling", "psi", "memory events"] and r.scope == "cgroup"
        a = r.sample(now=100.0)
        # 2 s later: 20 periods, 19 throttled, 0.96 s throttled; 0.54 s of io some; 0.24 s of memory full
        write(v2, POD + "/cpu.stat", v2_cpu_stat(1020, 399, 30_960_000))
        write(v2, CTR + "/io.pressure", psi(540_000, 100_000))
        write(v2, CTR + "/memory.pressure", psi(300_000, 240_000))
        write(v2, CTR + "/memory.events", "low 0\nhigh 2\nmax 3\noom 1\noom_kill 1\noom_group_kill 0\n")
        b = r.sample(now=102.0)
    fig = limits.window(a, b)
    assert fig["cpu_throttled_periods_pct"] == 95.0
    assert fig["cpu_throttled_pct"] == 48.0
    assert fig["psi_io_some_pct"] == 27.0 and fig["psi_io_full_pct"] == 5.0
    assert fig["psi_memory_some_pct"] == 15.0 and fig["psi_memory_full_pct"] == 12.0
    assert fig["psi_cpu_some_pct"] == 0.0
    assert fig["memory_limit_events_count"] == 4 and fig["memory_oom_kills_count"] == 1
    said = verdict.stall_findings(fig, limits.read_limits(v2))
    assert said[0] == "the OOM killer ended 1 process in the cgroup"
    assert "throttled by the container's 4-CPU quota 48 % of the time (95 % of periods, cpu.stat)" in said
    assert "tasks waited on I/O 27 % of the time, all of them 5 % (PSI io, the cgroup's)" in said
    assert any(s.startswith("memory pressure: reclaim stalls 15 %") and "8.00 GiB limit" in s for s in said)


def test_v1_without_psi_reads_quota_failcnt_and_says_psi_is_not_available(tmp_path):
    # no mountinfo: the usual places; cpu and cpuacct mounted together; no /proc/pressure
    write(tmp_path, "proc/self/cgroup", "4:memory:/job\n3:cpu,cpuacct:/job\n2:pids:/job\n0::/\n")
    job = "sys/fs/cgroup/cpu,cpuacct/job/"
    write(tmp_path, job + "cpu.cfs_quota_us", "50000\n")
    write(tmp_path, job + "cpu.cfs_period_us", "100000\n")
    write(tmp_path, job + "cpu.stat", "nr_periods 10\nnr_throttled 9\nthrottled_time 500000000\n")
    write(tmp_path, "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n")
    write(tmp_path, "sys/fs/cgroup/memory/job/memory.limit_in_bytes", str(2**30) + "\n")
    write(tmp_path, "sys/fs/cgroup/memory/job/memory.failcnt", "7\n")
    write(tmp_path, "sys/fs/cgroup/pids/job/pids.max", "max\n")
    lim = limits.read_limits(tmp_path)
    assert lim["cgroup"] == "v1" and lim["cpu_quota"] == 0.5 and lim["memory_limit_bytes"] == 2**30
    assert lim["pids_max"] is None and lim["pids_source"].endswith("pids.max")
    assert lim["psi"] is None
    assert "pressure stall information: not available" in verdict.describe_limits(lim)[-1]
    with limits.StallReader(tmp_path) as r:
        assert r.available == ["throttling", "memory events"] and r.scope is None
        a = r.sample(now=0.0)
        write(tmp_path, job + "cpu.stat", "nr_periods 20\nnr_throttled 19\nthrottled_time 1e9\n")
        assert r.sample(now=1.0)["cpu"] is None  # a malformed file is no figure, not an exception
        write(tmp_path, job + "cpu.stat", "nr_periods 20\nnr_throttled 19\nthrottled_time 1000000000\n")
        write(tmp_path, "sys/fs/cgroup/memory/job/memory.failcnt", "9\n")
        b = r.sample(now=1.0)
    fig = limits.window(a, b)
    assert fig["cpu_throttled_periods_pct"] == 100.0 and fig["cpu_throttled_pct"] == 50.0
    assert fig["memory_limit_events_count"] == 2 and fig["psi_io_some_pct"] is None
    text = verdict.stall_verdict(fig, lim, "partly busy")
    assert text.startswith("throttled by the container's 0.5-CPU quota 50 % of the time (100 % of periods, cpu.stat)")
    assert "the memory limit was hit 2 times" in text and "partly busy" not in text


def test_mountinfo_of_a_container_namespace_maps_the_own_cgroup_to_the_mount_point(tmp_path):
    # the container sees its own cgroup at the mount point (mount root /kubepods/x = its path)
    write(tmp_path, "proc/self/cgroup", "0::/kubepods/x\n")
    write(tmp_path, "proc/self/mountinfo", "40 31 0:38 /kubepods/x /sys/fs/cgroup ro,relatime - cgroup2 cgroup2 rw\n")
    write(tmp_path, "sys/fs/cgroup/cpu.max", "200000 100000\n")
    cg = limits.locate(tmp_path)
    assert cg.v2 == tmp_path / "sys/fs/cgroup"
    assert limits.read_limits(tmp_path)["cpu_quota"] == 2.0


def test_a_kernel_without_psi_and_a_plain_sys_say_not_available_in_one_line(tmp_path):
    (tmp_path / "sys").mkdir()
    (tmp_path / "proc").mkdir()
    lim = limits.read_limits(tmp_path)
    assert lim["cgroup"] is None and lim["cpu_quota"] is None and lim["psi"] is None and lim["throttling"] is None
    assert verdict.describe_limits(lim) == [
        "container limits and stall counters not available (no cgroup files, no /proc/pressure)"
    ]
    c = doclimits.check_limits(str(tmp_path))
    assert c.status == "n/a" and "not available" in c.evidence and "\n" not in c.evidence
    s = doclimits.check_stalls(str(tmp_path))
    assert s.status == "n/a" and s.evidence.startswith("not available")
    with limits.StallReader(tmp_path) as r:
        assert r.available == [] and r.sample(now=1.0) == {"t": 1.0, "cpu": None, "psi": {}, "mem": None}
    from nbbench.monitor.stalls import StallSource

    src = StallSource(root=str(tmp_path))
    src.open()
    assert src.sample(1.0) == {} and src.labels["stall_counters"] == "none"
    assert src.notes == [
        "stall counters not available: no cgroup cpu.stat, /proc/pressure or cgroup pressure files "
        "(verdicts are inferred from utilisation)"
    ]
    src.close()
    # v2 without PSI (CONFIG_PSI off, or psi=0): limits read, pressure "not available"
    write(tmp_path, "sys/fs/cgroup/cgroup.controllers", "cpu memory\n")
    write(tmp_path, "sys/fs/cgroup/cpu.max", "max 100000\n")
    write(tmp_path, "sys/fs/cgroup/cpu.stat", v2_cpu_stat(0, 0, 0))
    lim = limits.read_limits(tmp_path)
    assert lim["cgroup"] == "v2" and lim["cpu_quota"] is None and lim["psi"] is None
    lines = verdict.describe_limits(lim)
    assert lines[0] == "CPU quota: no quota" and lines[-1].startswith("pressure stall information: not available")


def test_the_verdict_says_what_was_measured_else_that_it_is_inferred():
    lim = {"cpu_quota": 0.5, "psi": "system"}
    fig = {"cpu_throttled_pct": 48.2, "cpu_throttled_periods_pct": 98.0, "psi_cpu_some_pct": 60.0}
    text = verdict.stall_verdict(fig, lim, "partly busy")
    assert text == "throttled by the container's 0.5-CPU quota 48 % of the time (98 % of periods, cpu.stat)"
    with_workers = verdict.stall_verdict({**fig, "cpu_throttled_pct": 38.0}, {"cpu_quota": 4, "psi": None}, "", 16)
    assert with_workers.endswith(": the DataLoader's 16 workers share 4 CPUs")
    io = verdict.stall_verdict({"cpu_throttled_pct": 0.0, "psi_io_some_pct": 27.0}, lim, "waiting on storage")
    assert io == (
        "the machine's tasks waited on I/O 27 % of the time (PSI io, system-wide); waiting on storage (inferred)"
    )
    calm = {"cpu_throttled_pct": 0.5, "psi_cpu_some_pct": 3.0, "psi_io_some_pct": 1.0}
    assert verdict.stall_verdict(calm, lim, "CPU-bound (1 core)") == (
        "CPU-bound (1 core) (inferred from utilisation; no throttling or pressure stalls measured)"
    )
    assert verdict.stall_verdict({}, None, "partly busy") == "partly busy (inferred from utilisation)"
    assert verdict.stall_verdict({}, None, "") == ""
    # several CPUs waiting: throttled time passes wall time, said per period instead
    many = verdict.stall_findings({"cpu_throttled_pct": 320.0, "cpu_throttled_periods_pct": 95.0}, {"cpu_quota": 4})
    assert many == [
        "throttled by the container's 4-CPU quota in 95 % of its periods (3.2 CPU-s waiting per s) (cpu.stat)"
    ]


def test_worker_bound_and_the_difference_of_two_environments_limits():
    assert verdict.worker_bound({"cpu_quota": 4.0}) == "4 CPUs of quota: num_workers above 3 only adds throttling"
    assert verdict.worker_bound({"cpu_quota": 4.0}, workers=3) == ""
    assert verdict.worker_bound({"cpu_quota": None}, workers=64) == ""
    a = {"cpu_quota": None, "memory_limit_bytes": None, "shm_bytes": 64 * 2**20}
    b = {"cpu_quota": 4.0, "memory_limit_bytes": 8 * 2**30, "shm_bytes": 64 * 2**20}
    assert verdict.limits_difference(a, b) == [
        "measured under a 4-CPU quota against none",
        "memory limit 8.00 GiB against none",
    ]
    assert verdict.limits_difference(a, dict(a)) == [] and verdict.limits_difference(None, b) == []


def test_compare_names_the_quota_where_the_environments_limits_differ():
    from nbbench.compare.build import _env_diff
    from nbbench.results import Result

    class Store:
        envs = {
            "a": {"host": "h", "limits": {"cpu_quota": None}},
            "b": {"host": "h", "limits": {"cpu_quota": 4.0}},
        }

        def environment(self, i):
            return self.envs[i]

    runs = [Result(kind="storage", env_id="a"), Result(kind="storage", env_id="b")]
    notes = _env_diff(runs, Store())
    assert notes == ["measured under a 4-CPU quota against none: the container's limits differ"]
    Store.envs["b"] = {"host": "g", "limits": {"cpu_quota": None}}
    assert _env_diff(runs, Store()) == [
        "the runs come from different environments (host differ): that is what this comparison measures"
    ]


def test_the_fingerprint_keeps_the_limits_without_the_cgroups_path():
    fp = env.fingerprint(refresh=True, import_torch=False)
    lim = fp["limits"]
    assert set(lim) >= {"cgroup", "cpu_quota", "memory_limit_bytes", "pids_max", "shm_bytes", "psi", "throttling"}
    assert not any("/" in str(v) for v in lim.values())


def test_doctor_stalls_from_the_kernels_tallies(v2):
    write(v2, CTR + "/io.pressure", psi(0, 0, avg60=31.0))
    c = doclimits.check_stalls(str(v2), workers=16)
    assert c.status == "warn"
    assert "throttled in 38 % of 1000 periods, 30 s in all, since the cgroup started (cpu.stat)" in c.evidence
    assert "throttled by the container's 4-CPU quota in 38 % of its periods (cpu.stat, since the cgroup started)" in (
        c.evidence
    )
    assert "tasks waited on I/O 31 % of the time (PSI io, the cgroup's)" in c.evidence
    assert "raise the container's CPU limit" in c.fix
    lim = doclimits.check_limits(str(v2), workers=16)
    assert lim.status == "warn" and "4 CPUs of quota: num_workers above 3 only adds throttling" in lim.evidence


def test_pressure_and_cpu_stat_parsers_take_the_documented_formats():
    assert counters.parse_pressure("some avg10=1.00 avg60=2.00 avg300=3.00 total=123\n") == (123, None)
    assert counters.parse_pressure_avg(psi(1, 2, avg60=4.5)) == (4.5, 0.0)
    assert counters.parse_cpu_stat("nr_periods 3\nnr_throttled 1\nthrottled_time 2000000000\n") == (3, 1, 2.0)
    assert counters.parse_cpu_stat("usage_usec 5\n") is None
    assert counters.parse_memory_events("max 2\noom 1\noom_kill 1\n") == (3, 1)
    assert counters.parse_memory_events("12\n", v1=True) == (12, 0)


def test_a_loader_runs_stall_window_keeps_the_figures_and_words_only_the_containers_own(v2):
    from nbbench.probes.pipeline.stallwindow import StallWindow, quota_note
    from nbbench.results import Result

    w = StallWindow(root=str(v2))
    write(v2, POD + "/cpu.stat", v2_cpu_stat(1020, 399, 30_960_000))
    write(v2, CTR + "/io.pressure", psi(900_000_000, 0))  # the cgroup's own: worded
    res = Result(kind="loader")
    words = w.apply(res, workers=16)
    assert res.labels["cpu_quota"] == 4.0 and res.labels["psi_scope"] == "cgroup"
    assert res.metrics["cpu_throttled_periods_pct"] == 95.0 and res.metrics["cpu_throttled_pct"] > 0
    assert any("the DataLoader's 16 workers share 4 CPUs" in x for x in words) or words[0].startswith("tasks waited")
    assert words[-1] == "4 CPUs of quota: num_workers above 3 only adds throttling" == res.warnings[-1]
    assert all(x.startswith("measured: ") for x in res.warnings[:-1]) and len(res.warnings) == len(words)
    # the machine's pressure (no cgroup files): a figure, not a finding
    for r in ("cpu", "io", "memory"):
        (v2 / CTR / f"{r}.pressure").unlink()
    w = StallWindow(root=str(v2))
    write(v2, "proc/pressure/io", psi(10**12, 0))
    res = Result(kind="loader")
    assert not [x for x in w.apply(res) if "I/O" in x] and res.labels["psi_scope"] == "system"
    assert res.metrics["psi_io_some_pct"] == 100.0
    assert quota_note(Result(kind="sweep"), 2) == ""  # this machine's own quota (none here) bounds nothing


def test_the_monitor_serves_plots_and_prints_the_stall_figures(v2):
    from nbbench.monitor import Monitor
    from nbbench.monitor.exporter import families
    from nbbench.monitor.stalls import StallSource
    from nbbench.monitor.text import format_status
    from nbbench.plots.monitor import monitor_subplots

    src = StallSource(root=str(v2))
    src.every_s = 0.0  # read at every sample
    mon = Monitor(interval=0.05, sources=[src])
    mon.start()
    write(v2, POD + "/cpu.stat", v2_cpu_stat(1020, 399, 30_960_000))
    write(v2, CTR + "/io.pressure", psi(10**12, 0))
    mon._take(mon.t_start + 1.0)  # a window of 1 s: 0.96 s throttled, io pressure capped at 100 %
    rec = mon.latest()
    assert rec["stall.cpu_throttled_pct"] == 96.0 and rec["stall.psi_io_some_pct"] == 100.0
    fams = {f.name: f for f in families(mon)}
    assert fams["nbbench_cgroup_cpu_throttled_ratio"].samples[0].value == pytest.approx(0.96)
    io = fams["nbbench_pressure_io_waiting_ratio"].samples[0]
    assert io.labels == {"scope": "cgroup"} and io.value == 1.0
    line = format_status(rec)
    assert "throttled  96%" in line and "PSI io 100%" in line
    res = mon.result()
    assert res.labels["stall_counters"] == "throttling, psi, memory events" and res.labels["cpu_quota"] == 4.0
    assert res.metrics["cpu_throttled_s"] == pytest.approx(0.96)
    assert res.stall_line().startswith("stalls: throttled ")
    from nbbench.plots.monitor import monitor_plot_kwargs

    cpu = next(p for p in monitor_plot_kwargs(mon)["subplots"] if p.title.startswith("CPU"))
    assert "stall.cpu_throttled_pct" in cpu.series and "stall.psi_io_some_pct" in cpu.series  # a quota: throttling
    plain = next(p for p in monitor_subplots() if p.title.startswith("CPU"))
    assert plain.series == ["cpu.util_pct", "cpu.iowait_pct"]  # nothing measured: no empty legend entries


def test_the_environment_card_has_a_row_of_limits(v2):
    from nbbench.results.system.env import env_rows

    rows = dict(env_rows({"limits": limits.read_limits(v2)}))
    assert rows["container limits"] == (
        "cgroup v2 · 4-CPU quota · cpuset of 4 CPUs · memory 8.00 GiB · pids 4096 · throttling counters · "
        "PSI (the cgroup's)"
    )
    assert dict(env_rows({}))["container limits"] == ""  # a fingerprint from before the limits were kept
