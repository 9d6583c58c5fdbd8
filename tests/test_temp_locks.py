"""The locks of the temporary files and directories (nbbench.templock): kept on the file an external tool
writes, taken where a directory's own descriptor cannot be locked (NFS), released on every path."""

import errno
import fcntl
import os
import shutil
import stat
import subprocess

import pytest

from nbbench import tempfiles, templock, tempsweep
from nbbench.results import ProbeError

needs_fio = pytest.mark.skipif(
    shutil.which("fio") is None and not os.environ.get("CI"), reason="fio not installed (apt-get install fio)"
)
MIB = 1 << 20


def _dead_pid():
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def _lock_fd(path):
    return tempfiles._locks[path]


def _fio_write(path, size):
    from nbbench.probes._engines.extern import run_fio

    return run_fio(
        path,
        op="write",
        pattern="seq",
        bs=64 << 10,
        qd=1,
        size=size,
        runtime=None,
        ramp=0,
        direct=False,
        ioengine="psync",
    )


@needs_fio
def test_fio_writes_a_presized_temp_file_in_place_and_an_empty_one_is_caught(tmp_path):
    with tempfiles.temp_file(tmp_path, "probe") as tf:
        ino = os.fstat(_lock_fd(tf.path)).st_ino
        tf.presize(MIB)
        assert os.fstat(_lock_fd(tf.path)).st_size == MIB
        assert _fio_write(tf.path, MIB).bytes == MIB
        assert os.lstat(tf.path).st_ino == ino
        tf.check_locked("fio")
    with tempfiles.temp_file(tmp_path, "probe") as tf:  # not presized: fio lays out a new file
        _fio_write(tf.path, MIB)
        assert not templock.same(_lock_fd(tf.path), tf.path)
        with pytest.raises(ProbeError, match="fio replaced the temporary file .* result dropped"):
            tf.check_locked("fio")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("engine", [pytest.param("fio", marks=needs_fio), "dd"])
def test_the_disk_probe_with_fio_or_dd_keeps_its_lock_on_the_file_it_measures(tmp_path, monkeypatch, engine):
    from nbbench.probes.storage import disk, io_job

    seen = []
    real = getattr(io_job, f"run_{engine}")

    def spy(*a, **kw):
        out = real(*a, **kw)
        path = a[0] if a else kw.get("dst") if kw.get("op") == "write" else kw.get("src", kw.get("dst"))
        seen.append(templock.same(_lock_fd(path), path))
        return out

    monkeypatch.setattr(io_job, f"run_{engine}", spy)
    res = disk.dd(str(tmp_path), bs="64K", size="1M", engine=engine, direct=False)
    assert res.status == "ok", res.error
    assert seen == [True, True]  # after the write and after the read
    assert list(tmp_path.iterdir()) == []


def test_a_tool_that_replaces_the_file_fails_the_run_in_one_line(tmp_path, monkeypatch):
    from nbbench.probes.storage import disk, io_job

    real = io_job.run_dd

    def replacing(**kw):
        if kw["op"] == "write":
            os.unlink(kw["dst"])
            open(kw["dst"], "xb").close()  # what fio does to a short file: a new inode under the name
        return real(**kw)

    monkeypatch.setattr(io_job, "run_dd", replacing)
    with pytest.raises(ProbeError, match=r"^dd replaced the temporary file \S+ with a new one .*result dropped$"):
        disk.dd(str(tmp_path), bs="64K", size="1M", engine="dd", direct=False)
    assert list(tmp_path.iterdir()) == []


def _no_dir_locks(monkeypatch):
    """NFS: flock on a directory's (read-only) descriptor gives EBADF."""
    real = fcntl.flock

    def flock(fd, op):
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(errno.EBADF, "Bad file descriptor")
        return real(fd, op)

    monkeypatch.setattr(fcntl, "flock", flock)


def test_a_directory_is_locked_through_its_lock_file_so_nfs_leftovers_are_swept(tmp_path, monkeypatch):
    from nbbench.probes.checkpoint.saveload import files_of

    _no_dir_locks(monkeypatch)
    td = tempfiles.create_dir(tmp_path, "dcpr0")
    lock = os.path.join(td.path, templock.DIR_LOCK)
    assert stat.S_ISREG(os.lstat(lock).st_mode) and templock.same(_lock_fd(td.path), lock)
    open(os.path.join(td.path, "__0_0.distcp"), "wb").write(b"d" * 10)
    assert files_of(td.path) == [os.path.join(td.path, "__0_0.distcp")]  # the checkpoint's bytes only
    assert tempsweep.sweep_stale(tmp_path) == (0, 0, 0) and os.path.isdir(td.path)  # ours, alive
    # its creator dies: the kernel drops the lock (here: its descriptor closed, the registry forgets it)
    tempfiles._dirs.pop(td.path)
    templock.release(tempfiles._locks, td.path)
    old = tmp_path / f".nbbench-dcpr0-{tempfiles.host_tag()}-{_dead_pid()}-0123abcd.tmp"
    old.mkdir()  # killed before its lock file was made: the sweep makes it, and takes its lock
    (old / "f").write_bytes(b"o" * 5)
    assert tempsweep.sweep_stale(tmp_path) == (2, 15, 0)
    assert list(tmp_path.iterdir()) == []


def test_a_directory_made_with_a_sweeps_lock_file_is_not_the_creators(tmp_path, monkeypatch):
    made = []
    real_open = os.open

    def open_after_sweep(path, flags, *a, **kw):
        if str(path).endswith(templock.DIR_LOCK) and flags & os.O_EXCL and not made:
            made.append(os.path.dirname(path))
            os.close(real_open(path, os.O_CREAT | os.O_WRONLY, 0o600))  # a sweep made it first
        return real_open(path, flags, *a, **kw)

    monkeypatch.setattr(os, "open", open_after_sweep)
    td = tempfiles.create_dir(tmp_path, "dcpr0")
    monkeypatch.undo()
    assert td.path != made[0] and os.path.isdir(made[0]) and made[0] not in tempfiles._locks
    shutil.rmtree(made[0])  # the sweep's to remove
    td.remove()
    assert list(tmp_path.iterdir()) == []


def test_our_own_live_entries_are_never_swept_though_the_pid_is_ours(tmp_path):
    """No pid filter before the lock now: flock conflicts between two open file descriptions of one process."""
    tf = tempfiles.create(tmp_path, "probe")
    tf.close()
    td = tempfiles.create_dir(tmp_path, "dcpr0")
    try:
        assert tempsweep.sweep_stale(tmp_path) == (0, 0, 0)
        assert os.path.isfile(tf.path) and os.path.isdir(td.path)
    finally:
        tf.remove()
        td.remove()
    assert list(tmp_path.iterdir()) == []


def test_a_leftover_kept_for_want_of_a_lock_is_counted_only_when_its_pid_is_gone(tmp_path, monkeypatch):
    host = tempfiles.host_tag()
    (tmp_path / f".nbbench-probe-{host}-{_dead_pid()}-0123abcd.tmp").write_bytes(b"s")
    (tmp_path / f".nbbench-probe-{host}-{os.getpid()}-0123abcd.tmp").write_bytes(b"s")  # pid alive: maybe live

    def no_locks(fd, op):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    assert tempsweep.sweep_stale(tmp_path) == (0, 0, 1) and len(list(tmp_path.iterdir())) == 2


def test_an_interrupt_after_the_lock_closes_its_descriptor(tmp_path):
    fds = []

    def make(p):
        os.mkdir(p, 0o700)
        tempfiles._locks[p] = fd = templock.lock_dir(p)
        fds.append((p, fd))
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        tempfiles._create_new(tmp_path, "probe", make, "directory", tempfiles._dirs, True)
    ((path, fd),) = fds
    assert path not in tempfiles._locks and path not in tempfiles._dirs and not os.path.exists(path)
    with pytest.raises(OSError):
        os.fstat(fd)


@pytest.mark.parametrize("is_dir", [False, True])
def test_a_creator_that_times_out_on_a_sweeps_lock_removes_its_own_entry(tmp_path, monkeypatch, is_dir):
    monkeypatch.setattr(templock, "WAIT_S", 0.05)
    path = str(tmp_path / "new")
    if is_dir:
        os.mkdir(path)
        lock = os.path.join(path, templock.DIR_LOCK)
        open(lock, "x").close()
        os.unlink(lock)  # lock_dir makes it; the "sweep" locks it as soon as it exists
        real_hold = templock.hold

        def held(fd, p):
            with open(p, "rb+") as sweep:
                fcntl.flock(sweep, fcntl.LOCK_EX)
                real_hold(fd, p)

        monkeypatch.setattr(templock, "hold", held)
        with pytest.raises(FileExistsError, match="held by a sweep"):
            templock.lock_dir(path)
    else:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        with open(path, "rb+") as sweep:
            fcntl.flock(sweep, fcntl.LOCK_EX)
            with pytest.raises(FileExistsError, match="held by a sweep"):
                templock.hold(fd, path)
        os.close(fd)
    assert list(tmp_path.iterdir()) == []


def test_the_probe_says_how_many_leftovers_it_kept_for_want_of_a_lock(tmp_path, monkeypatch):
    from nbbench.probes.storage import disk

    stale = tmp_path / f".nbbench-dd-{tempfiles.host_tag()}-{_dead_pid()}-0123abcd.tmp"
    stale.write_bytes(b"s" * 10)

    def no_locks(fd, op):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    r = disk.dd(str(tmp_path), bs="64K", size="1M", direct=False)
    assert r.ok and stale.exists() and "stale_temp_removed" not in r.labels
    assert f"stale nbbench temporary files in {tmp_path}: 1 leftover kept: their lock can't be taken" in r.warnings
