"""Running nbbench as real processes for the many-rank tests: an environment without a
launcher's variables (so the test's own process is never taken for a rank) and the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PY = sys.executable
ROOT = Path(__file__).resolve().parents[1]


def clean_env(**extra) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "SLURM_STEP_ID", "NBBENCH_HOSTNAME"):
        env.pop(k, None)
    env.update(extra)
    return env


def run_nbbench(*args, timeout: float = 180, env: dict | None = None, **kw):
    """``nbbench ARGS`` as a process; ``env``: variables set on top of :func:`clean_env`'s."""
    return subprocess.run(
        [PY, "-m", "nbbench", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        env=clean_env(**(env or {})),
        **kw,
    )


def short_tmpdir(tmp_path: Path) -> Path:
    """``tmp_path / "tmp"``: a link to a new directory under /tmp with a short name, for a run's TMPDIR.  pytest's
    own paths (deeper under xdist) can be too long for the Unix socket a DataLoader worker hands its batches back
    through (nbbench refuses them: probes.pipeline.dataloader.check_worker_tempdir).  Removed at exit."""
    import atexit
    import shutil
    import tempfile

    link = tmp_path / "tmp"
    if not link.exists():
        short = tempfile.mkdtemp(prefix="nbt-", dir="/tmp")
        atexit.register(shutil.rmtree, short, True)
        link.symlink_to(short)
    return link
