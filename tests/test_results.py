import json
import math

import pytest

from nbbench.results import Result, register, result_class


def make():
    r = Result(
        kind="dd",
        params={"path": "/data", "bs": 1048576, "size": 2**30},
        metrics={
            "write_bytes_per_s": 943e6,
            "read_bytes_per_s": 1.2e9,
            "lat_p99_ns": 12345.6,
            "iops": 1200,
            "nan_ns": math.nan,
        },
        labels={"engine": "builtin", "cache": "direct"},
        samples={"bw": [{"t_s": 0.5, "bytes_per_s": 9e8}, {"t_s": 1.0, "bytes_per_s": 9.5e8}]},
        env_id="abc123",
    )
    r.warn("the file is smaller than RAM: use --direct")
    r.warn("the file is smaller than RAM: use --direct")  # once only
    return r.finish("ok")


def test_roundtrip_is_exact_through_json():
    r = make()
    d = r.to_dict()
    again = Result.from_dict(json.loads(json.dumps(d)))
    assert again == r
    assert again.to_dict()["metrics"]["write_bytes_per_s"] == 943e6
    assert again.started_at == r.started_at and again.ended_at == r.ended_at
    assert again.warnings == ["the file is smaller than RAM: use --direct"]


def test_to_dict_is_a_copy():
    r = make()
    d = r.to_dict()
    d["metrics"]["iops"] = 0
    assert r.metrics["iops"] == 1200


def test_str_is_one_line_with_units():
    s = str(make())
    assert "\n" not in s
    assert "943 MB/s" in s and "1.20 GB/s" in s
    assert "direct" in s and "1 warning" in s


def test_status_validation_and_failure():
    with pytest.raises(ValueError):
        Result(status="fine")
    r = Result(kind="x").fail("disk vanished")
    assert r.status == "failed" and not r.ok and "FAILED: disk vanished" in str(r)


def test_frames_and_reprs():
    r = make()
    f = r.to_frame()
    assert list(f.columns) == ["metric", "value", "unit", "display"]
    assert f.set_index("metric").loc["read_bytes_per_s", "display"] == "1.20 GB/s"
    s = r.samples_frame("bw")
    assert list(s.columns) == ["t_s", "bytes_per_s"] and len(s) == 2
    html = r._repr_html_()
    assert "<table" in html and "943 MB/s" in html and "smaller than RAM" in html

    class P:
        def __init__(self):
            self.out = []

        def text(self, t):
            self.out.append(t)

    p = P()
    r._repr_pretty_(p, False)
    assert "943 MB/s" in p.out[0] and "warning:" in p.out[0]


def test_registered_subclass_is_rebuilt():
    @register("unit-test-kind")
    class Mine(Result):
        @property
        def doubled(self):
            return self.metrics["x_count"] * 2

    r = Mine(metrics={"x_count": 4})
    assert r.kind == "unit-test-kind"
    back = Result.from_dict(r.to_dict())
    assert type(back) is Mine and back.doubled == 8
    assert result_class("never-registered") is Result


def test_stored_kinds_come_back_as_their_classes_without_importing_probes():
    import subprocess
    import sys

    code = (
        "import sys\nfrom nbbench.results import Result, KINDS\n"
        "for kind in KINDS:\n"
        "    r = Result.from_dict({'kind': kind})\n"
        "    assert type(r).__name__ == KINDS[kind].split(':')[1], kind\n"
        "print(sorted(m for m in sys.modules if m.startswith(('nbbench.probes', 'nbbench.monitor', 'nbbench.doctor'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_a_broken_result_module_is_an_error_not_a_plain_result(monkeypatch):
    from nbbench.results import base

    monkeypatch.setitem(base.KINDS, "broken-kind", "nbbench.results.no_such_module:Nothing")
    with pytest.raises(ImportError):
        Result.from_dict({"kind": "broken-kind"})
