import os

import pytest


@pytest.fixture(autouse=True)
def _isolated_store(tmp_path_factory, monkeypatch):
    """Every test gets its own NBBENCH_HOME, so no test reads or writes the user's store."""
    home = tmp_path_factory.mktemp("nbbench-home")
    monkeypatch.setenv("NBBENCH_HOME", str(home))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    yield home
