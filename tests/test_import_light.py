import subprocess
import sys

HEAVY = ("torch", "pynvml", "matplotlib", "ipywidgets")


def loaded_after(code: str) -> list[str]:
    prog = code + f"\nimport sys; print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return [m for m in out.stdout.strip().split(",") if m]


def test_import_nbbench_loads_nothing_heavy():
    assert loaded_after("import nbbench") == []


def test_core_modules_load_nothing_heavy():
    assert (
        loaded_after(
            "import nbbench.results, nbbench.store, nbbench.env, nbbench.nvml, "
            "nbbench.commands, nbbench.cli, nbbench.units, nbbench.progress"
        )
        == []
    )


def test_every_subcommand_module_and_help_loads_nothing_heavy():
    code = (
        "import contextlib, io\nfrom nbbench import commands, cli\n"
        "for n in commands.REGISTRY:\n"
        "    try:\n        commands.get_command(n)\n    except ImportError:\n        continue\n"
        "    with contextlib.redirect_stdout(io.StringIO()):\n        cli.main([n, '--help'])\n"
    )
    assert loaded_after(code) == []
