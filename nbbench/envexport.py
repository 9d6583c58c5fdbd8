"""Exact-version exports of this environment: what a colleague installs to run as it ran here.

:func:`export_requirements` writes ``name==version`` for every installed distribution (pip), those
installed from a local checkout as comments; :func:`export_conda` is ``conda list --explicit`` of the
running conda environment (:func:`in_conda`).  An export that cannot be made here raises
:class:`ExportError` with the reason.  The package list itself is :func:`nbbench.env.packages`.
"""

from __future__ import annotations

import json
import os
import platform
import socket
import sys
from pathlib import Path

from .env import packages

__all__ = ["export_requirements", "export_conda", "in_conda", "ExportError"]


class ExportError(Exception):
    """An export that cannot be made here; the message says why."""


def _local_installs() -> set[str]:
    """Normalised names of distributions installed from a local checkout (pip -e, file: URLs)."""
    from importlib import metadata

    out = set()
    for dist in metadata.distributions():
        try:
            text = dist.read_text("direct_url.json")
            name = dist.metadata.get("Name")
        except Exception:  # noqa: BLE001
            continue
        if not text or not name:
            continue
        try:
            info = json.loads(text)
        except ValueError:
            continue
        if info.get("dir_info", {}).get("editable") or info.get("url", "").startswith("file:"):
            out.add(name.lower().replace("_", "-").replace(".", "-"))
    return out


def export_requirements(path: str | os.PathLike | None = None) -> str:
    """An exact ``name==version`` list of this environment (pip-installable).

    Packages installed from a local checkout are written as comments, since their
    version alone cannot be installed elsewhere.  Returns the text; writes it to
    ``path`` when given.
    """
    lines = [
        f"# exact package versions of {socket.gethostname()}, Python {platform.python_version()}",
        "# install with: pip install -r THIS_FILE",
    ]
    torch_local = None
    local = _local_installs()
    for name, version in packages():
        if name.lower().replace("_", "-").replace(".", "-") in local:
            lines.append(f"# {name}=={version}  (installed from a local checkout)")
            continue
        if name.lower() == "torch" and "+" in version:
            torch_local = version
        lines.append(f"{name}=={version}")
    if torch_local:
        lines.insert(
            2,
            f"# torch {torch_local} is a local build tag: install it from the index it came from, "
            "e.g. --index-url https://download.pytorch.org/whl/<cuda tag>",
        )
    text = "\n".join(lines) + "\n"
    if path is not None:
        Path(path).write_text(text)
    return text


def in_conda() -> str | None:
    """The conda environment's prefix when running in one, else None."""
    prefix = os.environ.get("CONDA_PREFIX")
    if prefix and (Path(prefix) / "conda-meta").is_dir():
        return prefix
    if (Path(sys.prefix) / "conda-meta").is_dir():
        return sys.prefix
    return None


def export_conda(path: str | os.PathLike | None = None, runner=None) -> str:
    """``conda list --explicit`` of the running environment; ExportError outside conda."""
    prefix = in_conda()
    if prefix is None:
        raise ExportError(
            "not running inside a conda environment (no conda-meta/ under sys.prefix and no "
            "CONDA_PREFIX): use --export requirements for this pip environment"
        )
    import shutil
    import subprocess

    exe = os.environ.get("CONDA_EXE") or shutil.which("conda") or shutil.which("mamba")
    if exe is None:
        raise ExportError(f"{prefix} is a conda environment but no conda/mamba executable is on PATH")
    run = runner or subprocess.run
    proc = run([exe, "list", "--explicit", "--prefix", prefix], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise ExportError(f"conda list --explicit failed: {proc.stderr.strip()[:300]}")
    if path is not None:
        Path(path).write_text(proc.stdout)
    return proc.stdout
