"""Doctor checks parsed from fixture trees (tests/fixtures/doctor/)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from nbbench import topology
from nbbench.doctor import CHECK_STATUSES, Check, DoctorResult, doctor, exposure, storage, system
from nbbench.results import Result

FIX = Path(__file__).parent / "fixtures" / "doctor"
DOCKER = str(FIX / "docker")
HARD = str(FIX / "hardened")


def by_name(checks):
    return {c.name: c for c in checks}


# ------------------------------------------------------------------ mounts
# (mountinfo parsing and the scheduler file: tests/test_topology.py)
def test_stacked_mounts_last_one_wins():
    text = (
        "25 24 0:23 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=65536k\n"
        "30 25 0:27 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=16777216k\n"
    )
    ms = topology.parse_mountinfo(text)
    assert topology.find_mount("/dev/shm", ms).mount_id == 30
    c = system.check_shm("/nonexistent-root", ms, workers=4)
    assert c.status == "ok" and c.data["size_bytes"] == 16 * 2**30


# -------------------------------------------------------------- /dev/shm etc.
def test_docker_default_shm_fails_with_the_fix():
    c = system.check_shm(DOCKER, workers=4)
    assert c.status == "fail"
    assert "64.0 MiB" in c.evidence and "/proc/self/mountinfo" in c.evidence
    assert "--shm-size" in c.fix and "--ipc=host" in c.fix


def test_shm_warns_when_workers_need_more_than_there_is():
    ms = topology.parse_mountinfo("1 0 0:1 / /dev/shm rw - tmpfs tmpfs rw,size=1048576k\n")
    need = system.shm_need_bytes(8)
    assert need > 2**30
    c = system.check_shm("/nonexistent-root", ms, workers=8)
    assert c.status == "warn" and c.data["need_bytes"] == need
    assert system.check_shm("/nonexistent-root", ms, workers=1).status == "ok"


def test_open_file_limits_from_proc_limits():
    c = system.check_nofile(DOCKER)
    assert c.status == "warn"
    assert c.data == {"soft": 1024, "hard": 4096, "want": 65536}
    assert "soft 1024, hard 4096" in c.evidence and "/proc/self/limits" in c.evidence
    assert "--ulimit nofile" in c.fix
    assert system.check_nofile(HARD).status == "ok"


def test_dirty_ratios_against_the_seed_values():
    c = system.check_dirty(DOCKER)
    assert c.status == "warn" and c.data["dirty_ratio"] == 20 and c.data["dirty_background_ratio"] == 10
    assert "vm.dirty_ratio=15" in c.fix and "vm.dirty_background_ratio=5" in c.fix
    assert system.check_dirty(HARD).status == "ok"


def test_swap_in_use_warns(tmp_path):
    c = system.check_swap(DOCKER)
    assert c.status == "warn" and c.data["used_bytes"] == (8388604 - 2097152) * 1024
    assert system.check_swap(HARD).status == "ok"


def test_cpus_cgroup_v2_quota_and_v1_unlimited():
    c = system.check_cpus(DOCKER)
    assert c.data["cgroup_quota"] == 2.0
    assert "/sys/fs/cgroup/cpu.max" in c.evidence
    assert c.status == ("warn" if (os.cpu_count() or 1) > 2 else "ok")
    h = system.check_cpus(HARD)
    assert h.status == "ok" and h.data["cgroup_quota"] is None and "cpu.cfs_quota_us" in h.evidence


def test_memory_limit_and_shm_cross_check():
    c = system.check_memory(DOCKER)
    assert c.data["limit_bytes"] == 8 * 2**30 and "/sys/fs/cgroup/memory.max" in c.evidence
    assert c.status == "warn"  # 8 GiB of 62.5 GiB RAM
    c = system.check_memory(HARD, shm_bytes=32 * 2**30)
    assert c.status == "ok" and c.data["limit_bytes"] is None  # v1 "unlimited" huge number


# ------------------------------------------------------------------- storage
def test_mount_caveats_by_filesystem():
    ms = topology.read_mounts(DOCKER)
    expect = {
        "/workspace": ("overlay", "volume"),
        "/dataset": ("nfs4", "nconnect"),
        "/mnt/my bucket": ("fuse.s3fs", "nbbench s3 s3://BUCKET/PREFIX"),
        "/dev/shm": ("tmpfs", "really lives"),
    }
    for path, (fstype, in_fix) in expect.items():
        c, m = storage.check_mount(path, ms)
        assert c.status == "warn" and m.fstype == fstype and in_fix in c.fix, path
    c, m = storage.check_mount("/data/x", ms)
    assert c.status == "ok" and "ext4 from /dev/nvme0n1p1 (its /docker/data, bind-mounted)" in c.evidence
    assert "rsize=131072" in storage.check_mount("/dataset", ms)[0].evidence


def test_atime_noatime_relatime_and_readonly():
    ms = topology.read_mounts(DOCKER)
    assert storage.check_atime(topology.find_mount("/data", ms)).status == "ok"  # noatime
    rel = storage.check_atime(topology.find_mount("/scratch", ms))
    assert rel.status == "warn" and "remount,noatime /scratch" in rel.fix
    strict = storage.check_atime(topology.parse_mountinfo("1 0 8:1 / /d rw - ext4 /dev/sda1 rw\n")[0])
    assert strict.status == "warn" and "strict atime" in strict.evidence
    ro = storage.check_atime(topology.find_mount("/dataset", topology.read_mounts(HARD)))
    assert ro.status == "ok" and "read-only" in ro.evidence


def test_block_device_partition_resolves_to_its_disk():
    ms = topology.read_mounts(DOCKER)
    checks = by_name(storage.check_block(DOCKER, topology.find_mount("/data", ms)))
    ra = checks["read-ahead"]
    assert ra.status == "warn" and ra.data["disk"] == "nvme0n1" and ra.data["read_ahead_kb"] == 128
    assert "blockdev --setra 4096 /dev/nvme0n1" in ra.fix and "2048 KiB" in ra.fix
    assert checks["I/O scheduler"].data["scheduler"] == "none" and checks["I/O scheduler"].status == "ok"
    assert checks["rotational"].status == "ok" and checks["queue depth"].data["nr_requests"] == 1023


def test_block_device_dm_via_slaves():
    ms = topology.read_mounts(DOCKER)
    checks = by_name(storage.check_block(DOCKER, topology.find_mount("/scratch", ms)))
    assert checks["read-ahead"].status == "ok" and checks["read-ahead"].data["slaves"] == ["sda"]
    assert "dm over sda" in checks["read-ahead"].evidence
    assert checks["rotational"].status == "warn"
    assert checks["I/O scheduler"].status == "warn"  # rotational with none
    assert checks["queue depth"].status == "n/a" and "nr_requests does not exist" in checks["queue depth"].evidence


def test_block_device_na_for_filesystems_without_one():
    ms = topology.read_mounts(DOCKER)
    for c in storage.check_block(DOCKER, topology.find_mount("/dataset", ms)):
        assert c.status == "n/a" and "no block device of its own" in c.evidence


def test_rotational_scheduler_and_short_queue():
    ms = topology.read_mounts(HARD)
    checks = by_name(storage.check_block(HARD, topology.find_mount("/dataset", ms)))
    assert checks["rotational"].status == "warn" and checks["read-ahead"].status == "warn"
    assert checks["I/O scheduler"].status == "ok"  # mq-deadline on a spinning disk
    root = by_name(storage.check_block(HARD, topology.find_mount("/", ms)))
    assert root["read-ahead"].status == "ok" and root["queue depth"].status == "ok"


# ------------------------------------------------------------------- exposure
def test_sshd_include_first_match_wins():
    checks = by_name(exposure.check_sshd(DOCKER))
    pw = checks["ssh password login"]
    assert pw.status == "fail"
    assert "/etc/ssh/sshd_config.d/50-cloud-init.conf:1" in pw.evidence  # the drop-in, read first, wins
    assert "50-cloud-init.conf" in pw.fix
    root = checks["ssh root login"]
    assert root.status == "fail" and "/etc/ssh/sshd_config:4" in root.evidence
    cfg = exposure.parse_sshd_config(DOCKER)
    assert "/etc/ssh/sshd_config.d/README" not in cfg.files  # only *.conf


def test_sshd_hardened_drop_in_and_match_block():
    cfg = exposure.parse_sshd_config(HARD)
    assert cfg.settings["passwordauthentication"].value == "no"
    assert cfg.settings["permitrootlogin"].value == "prohibit-password"  # Key=value form
    checks = by_name(exposure.check_sshd(HARD))
    assert checks["ssh root login"].status == "ok"
    pw = checks["ssh password login"]
    assert pw.status == "warn" and "Match Group contractors" in pw.evidence


def test_sshd_defaults_when_not_set(tmp_path):
    (tmp_path / "etc/ssh").mkdir(parents=True)
    (tmp_path / "etc/ssh/sshd_config").write_text("Port 22\n")
    checks = by_name(exposure.check_sshd(str(tmp_path)))
    assert checks["ssh password login"].status == "fail" and "sshd's default" in checks["ssh password login"].evidence
    assert checks["ssh root login"].status == "ok"  # prohibit-password by default


@pytest.fixture
def runtime(tmp_path):
    """The fixture server files, their pid set to this (running) process so jupyter_server lists them."""
    d = tmp_path / "runtime"
    d.mkdir()
    for f in (FIX / "jupyter-runtime").glob("jpserver-*.json"):
        info = json.loads(f.read_text())
        info["pid"] = os.getpid()
        (d / f.name).write_text(json.dumps(info))
    return d


def test_jupyter_servers_from_runtime_files(runtime):
    pytest.importorskip("jupyter_server")
    # a stale file of a dead process is skipped (and removed by jupyter_server, as `jupyter server list` does)
    dead = json.loads((runtime / "jpserver-102.json").read_text())
    dead["pid"], dead["port"] = 2**22 + 12345, 9999
    (runtime / "jpserver-999.json").write_text(json.dumps(dead))
    checks = by_name(exposure.check_jupyter(str(runtime)))
    assert set(checks) == {"jupyter server :8888", "jupyter server :8889", "jupyter server :8890"}
    open_ = checks["jupyter server :8888"]
    assert open_.status == "fail" and "no token and no password" in open_.evidence
    assert "anyone who can reach it" in open_.evidence and "--ServerApp.ip=127.0.0.1" in open_.fix
    assert checks["jupyter server :8889"].status == "ok"
    assert checks["jupyter server :8890"].status == "warn"  # password, but bound beyond loopback


def test_assess_server_uses_listening_sockets_over_hostname():
    info = {"url": "http://localhost:8888/", "hostname": "localhost", "port": 8888, "token": "abc", "pid": 1}
    assert exposure.assess_server(info, ["127.0.0.1"]).status == "ok"
    assert exposure.assess_server(info, ["0.0.0.0"]).status == "warn"
    assert exposure.assess_server({**info, "token": ""}, ["127.0.0.1"]).status == "fail"
    assert exposure.assess_server({**info, "token": "", "sock": "/run/j.sock"}).status == "ok"
    assert exposure.is_loopback("::1") and exposure.is_loopback("127.0.0.2") and not exposure.is_loopback("10.1.2.3")


def test_no_jupyter_server(tmp_path):
    pytest.importorskip("jupyter_server")
    (c,) = exposure.check_jupyter(str(tmp_path))
    assert c.status == "ok" and "no running Jupyter server" in c.evidence


# ------------------------------------------------------------------ the whole
def test_doctor_on_a_fixture_tree_and_round_trip(runtime):
    gpu_verdicts = [
        {"check": "torch build", "status": "fail", "message": "CPU-only torch: install a CUDA build."},
        {"check": "driver", "status": "ok", "message": "driver 570 supports CUDA 12.8."},
    ]

    class FakeGpu:
        verdicts = gpu_verdicts

    res = doctor("/data", root=DOCKER, runtime_dir=str(runtime), workers=4, gpu_check=lambda benchmark: FakeGpu())
    assert isinstance(res, DoctorResult) and res.kind == "doctor" and res.ok
    names = by_name(res.checks)
    assert {
        "/dev/shm size",
        "open-file limit",
        "mount",
        "atime",
        "read-ahead",
        "I/O scheduler",
        "rotational",
        "queue depth",
        "vm.dirty ratios",
        "swap",
        "usable CPUs",
        "memory limit",
        "gpu: torch build",
        "gpu: driver",
        "ssh password login",
        "ssh root login",
        "jupyter server :8888",
    } <= set(names)
    assert "O_DIRECT" not in names  # not tried on a fixture root
    assert names["gpu: torch build"].status == "fail" and names["gpu: driver"].status == "ok"
    assert res.metrics["fail_count"] == sum(c.status == "fail" for c in res.checks)
    assert sum(res.metrics[k] for k in ("ok_count", "warn_count", "fail_count", "na_count")) == len(res.checks)
    assert any("--shm-size" in w for w in res.warnings)
    back = Result.from_json(res.to_json())
    assert isinstance(back, DoctorResult) and back == res and back.checks == res.checks
    table = res.text_table(width=120)
    assert table.index("FAIL") < table.index("WARN") < table.index("OK ")
    html = res._repr_html_()
    assert "nbbench-doctor" in html and "--shm-size" in html
    assert list(res.checks_frame().columns) == ["status", "name", "evidence", "fix", "group"]


def test_every_file_missing_gives_na(tmp_path):
    res = doctor("/", root=str(tmp_path), checks=["shm", "nofile", "mount", "block", "vm", "memory", "ssh"])
    checks = res.checks
    assert checks and all(c.status == "n/a" for c in checks), [str(c) for c in checks if c.status != "n/a"]
    assert all(c.evidence for c in checks)
    assert "/proc/self/mountinfo does not exist" in by_name(checks)["mount"].evidence


def test_unreadable_file_gives_na(tmp_path):
    p = tmp_path / "proc/sys/vm"
    p.mkdir(parents=True)
    (p / "dirty_ratio").mkdir()  # a directory where a value is expected: unreadable for everyone, root too
    c = system.check_dirty(str(tmp_path))
    assert c.status == "n/a" and "/proc/sys/vm/dirty_ratio could not be read" in c.evidence
    (p / "dirty_ratio").rmdir()
    (p / "dirty_ratio").write_text("lots\n")
    c = system.check_dirty(str(tmp_path))
    assert c.status == "n/a" and "not a number" in c.evidence


def test_check_validates_status():
    with pytest.raises(ValueError):
        Check("x", "bad", "")
    assert set(CHECK_STATUSES) == {"ok", "warn", "fail", "info", "n/a"}


def test_a_read_only_proc_sys_is_one_note_not_a_warning(tmp_path):
    """Inside a container /proc/sys is read-only: the dirty ratios are a host setting, an info
    that counts as no warning and gives no fix to run here."""
    import shutil

    root = tmp_path / "root"
    shutil.copytree(DOCKER, root, symlinks=True)
    assert system.check_dirty(str(root)).status == "warn"
    info = root / "proc" / "self" / "mountinfo"
    info.write_text(info.read_text() + "1200 1101 0:55 /sys /proc/sys ro,nosuid,nodev,noexec,relatime - proc proc rw\n")
    c = system.check_dirty(str(root))
    assert c.status == "info" and c.fix == "" and c.evidence.count("read-only") == 1
    from nbbench.results.system.doctor import DoctorResult

    r = DoctorResult(
        samples={"checks": [c.to_dict(), Check("mount", "ok", "ext4").to_dict()]},
        metrics={"info_count": 1, "ok_count": 1},
    ).finish()
    assert r.verdict == "ok" and r.findings()["warn"] == 0 and r.findings()["info"] == 1
    assert r.answer_line() == "all 1 checks ok (1 info)"


def test_a_doctor_card_says_a_shared_reason_once():
    from nbbench.results.system.doctor import DoctorResult

    checks = [
        Check("ssh password login", "n/a", "no sshd_config"),
        Check("ssh root login", "n/a", "no sshd_config"),
        Check("gpu: a", "fail", "x", fix="see the GPU check"),
        Check("gpu: b", "fail", "y", fix="see the GPU check"),
    ]
    r = DoctorResult(samples={"checks": [c.to_dict() for c in checks]}).finish()
    rows = r.rows()
    assert ("n/a", "ssh password login, ssh root login", "no sshd_config", "") in rows
    assert [row[3] for row in rows if row[1].startswith("gpu")] == ["see the GPU check", ""]


def test_unknown_check_name():
    with pytest.raises(ValueError, match="unknown doctor checks"):
        doctor("/", checks=["nope"])


def test_listening_sockets_from_proc_net_tcp():
    # 0x22B8 = 8888 on 0.0.0.0 and ::, 8889 on 127.0.0.1, 8890 on ::1; an established connection is ignored
    assert exposure.listening_on_port(8888, DOCKER) == ["0.0.0.0", "::"]
    assert exposure.listening_on_port(8889, DOCKER) == ["127.0.0.1"]
    assert exposure.listening_on_port(8890, DOCKER) == ["::1"]
    assert exposure.listening_on_port(1234, DOCKER) is None
    info = {"url": "http://localhost:8888/", "hostname": "localhost", "port": 8888, "token": "t", "pid": 1}
    # jupyter writes hostname 'localhost' for ip='' (all interfaces): the sockets tell the truth
    c = exposure.assess_server(info, exposure.listening_on_port(8888, DOCKER))
    assert c.status == "warn" and "0.0.0.0" in c.evidence


def test_doctor_modules_import_light():
    import subprocess
    import sys

    code = (
        "import sys, nbbench.doctor, nbbench.doctor.system, nbbench.doctor.storage, nbbench.doctor.exposure, "
        "nbbench.doctor.gpu, nbbench.compare, nbbench.report, nbbench.exporters, nbbench.exporters.fio, "
        "nbbench.commands.doctor, nbbench.commands.history\n"
        "print(','.join(m for m in ('torch','pynvml','matplotlib','ipywidgets','pandas','jupyter_server') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "", out.stdout + out.stderr
