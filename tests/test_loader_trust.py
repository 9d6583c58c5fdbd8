"""What loader accepts: it refuses an object whose first item holds no tensor, array or
bytes (a str) instead of an ok-looking empty result."""

import pytest

from nbbench.results import ProbeError


def test_loader_refuses_what_yields_no_arrays():
    from nbbench.probes.loader import bench_loader

    with pytest.raises(ProbeError, match=r"^the first item of the str given is a str \('a'\), not a batch of "
                                         r"tensors or arrays: give a DataLoader") as e:
        bench_loader("abc", steps=2, warmup=0)
    assert "\n" not in str(e.value)
    with pytest.raises(ProbeError, match=r"first item of the list given is a int \(3\)"):
        bench_loader([3, 4, 5, 6], steps=2, warmup=0)
    with pytest.raises(ProbeError, match=r"is a dict \(\{'label': 'cat'\}\)"):
        bench_loader([{"label": "cat"}] * 5, steps=2, warmup=0)
    # batches that do hold arrays or bytes, or a batch size given for those that do not, still run
    assert bench_loader([b"x" * 8] * 6, steps=2, warmup=0).ok
    assert bench_loader(iter(range(10)), steps=2, warmup=0, batch_size=1).ok


def test_loader_magic_given_a_str_variable(ipshell, tmp_path):
    from IPython.core.error import UsageError

    ipshell.user_ns["x"] = "abc"
    with pytest.raises(UsageError, match=r"^x is a str \('abc'\), not a DataLoader: give the name of a "
                                         r"DataLoader variable$"):
        ipshell.run_line_magic("iobench", "loader x -q --no-save")
    ipshell.user_ns["folder"] = str(tmp_path)
    with pytest.raises(UsageError, match=rf"or give the folder itself: %iobench loader {tmp_path}$"):
        ipshell.run_line_magic("iobench", "loader folder -q --no-save")
