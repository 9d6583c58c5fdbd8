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
        os.symlink("/etc/hostname", os.path.join(td.path, "link"))   # removed, never followed
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
    code = ("import sys, time\nfrom nbbench import tempfiles\n"
            "td = tempfiles.create_dir(sys.argv[1], 'dcp')\n"
            "open(td.path + '/__0_0.distcp', 'wb').write(b'x' * 4096)\n"
            "print('STARTED', flush=True)\ntime.sleep(60)\n")
    proc = subprocess.Popen([PY, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert "STARTED" in proc.stdout.readline()
    assert len(os.listdir(tmp_path)) == 1
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGTERM and os.listdir(tmp_path) == []


def test_the_stale_sweep_removes_a_killed_runs_directory_only(tmp_path):
    host, dead = tempfiles.host_tag(), _dead_pid()
    live = subprocess.Popen(["sleep", "60"])
    try:
        stale = tmp_path / f".nbbench-dcpr0-{host}-{dead}-0123abcd.tmp"
        (stale / "sub").mkdir(parents=True)
        (stale / "sub" / "__0_0.distcp").write_bytes(b"d" * 5000)
        (stale / ".metadata").write_bytes(b"m" * 100)
        keep = [tmp_path / f".nbbench-dcpr0-{host}-{live.pid}-0123abcd.tmp",       # a live process's
                tmp_path / f".nbbench-dcpr0-another-host-{dead}-0123abcd.tmp"]      # another host's
        for k in keep:
            k.mkdir()
            (k / "f").write_bytes(b"k")
        target = tmp_path / "elsewhere"
        target.mkdir()
        (target / "precious").write_bytes(b"p")
        os.symlink(target, tmp_path / f".nbbench-dcpr0-{host}-{dead}-00000000.tmp")  # a symlink: never followed
        n, nbytes = tempsweep.sweep_stale(tmp_path)
        assert (n, nbytes) == (1, 5100)
        assert not stale.exists() and all((k / "f").exists() for k in keep)
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
