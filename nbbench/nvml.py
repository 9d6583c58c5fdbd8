"""One wrapper for every NVML call (nvidia-ml-py's ``pynvml``).

A value NVML cannot give (no driver, no GPU, MIG, an old driver, a call the card
does not support) is :data:`NA`-valued data with a hint, never an exception:
``Nvml.call("nvmlDeviceGetPowerUsage", handle)`` returns the value or an
:class:`NAValue` that says why.  Tests pass a fake module to :class:`Nvml`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

__all__ = ["Nvml", "NAValue", "is_na", "get_nvml"]


@dataclass(frozen=True)
class NAValue:
    """A value that could not be read, and why."""

    reason: str
    hint: str = ""
    #: the NVML error constant's name (``NVML_ERROR_NOT_FOUND``…) when NVML raised one, else ""
    error: str = ""

    def __bool__(self) -> bool:
        return False

    def __str__(self) -> str:
        return "N/A"

    def __repr__(self) -> str:
        return f"N/A({self.reason})"

    def to_dict(self) -> dict:
        d = {"na": True, "reason": self.reason, "hint": self.hint}
        if self.error:
            d["error"] = self.error
        return d


def is_na(value: Any) -> bool:
    return isinstance(value, NAValue)


# NVML error names -> a hint telling the user what it means / what to do
_HINTS = {
    "NVML_ERROR_LIBRARY_NOT_FOUND": "libnvidia-ml.so is not found: no NVIDIA driver in this container "
    "(start it with --gpus all / the NVIDIA container toolkit)",
    "NVML_ERROR_DRIVER_NOT_LOADED": "the NVIDIA kernel driver is not loaded on the host",
    "NVML_ERROR_NOT_SUPPORTED": "this GPU or driver does not report it (common under MIG or on older drivers)",
    "NVML_ERROR_NO_PERMISSION": "permission denied: the container may not be allowed to query this",
    "NVML_ERROR_NOT_FOUND": "no data yet (no samples since the last read)",
    "NVML_ERROR_GPU_IS_LOST": "the GPU fell off the bus: check dmesg and reset the GPU or host",
    "NVML_ERROR_INSUFFICIENT_POWER": "the GPU's power cables are not connected properly",
    "NVML_ERROR_FUNCTION_NOT_FOUND": "the driver is too old for this call: update the NVIDIA driver",
    "NVML_ERROR_UNINITIALIZED": "NVML is not initialised",
    "NVML_ERROR_TIMEOUT": "NVML timed out",
}


def _error_name(module, exc) -> str:
    value = getattr(exc, "value", None)
    if value is not None:
        for name in dir(module):
            if name.startswith("NVML_ERROR_") and getattr(module, name) == value:
                return name
    return type(exc).__name__


class Nvml:
    """NVML behind one error-to-N/A wrapper.

    ``module``: the pynvml module (default: import it); tests pass a fake.
    """

    def __init__(self, module: Any = None):
        self._module = module
        self._lock = threading.Lock()
        self._init: bool | NAValue | None = None
        self._err_names: dict | None = None  # error value -> NVML_ERROR_* name, built once

    def _error_name(self, exc) -> str:
        """Like the module-level ``_error_name``, with the name table built once per wrapper
        (samplers meet NVML_ERROR_NOT_FOUND many times a second)."""
        mod = self.module
        value = getattr(exc, "value", None)
        if value is None or mod is None:
            return _error_name(mod, exc)
        if self._err_names is None:
            names: dict = {}
            for name in dir(mod):
                if name.startswith("NVML_ERROR_"):
                    try:
                        names.setdefault(getattr(mod, name), name)
                    except TypeError:  # an unhashable constant: no table
                        return _error_name(mod, exc)
            self._err_names = names
        try:
            return self._err_names.get(value) or type(exc).__name__
        except TypeError:
            return type(exc).__name__

    @property
    def module(self):
        if self._module is None:
            try:
                import pynvml  # from nvidia-ml-py

                self._module = pynvml
            except ImportError:
                return None
        return self._module

    def init(self) -> bool | NAValue:
        """Initialise once; True or an NAValue saying why NVML is unusable."""
        with self._lock:
            if self._init is None:
                mod = self.module
                if mod is None:
                    self._init = NAValue("pynvml is not installed", "pip install nvidia-ml-py")
                else:
                    try:
                        mod.nvmlInit()
                        self._init = True
                    except Exception as exc:  # noqa: BLE001 - every NVML error becomes N/A
                        name = _error_name(mod, exc)
                        self._init = NAValue(
                            f"NVML unavailable: {exc or name}",
                            _HINTS.get(name, "is an NVIDIA driver present?"),
                            error=name,
                        )
            return self._init

    @property
    def available(self) -> bool:
        return self.init() is True

    def call(self, fn: str, *args, **kwargs) -> Any:
        """``module.fn(*args)``, or an NAValue with a hint if it fails."""
        ok = self.init()
        if ok is not True:
            return ok
        mod = self.module
        f = getattr(mod, fn, None)
        if f is None:
            return NAValue(f"{fn} is not in this nvidia-ml-py", "upgrade nvidia-ml-py")
        try:
            value = f(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - every NVML error becomes N/A
            name = self._error_name(exc)
            return NAValue(f"{fn}: {exc or name}", _HINTS.get(name, ""), error=name)
        if isinstance(value, bytes):
            value = value.decode(errors="replace")
        return value

    def constant(self, name: str, default: Any = None) -> Any:
        mod = self.module
        return getattr(mod, name, default) if mod is not None else default

    def device_count(self) -> int | NAValue:
        return self.call("nvmlDeviceGetCount")

    def handles(self) -> list:
        n = self.device_count()
        if is_na(n):
            return []
        out = []
        for i in range(int(n)):
            h = self.call("nvmlDeviceGetHandleByIndex", i)
            if not is_na(h):
                out.append(h)
        return out

    def shutdown(self) -> None:
        with self._lock:
            if self._init is True:
                try:
                    self.module.nvmlShutdown()
                except Exception:  # noqa: BLE001
                    pass
            self._init = None


_shared: Nvml | None = None


def get_nvml() -> Nvml:
    """The process-wide wrapper over the real pynvml."""
    global _shared
    if _shared is None:
        _shared = Nvml()
    return _shared
