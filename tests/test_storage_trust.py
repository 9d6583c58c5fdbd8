"""Issue 11 (trust): RAM is not storage, pseudo files are not storage, short reads count their real
bytes, unreadable parts of a tree are skipped and said, temp files never outlive their process, and
`files --cold` as root says it emptied the whole machine's page cache."""

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

from nbbench import tempfiles, topology
from nbbench.probes._engines import sync
from nbbench.probes._engines.job import JobSpec
from nbbench.probes.storage import disk, files
from nbbench.probes.storage.target import inspect
from nbbench.results import ProbeError

PY = sys.executable
SHM = "/dev/shm"
needs_shm = pytest.mark.skipif(not (os.path.isdir(SHM) and os.access(SHM, os.W_OK)), reason="no writable /dev/shm")
needs_dd = pytest.mark.skipif(shutil.which("dd") is None, reason="no dd")
RAM = "this is RAM, not storage: "


def _leftovers(d):
    return [n for n in os.listdir(d) if n.startswith(".nbbench-")]


@pytest.fixture
def shm_dir():
    d = tempfile.mkdtemp(prefix="nbbench-test-", dir=SHM)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _memory_honest(r):
    """cache=memory, the one RAM warning, and never the advice to use --direct."""
    assert r.labels["cache"] == "memory", r.labels
    assert len([w for w in r.warnings if w.startswith(RAM)]) == 1, r.warnings
    assert not any("--direct" in w for w in r.warnings), r.warnings
    assert not any("O_DIRECT is not available" in w for w in r.warnings), r.warnings


# ------------------------------------------------------------------ 1. memory filesystems
@needs_shm
@pytest.mark.parametrize("direct", [None, True, False])
def test_randread_on_tmpfs_is_memory_whatever_o_direct_says(shm_dir, direct):
    r = disk.randread(shm_dir, size="4M", runtime=0.1, ramp=0, direct=direct)
    assert r.ok and r.labels["filesystem"] == "tmpfs"
    _memory_honest(r)
    assert "tmpfs" in next(w for w in r.warnings if w.startswith(RAM))
    assert _leftovers(shm_dir) == []


@needs_shm
def test_dd_preset_and_files_on_tmpfs_are_memory(shm_dir):
    r = disk.dd(shm_dir, size="4M", direct=False)
    _memory_honest(r)
    assert r.labels["write_cache"] == "memory"
    r = disk.preset(shm_dir, "cdm", size="4M", runtime=0.05, ramp=0)
    _memory_honest(r)
    assert all(row["labels"]["cache"] == "memory" for row in r.samples["rows"])
    data = os.path.join(shm_dir, "data.bin")
    with open(data, "wb") as f:
        f.write(os.urandom(1 << 20))
    _memory_honest(disk.randread(data, runtime=0.1, ramp=0, direct=False))
    tree = os.path.join(shm_dir, "tree")
    os.mkdir(tree)
    for i in range(5):
        with open(os.path.join(tree, f"f{i}"), "wb") as f:
            f.write(b"x" * 4096)
    for cold in (False, True):
        r = files.read_files(tree, sample=5, threads=2, cold=cold)
        _memory_honest(r)
        assert not any("--cold" in w or "page cache" in w for w in r.warnings if not w.startswith(RAM)), r.warnings
    assert _leftovers(shm_dir) == []


def test_memory_block_devices(tmp_path):
    from nbbench.probes.storage.target import memory_device

    assert "zram" in memory_device(topology.BlockDevice(name="zram0", disk="zram0"))
    assert "RAM disk" in memory_device(topology.BlockDevice(name="ram0", disk="ram0"))
    root = tmp_path / "box"
    (root / "proc/self").mkdir(parents=True)
    (root / "proc/self/mountinfo").write_text(
        "1 0 253:1 / / rw - ext4 /dev/vda1 rw\n2 1 0:25 / /dev/shm rw - tmpfs tmpfs rw\n"
    )
    for name, backing in (("loop0", "/dev/shm/disk.img"), ("loop1", "/srv/disk.img")):
        (root / f"sys/block/{name}/loop").mkdir(parents=True)
        (root / f"sys/block/{name}/loop/backing_file").write_text(backing + "\n")
    why = memory_device(topology.BlockDevice(name="loop0", disk="loop0"), root)
    assert why == "loop0 is a loop device over /dev/shm/disk.img, a file on tmpfs"
    assert memory_device(topology.BlockDevice(name="loop1", disk="loop1"), root) is None
    assert (
        memory_device(topology.BlockDevice(name="md0", disk="md0", physical=["nvme0n1", "zram1"]))
        == "zram1 is a compressed RAM disk (zram)"
    )
    assert memory_device(topology.BlockDevice(name="sda1", disk="sda", partition=True)) is None


# ------------------------------------------------------------------ 2. pseudo files, short reads
PSEUDO_PATHS = ["/proc", "/sys", "/proc/cpuinfo", "/sys/kernel/mm/transparent_hugepage/enabled", "/proc/self/status"]
PROBES = {
    "dd": lambda p: disk.dd(p, size="1M"),
    "randread": lambda p: disk.randread(p, runtime=0.1, ramp=0),
    "files": lambda p: files.read_files(p, sample=2),
    "preset": lambda p: disk.preset(p, size="4M", runtime=0.1, ramp=0),
}


def test_pseudo_filesystems_named_in_topology():
    for fs in (
        "proc",
        "sysfs",
        "cgroup",
        "cgroup2",
        "debugfs",
        "tracefs",
        "securityfs",
        "configfs",
        "bpf",
        "pstore",
        "efivarfs",
        "fusectl",
        "mqueue",
        "devpts",
        "binfmt_misc",
        "autofs",
        "nsfs",
    ):
        assert topology.is_pseudo(fs), fs
    for fs in ("ext4", "xfs", "tmpfs", "devtmpfs", "overlay", "nfs4"):
        assert not topology.is_pseudo(fs), fs


@pytest.mark.parametrize("probe", list(PROBES))
@pytest.mark.parametrize("path", PSEUDO_PATHS)
def test_pseudo_files_are_not_storage(probe, path):
    if not os.path.exists(path):
        pytest.skip(f"no {path}")
    with pytest.raises(ProbeError, match="a pseudo filesystem of the kernel — not storage") as ei:
        PROBES[probe](path)
    assert path in str(ei.value)


@pytest.mark.parametrize("fstype", ["cgroup2", "debugfs", "autofs"])
def test_every_pseudo_filesystem_is_refused_before_use(tmp_path, monkeypatch, fstype):
    from nbbench.probes.storage import target

    fake = topology.Mount(
        mount_id=9,
        parent_id=1,
        major=0,
        minor=99,
        fs_root="/",
        mount_point=str(tmp_path),
        options=["rw"],
        fstype=fstype,
        source="none",
        super_options=[],
    )
    monkeypatch.setattr(target.topology, "mount_of", lambda path, root="/": fake)
    for probe in PROBES.values():
        with pytest.raises(ProbeError, match="not storage"):
            probe(tmp_path)
    assert os.listdir(tmp_path) == []
    if fstype == "autofs":  # an automount point nothing is mounted on yet: say how to mount it
        with pytest.raises(ProbeError, match=r"automount point \(autofs\) with nothing mounted on it yet"):
            inspect(tmp_path)


def test_panel_path_check_refuses_pseudo_files():
    from nbbench.commands.storage.pathinfo import describe_path

    info = describe_path("/proc")
    assert not info.ok and "not storage" in info.error
    info = describe_path("/sys/kernel")
    assert not info.ok and "on sysfs (/sys)" in info.error


def test_a_block_device_under_dev_stays_a_target():
    for name in sorted(os.listdir("/sys/block")) if os.path.isdir("/sys/block") else []:
        dev = f"/dev/{name}"
        if os.path.exists(dev) and os.access(dev, os.R_OK) and not name.startswith(("loop", "ram", "zram")):
            try:
                t = inspect(dev)
            except ProbeError as exc:
                if "is empty" in str(exc) or "no permission" in str(exc):  # a container without the rights
                    continue
                raise
            assert t.kind == "block" and t.memory is None and t.filesystem == "devtmpfs"
            return
    pytest.skip("no readable block device here")


def _short_file(path, size):
    with open(path, "wb") as f:
        f.write(os.urandom(size))


def test_a_short_read_counts_its_real_bytes(tmp_path):
    f = tmp_path / "short.bin"
    _short_file(f, 3 * 4096 + 100)
    fd = os.open(f, os.O_RDONLY)
    try:
        out = sync.run_sync(JobSpec(fd=fd, op="read", pattern="seq", bs=4096, region=4 * 4096, total=4 * 4096))
        assert out.bytes == 3 * 4096 + 100 and out.ios == 4
        assert out.extra["short_io"] == {"offset": 3 * 4096, "bytes": 100}
        out = sync.run_threads(JobSpec(fd=fd, op="read", pattern="seq", bs=4096, qd=2, region=4 * 4096, total=4 * 4096))
        assert out.bytes == 3 * 4096 + 100 and out.ios == 3
        assert out.extra["short_io"] == {"offset": 3 * 4096, "bytes": 100}
    finally:
        os.close(fd)


@pytest.mark.parametrize("engine", ["builtin", pytest.param("dd", marks=needs_dd)])
def test_a_file_that_gives_less_than_a_block_fails_with_a_sentence(tmp_path, engine):
    f = tmp_path / "data.bin"
    _short_file(f, 1 << 20)
    t = inspect(f)  # 1 MiB when inspected ...
    os.truncate(f, 100)  # ... 100 bytes when read (a pseudo file's size means nothing either)
    r = disk.dd(t, bs="4k", size="1M", engine=engine)
    assert r.status == "failed", (r.status, r.reason)
    assert "not one full block was read" in r.reason
    assert f"{f} gave 100 bytes at offset 0 where a block of 4.00 KiB was asked" in r.reason
    assert r.metrics["read_total_bytes"] == 100
    assert not any("zeros" in w or "sparse" in w for w in r.warnings), r.warnings  # no data to judge


def test_randread_of_a_shrunk_file_fails_and_a_shorter_one_warns(tmp_path):
    f = tmp_path / "data.bin"
    _short_file(f, 1 << 20)
    t = inspect(f)
    os.truncate(f, 100)
    r = disk.randread(t, bs="4k", runtime=0.2, ramp=0)
    assert r.status == "failed" and "where a block of 4.00 KiB was asked" in r.reason, r.reason
    assert r.metrics["read_total_bytes"] < 4096
    assert not any("zeros" in w or "sparse" in w for w in r.warnings), r.warnings
    _short_file(f, 1 << 20)
    t = inspect(f)
    os.truncate(f, 3 * 4096 + 100)
    r = disk.dd(t, bs="4k", size="1M")
    assert r.ok and r.metrics["read_total_bytes"] == 3 * 4096 + 100
    assert any(w.startswith("the read stopped early: ") and "the 3 full blocks before it" in w for w in r.warnings)


class _ListingFailsPartWay:
    """os.scandir whose listing of a directory named 'bad' fails after its first entry (EACCES)."""

    real = staticmethod(os.scandir)

    def __init__(self, d):
        self.d, self.it, self.n = d, self.real(d), 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.it.close()

    def __iter__(self):
        return self

    def __next__(self):
        if os.path.basename(self.d) == "bad" and self.n >= 1:
            raise PermissionError(errno.EACCES, "Permission denied", self.d)
        self.n += 1
        return next(self.it)


def test_files_a_listing_failing_part_way_is_skipped_and_said(tmp_path, monkeypatch):
    for sub in ("good", "bad"):
        (tmp_path / sub).mkdir()
        for i in range(3):
            (tmp_path / sub / f"f{i}").write_bytes(b"x" * 1000)
    monkeypatch.setattr(files.os, "scandir", _ListingFailsPartWay)
    r = files.read_files(tmp_path, sample=10, threads=2)
    assert r.ok and r.metrics["tree_files_count"] == 4
    assert f"1 directory or entry could not be read (first: {tmp_path}/bad: Permission denied); skipped" in r.warnings


@pytest.fixture
def open_tree():
    """A directory that uid 65534 can reach (pytest's tmp_path is under a 0700 directory)."""
    d = tempfile.mkdtemp(prefix="nbbench-tree-", dir="/tmp")
    os.chmod(d, 0o755)
    yield d
    for root, dirs, _ in os.walk(d):
        for x in dirs:
            os.chmod(os.path.join(root, x), 0o755)
    shutil.rmtree(d, ignore_errors=True)


def _files(tree):
    try:
        r = files.read_files(tree, sample=10, threads=2)
        return {"status": r.status, "reason": r.reason, "warnings": r.warnings, "files": r.metrics.get("files_count")}
    except ProbeError as exc:
        return {"error": str(exc)}


def _files_without_privileges(tree):
    """files.read_files(tree) as uid/gid 65534 when root (root passes every permission check)."""
    if os.geteuid() != 0:
        return _files(tree)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        try:
            os.close(r)
            os.setgid(65534)
            os.setuid(65534)
            try:
                msg = _files(tree)
            except BaseException as exc:  # noqa: BLE001
                msg = {"other": f"{type(exc).__name__}: {exc}"}
            os.write(w, json.dumps(msg).encode())
        finally:
            os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 4096):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return json.loads(data)


def _tree(root, spec):
    for rel, mode in spec:
        p = os.path.join(root, rel)
        if rel.endswith("/"):
            os.makedirs(p, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "wb") as f:
                f.write(b"y" * 2048)
        os.chmod(p, mode)


def test_files_unreadable_directory_is_counted_and_named(open_tree):
    _tree(open_tree, [("ok/", 0o755), ("ok/a", 0o644), ("ok/b", 0o644), ("locked/", 0o755), ("locked/c", 0o644)])
    os.chmod(os.path.join(open_tree, "locked"), 0o000)
    d = _files_without_privileges(open_tree)
    assert d.get("status") == "ok" and d["files"] == 2, d
    assert (
        f"1 directory or entry could not be read (first: {open_tree}/locked: Permission denied); skipped"
        in d["warnings"]
    ), d


def test_files_where_nothing_can_be_read_fails_with_a_sentence(open_tree):
    _tree(open_tree, [("a", 0o000), ("b", 0o000)])
    d = _files_without_privileges(open_tree)
    assert d.get("status") == "failed", d
    assert (
        d["reason"].startswith("none of the 2 files sampled could be read (first: ")
        and "Permission denied" in d["reason"]
    ), d
    for name in ("a", "b"):
        os.unlink(os.path.join(open_tree, name))
    _tree(open_tree, [("locked/", 0o755), ("locked/c", 0o644)])
    os.chmod(os.path.join(open_tree, "locked"), 0o000)
    d = _files_without_privileges(open_tree)
    assert d.get("error") == (
        f"nothing under {open_tree} could be read: 1 directory or entry could not be read "
        f"(first: {open_tree}/locked: Permission denied), and no regular file was found "
        "in the rest"
    ), d


# ------------------------------------------------------------------ 3. no stale temp files
def test_temp_names_carry_the_host_and_the_pid(tmp_path, monkeypatch):
    with tempfiles.temp_file(tmp_path, "dd") as tf:
        name = os.path.basename(tf.path)
    host = tempfiles.host_tag()
    assert host and set(host) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
    assert name.startswith(f".nbbench-dd-{host}-{os.getpid()}-") and name.endswith(".tmp")
    monkeypatch.setattr(tempfiles.socket, "gethostname", lambda: "gpu node.example/7")
    assert tempfiles.host_tag() == "gpu_node_example_7"
    assert (
        tempfiles.temp_name("rand-read", pid=12, token="0badcafe")
        == ".nbbench-randread-gpu_node_example_7-12-0badcafe.tmp"
    )


def _children(pid):
    out = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(x) for x in f.read().split()]
        except OSError:
            pass
    return out


def _comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def _gone(pid, timeout=10):
    t0 = time.monotonic()
    while os.path.exists(f"/proc/{pid}") and _comm(pid) and time.monotonic() - t0 < timeout:
        time.sleep(0.02)


def _dead_pid():
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


_WRITER = (
    "import sys\nfrom nbbench.probes.storage import disk\n"
    "def prog(f, m):\n    print('STARTED', flush=True)\n"
    "disk.dd(sys.argv[1], bs='4k', size='1G', progress=prog, engine=sys.argv[2])\n"
)


def _start_writer(d, engine):
    proc = subprocess.Popen(
        [PY, "-c", _WRITER, str(d), engine], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    t0 = time.monotonic()
    while "STARTED" not in proc.stdout.readline():
        assert time.monotonic() - t0 < 30 and proc.poll() is None, "the probe did not start"
    return proc


def test_sigkill_mid_write_leaves_nothing_with_the_builtin_engine(tmp_path):
    proc = _start_writer(tmp_path, "builtin")
    proc.kill()  # SIGKILL: no handler, no atexit
    proc.communicate(timeout=30)
    assert _leftovers(tmp_path) == []


@needs_dd
def test_a_sigkilled_runs_file_is_removed_by_the_next_probe_and_said(tmp_path):
    host = tempfiles.host_tag()
    live = subprocess.Popen(["sleep", "60"])
    dead = _dead_pid()
    # its pid a live process's now (a container restarted) but unlocked: the lock, not the pid, decides
    reused = f".nbbench-dd-{host}-{live.pid}-0123abcd.tmp"
    keep = [
        f".nbbench-dd-another-host-{dead}-0123abcd.tmp",  # another host's (a shared filesystem)
        f".nbbench-dd-{host}-{dead}-0123abcd.tmp.bak",  # not exactly our name
        f".nbbench-dd-{host}x-{dead}-0123abcd.tmp",
    ]  # a host whose name starts like ours
    try:
        for name in keep:
            (tmp_path / name).write_bytes(b"k" * 10)
        os.symlink("/etc/hostname", tmp_path / f".nbbench-dd-{host}-{dead}-00000000.tmp")  # not a regular file
        keep.append(f".nbbench-dd-{host}-{dead}-00000000.tmp")
        proc = _start_writer(tmp_path, "dd")  # the dd engine writes its file by name
        dd_pids = [c for c in _children(proc.pid) if _comm(c) == "dd"]
        proc.send_signal(signal.SIGKILL)  # as the OOM killer would
        proc.communicate(timeout=30)
        for c in dd_pids:  # dd runs in its own session: stop it too
            try:
                os.kill(c, signal.SIGKILL)
            except ProcessLookupError:
                pass
            _gone(c)
        stale = [n for n in _leftovers(tmp_path) if n not in keep]
        assert len(stale) == 1 and stale[0].startswith(f".nbbench-dd-{host}-{proc.pid}-"), stale
        size = os.path.getsize(tmp_path / stale[0])
        assert size > 0
        (tmp_path / reused).write_bytes(b"k" * 10)  # made now: the writer's own sweep would have taken it
        size += 10
        r = disk.dd(tmp_path, size="1M")
        assert r.ok
        assert sorted(_leftovers(tmp_path)) == sorted(keep)
        from nbbench.units import format_bytes

        assert r.labels["stale_temp_removed"] == f"2 files, {format_bytes(size, binary=True)}"
        assert (
            f"removed 2 stale nbbench temporary files ({format_bytes(size, binary=True)}) from {tmp_path}: "
            "left by runs on this host whose process was killed"
        ) in r.warnings
        r = disk.randread(tmp_path, size="1M", runtime=0.1, ramp=0)  # nothing left to sweep: nothing said
        assert "stale_temp_removed" not in r.labels and not any("stale" in w for w in r.warnings)
    finally:
        live.kill()
        live.wait()


# ------------------------------------------------------------------ 4. files --cold as root
def test_files_cold_as_root_says_it_emptied_the_whole_page_cache(tmp_path, monkeypatch):
    from nbbench.probes._engines import cache

    for i in range(4):
        (tmp_path / f"f{i}").write_bytes(b"z" * 4096)
    monkeypatch.setattr(files.os, "geteuid", lambda: 0)
    monkeypatch.setattr(cache, "drop_all", lambda: (True, "/proc/sys/vm/drop_caches"))
    r = files.read_files(tmp_path, sample=4, threads=2, cold=True)
    assert r.ok and r.labels["cache"] == "buffered-cold"
    assert r.labels["cache_drop"] == "/proc/sys/vm/drop_caches: the whole machine's page cache"
    assert (
        "emptied the whole machine's page cache (/proc/sys/vm/drop_caches) — other workloads on this host "
        "now read from disk too"
    ) in r.warnings


@pytest.mark.parametrize("tool", ["dd", "fio"])
def test_an_external_engine_dies_with_a_sigkilled_probe(tmp_path, tool):
    """dd and fio run in their own session (a Ctrl-C meant for the notebook must not reach them),
    yet a probe killed outright must not leave them writing into a file nobody will remove: the
    kernel ends them (PR_SET_PDEATHSIG).  dd would also die of SIGPIPE at its next progress line;
    fio writes nothing until it ends, so it is the case that needs the kernel's help."""
    if shutil.which(tool) is None:
        pytest.skip(f"no {tool}")
    proc = _start_writer(tmp_path, tool)
    t0 = time.monotonic()
    pids = []
    while not pids and time.monotonic() - t0 < 10:
        pids = [c for c in _children(proc.pid) if _comm(c) == tool]
        time.sleep(0.02)
    assert pids, f"{tool} did not start"
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    try:
        for c in pids:  # nobody kills the tool here: it must end by itself
            _gone(c, timeout=10)
            assert not (os.path.exists(f"/proc/{c}") and _comm(c) == tool), f"{tool} outlived the killed probe"
    finally:
        for c in pids:
            if os.path.exists(f"/proc/{c}") and _comm(c) == tool:
                os.kill(c, signal.SIGKILL)
