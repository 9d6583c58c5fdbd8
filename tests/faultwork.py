"""Faults injected under a running nbbench, in a private mount namespace (run as
``unshare -m --propagation private python faultwork.py SCENARIO WORKDIR``: every mount made
here dies with the namespace, even when the test dies).  Prints one JSON line: what the probe
said and what was left.

* ``enospc``: a new ext4 (a sparse image on a loop device); ``dd`` writes 320 MiB there; when its
  temporary file appears, another process fills the filesystem (``posix_fallocate`` of what is
  free); then the filler's file is removed.
* ``rofs``: an ext4 image on a loop device; when ``dd`` has written 16 MiB the
  filesystem is aborted (``mount -o remount,abort``: ``errors=remount-ro`` makes it read-only
  at once, as a failing disk does, open files or not); then it is checked, mounted again and
  a second ``dd`` run sweeps what the first could not remove.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

PY = sys.executable


def _sh(*cmd):
    subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=60)


def _wait_for_writing(d, proc, timeout=60):
    """Until the probe has written 16 MiB into ``d``'s filesystem (True), or ended first (False).
    (Its temporary file may have no name to look for: the builtin engine unlinks it at once.)"""

    def free():
        st = os.statvfs(d)
        return st.f_bfree * st.f_frsize

    start, t0 = free(), time.monotonic()
    while time.monotonic() - t0 < timeout:
        if start - free() >= 16 << 20:
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.0005)
    return False


def _left(d):
    return sorted(n for n in os.listdir(d) if n.startswith(".nbbench-"))


def _dd(mnt, *extra):
    return subprocess.Popen(
        [PY, "-m", "nbbench", "dd", mnt, "--no-save", *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _keep(mnt):
    data = os.urandom(1 << 20)
    with open(os.path.join(mnt, "earlier.bin"), "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())  # saved before the fault (what a fault must not take)
    return data


def _kept(mnt, data):
    with open(os.path.join(mnt, "earlier.bin"), "rb") as f:
        return f.read() == data


def _ext4(work):
    """A new ext4 of 1.5 GiB (a sparse image: blocks cost disk only when written) mounted at WORK/mnt.
    nbbench keeps 1 GiB free: a smaller filesystem would refuse the probe before it starts."""
    img, mnt = os.path.join(work, "fs.img"), os.path.join(work, "mnt")
    os.makedirs(mnt, exist_ok=True)
    with open(img, "wb") as f:
        f.truncate(1536 << 20)
    _sh("mkfs.ext4", "-q", "-F", "-m", "0", img)
    _sh("mount", "-o", "loop,errors=remount-ro", img, mnt)
    return img, mnt


def enospc(work):
    img, mnt = _ext4(work)
    data = _keep(mnt)
    proc = _dd(mnt, "--size", "320M", "--buffered", "--mode", "write")
    seen = _wait_for_writing(mnt, proc)
    filled = 0
    if seen:  # the other process: takes all that is free (allocated, not written)
        fd = os.open(os.path.join(mnt, "filler.bin"), os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        for chunk in (64 << 20, 1 << 20, 4096):
            while True:
                try:
                    os.posix_fallocate(fd, filled, chunk)
                except OSError:
                    break
                filled += chunk
        os.close(fd)
    out, err = proc.communicate(timeout=120)
    os.unlink(os.path.join(mnt, "filler.bin")) if seen else None
    res = {
        "rc": proc.returncode,
        "stdout": out,
        "stderr": err,
        "injected": seen and filled > 0,
        "left": _left(mnt),
        "earlier_kept": _kept(mnt, data),
    }
    _sh("umount", mnt)
    return res


def rofs(work):
    img, mnt = _ext4(work)
    data = _keep(mnt)
    proc = _dd(mnt, "--size", "320M", "--mode", "write")
    seen = _wait_for_writing(mnt, proc)
    if seen:
        _sh("mount", "-o", "remount,abort", mnt)
    out, err = proc.communicate(timeout=120)
    left_ro = _left(mnt)
    _sh("umount", mnt)
    subprocess.run(["e2fsck", "-fy", img], capture_output=True, timeout=60)  # 1: errors corrected
    _sh("mount", "-o", "loop", img, mnt)
    again = _dd(mnt, "--size", "1M")
    out2, err2 = again.communicate(timeout=120)
    res = {
        "rc": proc.returncode,
        "stdout": out,
        "stderr": err,
        "injected": seen,
        "left_read_only": left_ro,
        "next_rc": again.returncode,
        "next_stdout": out2,
        "next_stderr": err2,
        "left": _left(mnt),
        "earlier_kept": _kept(mnt, data),
    }
    _sh("umount", mnt)
    return res


if __name__ == "__main__":
    scenario, work = sys.argv[1], sys.argv[2]
    print(json.dumps({"enospc": enospc, "rofs": rofs}[scenario](work)), flush=True)
