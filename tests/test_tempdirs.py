"""Temporary directories of the write probes (DCP writes a directory): new, registered, always removed,
and swept after a SIGKILL like the temp files."""

import os
import signal
import subprocess
import sys
import time

import pytest

from nbbench import tempfiles, tempsweep
from nbbench.results import ProbeError

PY = sys.executable


def _dead_pid():
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def test_a_temp_dir_is_new_named_like_the_files_and_removed_with_its_contents(tmp_path):
    with tempfiles.temp_dir(tmp_path, "dcp-r0") as td:
        name = os.path.basename(td.path)
        assert name.startswith(f".nbbench-dcpr0-{tempfiles.host_tag()}-{os.getpid()}-") and name.endswith(".tmp")
        assert os.path.isdir(td.path) and td.path in tempfiles.registered_dirs()
        os.makedirs(os.path.join(td.path, "sub"))
        (tmp_path / name / "sub" / "f").write_bytes(b"x" * 100)
        os.symlink("/etc/hostname", os.path.join(td.path, "link"))  # removed, never followed
    assert not os.path.lexists(td.path) and td.path not in tempfiles.registered_dirs()
    assert os.path.exists("/etc/hostname")
    assert os.listdir(tmp_path) == []


def test_a_temp_dir_is_removed_on_error_and_never_an_existing_one(tmp_path, monkeypatch):
    with pytest.raises(RuntimeError):
        with tempfiles.temp_dir(tmp_path, "dcp") as td:
            (tmp_path / os.path.basename(td.path) / "a").write_bytes(b"1")
            raise RuntimeError("boom")
    assert os.listdir(tmp_path) == []
    # the name is taken: mkdir fails and another name is drawn, the existing one left alone
    taken = tmp_path / tempfiles.temp_name("dcp", token="0badcafe")
    taken.mkdir()
    (taken / "keep").write_bytes(b"k")
    tokens = iter(["0badcafe", "0badcafe", "12345678"])
    real = tempfiles.temp_name
    monkeypatch.setattr(tempfiles, "temp_name", lambda what: real(what, token=next(tokens)))
    td = tempfiles.create_dir(tmp_path, "dcp")
    assert td.path.endswith("-12345678.tmp")
    td.remove()
    assert (taken / "keep").read_bytes() == b"k"
    os.chmod(tmp_path, 0o500)
    try:
        if os.geteuid() != 0:
            with pytest.raises(ProbeError, match="no permission to create a directory"):
                tempfiles.create_dir(tmp_path, "dcp")
    finally:
        os.chmod(tmp_path, 0o700)


def test_sigterm_removes_temp_dirs_too(tmp_path):
    code = (
        "import sys, time\nfrom nbbench import tempfiles\n"
        "td = tempfiles.create_dir(sys.argv[1], 'dcp')\n"
        "open(td.path + '/__0_0.distcp', 'wb').write(b'x' * 4096)\n"
        "print('STARTED', flush=True)\ntime.sleep(60)\n"
    )
    proc = subprocess.Popen([PY, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert "STARTED" in proc.stdout.readline()
    assert len(os.listdir(tmp_path)) == 1
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGTERM and os.listdir(tmp_path) == []


def test_the_stale_sweep_removes_a_killed_runs_directory_only(tmp_path):
    """Its lock is the proof: a leftover whose pid a live process has now (a container restarted) goes too."""
    host, dead = tempfiles.host_tag(), _dead_pid()
    live = subprocess.Popen(["sleep", "60"])
    try:
        stale = tmp_path / f".nbbench-dcpr0-{host}-{dead}-0123abcd.tmp"
        (stale / "sub").mkdir(parents=True)
        (stale / "sub" / "__0_0.distcp").write_bytes(b"d" * 5000)
        (stale / ".metadata").write_bytes(b"m" * 100)
        reused = tmp_path / f".nbbench-dcpr0-{host}-{live.pid}-0123abcd.tmp"  # its pid reused: unlocked
        (reused / "g").mkdir(parents=True)
        (reused / "g" / "x").write_bytes(b"r")
        keep = [tmp_path / f".nbbench-dcpr0-another-host-{dead}-0123abcd.tmp"]  # another host's
        for k in keep:
            k.mkdir()
            (k / "f").write_bytes(b"k")
        target = tmp_path / "elsewhere"
        target.mkdir()
        (target / "precious").write_bytes(b"p")
        os.symlink(target, tmp_path / f".nbbench-dcpr0-{host}-{dead}-00000000.tmp")  # a symlink: never followed
        assert tempsweep.sweep_stale(tmp_path) == (2, 5101, 0)
        assert not stale.exists() and not reused.exists() and all((k / "f").exists() for k in keep)
        assert (target / "precious").exists()
    finally:
        live.kill()
        live.wait()
        time.sleep(0)


def test_a_forked_child_terminated_leaves_the_parents_temp_files(tmp_path):
    """DataLoader's shutdown SIGTERMs a worker it forked: the parent's files are not the worker's."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent(f"""
        import os, signal, sys, time
        from nbbench import tempfiles
        tempfiles.install_handlers()
        td = tempfiles.create_dir({str(tmp_path)!r}, "cache")
        pid = os.fork()
        if pid == 0:
            time.sleep(30)
            os._exit(0)
        os.kill(pid, signal.SIGTERM)
        os.waitpid(pid, 0)
        print("exists" if os.path.isdir(td.path) else "gone")
        td.remove()
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.stdout.strip() == "exists", r.stderr
    assert [p for p in tmp_path.iterdir()] == []


def test_an_ignored_sighup_stays_ignored(tmp_path):
    """nohup: a SIGHUP the process ignores must not remove its temp files (or close their descriptors)."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent(f"""
        import os, signal
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        from nbbench import tempfiles
        tempfiles.install_handlers()
        tf = tempfiles.create({str(tmp_path)!r}, "dd")
        os.kill(os.getpid(), signal.SIGHUP)
        os.write(tf.fd, b"x")
        print("exists" if os.path.exists(tf.path) else "gone")
        tf.remove()
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.stdout.strip() == "exists", r.stderr


def test_a_live_creators_entries_are_kept_though_its_pid_looks_dead(tmp_path):
    """Another container's probe (another pid namespace): its pid means nothing here, its lock does."""
    import textwrap

    dead = _dead_pid()
    code = textwrap.dedent(f"""
        import functools, sys, time
        from nbbench import tempfiles
        tempfiles.temp_name = functools.partial(tempfiles.temp_name, pid={dead})
        tf = tempfiles.create({str(tmp_path)!r}, "probe")
        tf.close()                      # the probe's own descriptor closed (a dd engine): still locked
        td = tempfiles.create_dir({str(tmp_path)!r}, "dcpr0")
        open(td.path + "/f", "wb").write(b"x" * 10)
        print(tf.path, td.path, flush=True)
        time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        f, d = proc.stdout.readline().split()
        assert f"-{dead}-" in os.path.basename(f) and f"-{dead}-" in os.path.basename(d)
        assert tempsweep.sweep_stale(tmp_path) == (0, 0, 0)
        assert os.path.isfile(f) and os.path.isfile(os.path.join(d, "f"))
    finally:
        proc.kill()
        proc.wait()
    assert tempsweep.sweep_stale(tmp_path) == (2, 10, 0)  # SIGKILL: the kernel dropped the locks
    assert list(tmp_path.iterdir()) == []


def test_a_sweep_never_removes_an_entry_whose_lock_cannot_be_taken(tmp_path, monkeypatch):
    """No lock on this filesystem (or held): nothing proves the creator dead, the entry stays."""
    import fcntl

    from nbbench import templock

    stale = tmp_path / f".nbbench-probe-{tempfiles.host_tag()}-{_dead_pid()}-0123abcd.tmp"
    stale.write_bytes(b"s")

    def no_locks(fd, op):
        raise OSError(37, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    assert tempsweep.sweep_stale(tmp_path) == (0, 0, 1) and stale.exists()  # said: a leftover kept
    assert tempsweep.kept_note(1) == "1 leftover kept: their lock can't be taken"
    monkeypatch.undo()
    with open(stale, "rb+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # another open file description holding it: alive
        assert tempsweep.sweep_stale(tmp_path) == (0, 0, 0) and stale.exists()
    assert tempsweep.sweep_stale(tmp_path) == (1, 1, 0) and not stale.exists()
    assert templock.open_flags(False) & os.O_NOFOLLOW


def test_a_creation_swept_before_its_lock_draws_another_name(tmp_path, monkeypatch):
    """The moment between O_EXCL and the lock: a sweep that removed the entry there is noticed."""
    from nbbench import templock

    real, calls = templock.hold, []

    def swept_first(fd, path):
        if not calls:
            calls.append(path)
            os.unlink(path)  # a sweep took it before the creator's lock
        real(fd, path)

    monkeypatch.setattr(templock, "hold", swept_first)
    with tempfiles.temp_file(tmp_path) as tf:
        assert tf.path != calls[0] and os.path.isfile(tf.path)
        assert [p.name for p in tmp_path.iterdir()] == [os.path.basename(tf.path)]
    assert list(tmp_path.iterdir()) == [] and tf.path not in tempfiles._locks
