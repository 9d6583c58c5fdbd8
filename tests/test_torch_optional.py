"""torch is optional (``pip install .`` does not install it): without it ``loader`` (on a
folder), ``sweep`` and ``feed`` end in one sentence saying how to install it — the CLI
with exit code 1, the magic with a one-line UsageError, Python with a ProbeError — and a
sweep fails once, not per configuration.  The CLI runs in a subprocess whose ``import
torch`` fails (a fake ``torch`` package first on PYTHONPATH); in process, sys.modules is
patched."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nbbench.results import ProbeError

ROOT = Path(__file__).resolve().parents[1]
INSTALL = "pip install 'nbbench[torch]'"


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    from nbbench.datasets import make_image_folder

    return make_image_folder(tmp_path_factory.mktemp("notorch") / "ds", files=24, size="2k", classes=2, jpeg=True)


@pytest.fixture
def fake_torch_env(tmp_path):
    """An environment whose ``import torch`` raises ModuleNotFoundError, as where torch is not installed."""
    pkg = tmp_path / "fake" / "torch"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'torch'\")\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path / "fake"), str(ROOT)]))
    probe = subprocess.run([sys.executable, "-c", "import torch"], env=env, capture_output=True, text=True)
    assert probe.returncode == 1 and "No module named 'torch'" in probe.stderr
    return env


@pytest.mark.parametrize(
    "argv",
    [
        ["loader", "{tree}"],
        ["sweep", "{tree}", "--workers", "0,1"],
        ["feed", "{tree}", "--batch-size", "4"],
        ["checkpoint", "{tree}"],
    ],
)
def test_cli_without_torch_says_one_line_and_exits_1(argv, tree, fake_torch_env):
    argv = [a.format(tree=tree) for a in argv]
    p = subprocess.run(
        [sys.executable, "-m", "nbbench", *argv, "--no-save"],
        env=fake_torch_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 1, p.stderr
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith(f"nbbench {argv[0]}: ") and "needs PyTorch" in lines[0]
    assert INSTALL in lines[0] and "PyTorch image" in lines[0]
    assert "Traceback" not in p.stderr and "ModuleNotFoundError" not in p.stderr + p.stdout
    assert p.stdout.strip() == ""  # no table of failed configurations, no bar


@pytest.fixture
def no_torch(monkeypatch):
    """``import torch`` (and every torch.* submodule) fails in this process."""
    for name in [m for m in sys.modules if m == "torch" or m.startswith("torch.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "torch", None)


class Items:
    def __len__(self):
        return 100

    def __getitem__(self, i):
        return b"x" * 10


def test_python_api_without_torch_raises_one_probe_error(no_torch, tree):
    from nbbench.probes.pipeline.dataloader import make_loader
    from nbbench.probes.pipeline.feed import feed
    from nbbench.probes.pipeline.sweep import sweep

    seen = []
    with pytest.raises(ProbeError, match=r"^sweep needs PyTorch .*pip install 'nbbench\[torch\]'") as e:
        sweep(Items(), num_workers=[0, 1, 2], batch_size=[4, 8], duration=0.1, on_config=seen.append)
    assert seen == [] and "\n" not in str(e.value)  # once, before any configuration
    with pytest.raises(ProbeError, match=r"^feed needs PyTorch .*inside a PyTorch image it is already there"):
        feed(tree, batch_size=4)
    with pytest.raises(ProbeError, match=r"DataLoader needs PyTorch"):
        make_loader(Items(), 4, 0)


def test_loader_on_plain_batches_needs_no_torch(no_torch):
    import numpy as np

    from nbbench.probes.pipeline.loader import bench_loader

    res = bench_loader([np.zeros((4, 3))] * 20, warmup=1)
    assert res.ok and res.metrics["samples_count"] == 4 * 18


def test_a_torch_that_fails_to_import_is_told_apart(monkeypatch):
    import importlib

    from nbbench.probes.pipeline.dataloader import require_torch

    real = importlib.import_module

    def broken(name, *a, **k):
        if name.startswith("torch"):
            raise ImportError("libcudart.so.12: cannot open shared object file")
        return real(name, *a, **k)

    monkeypatch.setattr(importlib, "import_module", broken)
    with pytest.raises(ProbeError, match=r"installed but does not import \(libcudart"):
        require_torch("feed")


def test_magic_without_torch_is_a_one_line_usage_error(no_torch, tree, ipshell):
    import numpy as np
    from IPython.core.error import UsageError

    ipshell.user_ns["ds"] = Items()
    ipshell.user_ns["batches"] = [np.zeros((4, 3))] * 20
    for line, what in (
        (f"loader {tree}", "loader on a folder"),
        ("sweep ds --workers 0,1", "sweep"),
        (f"feed {tree}", "feed"),
    ):
        with pytest.raises(UsageError) as e:
            ipshell.run_line_magic("iobench", f"{line} -q --no-save")
        msg = str(e.value)
        assert msg.startswith(f"{what} needs PyTorch") and INSTALL in msg and "\n" not in msg
    r = ipshell.run_line_magic("iobench", "loader batches --steps 5 -o -q --no-save")
    assert r.ok and r.metrics["steps_count"] == 5


def test_torch_is_an_extra_and_the_readme_says_how_to_install():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not any(d.split(">")[0].split("=")[0].strip() == "torch" for d in project["dependencies"])
    extras = project["optional-dependencies"]
    assert extras["torch"] == ["torch>=2.7,<3"]
    assert {e.split(">")[0] for e in extras["lab"]} >= {"jupyterlab", "ipykernel", "ipywidgets"}
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Install into your own environment", 1)[1].split("\n## ", 1)[0]
    for needed in (  # nbbench is on no package index yet: from a checkout or a built wheel
        "pip install '.[torch,lab]'",
        "pip install '.[lab]'",
        "dist/nbbench-",
        "`test`",
        "PIP_EXTRA_INDEX_URL=",  # a CPU-only torch, not the multi-GB CUDA build
        "the `torch` extra",
        "`loader`",
        "`sweep`",
        "`feed`",
        "`gpu`'s benchmark",
        "exit code 1",
    ):
        assert needed in section, needed


def test_shards_needs_no_torch(tmp_path, fake_torch_env):
    from nbbench.datasets import make_tar_shards

    d = make_tar_shards(tmp_path / "wds", shards=2, shard_size="64k", size="8k")
    p = subprocess.run(
        [sys.executable, "-m", "nbbench", "shards", str(d), "--json", "--no-save"],
        env=fake_torch_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    import json

    m = json.loads(p.stdout)["metrics"]
    assert m["read_bytes_per_s"] > 0 and m["samples_count"] > 0
