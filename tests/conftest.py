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


# ---------------------------------------------------------------- pytest-xdist groups
#: tests that must not run beside each other, by group (``make test`` runs ``-n N --dist loadgroup``;
#: one group's tests run one after another on one worker).  ``browser``: every test that starts
#: JupyterLab and chromium (heavy, and they count frames); ``ranks``: tests that launch many-rank
#: process trees.  Add a file here, or mark a test ``@pytest.mark.xdist_group("NAME")``.
XDIST_GROUPS = {
    "browser": (
        "test_browser_panel.py",
        "test_monitor_browser.py",
        "test_report_browser.py",
        "test_monitor_notebook.py",
        "test_harness.py",
        "test_panel_notebook.py",
        "test_lab_sidebar_browser.py",
    ),
    "ranks": ("test_ranks.py", "test_ckpt_ranks.py"),
}


def pytest_collection_modifyitems(config, items):
    by_file = {f: g for g, files in XDIST_GROUPS.items() for f in files}
    for item in items:
        if item.get_closest_marker("xdist_group"):
            continue
        group = "browser" if item.get_closest_marker("browser") else by_file.get(item.path.name)
        if group:
            item.add_marker(pytest.mark.xdist_group(group))
