"""The set-up behind `make lab` / `make test`: reuse an image's torch, else install the pinned one."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tools" / "setup-venv.sh"
BASE_PYTHON = getattr(sys, "_base_executable", None) or sys.executable


def run_setup(tmp_path, extra_env):
    venv = tmp_path / "venv"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(extra_env, NBBENCH_SETUP_DRY_RUN="1")
    out = subprocess.run(
        ["bash", str(SCRIPT), BASE_PYTHON, str(venv), "torch==2.13.0"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, out.stderr
    cfg = (venv / "pyvenv.cfg").read_text()
    return out.stdout, "include-system-site-packages = true" in cfg


def test_an_image_with_torch_is_reused_never_reinstalled(tmp_path):
    fake = tmp_path / "site"
    (fake / "torch").mkdir(parents=True)
    (fake / "torch" / "__init__.py").write_text("__version__ = '2.7.1+cu126'\n")
    out, system_site = run_setup(tmp_path, {"PYTHONPATH": str(fake)})
    assert system_site, "the venv must see the image's packages"
    assert "already has torch 2.7.1+cu126" in out and "not reinstalling" in out
    assert "torch==" not in out
    assert "would run:" in out and "-e .[test]" in out


def test_without_torch_the_pinned_build_is_installed_first(tmp_path):
    probe = subprocess.run([BASE_PYTHON, "-c", "import torch"], capture_output=True)
    if probe.returncode == 0:
        import pytest

        pytest.skip("the base python here has torch")
    out, system_site = run_setup(tmp_path, {})
    assert not system_site
    lines = [ln for ln in out.splitlines() if ln.startswith("would run:")]
    assert "pip install -q torch==2.13.0" in lines[0]
    assert "-e .[test]" in lines[1]
