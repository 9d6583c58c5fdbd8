from pathlib import Path

import pytest

from nbbench import env, envexport


def write(root: Path, rel: str, text: str):
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def test_cgroup_v2_limits(tmp_path):
    write(tmp_path, "sys/fs/cgroup/cpu.max", "150000 100000\n")
    write(tmp_path, "sys/fs/cgroup/memory.max", "8589934592\n")
    assert env.cgroup_cpu_limit(tmp_path) == 1.5
    assert env.cgroup_memory_limit(tmp_path) == 8 * 2**30
    cpus = env.usable_cpus(tmp_path)
    assert cpus["cgroup_quota"] == 1.5 and cpus["usable"] <= 1.5 and cpus["usable_int"] == 1


def test_cgroup_v2_unlimited(tmp_path):
    write(tmp_path, "sys/fs/cgroup/cpu.max", "max 100000\n")
    write(tmp_path, "sys/fs/cgroup/memory.max", "max\n")
    assert env.cgroup_cpu_limit(tmp_path) is None and env.cgroup_memory_limit(tmp_path) is None


def test_cgroup_v1_limits(tmp_path):
    write(tmp_path, "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "400000\n")
    write(tmp_path, "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n")
    write(tmp_path, "sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n")
    assert env.cgroup_cpu_limit(tmp_path) == 4.0
    assert env.cgroup_memory_limit(tmp_path) is None  # v1's "unlimited"
    write(tmp_path, "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n")
    assert env.cgroup_cpu_limit(tmp_path) is None


@pytest.mark.parametrize(
    "files,kind",
    [
        ({".dockerenv": ""}, "docker"),
        ({"run/.containerenv": ""}, "podman"),
        ({"proc/1/cgroup": "0::/kubepods/burstable/pod1/abc\n"}, "kubernetes"),
        ({"proc/1/cgroup": "0::/init.scope\n"}, None),
    ],
)
def test_container_detection(tmp_path, files, kind):
    for rel, text in files.items():
        write(tmp_path, rel, text)
    assert env.container_kind(tmp_path) == kind


def test_cpu_model_from_cpuinfo(tmp_path):
    write(tmp_path, "proc/cpuinfo", "processor\t: 0\nmodel name\t: Fake CPU 9000\n")
    assert env.cpu_model(tmp_path) == "Fake CPU 9000"


def test_fingerprint_is_stable_and_complete():
    a = env.fingerprint(refresh=True)
    b = env.fingerprint(refresh=True)
    assert a["id"] == b["id"] and len(a["id"]) == 16
    names = {n.lower() for n, _ in a["packages"]}
    assert {"pandas", "psutil", "nbbench"} <= names
    for key in ("host", "os", "kernel", "cpu_model", "cpus", "memory", "python", "packages_sha256", "gpus"):
        assert key in a
    assert a["cpus"]["usable"] >= 1


def test_export_conda_outside_conda_says_why(monkeypatch):
    monkeypatch.delenv("CONDA_PREFIX", raising=False)
    if envexport.in_conda():
        pytest.skip("running inside conda")
    with pytest.raises(envexport.ExportError, match="not running inside a conda environment"):
        envexport.export_conda()


def test_export_conda_inside_conda_runs_conda_list(tmp_path, monkeypatch):
    (tmp_path / "conda-meta").mkdir()
    monkeypatch.setenv("CONDA_PREFIX", str(tmp_path))
    monkeypatch.setenv("CONDA_EXE", "/opt/conda/bin/conda")
    seen = {}

    class Done:
        returncode, stdout, stderr = 0, "@EXPLICIT\nhttps://conda.anaconda.org/x.conda\n", ""

    def runner(argv, **kw):
        seen["argv"] = argv
        return Done()

    text = envexport.export_conda(tmp_path / "out.txt", runner=runner)
    assert seen["argv"][:3] == ["/opt/conda/bin/conda", "list", "--explicit"]
    assert text.startswith("@EXPLICIT") and (tmp_path / "out.txt").read_text() == text


LIMITS = (
    "Limit                     Soft Limit           Hard Limit           Units     \n"
    "Max cpu time              unlimited            unlimited            seconds   \n"
    "Max open files            1024                 unlimited            files     \n"
)


def test_open_file_limit_from_a_roots_proc_limits(tmp_path):
    write(tmp_path, "proc/self/limits", LIMITS)
    assert env.nofile_limits(tmp_path) == {"soft": 1024, "hard": None, "source": "/proc/self/limits"}
    write(tmp_path, "proc/self/limits", LIMITS.replace("Max open files", "Max open filez"))
    with pytest.raises(LookupError, match="no 'Max open files' line"):
        env.nofile_limits(tmp_path)
    with pytest.raises(LookupError, match="does not exist"):
        env.nofile_limits(tmp_path / "elsewhere")


def test_open_file_limit_and_shm_on_the_live_system():
    import os
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    live = env.nofile_limits()
    assert live["soft"] == (None if soft == resource.RLIM_INFINITY else soft)
    assert live["source"] == "resource.getrlimit(RLIMIT_NOFILE)"
    if os.path.isdir("/dev/shm"):
        use = env.shm_usage()
        assert use["size_bytes"] >= use["used_bytes"] >= 0 and 0 <= use["free_bytes"] <= use["size_bytes"]
        assert env.shm_free_bytes() is not None
    assert env.shm_usage("/no/such/dir") is None and env.shm_free_bytes("/no/such/dir") is None
