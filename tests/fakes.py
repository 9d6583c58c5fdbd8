"""Fake torch and pynvml objects for testing GPU logic on machines without a GPU.

They implement only what nbbench calls, at the boundary where it calls it.
"""

from __future__ import annotations

from types import SimpleNamespace


class NVMLError(Exception):
    def __init__(self, value):
        super().__init__(f"NVML error {value}")
        self.value = value


class FakePynvml:
    """Enough of pynvml for the GPU check and the monitor."""

    NVML_ERROR_NOT_SUPPORTED = 3
    NVML_ERROR_LIBRARY_NOT_FOUND = 12
    NVML_TEMPERATURE_GPU = 0
    NVMLError = NVMLError

    def __init__(self, devices=None, driver="550.54.15", cuda=12040, init_error=None, unsupported=()):
        self.devices = devices if devices is not None else [fake_device()]
        self.driver, self.cuda, self.init_error = driver, cuda, init_error
        self.unsupported = set(unsupported)
        self.calls = []

    def _u(self, name):
        self.calls.append(name)
        if name in self.unsupported:
            raise NVMLError(self.NVML_ERROR_NOT_SUPPORTED)

    def nvmlInit(self):
        if self.init_error is not None:
            raise NVMLError(self.init_error)

    def nvmlShutdown(self):
        pass

    def nvmlSystemGetDriverVersion(self):
        return self.driver

    def nvmlSystemGetCudaDriverVersion_v2(self):
        return self.cuda

    def nvmlDeviceGetCount(self):
        return len(self.devices)

    def nvmlDeviceGetHandleByIndex(self, i):
        return self.devices[i]

    def nvmlDeviceGetName(self, h):
        self._u("name")
        return h["name"].encode()

    def nvmlDeviceGetMemoryInfo(self, h):
        self._u("memory")
        return SimpleNamespace(total=h["total"], free=h["free"], used=h["total"] - h["free"])

    def nvmlDeviceGetCudaComputeCapability(self, h):
        return h["cc"]

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h):
        self._u("pcie")
        return h["gen"]

    def nvmlDeviceGetCurrPcieLinkWidth(self, h):
        self._u("pcie")
        return h["width"]

    def nvmlDeviceGetMaxPcieLinkGeneration(self, h):
        self._u("pcie")
        return h["gen_max"]

    def nvmlDeviceGetMaxPcieLinkWidth(self, h):
        self._u("pcie")
        return h["width_max"]

    def nvmlDeviceGetMigMode(self, h):
        self._u("mig")
        return [h.get("mig", 0), h.get("mig", 0)]

    def nvmlDeviceGetUtilizationRates(self, h):
        self._u("util")
        return SimpleNamespace(gpu=h.get("util", 0), memory=h.get("mem_util", 0))

    def nvmlDeviceGetTemperature(self, h, sensor):
        return h.get("temp", 40)

    def nvmlDeviceGetPowerUsage(self, h):
        self._u("power")
        return h.get("power_mw", 70000)

    def nvmlDeviceGetPciInfo(self, h):
        self._u("pci")
        if "pci" not in h:
            raise NVMLError(self.NVML_ERROR_NOT_SUPPORTED)
        domain, bus, device = h["pci"]
        return SimpleNamespace(domain=domain, bus=bus, device=device)


def fake_device(name="NVIDIA H100 80GB HBM3", width=16, width_max=16, gen=5, gen_max=5, mig=0, **kw):
    d = {
        "name": name,
        "total": 80 * 2**30,
        "free": 79 * 2**30,
        "cc": (9, 0),
        "gen": gen,
        "gen_max": gen_max,
        "width": width,
        "width_max": width_max,
        "mig": mig,
    }
    d.update(kw)
    return d


class _Event:
    def __init__(self, clock, enable_timing=False):
        self.clock, self.t = clock, None

    def record(self, stream=None):
        self.t = self.clock.now
        self.clock.now += self.clock.step_ms

    def synchronize(self):
        pass

    def query(self):
        return True

    def elapsed_time(self, other):
        return other.t - self.t


class _Tensor:
    def __matmul__(self, other):
        return self

    def clone(self):
        return self

    def copy_(self, other, non_blocking=False):
        return self


class FakeTorch:
    """A torch whose CUDA 'works': events advance a fake clock by ``step_ms`` per record."""

    float32, bfloat16 = "float32", "bfloat16"

    def __init__(
        self,
        version="2.7.0+cu128",
        cuda="12.8",
        available=True,
        devices=1,
        step_ms=2.0,
        cudnn=90100,
        bf16=True,
        props=None,
    ):
        self.__version__ = version
        self.version = SimpleNamespace(cuda=cuda, hip=None)
        clock = SimpleNamespace(now=0.0, step_ms=step_ms)
        self._clock = clock
        outer = self

        class Cuda:
            @staticmethod
            def is_available():
                return available

            @staticmethod
            def device_count():
                return devices

            @staticmethod
            def get_device_properties(i):
                p = SimpleNamespace(
                    name="NVIDIA H100 80GB HBM3", major=9, minor=0, total_memory=80 * 2**30, multi_processor_count=132
                )
                p.__dict__.update((props or {}).get(i, {}))  # e.g. pci_bus_id=…, name=…
                return p

            @staticmethod
            def mem_get_info(i):
                return (70 * 2**30, 80 * 2**30)

            @staticmethod
            def synchronize(device=None):
                pass

            @staticmethod
            def is_bf16_supported():
                return bf16

            @staticmethod
            def Event(enable_timing=False):
                return _Event(outer._clock, enable_timing)

        self.cuda = Cuda
        self.backends = SimpleNamespace(
            cudnn=SimpleNamespace(version=lambda: cudnn, is_available=lambda: True),
            cuda=SimpleNamespace(matmul=SimpleNamespace(allow_tf32=False)),
        )

    def randn(self, *shape, device=None, dtype=None):
        return _Tensor()

    def empty(self, *shape, device=None, dtype=None, pin_memory=False):
        return _Tensor()
