"""GPU source: NVML through :class:`nbbench.nvml.Nvml` (errors become N/A, never exceptions).

Fields per device ``i`` (its NVML index), named for what NVML really measures:

- ``gpu{i}.util_pct`` — **kernel-active %**: the share of the sample period during
  which one or more kernels were running.  It is *not* how busy the SMs were: one
  tiny kernel on one SM counts as 100 %.  Read with ``nvmlDeviceGetSamples``
  (the driver's own timestamped samples since the last one seen; None when the
  driver took no new sample since the previous read), falling back to
  ``nvmlDeviceGetUtilizationRates``.
- ``gpu{i}.mem_util_pct`` — memory-controller busy %: share of time device memory
  was being read or written.
- ``gpu{i}.mem_used_bytes`` (the total is in the labels and ``info``).
- ``gpu{i}.pcie_tx_bytes_per_s``, ``gpu{i}.pcie_rx_bytes_per_s`` — PCIe throughput;
  NVML measures it over ~20 ms per call, so it is read on its own thread and each
  record carries the latest reading.  NVML reports KB/s; taken here as 1024 bytes.
- ``gpu{i}.power_w``, ``gpu{i}.temp_c``, ``gpu{i}.sm_clock_mhz``.
- ``gpu{i}.sm_active_pct``, ``gpu{i}.sm_occupancy_pct`` — GPM (Hopper and later,
  where the driver supports it): share of SMs busy, and active warps versus the
  maximum, averaged over the interval.  This *is* how busy the SMs were.

What a device or driver cannot report (MIG, an old driver, no GPU, no NVML) is left
out with a reason in :attr:`NvmlGpuSource.na` and a sentence in ``notes``.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from ..nvml import NAValue, get_nvml, is_na

__all__ = ["NvmlGpuSource"]

# errors that mean "nothing this time", not "never"
_TRANSIENT = {"NVML_ERROR_NOT_FOUND", "NVML_ERROR_TIMEOUT"}
_GPM_MIN_GAP_S = 0.1  # GPM metrics need samples at least ~100 ms apart

_VALUE_FIELDS = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}

# what each field is called for people (LivePlot legends, notes)
FIELD_NAMES = {
    "util_pct": "kernel-active %",
    "mem_util_pct": "memory-controller busy %",
    "mem_used_bytes": "memory used",
    "pcie_tx_bytes_per_s": "PCIe TX",
    "pcie_rx_bytes_per_s": "PCIe RX",
    "power_w": "power",
    "temp_c": "temperature",
    "sm_clock_mhz": "SM clock",
    "sm_active_pct": "SM active % (GPM)",
    "sm_occupancy_pct": "SM occupancy % (GPM)",
}


def _sample_value(vtype: int, sample) -> float | None:
    attr = _VALUE_FIELDS.get(int(vtype) if vtype is not None else 1, "uiVal")
    try:
        return float(getattr(sample.sampleValue, attr))
    except (AttributeError, TypeError, ValueError):
        return None


class _Device:
    def __init__(self, index: int, handle: Any):
        self.index = index
        self.handle = handle
        self.prefix = f"gpu{index}."
        self.dead: set[str] = set()
        self.util_mode: str | None = None  # "samples" | "rates" | None
        self.last_ts: dict[int, int] = {}
        self.gpm: list | None = None  # [prev, cur] sample handles
        self.gpm_t = 0.0
        self.pcie: dict[str, float | None] = {}
        self.info: dict[str, Any] = {"index": index}


class NvmlGpuSource:
    """NVML GPU figures for ``gpus`` (``"all"`` or a list of indices); see the module doc."""

    name = "gpu"

    def __init__(self, gpus="all", nvml=None, pcie: bool = True, gpm: bool = True, pcie_interval: float = 0.2):
        self.gpus = gpus
        self.nv = nvml if nvml is not None else get_nvml()
        self.want_pcie = pcie
        self.want_gpm = gpm
        self.pcie_interval = max(0.05, float(pcie_interval))
        self.devices: list[_Device] = []
        self.notes: list[str] = []
        self.na: dict[str, str] = {}
        self.labels: dict[str, Any] = {}
        self.available = False
        self.thread_cpu_s = 0.0
        self._pcie_thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._opened = False

    # ---------------------------------------------------------------- helpers
    def _mark_na(self, dev: _Device | None, field: str, value: NAValue, note: bool = True) -> None:
        key = (dev.prefix if dev else "gpu.") + field
        if dev is not None:
            dev.dead.add(field)
        text = value.reason + (f" ({value.hint})" if value.hint else "")
        self.na[key] = text
        if note:
            what = FIELD_NAMES.get(field, field)
            where = f"GPU {dev.index}" if dev else "GPU"
            sentence = f"{where} {what} is N/A: {text}"
            if sentence not in self.notes:
                self.notes.append(sentence)

    def _get(self, dev: _Device, field: str, fn: str, *args):
        """One NVML read for ``field``: the value, or None (N/A recorded once)."""
        if field in dev.dead:
            return None
        v = self.nv.call(fn, *args)
        if is_na(v):
            if v.error in _TRANSIENT:
                return None
            if v.error == "NVML_ERROR_GPU_IS_LOST":
                dev.dead.update(FIELD_NAMES)
            self._mark_na(dev, field, v)
            return None
        return v

    def _const(self, name: str, default):
        return self.nv.constant(name, default)

    # ------------------------------------------------------------------- open
    def open(self) -> None:
        if self._opened:
            return
        self._opened = True
        nv = self.nv
        ok = nv.init()
        if ok is not True:
            self._mark_na(None, "all", ok, note=False)
            self.notes.append(f"GPU figures are N/A: {ok.reason}" + (f" — {ok.hint}" if ok.hint else ""))
            self.labels = {"gpus": "none (NVML unavailable)"}
            return
        n = nv.device_count()
        if is_na(n):
            self._mark_na(None, "all", n, note=False)
            self.notes.append(f"GPU figures are N/A: {n.reason}")
            self.labels = {"gpus": "none"}
            return
        n = int(n)
        if self.gpus == "all":
            wanted = list(range(n))
        else:
            wanted = []
            for i in self.gpus:
                if 0 <= i < n:
                    wanted.append(i)
                else:
                    self.notes.append(f"there is no GPU {i} here ({n} visible, indices 0..{n - 1})")
        if n == 0:
            self.notes.append("NVML sees no GPU: GPU figures are N/A")
        for i in wanted:
            h = nv.call("nvmlDeviceGetHandleByIndex", i)
            if is_na(h):
                self.notes.append(f"GPU {i} cannot be opened: {h.reason}")
                continue
            dev = _Device(i, h)
            self._probe(dev)
            self.devices.append(dev)
        self.available = bool(self.devices)
        self.labels = {
            "gpus": "; ".join(f"{d.index}: {d.info.get('name', '?')}" for d in self.devices) or "none",
            "gpu_util_source": ",".join(sorted({d.util_mode or "N/A" for d in self.devices})) or "N/A",
        }
        if self.want_pcie and self.devices:
            self._pcie_thread = threading.Thread(target=self._pcie_loop, name="nbbench-monitor-pcie", daemon=True)
            self._pcie_thread.start()

    def _probe(self, dev: _Device) -> None:
        nv, h = self.nv, dev.handle
        name = nv.call("nvmlDeviceGetName", h)
        dev.info["name"] = None if is_na(name) else str(name)
        mem = nv.call("nvmlDeviceGetMemoryInfo", h)
        dev.info["mem_total_bytes"] = None if is_na(mem) else int(mem.total)
        mig = nv.call("nvmlDeviceGetMigMode", h)
        if not is_na(mig):
            try:
                current = mig[0] if isinstance(mig, (tuple, list)) else int(mig)
            except (TypeError, ValueError, IndexError):
                current = 0
            if current:
                dev.info["mig"] = True
                self.notes.append(
                    f"GPU {dev.index} is in MIG mode: NVML does not report whole-GPU "
                    "utilisation under MIG, so kernel-active % is N/A"
                )
        # kernel-active %: the driver's timestamped samples, else the rates call
        kind = self._const("NVML_GPU_UTILIZATION_SAMPLES", 1)
        r = nv.call("nvmlDeviceGetSamples", h, kind, 0)
        if not is_na(r) or r.error in _TRANSIENT:
            dev.util_mode = "samples"
            dev.last_ts[kind] = self._max_ts(r)
            mkind = self._const("NVML_MEMORY_UTILIZATION_SAMPLES", 2)
            rm = nv.call("nvmlDeviceGetSamples", h, mkind, 0)
            if not is_na(rm) or rm.error in _TRANSIENT:
                dev.last_ts[mkind] = self._max_ts(rm)
            else:
                dev.last_ts[mkind] = -1  # use the rates call for memory
        else:
            rr = nv.call("nvmlDeviceGetUtilizationRates", h)
            if not is_na(rr):
                dev.util_mode = "rates"
            else:
                dev.util_mode = None
                self._mark_na(dev, "util_pct", rr)
                self._mark_na(dev, "mem_util_pct", rr, note=False)
        dev.info["util_source"] = {
            "samples": "nvmlDeviceGetSamples",
            "rates": "nvmlDeviceGetUtilizationRates",
            None: "N/A",
        }[dev.util_mode]
        # GPM SM-active %, Hopper and later
        if self.want_gpm:
            self._open_gpm(dev)
        else:
            dev.dead.update({"sm_active_pct", "sm_occupancy_pct"})

    @staticmethod
    def _max_ts(r) -> int:
        if is_na(r):
            return 0
        try:
            _, samples = r
            return max((int(s.timeStamp) for s in samples), default=0)
        except (TypeError, ValueError):
            return 0

    def _open_gpm(self, dev: _Device) -> None:
        nv, h = self.nv, dev.handle
        sup = nv.call("nvmlGpmQueryDeviceSupport", h)
        if is_na(sup) or not getattr(sup, "isSupportedDevice", 0):
            why = (
                sup
                if is_na(sup)
                else NAValue("GPM is not supported on this GPU", "GPM SM metrics need a Hopper or newer GPU")
            )
            # pre-Hopper GPUs never have it: record why, without a note
            self._mark_na(dev, "sm_active_pct", why, note=False)
            self._mark_na(dev, "sm_occupancy_pct", why, note=False)
            return
        a = nv.call("nvmlGpmSampleAlloc")
        b = nv.call("nvmlGpmSampleAlloc")
        if is_na(a) or is_na(b):
            self._mark_na(dev, "sm_active_pct", a if is_na(a) else b)
            dev.dead.add("sm_occupancy_pct")
            return
        first = nv.call("nvmlGpmSampleGet", h, a)
        if is_na(first):
            self._mark_na(dev, "sm_active_pct", first)
            dev.dead.add("sm_occupancy_pct")
            for s in (a, b):
                nv.call("nvmlGpmSampleFree", s)
            return
        dev.gpm = [a, b]
        dev.gpm_t = time.monotonic()
        dev.info["gpm"] = True

    # ----------------------------------------------------------------- sample
    def sample(self, now: float) -> dict:
        if not self._opened:
            self.open()
        out: dict[str, Any] = {}
        for dev in self.devices:
            self._sample_device(dev, now, out)
        return out

    def _util_samples(self, dev: _Device, kind: int, field: str) -> float | None:
        if field in dev.dead:
            return None
        r = self.nv.call("nvmlDeviceGetSamples", dev.handle, kind, dev.last_ts.get(kind, 0))
        if is_na(r):
            if r.error in _TRANSIENT:
                return None
            self._mark_na(dev, field, r)
            return None
        try:
            vtype, samples = r
        except (TypeError, ValueError):
            return None
        last = dev.last_ts.get(kind, 0)
        vals = []
        newest = last
        for s in samples:
            ts = int(s.timeStamp)
            if ts > last:
                v = _sample_value(vtype, s)
                if v is not None:
                    vals.append(v)
                if ts > newest:
                    newest = ts
        dev.last_ts[kind] = newest
        if not vals:
            return None
        return round(sum(vals) / len(vals), 2)

    def _sample_device(self, dev: _Device, now: float, out: dict) -> None:
        p, h = dev.prefix, dev.handle
        if dev.util_mode == "samples":
            out[p + "util_pct"] = self._util_samples(dev, self._const("NVML_GPU_UTILIZATION_SAMPLES", 1), "util_pct")
            mkind = self._const("NVML_MEMORY_UTILIZATION_SAMPLES", 2)
            if dev.last_ts.get(mkind, -1) >= 0:
                out[p + "mem_util_pct"] = self._util_samples(dev, mkind, "mem_util_pct")
            else:
                rr = self._get(dev, "mem_util_pct", "nvmlDeviceGetUtilizationRates", h)
                out[p + "mem_util_pct"] = None if rr is None else float(rr.memory)
        elif dev.util_mode == "rates":
            rr = self._get(dev, "util_pct", "nvmlDeviceGetUtilizationRates", h)
            out[p + "util_pct"] = None if rr is None else float(rr.gpu)
            out[p + "mem_util_pct"] = None if rr is None else float(rr.memory)
        mem = self._get(dev, "mem_used_bytes", "nvmlDeviceGetMemoryInfo", h)
        out[p + "mem_used_bytes"] = None if mem is None else int(mem.used)
        pw = self._get(dev, "power_w", "nvmlDeviceGetPowerUsage", h)
        out[p + "power_w"] = None if pw is None else round(pw / 1000.0, 1)
        tc = self._get(dev, "temp_c", "nvmlDeviceGetTemperature", h, self._const("NVML_TEMPERATURE_GPU", 0))
        out[p + "temp_c"] = None if tc is None else float(tc)
        clk = self._get(dev, "sm_clock_mhz", "nvmlDeviceGetClockInfo", h, self._const("NVML_CLOCK_SM", 1))
        out[p + "sm_clock_mhz"] = None if clk is None else float(clk)
        if self._pcie_thread is not None:
            out[p + "pcie_tx_bytes_per_s"] = dev.pcie.get("tx")
            out[p + "pcie_rx_bytes_per_s"] = dev.pcie.get("rx")
        if dev.gpm is not None and now - dev.gpm_t >= _GPM_MIN_GAP_S:
            self._sample_gpm(dev, now, out)

    def _sample_gpm(self, dev: _Device, now: float, out: dict) -> None:
        nv, mod = self.nv, self.nv.module
        prev, cur = dev.gpm
        got = nv.call("nvmlGpmSampleGet", dev.handle, cur)
        if is_na(got):
            if got.error not in _TRANSIENT:
                self._mark_na(dev, "sm_active_pct", got)
                self._free_gpm(dev)
            return
        try:
            mg = mod.c_nvmlGpmMetricsGet_t()
            mg.version = getattr(mod, "NVML_GPM_METRICS_GET_VERSION", 1)
            mg.numMetrics = 2
            mg.sample1 = prev
            mg.sample2 = cur
            mg.metrics[0].metricId = getattr(mod, "NVML_GPM_METRIC_SM_UTIL", 2)
            mg.metrics[1].metricId = getattr(mod, "NVML_GPM_METRIC_SM_OCCUPANCY", 3)
        except Exception as exc:  # noqa: BLE001 - an nvidia-ml-py without the GPM structs
            self._mark_na(dev, "sm_active_pct", NAValue(f"GPM structures unavailable: {exc}", "upgrade nvidia-ml-py"))
            self._free_gpm(dev)
            return
        r = nv.call("nvmlGpmMetricsGet", mg)
        dev.gpm = [cur, prev]  # the newest sample becomes the next baseline
        dev.gpm_t = now
        if is_na(r):
            if r.error not in _TRANSIENT:
                self._mark_na(dev, "sm_active_pct", r)
                self._free_gpm(dev)
            return
        for slot, field in ((0, "sm_active_pct"), (1, "sm_occupancy_pct")):
            m = r.metrics[slot]
            if int(getattr(m, "nvmlReturn", 0)) == 0:
                out[dev.prefix + field] = round(float(m.value), 2)

    def _free_gpm(self, dev: _Device) -> None:
        if dev.gpm:
            for s in dev.gpm:
                self.nv.call("nvmlGpmSampleFree", s)
        dev.gpm = None
        dev.dead.update({"sm_active_pct", "sm_occupancy_pct"})

    # ------------------------------------------------------------------- PCIe
    def _pcie_loop(self) -> None:
        cpu0 = time.thread_time()
        tx_c = self._const("NVML_PCIE_UTIL_TX_BYTES", 0)
        rx_c = self._const("NVML_PCIE_UTIL_RX_BYTES", 1)
        try:
            while not self._stop.is_set():
                t0 = time.monotonic()
                for dev in self.devices:
                    if "pcie_tx_bytes_per_s" in dev.dead:
                        continue
                    for key, counter in (("tx", tx_c), ("rx", rx_c)):
                        v = self._get(
                            dev, f"pcie_{key}_bytes_per_s", "nvmlDeviceGetPcieThroughput", dev.handle, counter
                        )
                        dev.pcie[key] = None if v is None else float(v) * 1024.0
                    if "pcie_rx_bytes_per_s" in dev.dead:
                        dev.dead.add("pcie_tx_bytes_per_s")
                if all("pcie_tx_bytes_per_s" in d.dead for d in self.devices):
                    return
                self._stop.wait(max(0.0, self.pcie_interval - (time.monotonic() - t0)))
        finally:
            self.thread_cpu_s += time.thread_time() - cpu0

    # ------------------------------------------------------------------ close
    @property
    def info(self) -> list[dict]:
        """Per device: index, name, mem_total_bytes, util_source, mig, gpm."""
        return [d.info for d in self.devices]

    def summary(self) -> dict:
        out = {}
        for d in self.devices:
            if d.info.get("mem_total_bytes"):
                out[f"gpu{d.index}_mem_total_bytes"] = d.info["mem_total_bytes"]
        return out

    def close(self) -> None:
        self._stop.set()
        if self._pcie_thread is not None:
            self._pcie_thread.join(timeout=2.0)
            self._pcie_thread = None
        for d in self.devices:
            if d.gpm is not None:
                for s in d.gpm:
                    self.nv.call("nvmlGpmSampleFree", s)
                d.gpm = None
