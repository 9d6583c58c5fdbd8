"""Status and verdict are two things: ``status`` says whether the probe ran (ok /
interrupted / failed), ``verdict`` what its checks found (ok / warn / fail, None
without checks).  The exit code follows both (0 ran, 1 failed, 2 usage, 3 a check
failed, 130 interrupted); history, compare, the panel and the reports show the verdict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nbbench import cli, commands
from nbbench.results import Result
from nbbench.results.system.doctor import Check, DoctorResult
from nbbench.results.system.gpu import GpuCheckResult
from nbbench.store import default_store

DOCKER = str(Path(__file__).parent / "fixtures" / "doctor" / "docker")
HARD = str(Path(__file__).parent / "fixtures" / "doctor" / "hardened")


def gpu_result(*statuses, available=True) -> GpuCheckResult:
    res = GpuCheckResult(
        extra={
            "available": available,
            "verdicts": [{"check": f"c{i}", "status": s, "message": s} for i, s in enumerate(statuses)],
        }
    )
    return res.finish("ok")


def doctor_result(*statuses) -> DoctorResult:
    res = DoctorResult(params={"path": "/data"})
    res.samples["checks"] = [Check(f"c{i}", s, "evidence").to_dict() for i, s in enumerate(statuses)]
    return res.finish("ok")


# --------------------------------------------------------------------- the model
def test_worst_verdict():
    from nbbench.results import worst_verdict

    assert worst_verdict(["ok", "warn", "n/a", "ok"]) == "warn"
    assert worst_verdict(["warn", "fail", "ok"]) == "fail"
    assert worst_verdict(["ok", "n/a"]) == "ok"
    assert worst_verdict(["n/a"]) is None and worst_verdict([]) is None


def test_verdict_is_a_field_apart_from_status_and_round_trips():
    plain = Result(kind="dd", metrics={"read_bytes_per_s": 1e9}).finish()
    assert plain.status == "ok" and plain.verdict is None and plain.to_dict()["verdict"] is None
    g = gpu_result("ok", "fail", available=False)
    assert g.status == "ok" and g.verdict == "fail"
    d = g.to_dict()
    assert d["status"] == "ok" and d["verdict"] == "fail"
    back = Result.from_dict(d)
    assert isinstance(back, GpuCheckResult) and back.verdict == "fail" and back == g
    with pytest.raises(ValueError, match="verdict"):
        Result(kind="x", verdict="bad")


def test_gpu_verdict_fail_when_cuda_is_not_usable():
    assert gpu_result("ok", "ok").verdict == "ok"
    assert gpu_result("ok", "warn").verdict == "warn"
    assert gpu_result("ok", "fail").verdict == "fail"
    assert gpu_result(available=False).verdict == "fail"  # no verdict lines, still not usable


def test_gpu_on_this_machine_ran_and_failed_its_check():
    from nbbench.probes.gpu import check

    res = check(benchmark=False)
    assert res.status == "ok"
    if not res.available:
        assert res.verdict == "fail"
        assert commands.exit_code(res) == 3


def test_doctor_verdict_is_the_worst_check_and_na_does_not_count():
    assert doctor_result("ok", "warn", "n/a").verdict == "warn"
    assert doctor_result("ok", "fail", "warn").verdict == "fail"
    assert doctor_result("ok", "n/a").verdict == "ok"
    assert doctor_result("n/a").verdict is None


def test_a_run_stored_before_verdicts_is_judged_from_its_checks():
    d = doctor_result("warn", "fail").to_dict()
    del d["verdict"]
    assert Result.from_dict(d).verdict == "fail"
    d = gpu_result("ok").to_dict()
    del d["verdict"]
    assert Result.from_dict(d).verdict == "ok"


# ------------------------------------------------------------------ exit codes
def test_exit_code_is_one_rule_over_status_and_verdict():
    ok = Result(kind="dd").finish()
    assert commands.exit_code(ok) == commands.EXIT_OK == 0
    assert commands.exit_code(gpu_result("ok", "warn")) == 0
    assert commands.exit_code(gpu_result("fail")) == commands.EXIT_CHECK_FAILED == 3
    assert commands.exit_code(Result(kind="dd").fail("disk gone")) == commands.EXIT_FAILED == 1
    failed_and_fail = gpu_result("fail")
    failed_and_fail.finish("failed", "broke")
    assert commands.exit_code(failed_and_fail) == 1  # did not run to the end: that comes first
    assert commands.exit_code(Result(kind="dd").finish("interrupted")) == commands.EXIT_INTERRUPTED == 130
    assert commands.exit_code([ok, gpu_result("fail")]) == 3  # the worst of several
    assert commands.outcome(gpu_result("fail")) == "ok" and commands.verdict(gpu_result("fail")) == "fail"
    assert commands.verdict(ok) is None
    assert cli.exit_code is commands.exit_code
    assert [c for c, _ in commands.EXIT_CODES] == [0, 1, 2, 3, 130]


def test_cli_help_lists_the_exit_codes(capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "Exit codes:" in out
    for code in ("0", "1", "2", "3", "130"):
        assert any(line.split()[:1] == [code] for line in out.splitlines()), code
    assert "a check failed" in out


def test_cli_gpu_exits_3_with_status_ok_and_verdict_fail(monkeypatch, capsys):
    from nbbench.probes import gpu

    monkeypatch.setattr(gpu, "check", lambda **kw: gpu_result("ok", "fail", available=False))
    assert cli.main(["gpu", "--json"]) == 3
    data = json.loads(capsys.readouterr().out)
    assert data["status"] == "ok" and data["verdict"] == "fail"
    monkeypatch.setattr(gpu, "check", lambda **kw: gpu_result("ok", "warn"))
    assert cli.main(["gpu", "--json"]) == 0


@pytest.fixture
def doctor_on(monkeypatch):
    """``nbbench doctor`` reading a fixture root instead of this machine."""
    import nbbench.doctor

    real = nbbench.doctor.doctor

    def use(root):
        monkeypatch.setattr(nbbench.doctor, "doctor", lambda path=None, **kw: real("/", root=root, **kw))

    return use


def test_cli_doctor_exits_3_when_a_check_fails_and_0_on_a_warning(doctor_on, capsys):
    doctor_on(DOCKER)
    assert cli.main(["doctor", "--checks", "shm", "--json"]) == 3  # Docker's 64 MB /dev/shm: fail
    data = json.loads(capsys.readouterr().out)
    assert data["status"] == "ok" and data["verdict"] == "fail"
    assert cli.main(["doctor", "--checks", "nofile"]) == 0  # soft 1024: a warning
    out = capsys.readouterr().out
    assert "WARN" in out and "FAIL" not in out
    doctor_on(HARD)
    assert cli.main(["doctor", "--checks", "nofile,vm", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["verdict"] == "ok"
    st = default_store()
    assert st.history(kind="doctor")["verdict"].tolist() == ["fail", "warn", "ok"]


# -------------------------------------------------------- history, compare, reports
def test_history_has_a_verdict_column(capsys):
    st = default_store()
    st.save(gpu_result("fail", available=False), label="nocuda")
    st.save(Result(kind="dd", metrics={"read_bytes_per_s": 1e9}).finish(), label="disk")
    h = st.history()
    assert h["status"].tolist() == ["ok", "ok"]
    assert h["verdict"].tolist()[0] == "fail" and h["verdict"].isna().tolist() == [False, True]
    assert cli.main(["history"]) == 0
    out = capsys.readouterr().out
    head, first = out.splitlines()[0], out.splitlines()[1]
    assert "outcome" in head and "checks: fail" in first and "checks" not in out.splitlines()[2]


def test_compare_notes_when_verdicts_differ(capsys):
    st = default_store()
    st.save(doctor_result("ok", "ok"), label="before")
    st.save(doctor_result("ok", "fail"), label="after")
    assert cli.main(["compare", "before", "after"]) == 0
    out = capsys.readouterr().out
    assert "note: verdicts differ — ok (before), fail (after)" in out
    from nbbench.compare import compare

    cmp = compare(["before", "after"])
    assert cmp.to_dict()["groups"][0]["verdicts"] == ["ok", "fail"]
    assert "verdicts differ" in cmp.html(images=False)


def test_reports_show_the_verdict(tmp_path):
    from nbbench.report import report

    st = default_store()
    st.save(gpu_result("fail", available=False), label="g")
    for fmt in ("html", "md", "json"):
        rep = report(fmt, out="-", runs=["g"], run_doctor=False)
        if fmt == "json":
            assert json.loads(rep.text)["results"][0]["verdict"] == "fail"
        elif fmt == "md":
            assert "verdict: **fail**" in rep.text
        else:
            assert "nbbench-verdict-fail" in rep.text and "checks: fail" in rep.text


# ------------------------------------------------------------------------ panel
def test_panel_status_colour_follows_the_verdict(tmp_path, monkeypatch):
    pytest.importorskip("ipywidgets")
    from nbbench.panel import panel as make
    from nbbench.panel.views import COLOURS
    from nbbench.probes import gpu

    p = make(str(tmp_path))
    p.select("GPU")
    p.tab("GPU").bench.value = False
    for statuses, state, words in (
        (("ok", "fail"), "fail", "a check failed"),
        (("ok", "warn"), "warn", "with warnings"),
        (("ok", "ok"), "ok", "done in"),
    ):
        monkeypatch.setattr(gpu, "check", lambda s=statuses, **kw: gpu_result(*s))
        p.run_button.click()
        rec = p.wait(30)
        assert rec.status == "ok" and rec.verdict == state
        assert f"nbbench-status-{state}" in p.status.value and words in p.status.value
        assert COLOURS[state] in p.status.value
    # ok green, warn amber, fail red: the presentation rule's colours, and amber is not the
    # orange of an interrupted run
    assert COLOURS["fail"] == "#c62828" and COLOURS["warn"] == "#a86800" and COLOURS["ok"] == "#2e7d32"
    assert COLOURS["warn"] != COLOURS["interrupted"]
