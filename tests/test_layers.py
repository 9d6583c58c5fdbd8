"""The package's layers, bottom up, and the rule that nothing imports a layer above it.

Every module of ``nbbench/`` is read as an AST; every import in it counts — at the
top, inside functions, under ``if TYPE_CHECKING`` — and so does a string handed to
``importlib.import_module``.  An import of a higher layer fails this test unless
it is on :data:`ALLOWED`, each entry with its reason.  The same walk checks which
layers may import matplotlib, ipywidgets and IPython, and the size of modules.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "nbbench"

#: bottom first; a module belongs to the layer of the longest prefix that names it
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    (
        "core",
        (
            "nbbench.units",
            "nbbench.stats",
            "nbbench.results",
            "nbbench.store",
            "nbbench.env",
            "nbbench.topology",
            "nbbench.compare",
            "nbbench.accelerators",
            "nbbench.nvml",
            "nbbench.progress",
            "nbbench.runner",
            "nbbench.tempfiles",
            "nbbench.version",
            "nbbench.envexport",
            "nbbench.tempsweep",
            "nbbench.templock",
            "nbbench.sigchain",
        ),
    ),
    ("measure", ("nbbench.probes", "nbbench.monitor", "nbbench.doctor", "nbbench.datasets", "nbbench.testing")),
    ("ranks", ("nbbench.ranks",)),
    ("plots", ("nbbench.plots",)),
    ("ui", ("nbbench.ui",)),
    ("report", ("nbbench.report", "nbbench.exporters")),
    ("commands", ("nbbench.commands",)),
    ("front", ("nbbench", "nbbench._moved", "nbbench.__main__", "nbbench.magics", "nbbench.cli", "nbbench.panel")),
]

#: (importing module prefix, imported module prefix): why this upward import is fine.
#: Only conveniences that draw a result — as pandas' ``DataFrame.plot`` — may stand here.
ALLOWED: dict[tuple[str, str], str] = {
    ("nbbench.results", "nbbench.plots"): "a result's .plot() / .figure() / .png() draws it (pandas-style convenience)",
    ("nbbench.compare", "nbbench.plots"): "Comparison.figure() draws the comparison's bar chart (the same convenience)",
}

#: third-party packages and the layers that may import them
RESTRICTED = {
    "matplotlib": {"plots", "ui"},
    "ipywidgets": {"ui", "front"},
    "IPython": {"ui", "front"},
}

MAX_LINES = 450
MAX_LINES_EXCEPTIONS: dict[str, int] = {}


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


MODULES = modules()


def layer_of(name: str) -> int | None:
    best, best_len = None, -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for pre in prefixes:
            # "nbbench" alone is the package's own __init__ (the facade), not everything in it
            matches = name == pre or (pre != "nbbench" and name.startswith(pre + "."))
            if matches and len(pre) > best_len:
                best, best_len = i, len(pre)
    return best


def _resolve(mod: str, node: ast.ImportFrom, is_pkg: bool) -> str:
    if node.level == 0:
        return node.module or ""
    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(mod: str, path: Path) -> list[tuple[str, int]]:
    """(imported module, line) for every import in the file, anywhere in it."""
    tree = ast.parse(path.read_text(), str(path))
    is_pkg = path.name == "__init__.py"
    out: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(mod, node, is_pkg)
            for a in node.names:
                sub = f"{target}.{a.name}"
                # `from . import commands` imports the submodule; `from . import __version__` the package
                out.append((sub if sub in MODULES else target, node.lineno))
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None)) in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            out.append((node.args[0].value, node.lineno))
    # the declarative registries name modules as "module:Class" strings
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value.startswith("nbbench.")
            and ":" in node.value
            and " " not in node.value
        ):
            out.append((node.value.split(":")[0], node.lineno))
    return out


def _allowed(src: str, dst: str) -> bool:
    return any((src == a or src.startswith(a + ".")) and (dst == b or dst.startswith(b + ".")) for a, b in ALLOWED)


def _rel(path: Path) -> str:
    try:
        return str(path.relative_to(ROOT.parent))
    except ValueError:
        return str(path)


def upward_imports(mods: dict[str, Path] = MODULES) -> list[str]:
    problems = []
    for mod, path in mods.items():
        src_layer = layer_of(mod)
        assert src_layer is not None, f"{mod} belongs to no layer: add it to LAYERS"
        for target, line in imports_of(mod, path):
            if not target.startswith("nbbench"):
                continue
            dst_layer = layer_of(target)
            if dst_layer is not None and dst_layer > src_layer and not _allowed(mod, target):
                problems.append(
                    f"{_rel(path)}:{line}: {mod} ({LAYERS[src_layer][0]}) imports {target} ({LAYERS[dst_layer][0]})"
                )
    return sorted(set(problems))


def test_every_module_has_a_layer():
    assert [m for m in MODULES if layer_of(m) is None] == []


def test_nothing_imports_a_layer_above_it():
    problems = upward_imports()
    assert problems == [], "upward imports:\n" + "\n".join(problems)


def test_the_check_catches_a_new_upward_import(tmp_path, monkeypatch):
    # a probe that reaches into the UI, inside a function: the walk must see it
    fake = tmp_path / "nbbench" / "probes" / "sneaky.py"
    fake.parent.mkdir(parents=True)
    fake.write_text("def f():\n    from ..ui import progress\n    return progress\n")
    found = upward_imports({"nbbench.probes.sneaky": fake})
    assert len(found) == 1 and "nbbench.ui.progress" in found[0]


@pytest.mark.parametrize("package", sorted(RESTRICTED))
def test_restricted_packages_only_in_their_layers(package):
    bad = []
    for mod, path in MODULES.items():
        layer = LAYERS[layer_of(mod)][0]
        if layer in RESTRICTED[package]:
            continue
        for target, line in imports_of(mod, path):
            if target == package or target.startswith(package + "."):
                bad.append(f"{_rel(path)}:{line} ({layer}) imports {target}")
    assert bad == [], "\n".join(sorted(set(bad)))


def test_module_sizes():
    big = []
    for path in MODULES.values():
        rel = str(path.relative_to(ROOT.parent))
        n = len(path.read_text().splitlines())
        if n > MAX_LINES_EXCEPTIONS.get(rel, MAX_LINES):
            big.append(f"{rel}: {n} lines")
    assert big == [], "modules over the size limit:\n" + "\n".join(big)


def test_each_package_says_what_it_is_for_and_may_import():
    missing = []
    for mod, path in MODULES.items():
        if path.name != "__init__.py" or mod == "nbbench":
            continue
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        if "Layer:" not in doc:
            missing.append(mod)
    assert missing == [], "packages whose __init__ docstring lacks a 'Layer:' paragraph: " + ", ".join(missing)


def test_ruff_sees_every_package_file():
    """ruff's default excludes skip folders named like build outputs (``dist``, ``build``, …): every
    ``.py`` file under ``nbbench/`` must be in its file list, so that none escapes the linter."""
    import shutil
    import subprocess
    import sys

    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    if not Path(ruff).exists():
        pytest.skip("ruff is not installed here")
    out = subprocess.run(
        [ruff, "check", "--show-files", str(ROOT)], capture_output=True, text=True, cwd=ROOT.parent, check=False
    ).stdout
    seen = {Path(line.strip()).resolve() for line in out.splitlines() if line.strip().endswith(".py")}
    missing = sorted(str(p.relative_to(ROOT.parent)) for p in ROOT.rglob("*.py") if p.resolve() not in seen)
    assert not missing, f"ruff does not look at: {missing[:10]}"
