"""The browser tests' JupyterLab leaves nothing behind: its temporary state folder
(``/tmp/nbbench-lab-state-*``) goes when the ``with`` block ends — also when an
exception is raised inside it, and when the server fails to start."""

from __future__ import annotations

import pytest
from jupyterlab_harness import JupyterLab

pytestmark = pytest.mark.slow


def test_state_is_removed_when_the_context_exits(tmp_path):
    with JupyterLab(tmp_path) as lab:
        state = lab.state
        assert state.is_dir() and (state / "nbbench-home").is_dir() and lab.proc.poll() is None
    assert not state.exists()
    assert lab.proc.poll() is not None  # and the server is gone


def test_state_is_removed_when_the_block_raises(tmp_path, capsys):
    with pytest.raises(RuntimeError, match="a test failed inside"):
        with JupyterLab(tmp_path) as lab:
            state = lab.state
            assert state.is_dir()
            raise RuntimeError("a test failed inside")
    assert not state.exists()
    assert "jupyter server log" in capsys.readouterr().out  # the log's tail is kept for the failure report


def test_state_is_removed_when_the_server_does_not_start(tmp_path):
    lab = JupyterLab(tmp_path, python="/bin/false")
    state = lab.state
    with pytest.raises(RuntimeError, match="exited"):
        with lab:
            pass
    assert not state.exists()
