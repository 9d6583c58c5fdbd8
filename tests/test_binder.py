"""The binder/ configuration is consistent: what it names exists, its scripts can run."""

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BINDER = ROOT / "binder"


def test_scripts_are_executable_and_start_execs():
    for name in ("postBuild", "start"):
        p = BINDER / name
        assert p.exists() and os.access(p, os.X_OK), f"{name} must be executable"
        assert p.read_text().startswith("#!"), f"{name} needs a shebang"
    lines = [ln.strip() for ln in (BINDER / "start").read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    assert lines[-1] == 'exec "$@"'


def test_requirements_bring_a_cpu_torch_in_the_projects_range():
    text = (BINDER / "requirements.txt").read_text()
    assert "download.pytorch.org/whl/cpu" in text
    spec = re.search(r"^torch\s*([<>=!~].*)$", text, re.M).group(1)
    from packaging.specifiers import SpecifierSet

    binder, project = SpecifierSet(spec.replace(" ", "")), SpecifierSet(">=2.7,<3")
    for v in ("2.7.0", "2.13.0"):
        assert v in binder and v in project


def test_postbuild_installs_this_repository():
    text = (BINDER / "postBuild").read_text()
    assert "pip install" in text and "-e '.[test]'" in text
    assert (ROOT / "pyproject.toml").exists()


def test_named_notebook_and_runtime_exist():
    readme = (BINDER / "README.md").read_text()
    for nb in re.findall(r"notebooks(?:/|%2F)([\w.-]+\.ipynb)", readme):
        assert (ROOT / "notebooks" / nb).exists(), nb
    assert re.fullmatch(r"python-3\.\d+\s*", (BINDER / "runtime.txt").read_text())


def test_pyproject_torch_extra_admits_both_torches():
    import tomllib
    from packaging.requirements import Requirement

    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    torch_req = Requirement(data["project"]["optional-dependencies"]["torch"][0])
    for v in ("2.7.0", "2.7.1", "2.13.0"):
        assert torch_req.specifier.contains(v, prereleases=False)
    deps = " ".join(data["project"]["dependencies"])
    assert "torch" not in deps  # torch is never pulled in by a bare requirement
    assert data["project"]["scripts"]["nbbench"] == "nbbench.cli:main"
