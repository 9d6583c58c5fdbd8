"""PATH semantics: every bad input gives a clear ProbeError fast, writes nothing, leaves nothing."""

import hashlib
import os
import socket
import stat
import threading
import time

import pytest

from nbbench.probes.storage import disk, files
from nbbench.probes.storage.target import check_free_space, inspect
from nbbench.results import ProbeError

PROBES = {
    "dd": lambda p: disk.dd(p, size="1M"),
    "randread": lambda p: disk.randread(p, runtime=0.1, ramp=0),
    "files": lambda p: files.read_files(p, sample=2),
    "preset": lambda p: disk.preset(p, size="4M", runtime=0.1, ramp=0),
}


def _within(fn, seconds=5.0):
    """Run fn in a thread; fail (not hang) if it does not return in time."""
    box = {}

    def run():
        try:
            box["v"] = fn()
        except BaseException as exc:  # noqa: BLE001
            box["e"] = exc

    t = threading.Thread(target=run, daemon=True)
    t0 = time.monotonic()
    t.start()
    t.join(seconds)
    assert not t.is_alive(), "the probe hung"
    return box, time.monotonic() - t0


@pytest.mark.parametrize("probe", list(PROBES))
def test_missing_path(tmp_path, probe):
    with pytest.raises(ProbeError, match="does not exist"):
        PROBES[probe](tmp_path / "nope")
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("probe", list(PROBES))
def test_fifo_refused_fast_never_opened(tmp_path, probe):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    box, took = _within(lambda: PROBES[probe](fifo))
    assert isinstance(box.get("e"), ProbeError), box
    assert "FIFO" in str(box["e"])
    assert took < 5.0
    assert os.listdir(tmp_path) == ["pipe"]


def test_socket_and_char_device_refused(tmp_path):
    sock_path = str(tmp_path / "s.sock")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(sock_path)
    try:
        for probe in PROBES.values():
            with pytest.raises(ProbeError, match="a socket"):
                probe(sock_path)
    finally:
        s.close()
    for probe in PROBES.values():
        with pytest.raises(ProbeError, match="character device"):
            probe("/dev/null")


def _digest(path):
    st = os.stat(path)
    return hashlib.sha256(open(path, "rb").read()).hexdigest(), st.st_mtime_ns, st.st_size


def test_write_probe_at_regular_file_refused_and_untouched(tmp_path):
    f = tmp_path / "data.bin"
    f.write_bytes(os.urandom(1 << 20))
    before = _digest(f)
    for mode in ("write", "both"):
        with pytest.raises(ProbeError, match="never writes to it"):
            disk.dd(f, size="1M", mode=mode)
    with pytest.raises(ProbeError, match="never writes"):
        disk.preset(f, size="1M", write=True)
    assert _digest(f) == before
    assert sorted(os.listdir(tmp_path)) == ["data.bin"]


def _a_block_device():
    for name in sorted(os.listdir("/sys/block")) if os.path.isdir("/sys/block") else []:
        p = f"/dev/{name}"
        try:
            sectors = int(open(f"/sys/block/{name}/size").read())
        except (OSError, ValueError):
            sectors = 0
        if sectors and os.path.exists(p) and stat.S_ISBLK(os.stat(p).st_mode):
            return p
    return None


def _readable(p):
    try:
        os.close(os.open(p, os.O_RDONLY | os.O_NONBLOCK))
        return True
    except OSError:
        return False


def test_write_probe_at_block_device_refused():
    dev = _a_block_device()
    if dev is None:
        pytest.skip("no readable block device here")
    with pytest.raises(ProbeError, match="a block device: nbbench never writes"):
        disk.dd(dev, size="1M", mode="write")
    if _readable(dev):
        t = inspect(dev)
        assert t.kind == "block" and t.size > 0
    else:  # e.g. a container's device cgroup: still a clear sentence
        with pytest.raises(ProbeError, match="no permission to read"):
            inspect(dev)


def test_directory_needed_for_files(tmp_path):
    f = tmp_path / "one"
    f.write_bytes(b"x")
    with pytest.raises(ProbeError, match="not a directory"):
        files.read_files(f)


def _as_nobody(fn):
    """Run fn() in a forked child as uid/gid 65534 (root passes permission checks); its output."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        try:
            os.close(r)
            os.setgid(65534)
            os.setuid(65534)
            try:
                fn()
                msg = "NO ERROR"
            except ProbeError as e:
                msg = str(e)
            except BaseException as e:  # noqa: BLE001
                msg = f"OTHER {type(e).__name__}: {e}"
            os.write(w, msg.encode())
        finally:
            os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 4096):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return data.decode()


def test_no_permission(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "f").write_bytes(b"x" * 4096)
    os.chmod(locked / "f", 0o600)
    os.chmod(locked, 0o755)
    os.chmod(tmp_path, 0o755)
    cases = [
        lambda: disk.dd(locked, size="1M"),  # cannot create a file there
        lambda: disk.randread(locked / "f", runtime=0.1),  # cannot read the file
        lambda: disk.dd(locked / "f", size="4k"),
    ]
    if os.geteuid() == 0:
        outs = [_as_nobody(fn) for fn in cases]
    else:
        os.chmod(locked, 0o555)
        os.chmod(locked / "f", 0o000)
        outs = []
        for fn in cases:
            try:
                fn()
                outs.append("NO ERROR")
            except ProbeError as e:
                outs.append(str(e))
        os.chmod(locked, 0o755)
    assert all("no permission" in o for o in outs), outs
    assert sorted(os.listdir(locked)) == ["f"]
    os.chmod(locked, 0o700)
    if os.geteuid() == 0:
        out = _as_nobody(lambda: files.read_files(locked))
        assert "no permission" in out, out


def test_free_space_refusal_gives_both_numbers(tmp_path):
    with pytest.raises(ProbeError) as ei:
        disk.dd(tmp_path, size="200T")
    msg = str(ei.value)
    assert "would leave" in msg and "5 %" in msg and "1 GiB" in msg
    assert os.listdir(tmp_path) == []
    with pytest.raises(ProbeError, match="not enough free space"):
        disk.randread(tmp_path, size="200T", runtime=0.1)


def test_free_space_rule_edges(tmp_path, monkeypatch):
    class V:
        f_frsize = 4096
        f_blocks = (100 << 30) // 4096  # 100 GiB disk
        f_bavail = (10 << 30) // 4096  # 10 GiB free

    monkeypatch.setattr(os, "statvfs", lambda p: V)
    check_free_space(tmp_path, 4 << 30)  # leaves 6 GiB >= max(5 GiB, 1 GiB)
    with pytest.raises(ProbeError, match="5 %"):
        check_free_space(tmp_path, 6 << 30)  # leaves 4 GiB < 5 % of 100 GiB


def test_bad_values(tmp_path):
    with pytest.raises(ProbeError, match="multiple of 512"):
        disk.dd(tmp_path, bs=1000, size="1M")
    with pytest.raises(ProbeError, match="engine"):
        disk.dd(tmp_path, size="1M", engine="nope")
    with pytest.raises(ProbeError, match="sequential"):
        disk.randread(tmp_path, engine="dd")
    with pytest.raises(ProbeError, match="preset"):
        disk.preset(tmp_path, preset="nope")
    with pytest.raises(ProbeError, match="size"):
        disk.dd(tmp_path, size="12 parsecs")
    assert os.listdir(tmp_path) == []


# ------------------------------------------------------------ one target per probe
def _count_looks(monkeypatch):
    """Count how often a path is inspected (stat-ed and looked up in the mount table)."""
    from nbbench import topology
    from nbbench.probes.storage import target as target_mod

    seen = {"stat": 0, "mounts": 0}
    stat_within, mount_of = target_mod._stat_with_timeout, topology.mount_of

    def counting_stat(p, *a, **k):
        seen["stat"] += 1
        return stat_within(p, *a, **k)

    def counting_mounts(p, *a, **k):
        seen["mounts"] += 1
        return mount_of(p, *a, **k)

    monkeypatch.setattr(target_mod, "_stat_with_timeout", counting_stat)
    monkeypatch.setattr(topology, "mount_of", counting_mounts)
    return seen


def test_a_probe_inspects_its_path_once(tmp_path, monkeypatch):
    seen = _count_looks(monkeypatch)
    res = disk.dd(tmp_path, size="1M", bs="64k")
    assert res.status == "ok" and seen == {"stat": 1, "mounts": 1}
    assert res.labels["path"] == str(tmp_path) and res.labels["target"] == "dir"


def test_a_command_inspects_the_path_once_before_the_probe(tmp_path, monkeypatch, capsys):
    from nbbench import cli

    f = tmp_path / "data.bin"
    f.write_bytes(os.urandom(1 << 20))
    seen = _count_looks(monkeypatch)
    assert cli.main(["randread", str(f), "--runtime", "0.1", "--ramp", "0", "--json", "--no-save"]) == 0
    assert seen == {"stat": 1, "mounts": 1}
    seen.update(stat=0, mounts=0)
    assert cli.main(["dd", str(tmp_path / "nope")]) == 1
    assert "does not exist" in capsys.readouterr().err and seen["stat"] == 1


def test_a_target_made_before_is_checked_for_the_probes_use(tmp_path):
    from nbbench.probes.storage.target import StorageTarget

    f = tmp_path / "data.bin"
    f.write_bytes(os.urandom(1 << 20))
    t = inspect(f, write=False, read=False)  # as a front end makes it, before the progress bar
    assert isinstance(t, StorageTarget) and (t.kind, t.size) == ("file", 1 << 20)
    with pytest.raises(ProbeError, match="never writes to it"):
        disk.dd(t, size="1M", mode="write")
    with pytest.raises(ProbeError, match="not a directory"):
        files.read_files(t)
    res = disk.randread(t, runtime=0.1, ramp=0, bs="4k")
    assert res.params["path"] == str(f) and res.params["size"] == 1 << 20
    assert res.labels["path"] == str(f) and res.labels["target"] == "file"
    assert sorted(os.listdir(tmp_path)) == ["data.bin"]


def test_target_rules_whole_blocks_region_and_room(tmp_path, monkeypatch):
    f = tmp_path / "data.bin"
    f.write_bytes(b"x" * 10_000)
    t = inspect(f)
    assert t.whole_blocks(1 << 30, 4096, "size must be") == 8192  # cut to the file, then to blocks
    assert t.read_region(None, 1 << 30) == 10_000 and t.read_region(4096, 1 << 30) == 4096
    with pytest.raises(ProbeError, match="size must be at least one block of 16.0 KiB"):
        t.whole_blocks(1 << 30, 16384, "size must be")
    d = inspect(tmp_path, write=True)
    assert d.read_region(None, 1 << 30) == 1 << 30
    assert d.whole_blocks(10_000, 4096, "size must be") == 8192

    class V:
        f_frsize = 4096
        f_blocks = (100 << 30) // 4096  # 100 GiB disk
        f_bavail = (10 << 30) // 4096  # 10 GiB free

    monkeypatch.setattr(os, "statvfs", lambda p: V)
    t.ensure_room(1 << 40)  # a file is never written: nothing to check
    d.ensure_room(4 << 30)
    with pytest.raises(ProbeError, match="writing 6.00 GiB would leave 4.00 GiB free"):
        d.whole_blocks(6 << 30, 4096, "size must be")


def test_o_direct_decision_is_the_targets(tmp_path):
    from nbbench.probes.storage.target import open_read

    f = tmp_path / "data.bin"
    f.write_bytes(os.urandom(1 << 16))
    t = inspect(f)
    fd = open_read(str(f))
    try:
        assert t.decide_direct(fd, write=False, requested=False) is None
        assert (t.direct, t.direct_fallback) == (False, None)
        warning = t.decide_direct(fd, write=False, requested=None)
    finally:
        os.close(fd)
    if t.direct:
        assert warning is None and t.direct_fallback is None
    else:
        assert "O_DIRECT is not available on" in warning and t.direct_fallback in warning
    res = disk.randread(t, runtime=0.1, ramp=0, direct=False)
    assert res.labels["cache"] != "direct" and "direct_fallback" not in res.labels and t.direct is False
