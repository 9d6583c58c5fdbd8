import json
import subprocess
import sys

from fakes import FakePynvml, FakeTorch, fake_device

from nbbench.nvml import NAValue, Nvml
from nbbench.probes.gpu import check, cuda_version_str, parse_version


def statuses(res):
    return {v["check"]: v["status"] for v in res.verdicts}


def test_gpu_present_all_fits():
    res = check(torch=FakeTorch(), nvml=Nvml(FakePynvml()), benchmark=False, env={})
    assert res.available and res.reason is None
    assert res.metrics["device_count"] == 1
    d = res.devices[0]
    assert d["name"] == "NVIDIA H100 80GB HBM3" and d["compute_capability"] == "9.0"
    assert d["pcie_gen"] == 5 and d["pcie_width"] == 16 and d["mig_mode"] is False
    assert d["memory_free_bytes"] == 70 * 2**30  # torch's mem_get_info wins over NVML
    assert res.versions["driver"] == "550.54.15" and res.versions["driver_cuda"] == "12.4"
    assert res.versions["cudnn"] == 90100
    st = statuses(res)
    assert st["torch build"] == "ok" and st["driver"] == "ok"
    assert st["CUDA version fit"] == "warn"  # 12.8 build on a 12.4 driver: minor-version compatibility


def test_driver_too_old_for_the_build():
    res = check(
        torch=FakeTorch(cuda="12.8", available=False), nvml=Nvml(FakePynvml(cuda=12020)), benchmark=False, env={}
    )
    assert not res.available
    assert "built for CUDA 12.8 but the driver supports up to 12.2" in res.reason
    assert "update the driver or install a torch built for 12.2" in res.reason
    assert statuses(res)["CUDA version fit"] == "fail"


def test_major_version_mismatch_fails_even_if_cuda_reports_available():
    res = check(torch=FakeTorch(cuda="13.0"), nvml=Nvml(FakePynvml(cuda=12040)), benchmark=False, env={})
    assert statuses(res)["CUDA version fit"] == "fail"


def test_cpu_only_build():
    res = check(torch=FakeTorch(version="2.13.0+cpu", cuda=None), nvml=Nvml(FakePynvml()), benchmark=False, env={})
    assert not res.available and "CPU-only build" in res.reason
    assert res.to_dict()["available"] is False


def test_torch_missing():
    res = check(torch=None, nvml=Nvml(FakePynvml()), benchmark=False, env={})
    assert not res.available and res.reason.startswith("torch is not installed")


def test_no_driver():
    res = check(torch=FakeTorch(available=False), nvml=Nvml(FakePynvml(init_error=12)), benchmark=False, env={})
    assert not res.available and "no NVIDIA driver" in res.reason
    assert "libnvidia-ml.so" in next(v for v in res.verdicts if v["check"] == "driver")["message"]


def test_cuda_visible_devices_hides_all():
    res = check(
        torch=FakeTorch(available=False, devices=0),
        nvml=Nvml(FakePynvml()),
        benchmark=False,
        env={"CUDA_VISIBLE_DEVICES": ""},
    )
    assert not res.available and "CUDA_VISIBLE_DEVICES" in res.reason


def test_narrow_pcie_and_mig_are_warned():
    nv = FakePynvml(devices=[fake_device(width=4, width_max=16, mig=1)])
    res = check(torch=FakeTorch(), nvml=Nvml(nv), benchmark=False, env={})
    st = statuses(res)
    assert st["PCIe link [0]"] == "warn" and st["MIG [0]"] == "warn"
    assert "x4 lanes of x16" in next(v["message"] for v in res.verdicts if v["check"] == "PCIe link [0]")


def test_unsupported_nvml_values_are_na_not_errors():
    nv = FakePynvml(unsupported={"pcie", "power", "util", "mig"})
    res = check(torch=FakeTorch(), nvml=Nvml(nv), benchmark=False, env={})
    d = res.devices[0]
    assert d["pcie_width"] is None and d["power_w"] is None and d["utilization_pct"] is None
    assert res.available


def test_benchmark_arithmetic_with_fake_events():
    # each event record advances the fake clock 2 ms: every timed op takes 2 ms
    res = check(
        torch=FakeTorch(step_ms=2.0),
        nvml=Nvml(FakePynvml()),
        benchmark=True,
        env={},
        matmul_size=1000,
        copy_bytes=10**8,
        repeats=5,
    )
    assert abs(res.metrics["matmul_fp32_flop_per_s"] - 2 * 1000**3 / 2e-3) < 1
    assert abs(res.metrics["matmul_bf16_flop_per_s"] - 1e12) < 1
    assert abs(res.metrics["h2d_pinned_bytes_per_s"] - 10**8 / 2e-3) < 1
    assert len(res.samples["matmul_tf32_ms"]) == 5
    assert "TFLOP/s" in str(res)


def test_nvml_wrapper_turns_errors_into_na_with_hint():
    nv = Nvml(FakePynvml(unsupported={"power"}))
    v = nv.call("nvmlDeviceGetPowerUsage", fake_device())
    assert isinstance(v, NAValue) and not v and str(v) == "N/A"
    assert "does not report" in v.hint
    missing = Nvml(FakePynvml(init_error=12)).call("nvmlDeviceGetCount")
    assert isinstance(missing, NAValue) and "libnvidia-ml" in missing.hint
    assert isinstance(nv.call("nvmlNoSuchFunction"), NAValue)


def test_versions_helpers():
    assert cuda_version_str(12020) == "12.2" and cuda_version_str(13000) == "13.0"
    assert parse_version("2.7.0+cu128") == (2, 7, 0) and parse_version("12.8") == (12, 8)


def test_real_machine_without_gpu_cli_json():
    """The absent path for real: this machine has no GPU (or CI's).  The check ran (status
    ok); CUDA not usable is its verdict, fail, and the exit code 3 says so."""
    out = subprocess.run(
        [sys.executable, "-m", "nbbench", "gpu", "--json", "--no-save"], capture_output=True, text=True, timeout=120
    )
    data = json.loads(out.stdout)
    assert data["kind"] == "gpu" and data["status"] == "ok", out.stderr
    if not data["available"]:
        assert data["reason"] and data["metrics"]["device_count"] == 0
        assert data["verdict"] == "fail" and out.returncode == 3, out.stderr
    else:
        assert out.returncode == (3 if data["verdict"] == "fail" else 0), out.stderr


def test_torch_devices_get_the_nvml_facts_of_the_same_gpu():
    """CUDA_VISIBLE_DEVICES=1 makes NVML's GPU 1 torch's device 0: its NVML facts (name, PCIe
    link, memory) are matched by PCI address, not by index; NVML's other GPU follows, marked
    not visible to CUDA, and the device count is the GPUs torch can use."""
    nv = FakePynvml(
        devices=[
            fake_device(name="NVIDIA A100-SXM4-80GB", gen=4, gen_max=4, pci=(0, 0x07, 0)),
            fake_device(name="NVIDIA H100 80GB HBM3", width=8, pci=(0, 0x4F, 0)),
        ]
    )
    torch = FakeTorch(devices=1, props={0: {"pci_domain_id": 0, "pci_bus_id": 0x4F, "pci_device_id": 0}})
    res = check(torch=torch, nvml=Nvml(nv), benchmark=False, env={"CUDA_VISIBLE_DEVICES": "1"})
    first, other = res.devices
    assert first["index"] == 0 and first["nvml_index"] == 1
    assert first["name"] == "NVIDIA H100 80GB HBM3" and first["pcie_gen"] == 5 and first["pcie_width"] == 8
    assert "cuda_visible" not in first
    assert other["nvml_index"] == 0 and other["cuda_visible"] is False and other["name"] == "NVIDIA A100-SXM4-80GB"
    assert res.metrics["device_count"] == 1 and res.labels["device"] == "NVIDIA H100 80GB HBM3"
    # the x8 link warned is the H100's, the GPU torch uses
    assert "H100" in next(v["message"] for v in res.verdicts if v["check"] == "PCIe link [0]")


def test_without_pci_or_uuid_a_reordered_gpu_gets_no_nvml_facts():
    """Where nothing can be compared (no PCI address, no UUID) and CUDA_VISIBLE_DEVICES is set,
    NVML's GPU 0 is not taken for torch's device 0: the facts stay torch's."""
    nv = FakePynvml(devices=[fake_device(name="NVIDIA A100-SXM4-80GB"), fake_device(name="NVIDIA L4")])
    res = check(torch=FakeTorch(devices=1), nvml=Nvml(nv), benchmark=False, env={"CUDA_VISIBLE_DEVICES": "1"})
    d = res.devices[0]
    assert d["name"] == "NVIDIA H100 80GB HBM3" and d.get("pcie_gen") is None and "nvml_index" not in d
    assert [x.get("cuda_visible") for x in res.devices[1:]] == [False, False]
