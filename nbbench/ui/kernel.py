"""Where this code runs: :func:`in_kernel` is the one "am I in a Jupyter kernel" check."""

from __future__ import annotations

__all__ = ["in_kernel"]


def in_kernel() -> bool:
    """True inside a Jupyter kernel (widgets render, display updates reach a front end);
    False in terminal IPython and plain Python."""
    try:
        from IPython import get_ipython

        ip = get_ipython()
        return ip is not None and (getattr(ip, "kernel", None) is not None or "IPKernelApp" in ip.config)
    except Exception:  # noqa: BLE001
        return False
