"""Collectives: nccl-tests' arithmetic (factors, ladder, counts), the correctness check against a
brute-force simulation of every operation, the check catching a wrong result, every rank's times
combined (busbw = algbw × factor for each op on 2-4 ranks), NCCL's transport from recorded INFO lines,
the verdict against the expected link (NVML fakes), the result stored and compared, the plot, the
command's nccl-tests option names, and real gloo ranks (3 ranks: busbw/algbw = 4/3 for all-reduce, 2/3
for all-gather; a deliberately wrong value on one rank caught, the exit code 3)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")

from fakes import FakePynvml, fake_device  # noqa: E402
from rankproc import run_nbbench  # noqa: E402

from nbbench.nvml import Nvml  # noqa: E402
from nbbench.probes.gpunode import busbw as bb  # noqa: E402
from nbbench.probes.gpunode.collectives import expected, pattern, run_collectives  # noqa: E402
from nbbench.probes.gpunode.links import expected_link, link_verdict, read_links  # noqa: E402
from nbbench.probes.gpunode.nccl import nccl_env, parse_transport  # noqa: E402
from nbbench.probes.gpunode.table import combine, metrics, plateau  # noqa: E402
from nbbench.results import ProbeError, Result  # noqa: E402

FACTORS = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "alltoall": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "sendrecv": lambda n: 1.0,
}


# ------------------------------------------------------------------ arithmetic
@pytest.mark.parametrize("n", [1, 2, 3, 4, 8])
def test_bus_factors_are_nccl_tests(n):
    for op, f in FACTORS.items():
        assert bb.bus_factor(op, n) == pytest.approx(f(n))


def test_size_ladder_and_counts():
    assert bb.size_ladder(8, 128 << 20, 2)[:3] == [8, 16, 32] and bb.size_ladder(8, 128 << 20)[-1] == 128 << 20
    assert len(bb.size_ladder(8, 128 << 20)) == 25  # nccl-tests' -b 8 -e 128M -f 2
    assert bb.size_ladder(1000, 5000, 4) == [1000, 4000, 5000]
    with pytest.raises(ValueError):
        bb.size_ladder(16, 8)
    assert bb.counts("all_reduce", 1024, 4, 3) == (256, 1024)
    assert bb.counts("all_gather", 1024, 4, 3) == (85, 1020)  # per rank, rounded to whole elements per rank
    assert bb.counts("alltoall", 8, 4, 3) == (0, 0)


# ---------------------------------------------------------- correctness check
def _simulate(op, n, per, redop):
    """Every rank's output by the operation's definition, from every rank's input (brute force)."""
    total = per * n if bb.OPS[op].split else per
    ins = [pattern(torch, r, 0, total if op != "all_gather" else per, redop, "cpu") for r in range(n)]

    def red(ts):
        st = torch.stack(ts).double()
        return {
            "sum": st.sum(0),
            "prod": st.prod(0),
            "max": st.max(0).values,
            "min": st.min(0).values,
            "avg": st.mean(0),
        }[redop]

    outs = []
    for r in range(n):
        if op == "all_reduce":
            outs.append(red(ins))
        elif op == "reduce_scatter":
            outs.append(red([x[r * per : (r + 1) * per] for x in ins]))
        elif op == "all_gather":
            outs.append(torch.cat(ins))
        elif op == "alltoall":
            outs.append(torch.cat([ins[j][r * per : (r + 1) * per] for j in range(n)]))
        elif op == "broadcast":
            outs.append(ins[0])
        else:
            outs.append(ins[(r - 1) % n])
    return outs


@pytest.mark.parametrize("n", [2, 3, 4])
@pytest.mark.parametrize("redop", ["sum", "prod", "max", "min", "avg"])
def test_expected_matches_the_operations_definition(n, redop):
    per = 7
    for op in bb.OPS:
        if not bb.OPS[op].reduces and redop != "sum":
            continue
        outs = _simulate(op, n, per, redop)
        for r in range(n):
            size = outs[r].numel()
            got = expected(torch, op, r, n, per, 0, size, redop, "cpu").double()
            assert torch.allclose(got, outs[r].double()), (op, r)
            # a chunk of it (the check compares in chunks)
            hi = min(size, 9)
            assert torch.equal(expected(torch, op, r, n, per, 3, hi, redop, "cpu").double(), got[3:hi])


class _OneRankDist:
    """torch.distributed for a world of one, in this process: every collective is a copy."""

    ReduceOp = SimpleNamespace(SUM="sum", PRODUCT="prod", MAX="max", MIN="min", AVG="avg")

    def all_reduce(self, t, op=None):
        pass

    def broadcast(self, t, src):
        pass

    def all_gather_into_tensor(self, out, inp):
        out.copy_(inp)

    def reduce_scatter_tensor(self, out, inp, op=None):
        out.copy_(inp)

    def all_to_all_single(self, out, inp):
        out.copy_(inp)


def _one_rank(**kw):
    return run_collectives(
        ops=list(bb.OPS),
        sizes=[64, 4096],
        iters=2,
        warmup=1,
        check=True,
        world=1,
        rank=0,
        torch=torch,
        dist=_OneRankDist(),
        **kw,
    )


def test_the_check_passes_a_right_result_and_catches_a_wrong_one():
    rows, stopped = _one_rank()
    assert not stopped
    ran = [r for r in rows if "times_us" in r]
    assert {r["op"] for r in ran} == {"all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast"}
    assert all(r["wrong"] == 0 and len(r["times_us"]) == 2 for r in ran)
    assert [r["error"] for r in rows if r["op"] == "sendrecv"] == ["sendrecv needs 2 ranks or more"]

    def corrupt(op, out):
        if op == "all_gather":
            out.view(-1)[0] += 1
            out.view(-1)[-1] = -5

    rows, _ = _one_rank(corrupt=corrupt)
    wrong = {(r["op"], r["placement"], r["size_bytes"]): r["wrong"] for r in rows if "wrong" in r}
    assert all(v == 2 for k, v in wrong.items() if k[0] == "all_gather")
    assert all(v == 0 for k, v in wrong.items() if k[0] != "all_gather")


def test_an_op_the_backend_lacks_is_a_row_saying_so():
    class NoAlltoall(_OneRankDist):
        def all_to_all_single(self, out, inp):
            raise RuntimeError("ProcessGroupGloo does not support alltoall\nmore")

    rows, _ = run_collectives(
        ops=["alltoall", "all_reduce"], sizes=[64, 128], iters=1, warmup=0, check=True, torch=torch, dist=NoAlltoall()
    )
    (bad,) = [r for r in rows if r["op"] == "alltoall"]  # said once, the larger size not tried again
    assert bad["error"] == "the backend cannot run alltoall out-of-place: ProcessGroupGloo does not support alltoall"
    assert [r["wrong"] for r in rows if r["op"] == "all_reduce"] == [0, 0]


def test_nccl_debug_captured_into_a_registered_file_then_removed():
    from nbbench import tempfiles
    from nbbench.probes.gpunode.nccl import capture, read_captured

    env = {}
    path, ours = capture(env)
    assert env["NCCL_DEBUG"] == "INFO" and env["NCCL_DEBUG_FILE"] == path and path in tempfiles.registered()
    with open(path, "w") as f:
        f.write(RECORDED)
    lines = read_captured(path, env, ours)
    assert parse_transport(lines)["main"] == "SHM" and env == {} and path not in tempfiles.registered()
    assert capture({"NCCL_DEBUG": "WARN"}) == (None, [])  # the user's own setting is left alone


def test_a_stop_on_any_rank_stops_every_rank_at_the_same_step():
    ev = SimpleNamespace(is_set=lambda: True)

    class MaxDist(_OneRankDist):
        def all_reduce(self, t, op=None):  # the flag's MAX over ranks: another rank stopped
            t.fill_(1.0)

    rows, stopped = run_collectives(
        ops=["all_reduce"], sizes=[64], iters=1, warmup=0, check=False, torch=torch, dist=MaxDist(), cancel=ev
    )
    assert stopped and rows == []


# ----------------------------------------------------------------- combining
def _rank_rows(op, times, size=1 << 20, wrong=0):
    return {
        "op": op,
        "placement": "out-of-place",
        "size_bytes": size,
        "asked_bytes": size,
        "count": size // 4,
        "dtype": "float",
        "redop": None,
        "times_us": times,
        "wrong": wrong,
    }


@pytest.mark.parametrize("n", [2, 3, 4])
def test_combined_busbw_is_algbw_times_the_factor(n):
    per_rank = [[_rank_rows(op, [100.0 + r, 300.0 + r]) for op in bb.OPS] for r in range(n)]
    per_rank[-1][0]["wrong"] = 3
    rows = combine(per_rank, n)
    for row in rows:
        t = (200.0 + (n - 1) / 2) * 1e-6  # the mean over the ranks of each call, then over the calls
        assert row["time_us"] == pytest.approx(t * 1e6)
        assert row["algbw_bytes_per_s"] == pytest.approx((1 << 20) / t)
        assert row["busbw_bytes_per_s"] / row["algbw_bytes_per_s"] == pytest.approx(FACTORS[row["op"]](n))
        assert row["busbw_min_bytes_per_s"] < row["busbw_median_bytes_per_s"] < row["busbw_max_bytes_per_s"]
    assert rows[0]["wrong"] == 3 and rows[0]["wrong_ranks"] == [n - 1]
    m = metrics(rows)
    assert m["wrong_count"] == 3 and m["all_reduce_busbw_at_1MiB_bytes_per_s"] == rows[0]["busbw_bytes_per_s"]
    assert plateau(rows, "all_reduce")["busbw"] == rows[0]["busbw_bytes_per_s"]


def test_a_row_a_rank_could_not_run_says_why():
    a = [_rank_rows("alltoall", [10.0])]
    b = [dict(_rank_rows("alltoall", [10.0]), error="the backend cannot run alltoall: not supported")]
    (row,) = combine([a, b], 2)
    assert "busbw_bytes_per_s" not in row and row["error"].startswith("the backend cannot run alltoall")


# ----------------------------------------------------------------- NCCL lines
RECORDED = """\
gpu-node-1:2381:2460 [0] NCCL INFO NCCL_P2P_DISABLE set by environment to 1.
gpu-node-1:2381:2460 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct
gpu-node-1:2381:2460 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via SHM/direct/direct
gpu-node-1:2381:2460 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read
gpu-node-1:2381:2460 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB eth0:10.0.0.1<0>
gpu-node-1:2381:2460 [0] NCCL INFO Channel 00/0 : 2[0] -> 0[0] [receive] via NET/IB/0/GDRDMA
gpu-node-1:2381:2460 [0] NCCL INFO Channel 00/0 : 0[0] -> 2[0] [send] via NET/Socket/1
gpu-node-1:2381:2460 [0] NCCL INFO Channel 00/1 : 0[0] -> 1[1] via NVLS
gpu-node-1:2381:2460 [0] NCCL INFO Connected all rings
"""


def test_transport_parsed_from_recorded_nccl_lines():
    t = parse_transport(RECORDED.splitlines())
    assert t["transports"] == {"SHM": 2, "P2P": 1, "NET/IB": 1, "NET/Socket": 1, "NVLS": 1}
    assert t["detail"]["P2P/CUMEM/read"] == 1 and t["detail"]["NET/IB/0/GDRDMA"] == 1
    assert t["main"] == "SHM" and t["nvls"] and t["network"].startswith("IB: [0]mlx5_0:1/IB")
    assert parse_transport(["no nccl here"])["main"] is None
    env = {"NCCL_P2P_DISABLE": "1", "NCCL_DEBUG_FILE": "/tmp/x", "PATH": "/bin"}
    assert nccl_env(env, ours=["NCCL_DEBUG_FILE"]) == {"NCCL_P2P_DISABLE": "1"}


# --------------------------------------------------------------- link verdict
class LinkNvml(FakePynvml):
    def nvmlDeviceGetNvLinkState(self, h, link):
        if link >= h.get("links", 0):
            raise self.NVMLError(self.NVML_ERROR_NOT_SUPPORTED)
        return 1

    def nvmlDeviceGetNvLinkVersion(self, h, link):
        return 6  # nvmlNvlinkVersion_t's code for NVLink 4.0, what an H100 answers


def test_verdict_pcie_class_on_an_nvlink_node_names_the_variable():
    links = read_links(Nvml(LinkNvml([fake_device(links=18, gen_max=5) for _ in range(8)])))
    assert links["nvlink_links"] == 18 and links["nvlink_version"] == "4.0" and links["gpus"] == 8
    exp = expected_link(links, hosts=1, backend="nccl")
    assert exp["kind"] == "nvlink" and exp["bytes_per_s"] == pytest.approx(450e9)
    pl = {"busbw": 21e9, "algbw": 12e9, "from_bytes": 32 << 20, "to_bytes": 128 << 20, "placement": "out-of-place"}
    transport = parse_transport(RECORDED.splitlines()[:3])
    v = link_verdict("all_reduce", pl, exp, links, transport, {"NCCL_P2P_DISABLE": "1"})
    print(v["message"])
    assert v["status"] == "warn"
    assert v["message"].startswith("all_reduce plateaus at 21.0 GB/s busbw, 5% of NVLink 4.0 × 18 links")
    assert "PCIe-class on a node with NVLink: NCCL_P2P_DISABLE=1 is set; NCCL used SHM" in v["message"]
    good = link_verdict("all_reduce", dict(pl, busbw=380e9), exp, links, {"main": "P2P"}, {})
    assert good["status"] == "ok" and "84% of NVLink 4.0 × 18 links" in good["message"]


def test_verdict_pcie_node_and_gloo():
    links = read_links(Nvml(LinkNvml([fake_device(gen_max=4, width_max=16)])))
    exp = expected_link(links, backend="nccl")
    assert exp["name"] == "PCIe gen4 x16" and exp["bytes_per_s"] == pytest.approx(31.5e9, rel=0.01)
    pl = {"busbw": 5e9, "algbw": 3e9, "from_bytes": 1 << 20, "to_bytes": 4 << 20, "placement": "in-place"}
    v = link_verdict("all_reduce", pl, exp, links, None, {})
    assert v["status"] == "warn" and "network- or socket-class" in v["message"] and "may still rise" in v["message"]
    assert expected_link(links, backend="gloo") is None
    g = link_verdict("all_reduce", pl, None, {}, backend="gloo")
    assert g["status"] is None and "no GPU link to compare with" in g["message"]


# ------------------------------------------------------- result, plot, compare
def _result(scale=1.0, n=3):
    from nbbench.results.system.collectives import CollectivesResult

    sizes = [1 << 10, 1 << 14, 1 << 18, 1 << 20]
    per_rank = [
        [
            dict(_rank_rows(op, [s / 1e3 / scale, s / 1.1e3 / scale], size=s), asked_bytes=s)
            for op in bb.OPS
            for s in sizes
        ]
        for _ in range(n)
    ]
    rows = combine(per_rank, n)
    res = CollectivesResult(params={"dtype": "float", "redop": "sum"}, labels={"ranks": n, "backend": "gloo"})
    res.samples["rows"] = rows
    res.metrics.update(metrics(rows))
    res.extra["verdicts"] = [{"check": "correctness", "status": "ok", "message": "0 wrong"}]
    return res.finish()


def test_result_round_trips_shows_its_table_and_draws(tmp_path):
    res = _result()
    back = Result.from_dict(json.loads(res.to_json()))
    assert type(back).__name__ == "CollectivesResult" and back.rows == res.rows and back.verdict == "ok"
    text = back.text_table()
    assert "nccl-tests table" in text and "in-place µs" in text and "all_reduce" in text
    from nbbench.plots.gpunode import busbw_png

    png = busbw_png(back)
    assert png[:4] == b"\x89PNG"


def test_the_plot_draws_the_expected_link_and_the_report_shows_it(tmp_path):
    from nbbench.exporters.html import export
    from nbbench.plots.gpunode import busbw_figure

    res = _result()
    res.labels["backend"] = "nccl"
    res.extra["expected_link"] = {"kind": "nvlink", "name": "NVLink 4.0 × 18 links", "bytes_per_s": 450e9}
    fig = busbw_figure(res)
    texts = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "NVLink 4.0 × 18 links: 450 GB/s one way" in texts and "all_reduce (out-of-place)" in texts
    dashed = [ln for ln in fig.axes[0].get_lines() if ln.get_linestyle() == "--"]
    assert len(dashed) == 1 and dashed[0].get_ydata()[0] == pytest.approx(450.0)
    from nbbench.report import build
    from nbbench.store import Store

    data = build(runs=[res], run_doctor=False, store=Store(str(tmp_path / "s.db")), compare_runs=False)
    html = export(data)
    assert "nccl-tests table" in html and "collectives float sum ×3 ranks samples" in html  # the plot's img


def test_compare_sees_busbw_per_size_beyond_the_noise():
    from nbbench.compare.build import compare

    a = [_result(1.0 + 0.01 * i) for i in range(3)]
    b = [_result(0.5 + 0.01 * i) for i in range(3)]  # half the speed
    cmp = compare([a, b])
    (g,) = cmp.groups
    assert "all_reduce_busbw_at_1MiB_bytes_per_s" in g.metrics
    ri = g.interval("all_reduce_busbw_at_1MiB_bytes_per_s", 1)
    assert ri is not None and ri.ratio == pytest.approx(0.5, rel=0.05)
    names = g.names
    assert (
        f"{names[1]}'s all_reduce busbw is 50 % below {names[0]}'s at every size (1KiB to 1MiB), beyond the noise"
        in (g.notes)
    )


def test_size_note_from_the_size_the_change_starts():
    from nbbench.compare.build import compare

    def slow_above(res, from_bytes, factor):
        for k in list(res.metrics):
            if "_busbw_at_" in k:
                tag = k.split("_busbw_at_")[1].split("_bytes")[0]
                from nbbench.compare.sizes import tag_bytes

                if tag_bytes(tag) >= from_bytes:
                    res.metrics[k] *= factor
        return res

    a = [_result(1.0 + 0.01 * i) for i in range(3)]
    b = [slow_above(_result(1.0 + 0.01 * i), 1 << 18, 0.59) for i in range(3)]
    (g,) = compare([a, b]).groups
    want = f"{g.names[1]}'s all_reduce busbw is 41 % below {g.names[0]}'s at 256KiB and above, beyond the noise"
    assert want in g.notes, g.notes
    a2 = [_result(1.0 + 0.01 * i) for i in range(3)]
    (g2,) = compare([a, a2]).groups
    assert not [n for n in g2.notes if "beyond the noise" in n]  # the same speed: nothing said


# ------------------------------------------------------------------- command
def test_command_takes_nccl_tests_option_names():
    from nbbench.commands import Context, parse

    inv = parse(
        [
            "collectives",
            "-b",
            "1K",
            "-e",
            "1M",
            "-f",
            "4",
            "-n",
            "3",
            "-w",
            "1",
            "-c",
            "0",
            "-o",
            "max",
            "-d",
            "bfloat16",
            "--ops",
            "all_reduce,alltoall",
        ],
        Context(),
    )
    a = inv.args
    assert (a.minbytes, a.maxbytes, a.stepfactor, a.iters, a.warmup, a.check) == (1024, 1 << 20, 4, 3, 1, 0)
    assert (a.redop, a.dtype, a.ops) == ("max", "bfloat16", ["all_reduce", "alltoall"])
    long = parse(
        [
            "collectives",
            "--minbytes",
            "8",
            "--maxbytes",
            "64",
            "--stepfactor",
            "2",
            "--iters",
            "2",
            "--warmup_iters",
            "0",
            "--check",
            "1",
            "--op",
            "min",
            "--datatype",
            "int32",
        ],
        Context(),
    )
    assert (long.args.redop, long.args.dtype, long.args.warmup) == ("min", "int32", 0)


def test_in_a_notebook_o_returns_the_result_and_the_reduction_is_op():
    from nbbench.commands import Context, parse

    ctx = Context(prog="%iobench", returns_result=True)
    inv = parse(["collectives", "--ranks", "2", "-o", "--op", "max"], ctx)
    assert inv.args.return_result is True and inv.args.redop == "max"


def test_command_without_ranks_says_how_to_run_it():
    from nbbench.commands import Context, execute, parse

    inv = parse(["collectives", "--no-save", "--no-dist"], Context())
    with pytest.raises(ProbeError, match="collectives run on ranks: add --ranks N"):
        execute(inv, Context())


# ---------------------------------------------------------------- real ranks
@pytest.mark.slow
def test_three_gloo_ranks_table_and_factors():
    out = run_nbbench(
        "collectives", "--ranks", "3", "-b", "1K", "-e", "16K", "-n", "3", "-w", "1", "--json", "--no-save", timeout=240
    )
    assert out.returncode == 0, out.stderr[-3000:]
    res = json.loads(out.stdout)
    assert res["kind"] == "collectives" and res["status"] == "ok" and res["verdict"] == "ok"
    assert res["labels"]["ranks"] == 3 and res["labels"]["backend"] == "gloo"
    rows = [r for r in res["samples"]["rows"] if "busbw_bytes_per_s" in r]
    assert {r["op"] for r in rows} == set(bb.OPS)
    for r in rows:
        assert r["busbw_bytes_per_s"] / r["algbw_bytes_per_s"] == pytest.approx(FACTORS[r["op"]](3))
        assert r["wrong"] == 0
    assert res["metrics"]["wrong_count"] == 0
    assert "torch.distributed has no out-of-place all_reduce" in res["extra"]["missing_forms"]
    assert res["labels"]["sizes"] == "1.00 KiB … 16.0 KiB ×2"  # -e given: no CPU note


@pytest.mark.slow
def test_a_wrong_value_on_one_rank_is_caught():
    out = run_nbbench(
        "collectives",
        "--ranks",
        "2",
        "-b",
        "1K",
        "-e",
        "2K",
        "-n",
        "2",
        "-w",
        "0",
        "--ops",
        "all_reduce,all_gather",
        "--inject-wrong",
        "1",
        "--json",
        "--no-save",
        timeout=240,
    )
    assert out.returncode == 3, out.stderr[-3000:]  # a check failed
    res = json.loads(out.stdout)
    assert res["verdict"] == "fail" and res["metrics"]["wrong_count"] > 0
    rows = [r for r in res["samples"]["rows"] if "wrong" in r]
    assert all(r["wrong"] == 1 and r["wrong_ranks"] == [1] for r in rows)
    (c,) = [v for v in res["extra"]["verdicts"] if v["check"] == "correctness"]
    assert c["status"] == "fail" and "rank(s) 1" in c["message"]


def test_rank_zero_builds_the_nccl_result_transport_links_and_verdicts(monkeypatch):
    """The NCCL path of rank 0's aggregate, from synthetic per-rank records (no GPU here): the transport
    every rank parsed merged, the expected link from NVML (faked), a verdict per op and the check's."""
    from nbbench.ranks import colljobs
    from nbbench.ranks.colljobs import CollectivesJob
    from nbbench.ranks.rank import build_result

    fake_links = {"gpus": 8, "nvlink_links": 18, "nvlink_version": "4.0", "pcie_gen_max": 5, "pcie_width_max": 16}
    monkeypatch.setattr(colljobs, "read_links", lambda nv=None: dict(fake_links))
    n, size = 8, 128 << 20
    t_fast = size / (380e9 / bb.bus_factor("all_reduce", n)) * 1e6  # µs giving 380 GB/s busbw
    records = []
    for r in range(n):
        rows = [
            dict(_rank_rows("all_reduce", [t_fast, t_fast], size=size), placement="in-place", redop="sum"),
            dict(_rank_rows("all_gather", [t_fast * 40, t_fast * 40], size=size)),
        ]
        transport = parse_transport(RECORDED.splitlines()[3:4])  # P2P/CUMEM on every rank
        records.append(
            {
                "rank": r,
                "host": "gpu-node-1",
                "status": "ok",
                "metrics": {},
                "tracks": {},
                "result": {
                    "kind": "collectives",
                    "params": {"backend": "nccl"},
                    "samples": {"rows": rows},
                    "extra": {"transport": transport, "nccl_env": {"NCCL_P2P_DISABLE": "1"}},
                },
            }
        )
    job = CollectivesJob({"backend": "nccl", "ops": ["all_reduce", "all_gather"], "ladder": "8 B … 128 MiB ×2"})
    res = build_result(job, records, None, "nccl", launcher="test")
    assert res.extra["transport"]["main"] == "P2P" and res.extra["transport"]["transports"] == {"P2P": 8}
    assert res.extra["expected_link"]["name"] == "NVLink 4.0 × 18 links"
    v = {x["check"]: x for x in res.extra["verdicts"]}
    assert (
        v["all_reduce busbw vs link"]["status"] == "ok"
        and "84% of NVLink 4.0 × 18 links" in v["all_reduce busbw vs link"]["message"]
    )
    slow = v["all_gather busbw vs link"]
    assert slow["status"] == "warn" and "NCCL_P2P_DISABLE=1 is set" in slow["message"]
    assert v["correctness"]["status"] == "ok" and res.verdict == "warn"
    assert res.labels["sizes"] == "8 B … 128 MiB ×2" and res.labels["ranks"] == 8
    assert "NCCL used P2P (channels: P2P 8)." in res.story()


def test_nccl_without_a_gpu_is_one_line_before_any_rank_starts():
    from nbbench.ranks.colljobs import CollectivesJob

    if torch.cuda.is_available():
        pytest.skip("a GPU is visible here")
    with pytest.raises(ProbeError) as e:
        CollectivesJob({"backend": "nccl"}).local_checks(2)
    assert str(e.value) == "no GPU visible: --backend nccl needs a GPU per rank (use --backend gloo on CPU)"
    CollectivesJob({"backend": "gloo"}).local_checks(2)  # gloo: nothing to check


@pytest.mark.parametrize("code,name,gbps", [(5, "3.1", 25.0), (6, "4.0", 25.0), (7, "5.0", 50.0), (99, None, None)])
def test_nvlink_version_is_read_from_nvmls_code(code, name, gbps):
    """nvmlDeviceGetNvLinkVersion answers a code of nvmlNvlinkVersion_t (an A100 says 5 for NVLink 3.1):
    read as a version number, an H100's 6 would have missed the table and been judged against PCIe."""

    class Coded(LinkNvml):
        def nvmlDeviceGetNvLinkVersion(self, h, link):
            return code

    links = read_links(Nvml(Coded([fake_device(links=12, gen_max=4) for _ in range(2)])))
    assert links["nvlink_version"] == name
    exp = expected_link(links, hosts=1, backend="nccl")
    if gbps is None:
        assert exp["kind"] == "pcie"
    else:
        assert exp["kind"] == "nvlink" and exp["bytes_per_s"] == gbps * 12 * 1e9
        assert f"NVLink {name} × 12 links" == exp["name"]


def test_a_check_that_would_only_see_overflow_is_refused_before_any_rank_starts():
    """int8 with -o prod over 8 ranks reaches 2^8: the check would call every element wrong. Refused in one
    line naming a way out; 4 ranks (16), or -c 0, or a wider type run."""
    from nbbench.probes.gpunode.busbw import check_exact
    from nbbench.ranks.jobs import job_for

    with pytest.raises(ProbeError, match=r"-d int8 -o prod over 8 ranks: results reach 256, past the 127"):
        job_for("collectives", {"dtype": "int8", "redop": "prod", "check": 1}).local_checks(8)
    job_for("collectives", {"dtype": "int8", "redop": "prod", "check": 1}).local_checks(4)
    job_for("collectives", {"dtype": "int8", "redop": "prod", "check": 0}).local_checks(8)
    assert check_exact("int32", "prod", 8) is None and check_exact("bfloat16", "sum", 86) is not None
    assert check_exact("bfloat16", "sum", 85) is None and check_exact("uint8", "max", 1000) is None
