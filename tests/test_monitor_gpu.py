"""The NVML GPU source against a fake pynvml injected at the wrapper, and the real no-NVML path."""

import time
from types import SimpleNamespace

import pytest

from nbbench.monitor import Monitor
from nbbench.monitor.gpu import NvmlGpuSource
from nbbench.nvml import Nvml


class FakeNVMLError(Exception):
    NAMES = {3: "Not Supported", 6: "Not Found", 12: "NVML Shared Library Not Found", 15: "GPU is lost"}

    def __init__(self, value):
        super().__init__(value)
        self.value = value

    def __str__(self):
        return self.NAMES.get(self.value, f"error {self.value}")


class _Metric:
    def __init__(self):
        self.metricId = 0
        self.nvmlReturn = 0
        self.value = 0.0


class _MetricsGet:
    def __init__(self):
        self.version = 0
        self.numMetrics = 0
        self.sample1 = None
        self.sample2 = None
        self.metrics = [_Metric() for _ in range(4)]


class FakeNvml:
    """Enough of pynvml for the GPU source; a per-device driver timeline of utilisation samples."""

    NVML_SUCCESS = 0
    NVML_ERROR_NOT_SUPPORTED = 3
    NVML_ERROR_NOT_FOUND = 6
    NVML_ERROR_LIBRARY_NOT_FOUND = 12
    NVML_ERROR_GPU_IS_LOST = 15
    NVML_GPU_UTILIZATION_SAMPLES = 1
    NVML_MEMORY_UTILIZATION_SAMPLES = 2
    NVML_TEMPERATURE_GPU = 0
    NVML_CLOCK_SM = 1
    NVML_PCIE_UTIL_TX_BYTES = 0
    NVML_PCIE_UTIL_RX_BYTES = 1
    NVML_GPM_METRICS_GET_VERSION = 1
    NVML_GPM_METRIC_SM_UTIL = 2
    NVML_GPM_METRIC_SM_OCCUPANCY = 3
    c_nvmlGpmMetricsGet_t = _MetricsGet

    def __init__(self, n=1, unsupported=(), gpm=False, mig=False, init_error=None, lost=()):
        self.n = n
        self.unsupported = set(unsupported)
        self.gpm = gpm
        self.mig = mig
        self.init_error = init_error
        self.lost = set(lost)
        self.calls = {}
        self.timeline = {(i, k): [] for i in range(n) for k in (1, 2)}
        self.rates = [SimpleNamespace(gpu=37, memory=12)]
        self.freed = 0
        self.mem_used = 5 * 2**30

    def _enter(self, fn, handle=None):
        self.calls[fn] = self.calls.get(fn, 0) + 1
        if fn in self.unsupported:
            raise FakeNVMLError(3)
        if handle is not None and handle[1] in self.lost:
            raise FakeNVMLError(15)

    def nvmlInit(self):
        if self.init_error is not None:
            raise FakeNVMLError(self.init_error)

    def nvmlShutdown(self):
        pass

    def nvmlDeviceGetCount(self):
        return self.n

    def nvmlDeviceGetHandleByIndex(self, i):
        return ("h", i)

    def nvmlDeviceGetName(self, h):
        return b"NVIDIA H100 80GB HBM3"

    def nvmlDeviceGetMemoryInfo(self, h):
        self._enter("nvmlDeviceGetMemoryInfo", h)
        return SimpleNamespace(used=self.mem_used, total=80 * 2**30, free=80 * 2**30 - self.mem_used)

    def nvmlDeviceGetMigMode(self, h):
        self._enter("nvmlDeviceGetMigMode", h)
        return (1, 1) if self.mig else (0, 0)

    def push(self, dev, ts, value, kind=1):
        self.timeline[(dev, kind)].append((ts, value))

    def nvmlDeviceGetSamples(self, h, kind, last_ts):
        self._enter("nvmlDeviceGetSamples", h)
        out = [
            SimpleNamespace(timeStamp=ts, sampleValue=SimpleNamespace(uiVal=v))
            for ts, v in self.timeline[(h[1], kind)]
            if ts > last_ts
        ]
        if not out:
            raise FakeNVMLError(6)
        return (1, out)

    def nvmlDeviceGetUtilizationRates(self, h):
        self._enter("nvmlDeviceGetUtilizationRates", h)
        return self.rates.pop(0) if len(self.rates) > 1 else self.rates[0]

    def nvmlDeviceGetPowerUsage(self, h):
        self._enter("nvmlDeviceGetPowerUsage", h)
        return 251_500

    def nvmlDeviceGetTemperature(self, h, sensor):
        self._enter("nvmlDeviceGetTemperature", h)
        return 61

    def nvmlDeviceGetClockInfo(self, h, which):
        self._enter("nvmlDeviceGetClockInfo", h)
        return 1980

    def nvmlDeviceGetPcieThroughput(self, h, counter):
        self._enter("nvmlDeviceGetPcieThroughput", h)
        time.sleep(0.002)
        return 1000 if counter == 0 else 2000

    def nvmlGpmQueryDeviceSupport(self, h):
        self._enter("nvmlGpmQueryDeviceSupport", h)
        return SimpleNamespace(isSupportedDevice=1 if self.gpm else 0)

    def nvmlGpmSampleAlloc(self):
        return object()

    def nvmlGpmSampleGet(self, h, s):
        self._enter("nvmlGpmSampleGet", h)
        return s

    def nvmlGpmSampleFree(self, s):
        self.freed += 1

    def nvmlGpmMetricsGet(self, mg):
        self._enter("nvmlGpmMetricsGet")
        assert mg.sample1 is not mg.sample2 and mg.numMetrics == 2
        for m in mg.metrics[: mg.numMetrics]:
            m.value = {2: 42.5, 3: 30.0}[m.metricId]
        return mg


def source(fake, **kw):
    kw.setdefault("pcie", False)
    src = NvmlGpuSource(nvml=Nvml(module=fake), **kw)
    src.open()
    return src


def test_kernel_active_from_driver_samples_since_the_last_seen_timestamp():
    fake = FakeNvml()
    fake.push(0, 100, 90)  # before the monitor started: never counted
    src = source(fake)
    assert src.labels["gpu_util_source"] == "samples"
    fake.push(0, 300, 40)
    fake.push(0, 400, 60)
    rec = src.sample(time.monotonic())
    assert rec["gpu0.util_pct"] == 50.0
    # no new driver sample since: None (no made-up value), and not an N/A
    assert src.sample(time.monotonic())["gpu0.util_pct"] is None
    assert "gpu0.util_pct" not in src.na
    fake.push(0, 500, 100)
    assert src.sample(time.monotonic())["gpu0.util_pct"] == 100.0


def test_falls_back_to_utilization_rates():
    fake = FakeNvml(unsupported={"nvmlDeviceGetSamples"})
    src = source(fake)
    rec = src.sample(time.monotonic())
    assert src.info[0]["util_source"] == "nvmlDeviceGetUtilizationRates"
    assert rec["gpu0.util_pct"] == 37.0 and rec["gpu0.mem_util_pct"] == 12.0


def test_levels_are_in_base_units():
    fake = FakeNvml(unsupported={"nvmlDeviceGetSamples"})
    rec = source(fake).sample(time.monotonic())
    assert rec["gpu0.mem_used_bytes"] == 5 * 2**30
    assert rec["gpu0.power_w"] == 251.5
    assert rec["gpu0.temp_c"] == 61.0
    assert rec["gpu0.sm_clock_mhz"] == 1980.0


def test_unsupported_field_is_na_with_a_hint_and_asked_once():
    fake = FakeNvml(unsupported={"nvmlDeviceGetPowerUsage"})
    src = source(fake)
    for _ in range(3):
        rec = src.sample(time.monotonic())
    assert rec["gpu0.power_w"] is None
    assert fake.calls["nvmlDeviceGetPowerUsage"] == 1
    assert "does not report it" in src.na["gpu0.power_w"]
    assert any(n.startswith("GPU 0 power is N/A") for n in src.notes)


def test_pcie_is_read_on_its_own_thread():
    fake = FakeNvml(unsupported={"nvmlDeviceGetSamples"})
    src = source(fake, pcie=True, pcie_interval=0.05)
    deadline = time.monotonic() + 3
    rec = {}
    while time.monotonic() < deadline:
        rec = src.sample(time.monotonic())
        if rec.get("gpu0.pcie_rx_bytes_per_s") is not None:
            break
        time.sleep(0.02)
    src.close()
    assert rec["gpu0.pcie_tx_bytes_per_s"] == 1000 * 1024.0
    assert rec["gpu0.pcie_rx_bytes_per_s"] == 2000 * 1024.0
    assert src._pcie_thread is None
    assert src.thread_cpu_s >= 0


def test_gpm_sm_active_on_hopper_and_samples_freed():
    fake = FakeNvml(gpm=True, unsupported={"nvmlDeviceGetSamples"})
    src = source(fake)
    assert src.info[0].get("gpm") is True
    time.sleep(0.11)
    rec = src.sample(time.monotonic())
    assert rec["gpu0.sm_active_pct"] == 42.5 and rec["gpu0.sm_occupancy_pct"] == 30.0
    src.close()
    assert fake.freed == 2


def test_gpm_unsupported_is_silent_na():
    fake = FakeNvml(gpm=False, unsupported={"nvmlDeviceGetSamples"})
    src = source(fake)
    rec = src.sample(time.monotonic())
    assert "gpu0.sm_active_pct" not in rec
    assert "gpu0.sm_active_pct" in src.na
    assert not any("GPM" in n for n in src.notes)  # pre-Hopper: normal, no note


def test_mig_mode_is_noted():
    fake = FakeNvml(mig=True, unsupported={"nvmlDeviceGetSamples", "nvmlDeviceGetUtilizationRates"})
    src = source(fake)
    rec = src.sample(time.monotonic())
    assert "gpu0.util_pct" not in rec or rec["gpu0.util_pct"] is None
    assert any("MIG" in n for n in src.notes)
    assert "gpu0.util_pct" in src.na


def test_missing_gpu_index_is_a_note_not_an_error():
    fake = FakeNvml(n=2, unsupported={"nvmlDeviceGetSamples"})
    src = source(fake, gpus=[1, 3])
    assert [d.index for d in src.devices] == [1]
    assert any("no GPU 3" in n for n in src.notes)
    assert set(k.split(".")[0] for k in src.sample(time.monotonic())) == {"gpu1"}


def test_gpu_lost_stops_asking_that_device():
    fake = FakeNvml(n=2, unsupported={"nvmlDeviceGetSamples"}, lost={1})
    src = source(fake)
    src.sample(time.monotonic())
    n = sum(fake.calls.values())
    rec = src.sample(time.monotonic())
    assert rec["gpu1.mem_used_bytes"] is None and rec["gpu0.mem_used_bytes"] == 5 * 2**30
    assert sum(fake.calls.values()) - n <= 5  # device 1 is no longer asked
    assert any("fell off the bus" in v for v in src.na.values())


def test_nvml_library_missing_is_na_with_hint():
    fake = FakeNvml(init_error=12)
    src = source(fake)
    assert src.devices == [] and not src.available
    assert src.sample(time.monotonic()) == {}
    assert "libnvidia-ml.so is not found" in src.notes[0]


def test_real_no_nvml_path_on_this_machine():
    nv = Nvml()
    if nv.available:  # pragma: no cover - a machine with a GPU
        pytest.skip("NVML works here")
    src = NvmlGpuSource(nvml=nv)
    src.open()
    assert src.sample(time.monotonic()) == {}
    assert src.notes and src.notes[0].startswith("GPU figures are N/A")
    m = Monitor(interval=0.05, gpus="all")
    with m:
        time.sleep(0.12)
    res = m.result()
    assert res.metrics["gpu_util_mean_pct"] is None and res.metrics["gpu_count"] == 0
    assert any("GPU figures are N/A" in n for n in res.notes)
    assert not res.warnings  # "all" GPUs of none: a note, not a warning
    m2 = Monitor(interval=0.05, gpus=[0])
    with m2:
        time.sleep(0.06)
    assert any("GPUs were asked for" in w for w in m2.result().warnings)


def test_monitor_summary_over_fake_gpus():
    fake = FakeNvml(n=2, unsupported={"nvmlDeviceGetSamples"})
    # device 0 and 1 alternate in the rates queue: 0,0 then 100,100 ... per sample
    fake.rates = [SimpleNamespace(gpu=v, memory=10) for v in (0, 0, 100, 100, 0, 0, 100, 100)] + [
        SimpleNamespace(gpu=50, memory=10)
    ]
    src = NvmlGpuSource(nvml=Nvml(module=fake), pcie=False)
    m = Monitor(interval=0.02, sources=[src])
    m.start()
    while m.n_samples < 4:
        time.sleep(0.01)
    m.stop()
    res = m.result()
    vals = [r["gpu0.util_pct"] for r in m.records()]
    assert res.metrics["gpu0_util_mean_pct"] == pytest.approx(sum(vals) / len(vals), abs=0.01)
    assert res.metrics["gpu0_idle_share_pct"] == pytest.approx(100 * sum(v < 5 for v in vals) / len(vals), abs=0.01)
    assert res.metrics["gpu_util_peak_pct"] == 100.0
    assert res.metrics["gpu_count"] == 2
    assert res.metrics["gpu0_mem_total_bytes"] == 80 * 2**30
    assert res.metrics["gpu_mem_used_peak_bytes"] == 5 * 2**30
    assert res.labels["gpus"].startswith("0: NVIDIA H100")
    assert res.gpu_indices == [0, 1]
