"""Reports: html (self-contained, embedded PNGs), md, json; fio-shaped JSON for disk results."""

from __future__ import annotations

import base64
import io
import json
import math
import re
import subprocess
import sys

import pytest

from nbbench.exporters.fio import is_disk_result, to_fio
from nbbench.plots.samples import result_figure, sample_series
from nbbench.report import build, report
from nbbench.results import ProbeError, Result
from nbbench.store import default_store

CHEAP_DOCTOR = ["nofile", "vm", "cpu"]


def dd(w, r, cache, path="/data"):
    t = [0.5 * i for i in range(1, 9)]
    res = Result(
        kind="dd",
        params={"path": path, "bs": "1M", "size": "64M"},
        metrics={
            "write_bytes_per_s": w,
            "read_bytes_per_s": r,
            "write_s": 64 * 2**20 / w,
            "read_s": 64 * 2**20 / r,
            "write_bytes": 64 * 2**20,
            "read_bytes": 64 * 2**20,
        },
        labels={"cache": cache, "engine": "sync"},
        samples={"write": {"t_s": t, "write_bytes_per_s": [w * (1 + 0.1 * math.sin(i)) for i in range(8)]}},
    )
    return res.finish()


@pytest.fixture
def two_runs():
    st = default_store()
    a, b = dd(4.0e8, 6.0e8, "direct"), dd(4.2e8, 2.9e9, "buffered-warm")
    st.save(a, label="A")
    st.save(b, label="B")
    st.save(Result(kind="loader", metrics={"samples_per_s": 900.0}).finish(), label="L")
    return a, b


def test_build_selects_and_compares(two_runs):
    data = build(runs=["A", "B"], doctor_checks=CHEAP_DOCTOR)
    assert [r.run_id for r in data.results] == [two_runs[0].run_id, two_runs[1].run_id]
    assert data.doctor is not None and {c.name for c in data.doctor.checks} >= {"open-file limit", "usable CPUs"}
    assert len(data.comparisons) == 1
    g = data.comparisons[0].groups[0]
    assert g.delta_pct("read_bytes_per_s", 1) == pytest.approx((2.9e9 - 6e8) / 6e8 * 100)
    assert data.environment["id"] in data.environments
    latest = build(last=2, run_doctor=False)
    assert [r.kind for r in latest.results] == ["dd", "loader"]
    with pytest.raises(ProbeError, match="no stored run"):
        build(runs=["nope"], run_doctor=False)


def test_html_is_self_contained_with_embedded_pngs(two_runs, tmp_path):
    out = tmp_path / "r.html"
    rep = report("html", out=out, runs=["A", "B"], doctor_checks=CHEAP_DOCTOR)
    text = out.read_text()
    assert rep.path == str(out) and rep.text == text
    assert text.startswith("<!DOCTYPE html>")
    # nothing loaded from elsewhere: no src/href to http(s) or files, no scripts
    assert not re.search(r"""(src|href)=['"](?!data:|#)""", text)
    assert "<script" not in text and "http://" not in text.split("<pre>")[0].replace("http://www.w3.org", "")
    pngs = re.findall(r"data:image/png;base64,([A-Za-z0-9+/=]+)", text)
    assert len(pngs) == 3  # a sample plot per dd run and the comparison chart
    from PIL import Image

    for p in pngs:
        im = Image.open(io.BytesIO(base64.b64decode(p)))
        assert im.format == "PNG" and im.size[0] >= 400
    for needed in (
        "Environment",
        "Doctor",
        "open-file limit",
        "Results",
        "Comparisons",
        "cache mode differs",
        "fio JSON",
        "4.83× faster",
    ):
        assert needed in text, needed
    assert str(rep).startswith("report (html)")
    assert "<a href=" in rep._repr_html_()


def test_refuses_to_overwrite_and_checks_the_directory(two_runs, tmp_path):
    out = tmp_path / "r.json"
    report("json", out=out, runs=["A"], run_doctor=False)
    with pytest.raises(ProbeError, match="exists"):
        report("json", out=out, runs=["A"], run_doctor=False)
    report("json", out=out, runs=["A"], run_doctor=False, overwrite=True)
    with pytest.raises(ProbeError, match="not a directory"):
        report("json", out=tmp_path / "missing" / "r.json", runs=["A"], run_doctor=False)
    with pytest.raises(ProbeError, match="unknown report format"):
        report("pdf", out="-", runs=["A"], run_doctor=False)


def test_format_from_suffix_and_markdown_images(two_runs, tmp_path):
    out = tmp_path / "r.md"
    rep = report(out=out, runs=["A", "B"], doctor_checks=CHEAP_DOCTOR)
    assert rep.format == "md"
    text = out.read_text()
    assert text.startswith("# nbbench report")
    assert "| status | check | evidence | fix |" in text and "## Comparisons" in text
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert len(links) == 3 and all((tmp_path / l).is_file() for l in links)
    assert rep.files and all(f.endswith(".png") for f in rep.files)
    nofig = report("md", out="-", runs=["A"], run_doctor=False)
    assert nofig.path is None and "plots are left out" in nofig.text


def test_json_report_round_trips(two_runs):
    rep = report("json", out="-", runs=["A", "B", "L"], doctor_checks=CHEAP_DOCTOR)
    d = json.loads(rep.text)
    assert d["format"] == "nbbench-report" and len(d["results"]) == 3
    back = [Result.from_dict(r) for r in d["results"]]
    assert back[0] == two_runs[0]
    assert d["doctor"]["kind"] == "doctor"
    assert d["fio"]["jobs"] and len(d["fio"]["jobs"]) == 2  # the loader run is not a disk result
    assert d["comparisons"][0]["groups"][0]["kind"] == "dd"


def test_fio_shape():
    r = dd(4.0e8, 6.0e8, "direct", path="/nvme")
    r.run_id = 7
    rr = Result(
        kind="randread",
        params={"path": "/nvme/f", "bs": "4k", "qd": 32},
        metrics={
            "read_bytes_per_s": 4096 * 1e5,
            "iops": 1e5,
            "lat_p50_ns": 80e3,
            "lat_p99_ns": 250e3,
            "lat_p99_9_ns": 900e3,
            "lat_mean_ns": 95e3,
        },
        labels={"cache": "direct", "target": "file"},
    ).finish()
    doc = to_fio([r, rr, Result(kind="gpu")])
    assert "nbbench" in doc["fio version"] and len(doc["jobs"]) == 2
    j = doc["jobs"][0]
    assert j["jobname"] == "dd-7" and j["job options"]["direct"] == "1" and j["job options"]["bs"] == "1M"
    r.labels["label"] = "nvme-before"  # the user's label names the job, as fio's --name would
    assert to_fio([r])["jobs"][0]["jobname"] == "nvme-before"
    assert j["write"]["bw_bytes"] == 400000000 and j["write"]["bw"] == 400000000 // 1024
    assert j["read"]["io_bytes"] == 64 * 2**20 and j["read"]["runtime"] == round(64 * 2**20 / 6e8 * 1000)
    assert j["read"]["iops"] == pytest.approx(6e8 / 2**20)
    k = doc["jobs"][1]
    assert "write" not in k and k["job options"]["iodepth"] == "32" and k["job options"]["filename"] == "/nvme/f"
    pct = k["read"]["clat_ns"]["percentile"]
    assert pct == {"50.000000": 80000, "99.000000": 250000, "99.900000": 900000}
    assert k["read"]["clat_ns"]["mean"] == 95e3 and k["read"]["iops"] == 1e5
    assert is_disk_result(r) and not is_disk_result(Result(kind="loader"))


def test_sample_series_shapes():
    assert sample_series("x", [1, 2, 3])[1] == {"x": [1, 2, 3]}
    x, cols, xl = sample_series("w", [{"t_s": 0.5, "read_bytes_per_s": 1.0}, {"t_s": 1.0, "read_bytes_per_s": 2.0}])
    assert x == [0.5, 1.0] and cols == {"read_bytes_per_s": [1.0, 2.0]} and "t" in xl
    assert sample_series("s", {"a": "text"}) is None and sample_series("s", [[1, 2]]) is None
    assert result_figure(Result(kind="x")) is None
    fig = result_figure(dd(1e8, 1e8, "direct"))
    assert fig is not None and len(fig.axes) == 1


def test_report_and_compare_do_not_need_pyplot(tmp_path):
    code = (
        "import sys, nbbench.report as R, nbbench.compare as C, nbbench.plots as P, nbbench.plots.compare as PC\n"
        "from nbbench.results import Result\n"
        "a = Result(kind='dd', metrics={'read_bytes_per_s': 1e8}); "
        "b = Result(kind='dd', metrics={'read_bytes_per_s': 2e8})\n"
        "c = C.compare([a, b]); P.figure_png(PC.bar_chart(c.groups[0]))\n"
        "assert 'matplotlib.pyplot' not in sys.modules, 'pyplot imported'\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_histograms_are_not_time_series_and_cards_are_compact():
    from nbbench.exporters.html import result_card

    assert sample_series("lat_hist", {"bins_ns": [1, 2, 4], "counts": [5, 9, 1]}) is None
    r = Result(
        kind="randread",
        params={"path": "/d"},
        labels={"cache": "direct"},
        metrics={"iops": 1e4, "lat_p50_ns": 5e4, "lat_p5_ns": 4e4},
        warnings=["use --direct"],
    ).finish()
    html = result_card(r)
    # the one presentation rule: the answer, then what qualifies it, then the details folded
    answer, quals = html.index("nbbench-answer"), html.index("nbbench-qualifiers")
    assert answer < html.index("10.0 kIOPS") < quals < html.index("cache <code>direct</code>") < html.index("<details")
    assert "use --direct" in html[quals : html.index("<details")]
    pct = html[html.index("<summary style='cursor:pointer;color:#555'>latency percentiles") :]
    assert "p5 40.0 µs" in pct and "p50 50.0 µs" in pct and "lat p5" not in html


# ------------------------------------------------------------- the answer first
def _doctor(*checks):
    """A doctor result with these (name, status, group) findings."""
    from nbbench.results.system.doctor import Check, DoctorResult

    doc = DoctorResult(params={"path": "/data"})
    doc.samples["checks"] = [Check(n, s, f"evidence of {n}", group=g).to_dict() for n, s, g in checks]
    for s in ("ok", "warn", "fail", "n/a"):
        doc.metrics[f"{s.replace('/', '')}_count"] = sum(st == s for _, st, _ in checks)
    return doc.finish("ok")


MIXED = [
    ("gpu: torch build", "fail", "gpu"),
    ("gpu: driver", "fail", "gpu"),
    ("ssh root login", "fail", "exposure"),
    ("atime", "warn", "storage"),
    ("read-ahead", "ok", "block device"),
    ("/dev/shm size", "ok", "memory"),
]


def test_a_report_opens_with_one_paragraph_that_answers_then_results_before_the_doctor(two_runs, tmp_path):
    rep = report("html", out=tmp_path / "r.html", runs=["A", "B"], doctor_checks=CHEAP_DOCTOR)
    text = rep.text
    para = rep.data.summary()
    # the headline deltas first, figures with their units; then what was compared; then the doctor
    # one run each: the write's windows cannot tell +5 % from noise; the read has too few windows to judge
    assert para.startswith(
        "no significant change in write (420 MB/s vs 400 MB/s), read inconclusive at "
        "4.83× faster (2.90 GB/s vs 600 MB/s) for B against A (dd, one run each). "
        "Inconclusive: one run each — use --repeat 5. Caveat"
    )
    assert "cache mode differs" in para and "2 dd results from " in para and ", on /data." in para
    assert para.index("4.83×") < para.index("2 dd results") < para.index("Doctor:")
    # nothing but the title and the meta line before it; results, comparisons, environment, then the doctor
    body = text[text.index("<main>") :]
    first = re.sub(r"<h1>.*?</h1><div class='meta'>.*?</div>\s*", "", body[len("<main>") :].lstrip(), count=1)
    assert first.startswith("<div class='summary'><p>no significant change in write (420 MB/s vs 400 MB/s)")
    assert "<b>" not in first[: first.index("</p>")]  # nothing within the noise in bold
    order = [
        text.index(h)
        for h in ("class='summary'", "<h2>Results", "<h2>Comparisons", "<h2>Environment", "<h2 id='doctor'>Doctor")
    ]
    assert order == sorted(order)
    md = report("md", out="-", data=rep.data).text
    paras = [p for p in md.split("\n\n") if p.strip()]
    assert paras[0].startswith("# nbbench report") and paras[1].startswith("Generated ")
    assert paras[2].startswith("no significant change in write (420 MB/s vs 400 MB/s)")
    assert md.index(paras[2]) < md.index("## Results") < md.index("## Comparisons") < md.index("## Doctor")
    assert json.loads(report("json", out="-", data=rep.data).text)["summary"] == para


def test_a_report_without_comparisons_leads_with_each_results_answer(two_runs):
    para = build(runs=["A"], run_doctor=False).summary()
    assert para.startswith("400 MB/s write · 600 MB/s read (dd /data). 1 dd result from ")


def test_the_doctor_badge_counts_only_the_checks_that_bear_on_the_results(two_runs, tmp_path):
    from nbbench.exporters.html import export as html
    from nbbench.exporters.markdown import export as md

    data = build(runs=["A", "B"], run_doctor=False)
    data.doctor = _doctor(*MIXED)
    text = html(data)
    badge = text[text.index("<div class='chips'>") : text.index("<h2>Results")]
    # a storage report: the GPU stack's and exposure's fails are not its badge's
    assert "fail" not in badge and ">1 warn<" in badge and ">1 ok<" in badge
    assert "the 2 checks that bear on dd results (storage, block device)" in badge
    assert "all 6 checks below" in badge and "href='#doctor'" in badge
    assert "verdict <b>warn</b>" in badge
    doctor = text[text.index("<h2 id='doctor'>") :]
    assert "gpu: torch build" in doctor and "ssh root login" in doctor  # the full table keeps every check
    assert "Doctor:" in data.summary() and "fail" not in data.summary()
    head = md(data).split("## Results")[0]
    assert "fail" not in head and "the 2 checks that bear on dd results" in head and "1 warn, 1 ok" in head

    # a GPU result brings the GPU checks into scope
    data.results.append(Result(kind="gpu", metrics={"device_count": 0}).finish())
    badge = html(data).split("<h2>Results")[0]
    assert ">2 fail<" in badge and "dd and gpu results (gpu, storage, block device)" in badge
    assert "exposure" not in badge


def test_which_doctor_checks_bear_on_a_loader_depends_on_its_step():
    from nbbench.exporters.summary import doctor_groups

    emulated = Result(kind="loader", params={"step": "emulate:h100-resnet50"})
    trained = Result(kind="loader", params={"step": "gpu"})
    assert "gpu" not in doctor_groups(emulated) and {"memory", "cpu", "storage"} <= set(doctor_groups(emulated))
    assert "gpu" in doctor_groups(trained)
    assert "exposure" not in doctor_groups(Result(kind="some-new-kind"))
    assert doctor_groups(Result(kind="checkpoint", params={"device": "cuda"}))[-1] == "gpu"
