import pytest


def pytest_configure(config):
    """One IPython shell for the whole session.

    IPython's test shell is a singleton: ``globalipapp.start_ipython()`` returns None
    on a second call, and a plain ``InteractiveShell.instance()`` made first makes a
    later start fail.  Starting it once here and making both entry points return it
    lets every test module get the shell however it asks.
    """
    from IPython.testing import globalipapp

    shell = globalipapp.start_ipython() or globalipapp.get_ipython()
    globalipapp.start_ipython = lambda: shell
    globalipapp.get_ipython = lambda: shell


@pytest.fixture(scope="session")
def ipshell():
    """The session's IPython shell with ``%load_ext nbbench`` done."""
    from IPython.testing import globalipapp

    shell = globalipapp.get_ipython()
    shell.run_line_magic("load_ext", "nbbench")
    return shell


@pytest.fixture(autouse=True)
def _isolated_store(tmp_path_factory, monkeypatch):
    """Every test gets its own NBBENCH_HOME, so no test reads or writes the user's store."""
    home = tmp_path_factory.mktemp("nbbench-home")
    monkeypatch.setenv("NBBENCH_HOME", str(home))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    yield home
