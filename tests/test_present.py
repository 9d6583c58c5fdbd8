"""The one presentation rule: the answer first, then what qualifies it, then the details folded —
for str(), the terminal, the notebook's HTML and the report alike; history rows that fit."""

from __future__ import annotations

import re

import pytest

from nbbench import cli
from nbbench.results import Result
from nbbench.results.hist import PERCENTILES, percentile_key
from nbbench.store import default_store

LONG = "/tmp/nbbench-06-q15srco8/" + "a-rather-long-directory-name/" * 5 + "disk"


def dd(path=LONG, **labels):
    return Result.from_dict(
        {
            "kind": "dd",
            "params": {"path": path, "bs": 2**20, "size": 2**30},
            "metrics": {
                "write_bytes_per_s": 1.82e9,
                "read_bytes_per_s": 2.01e9,
                "write_elapsed_s": 0.59,
                "read_lat_p99_ns": 2.5e6,
            },
            "labels": {"engine": "builtin", "cache": "direct", **labels},
        }
    ).finish()


def randread():
    m = {"iops": 74_800, "read_bytes_per_s": 306e6, "lat_mean_ns": 13e3, "lat_p99_ns": 61e3}
    m.update({percentile_key(p): 10e3 + 100 * p for p in PERCENTILES})
    return Result.from_dict(
        {
            "kind": "randread",
            "params": {"path": "/data/f", "bs": 4096, "qd": 32, "op": "read", "pattern": "rand"},
            "metrics": m,
            "labels": {"engine": "builtin", "cache": "direct"},
        }
    ).finish()


def gpu_without_cuda():
    return Result.from_dict(
        {
            "kind": "gpu",
            "extra": {
                "available": False,
                "versions": {"torch": "2.13.0+cpu"},
                "verdicts": [{"check": "torch build", "status": "fail", "message": "CPU-only"}],
            },
            "reason": "this torch (2.13.0+cpu) is a CPU-only build: install a CUDA build, e.g. pip install torch",
        }
    ).finish()


def feed():
    return Result.from_dict(
        {
            "kind": "feed",
            "params": {"path": "/data/imgs", "au_target_pct": 90.0},
            "metrics": {
                "cold_samples_per_s": 5200.0,
                "cold_bytes_per_s": 590e6,
                "warm_samples_per_s": 9100.0,
                "warm_bytes_per_s": 1.03e9,
                "needed_samples_per_s": 1610.0,
                "accelerator_samples_per_s": 1790.0,
                "accelerators_fed_count": 3,
                "au_one_accelerator_pct": 100.0,
            },
            "labels": {"accelerator": "h100-resnet50", "limiter": "storage fetch"},
            "extra": {"answer": "This storage and CPU deliver 5.20 ksamples/s: they feed 3."},
        }
    ).finish()


def doctor_result():
    from nbbench.results.system.doctor import Check

    checks = [
        Check("open-file limit", "warn", "soft 1024", fix="ulimit -n 65536", group="limits"),
        Check("mount", "ok", "ext4", group="storage"),
        Check("gpu: driver", "fail", "no driver", fix="--gpus all", group="gpu"),
        Check("ssh root login", "n/a", "no sshd", group="exposure"),
    ]
    r = Result.from_dict(
        {
            "kind": "doctor",
            "params": {"path": "/data"},
            "samples": {"checks": [c.to_dict() for c in checks]},
            "metrics": {"fail_count": 1, "warn_count": 1, "ok_count": 1, "na_count": 1},
        }
    )
    return r.finish()


# ------------------------------------------------------------------ headline first
def test_str_leads_with_the_figures_then_what_was_measured():
    s = str(dd("/data/x"))
    assert s == "1.82 GB/s write · 2.01 GB/s read — dd /data/x [builtin, direct]"
    assert str(randread()).startswith("74.8 kIOPS · 306 MB/s read · 13.0 µs latency mean · 19.9 µs latency p99 — ")
    assert str(gpu_without_cuda()).startswith("CUDA not available: this torch (2.13.0+cpu) is a CPU-only build — ")
    assert str(feed()).startswith("feeds 3 × h100-resnet50 · storage fetch limits it — ")
    assert str(doctor_result()).startswith("1 fail (gpu: driver) · 1 warn (open-file limit) — doctor /data")


@pytest.mark.parametrize(
    "make,answer",
    [
        (dd, "1.82 GB/s write"),
        (randread, "74.8 kIOPS"),
        (gpu_without_cuda, "CUDA not available"),
        (feed, "feeds 3 ×"),
        (doctor_result, "1 fail (gpu: driver)"),
    ],
)
def test_html_and_text_lead_with_the_answer_then_labels_then_folded_details(make, answer):
    r = make()
    html = r._repr_html_()
    start = html.index("nbbench-answer")
    assert start < html.index(answer) < html.index("nbbench-qualifiers")  # the answer, then its labels
    assert html.index(answer) < html.index(r.headline().split()[0], html.index("nbbench-qualifiers"))
    details = [m.start() for m in re.finditer("<details", html)]
    opened = [m.start() for m in re.finditer("nbbench-section", html)]
    assert all(d > q for d in details for q in opened)  # the kind's own tables, then the details
    text = r.text_table(width=100)
    assert text.startswith(answer) and text.splitlines()[1].lstrip().startswith(r.headline().split()[0])


def test_details_are_folded_and_given_on_request():
    r = randread()
    html = r._repr_html_()
    pct = html[html.index("latency percentiles") :]
    assert html.count("<details") == 3 and "<details class='nbbench-details'>" in html  # closed
    assert "p99.9 " in pct and "p99.99 " in pct and "lat p99 9" not in html  # fio-like rows
    text = r.text_table(width=100)
    assert "p99.9" not in text and "details: all 3 metrics · latency percentiles · how it was measured" in text
    full = r.details()
    assert re.search(r"\n    p1 10.1 µs +· p5 10.5 µs +· p10 11.0 µs", str(full))  # in rows, as fio prints them
    assert "<details class='nbbench-details' open>" in full._repr_html_()
    assert "4 KiB random reads at QD 32" in text  # the I/O shape qualifies the figures


def test_feed_rows_are_named_apart_and_its_sentence_comes_before_its_tables():
    r = feed()
    text = r.text_table(width=100)
    rows = text[text.index("rates:") :].splitlines()
    assert any(ln.split()[:4] == ["from", "storage", "(cold", "cache)"] and "590 MB/s" in ln for ln in rows)
    assert any(ln.split()[:4] == ["from", "memory", "(warm", "cache)"] and "1.03 GB/s" in ln for ln in rows)
    assert text.index("they feed 3") < text.index("rates:")
    assert r.metric_name("au_one_accelerator_pct") == "one h100-resnet50's AU at this rate"
    assert r.metric_name("accelerator_samples_per_s") == "h100-resnet50 consumes"
    names = [row[0] for row in r.sections()[-2].rows]  # every figure, each with its own name
    assert len(names) == len(set(names)) and "cold" not in names and "warm" not in names


def test_gpu_answer_is_red_with_its_checks_and_versions_beside_it():
    r = gpu_without_cuda()
    html = r._repr_html_()
    assert "nbbench-tone-fail" in html and "color:#c62828'>CUDA not available" in html
    assert "torch <code>2.13.0+cpu</code>" in html and "nbbench-verdict-fail" in html
    assert r.findings() == {"fail": 1}


def test_percentile_frames_name_their_columns_and_unit():
    from nbbench.results.storage import percentiles_frame

    r = randread()
    f = percentiles_frame({"QD32": r, "again": r})
    assert list(f.columns) == [
        "p1",
        "p5",
        "p10",
        "p20",
        "p30",
        "p40",
        "p50",
        "p60",
        "p70",
        "p80",
        "p90",
        "p95",
        "p99",
        "p99.5",
        "p99.9",
        "p99.95",
        "p99.99",
    ]
    assert f.columns.name == "latency [µs]" and list(f.index) == ["QD32", "again"]
    assert f.loc["QD32", "p99.9"] == 20.0 and f.loc["QD32", "p1"] == 10.1  # 3 significant figures
    assert r.percentiles_frame(unit="ms").columns.name == "latency [ms]"
    assert r.to_frame().loc["latency p99.9", "display"] == "20.0 µs"  # indexed by the human name


# ------------------------------------------------------------------ widths
def test_fit_never_cuts_a_figure_and_shortens_the_path_in_the_middle():
    from nbbench.results.present.summaries import fit_summary

    s = str(dd())
    for width in range(30, 101, 7):
        out = fit_summary(s, width)
        assert len(out) <= width
        assert out.startswith("1.82 GB/s write")  # the first figure, whole
        assert "2.01 GB/s read" in out or "2.01" not in out  # a figure whole or not at all
    out = fit_summary(s, 80)
    assert "2.01 GB/s read" in out and "…" in out and out.endswith("/disk [builtin, direct]") or out.endswith("/disk")


def test_history_rows_fit_100_columns_with_the_number_intact(capsys):
    st = default_store()
    st.save(dd(), label="a-label-longer-than-the-column-allows")
    st.save(gpu_without_cuda())
    assert cli.main(["history"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["run", "started", "kind", "label", "outcome", "summary"]
    assert all(len(ln) <= 100 for ln in lines), [len(ln) for ln in lines]
    row = next(ln for ln in lines if " dd " in ln)
    summary = row[lines[0].index("summary") :]
    answer, _, subject = summary.partition(" — ")
    assert answer.startswith("1.82 GB/s write")  # the figure first, whole
    assert all(re.fullmatch(r"[\d.]+ GB/s (write|read)", part) for part in answer.rstrip(" …").split(" · "))
    assert subject.startswith("/tmp/nbbench-") and "…" in subject and subject.endswith("/disk")
    assert "checks: fail" in next(ln for ln in lines if " gpu " in ln)


# ------------------------------------------------------------------ env, counts
def test_env_is_a_small_table_with_units_not_dicts(capsys):
    assert cli.main(["env"]) == 0
    out = capsys.readouterr().out
    assert "{'" not in out and "total_bytes" not in out
    rows = {ln.split("  ")[2].strip(): ln for ln in out.splitlines() if ln.startswith("    ") and "  " in ln.strip()}
    assert re.search(r"usable CPUs\s+\S+ usable of \d+ \(affinity \d+, cgroup quota ", rows["usable CPUs"])
    assert re.search(r"memory\s+[\d.]+ [KMGT]iB \(cgroup limit ", rows["memory"])
    assert "torch" in rows and "GPUs" in rows and "container" in rows
    assert re.match(r"\S+ CPUs usable · [\d.]+ [KMGT]iB memory · ", out)  # the answer first


def test_results_and_their_findings_are_counted_apart():
    from nbbench.results.present.summaries import count_line

    doc = doctor_result()
    assert count_line([doc]) == "1 result: ok; its checks: 1 fail, 1 warn, 1 ok, 1 n/a"
    assert count_line([dd(), dd().finish("interrupted")]) == "2 results: 1 ok, 1 interrupted"
    assert count_line([dd(), gpu_without_cuda()]) == "2 results: 2 ok; gpu's checks: 1 fail"


def test_the_cli_ends_a_doctor_run_with_the_counts(tmp_path, capsys):
    assert cli.main(["doctor", str(tmp_path), "--checks", "shm,nofile,memory", "--no-save"]) in (0, 3)
    last = capsys.readouterr().out.rstrip().splitlines()[-1]
    assert re.fullmatch(r"1 result: ok; its checks: \d+ \w+(, \d+ (fail|warn|ok|n/a))*", last), last


def test_a_report_counts_results_and_the_doctors_findings_apart(tmp_path):
    from nbbench.report import Report, ReportData

    data = ReportData(title="t", created_at=0.0, environment={}, doctor=doctor_result(), results=[dd(), dd()])
    rep = Report(format="html", text="", path=str(tmp_path / "r.html"), data=data)
    # the doctor's findings scoped as the report's badge: a dd report counts the storage checks, not the GPU's
    assert str(rep) == (
        f"report (html) {tmp_path / 'r.html'}: 2 results: 2 ok; "
        "the doctor's checks on them: 1 ok (3 others in the report)"
    )
    data.results.append(gpu_without_cuda())
    assert str(rep).endswith(
        "3 results: 3 ok; gpu's checks: 1 fail; the doctor's checks on them: 1 fail, 1 ok (2 others in the report)"
    )


def test_every_kind_is_shown_by_the_one_rule_with_its_options():
    """Each registered result kind answers the front ends' call (the CLI's
    ``text_table(width=, details=, ansi=)``) and puts its answer first; a kind that
    overrides the view with another signature broke `nbbench checkpoint` once."""
    from nbbench.results import KINDS, result_class

    assert {"checkpoint", "shards", "dd", "feed"} <= set(KINDS)
    for kind in KINDS:
        cls = result_class(kind)
        r = cls(kind=kind, params={"path": "/data/x"}, metrics={"write_bytes_per_s": 2.0e9}, status="ok")
        text = r.text_table(width=80, details=True, ansi=False)
        assert text.strip(), kind
        assert r.lead().split(" ")[0] in text.splitlines()[0], (kind, text.splitlines()[0])
        assert r._repr_html_().count(r.headline().split(" ")[0]) >= 1, kind


def test_a_many_rank_result_says_its_together_answer_once_then_its_hosts():
    from nbbench.results import result_class

    for kind, key in (("dd", "write_bytes_per_s"), ("checkpoint", "write_bytes_per_s"), ("shards", "read_bytes_per_s")):
        r = result_class(kind)(
            kind=kind,
            params={"path": "/data"},
            metrics={key: 4.95e8},
            labels={"ranks": "2"},
            status="ok",
            extra={
                "answer": "2 ranks on 2 hosts together: 495 MB/s write",
                "hosts": [
                    {"host": "a", "ranks": 1, key: 2.5e8, "cpu_util_pct": 10.0, "disk_busy_pct": 50.0},
                    {"host": "b", "ranks": 1, key: 2.45e8, "cpu_util_pct": 11.0, "disk_busy_pct": 52.0},
                ],
            },
        )
        text = r.text_table(width=120)
        assert text.count("2 ranks on 2 hosts together") == 1, (kind, text)
        lines = text.splitlines()
        assert "495 MB/s" in lines[0]
        host_rows = [ln for ln in lines if ln.split()[:2] in (["a", "1"], ["b", "1"])]
        assert len(host_rows) == 2 and "250 MB/s" in host_rows[0], text
        assert r._repr_html_().count("2 ranks on 2 hosts together") == 1
