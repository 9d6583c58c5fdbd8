"""GPU health under load through NVML fakes: one fake per finding (a power-capped clock, a Gen4 x16 link
at Gen1 x4 under load, a pending row remap, an Xid during the run, MIG on, NVLink down, fabric manager
not started, a lowered power limit, uncorrected ECC) and a healthy GPU; the findings gate the gpu check's
verdict; copies with a fake torch; "no GPU visible" in one line."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest
from fakes import FakePynvml, FakeTorch, NVMLError, fake_device

from nbbench.nvml import Nvml
from nbbench.probes.gpunode.health import as_verdicts, read_health
from nbbench.results import ProbeError


class HealthNvml(FakePynvml):
    """FakePynvml with the calls the health read makes; ``loaded`` while the test's load runs."""

    NVML_ERROR_TIMEOUT = 10

    def __init__(self, devices, **kw):
        super().__init__(devices=devices, **kw)
        self.forced = False
        self.events: list = []
        self.during_load: list = []

    @property
    def loaded(self) -> bool:
        """Under load: while the test's load runs, or the health read's load thread (a fake torch's matmuls)."""
        return self.forced or any(t.name == "nbbench-gpu-load" and t.is_alive() for t in threading.enumerate())

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h):
        return h.get("gen_load", h["gen_max"]) if self.loaded else 1  # idle: trained down

    def nvmlDeviceGetCurrPcieLinkWidth(self, h):
        return h.get("width_load", h["width_max"]) if self.loaded else h["width_max"]

    def nvmlDeviceGetCurrentClocksEventReasons(self, h):
        return h.get("reasons", 0) if self.loaded else 0x1  # idle

    def nvmlDeviceGetTotalEccErrors(self, h, kind, counter):
        return h.get("ecc_unc", 0)

    def nvmlDeviceGetRemappedRows(self, h):
        return h.get("remap", (0, 0, 0, 0))

    def nvmlDeviceGetPersistenceMode(self, h):
        return h.get("persistence", 1)

    def nvmlDeviceGetNvLinkState(self, h, link):
        states = h.get("nvlink", [1] * 18)
        if link >= len(states):
            raise NVMLError(self.NVML_ERROR_NOT_SUPPORTED)
        return states[link]

    def nvmlDeviceGetNvLinkVersion(self, h, link):
        return 4

    def nvmlDeviceGetNvLinkErrorCounter(self, h, link, counter):
        return h.get("nvlink_errors", {}).get((link, counter), 0)

    def nvmlDeviceGetGpuFabricInfo(self, h):
        return SimpleNamespace(state=h.get("fabric", 3), status=0)

    def nvmlDeviceGetPowerManagementLimit(self, h):
        return h.get("limit_mw", 700000)

    def nvmlDeviceGetPowerManagementDefaultLimit(self, h):
        return 700000

    def nvmlEventSetCreate(self):
        return "set"

    def nvmlDeviceRegisterEvents(self, h, kind, es):
        pass

    def nvmlEventSetWait_v2(self, es, timeout_ms):
        if not self.events:
            raise NVMLError(self.NVML_ERROR_TIMEOUT)
        return self.events.pop(0)

    def nvmlEventSetFree(self, es):
        pass


def _load(fake, seconds_seen=None):
    def run(seconds):
        fake.forced = True
        fake.events += fake.during_load
        time.sleep(seconds)
        fake.forced = False

    return run


def _health(**dev):
    fake = HealthNvml([fake_device(gen=4, gen_max=4, width=16, width_max=16, **dev)])
    return fake, read_health(Nvml(fake), load=_load(fake), seconds=0.6, interval=0.1)


def _by(h, check):
    return [f for f in h["findings"] if f["check"] == check]


def _print(title, h):
    print(f"--- {title}")
    for f in h["findings"]:
        if f["status"] not in (None, "ok"):
            print(f"  {f['status'].upper():4} GPU {f['gpu']} {f['check']}: {f['message']} — fix: {f['fix']}")


def test_healthy_gpu_every_finding_ok():
    _fake, h = _health()
    _print("healthy", h)
    assert h["loaded"] and h["gpus"] == 1
    judged = [f for f in h["findings"] if f["status"] is not None]
    assert {f["check"] for f in judged} >= {
        "clocks under load",
        "PCIe link under load",
        "ECC",
        "row remapping",
        "persistence mode",
        "MIG",
        "NVLink",
        "fabric manager",
        "power limit",
        "Xid during the run",
    }
    assert all(f["status"] == "ok" for f in judged), [f for f in judged if f["status"] != "ok"]
    assert _by(h, "PCIe link under load")[0]["message"] == "Gen4 x16 under load, maximum Gen4 x16"


def test_power_capped_clock():
    _fake, h = _health(reasons=0x4, limit_mw=700000)
    _print("power cap", h)
    f = [x for x in _by(h, "clocks under load") if x["status"] != "ok"]
    assert len(f) == 1 and f[0]["status"] == "warn" and "power cap" in f[0]["message"]
    assert "700 W" in f[0]["message"] and "nvidia-smi -pl" in f[0]["fix"]


def test_hw_slowdown_fails():
    _fake, h = _health(reasons=0x8 | 0x40)
    statuses = {x["message"]: x["status"] for x in _by(h, "clocks under load")}
    assert set(statuses.values()) == {"fail"} and len(statuses) == 2


def test_link_trained_down_under_load_fails():
    _fake, h = _health(gen_load=1, width_load=4)
    _print("Gen4 x16 at Gen1 x4", h)
    (f,) = _by(h, "PCIe link under load")
    assert f["status"] == "fail" and f["message"] == "Gen1 x4 under load, maximum Gen4 x16" and "reseat" in f["fix"]


def test_link_idle_is_not_judged():
    fake = HealthNvml([fake_device(gen=4, gen_max=4)])
    h = read_health(Nvml(fake), load=None)
    (f,) = _by(h, "PCIe link under load")
    assert f["status"] is None and "not judged" in f["message"]  # Gen1 at idle is no fault


def test_pending_remap():
    _fake, h = _health(remap=(2, 1, 1, 0))
    _print("pending remap", h)
    (f,) = _by(h, "row remapping")
    assert f["status"] == "warn" and "pending" in f["message"] and "reset" in f["fix"]
    _fake, h = _health(remap=(0, 0, 0, 1))
    assert _by(h, "row remapping")[0]["status"] == "fail"


def test_xid_during_the_run():
    fake = HealthNvml([fake_device(gen=4, gen_max=4)])
    dev = fake.devices[0]
    fake.during_load = [SimpleNamespace(eventData=79, device=dev)]
    h = read_health(Nvml(fake), load=_load(fake), seconds=0.3, interval=0.1)
    _print("Xid during the run", h)
    (f,) = _by(h, "Xid during the run")
    assert f["status"] == "fail" and f["gpu"] == 0 and "Xid 79 (GPU fell off the bus)" in f["message"]


def test_mig_on():
    _fake, h = _health(mig=1)
    _print("MIG on", h)
    (f,) = _by(h, "MIG")
    assert f["status"] == "warn" and "MIG is on" in f["message"]


def test_nvlink_down_errors_fabric_power_ecc_persistence():
    errs = {(0, 2): 5}
    _fake, h = _health(
        nvlink=[1, 0] + [1] * 16,
        nvlink_errors=errs,
        fabric=1,
        limit_mw=400000,
        ecc_unc=3,
        persistence=0,
    )
    _print("NVLink down, errors, fabric manager, power limit, ECC, persistence", h)
    got = {f["check"]: f for f in h["findings"] if f["status"] not in (None, "ok")}
    assert got["NVLink"]["status"] == "fail" and "1 down" in got["NVLink"]["message"].replace(
        "link(s) 1 down", "1 down"
    )
    assert got["NVLink errors"]["status"] == "warn" and "5 CRC flit" in got["NVLink errors"]["message"]
    assert got["fabric manager"]["status"] == "fail" and "nvidia-fabricmanager" in got["fabric manager"]["fix"]
    assert got["power limit"]["status"] == "warn" and "400 W" in got["power limit"]["message"]
    assert got["ECC"]["status"] == "fail" and got["persistence mode"]["status"] == "warn"


def test_findings_gate_the_gpu_check():
    from nbbench.probes.gpu import check

    fake = HealthNvml([fake_device(gen=4, gen_max=4, remap=(0, 0, 1, 0))])
    res = check(torch=FakeTorch(), nvml=Nvml(fake), benchmark=False, health=True, health_seconds=0.3)
    health = {v["check"]: v["status"] for v in res.verdicts if v["check"].startswith("health: ")}
    assert health.pop("health: row remapping [0]") == "warn"
    assert set(health.values()) == {"ok"}, health  # the load ran on the fake GPU: clocks and link judged
    assert "health: PCIe link under load [0]" in health
    assert res.verdict == "warn"
    bad = HealthNvml([fake_device(gen=4, gen_max=4, gen_load=1, width_load=4)])
    res = check(torch=FakeTorch(cuda="12.4"), nvml=Nvml(bad), benchmark=False, health=True, health_seconds=0.3)
    assert res.verdict == "fail"  # the link trained down under load fails the check (exit code 3)
    assert as_verdicts({"findings": [{"gpu": None, "check": "x", "status": None, "message": "m"}]}) == []


def test_no_gpu_visible_in_one_line():
    fake = FakePynvml(init_error=FakePynvml.NVML_ERROR_LIBRARY_NOT_FOUND)
    h = read_health(Nvml(fake))
    (f,) = h["findings"]
    assert f["message"].startswith("no GPU visible: ") and "\n" not in f["message"]
    from nbbench.probes.gpunode.copies import need_gpu

    with pytest.raises(ProbeError) as e:
        need_gpu(FakeTorch(available=False, cuda=None))
    assert str(e.value).startswith("no GPU visible: a CPU-only build of torch") and "\n" not in str(e.value)


def test_copies_with_a_fake_torch_two_gpus():
    from nbbench.probes.gpunode.copies import copies

    t = FakeTorch(devices=2, step_ms=2.0)
    t.uint8 = "uint8"
    res = copies(torch=t, nbytes=1 << 20, p2p_bytes=1 << 20, iters=3)
    m = res.metrics
    for k in ("h2d_pageable", "h2d_pinned", "d2h_pageable", "d2h_pinned"):
        assert m[f"{k}_bytes_per_s"] == pytest.approx((1 << 20) / 2e-3)  # the fake clock: 2 ms a copy
    mx = res.extra["matrix"]
    assert [[v is None for v in row] for row in mx["bw"]] == [[True, False], [False, True]]
    assert mx["lat_us"][0][1] == pytest.approx(2000.0)
    assert "GPU 0 → GPU 1" in res.text_table() and "through host memory" in res.text_table()
    back = type(res).from_dict(res.to_dict())
    assert back.extra["matrix"] == mx and back.kind == "copies"
    fig = res.figure()
    assert fig is not None
