"""Copies, as CUDA's bandwidthTest and p2pBandwidthLatencyTest ask them: :func:`copies`.

* host → device and device → host, from **pageable** memory and from **pinned** memory (what
  ``pin_memory=True`` buys on this node), on GPU 0, the median of ``iters`` timed copies (CUDA events);
* the **GPU-to-GPU matrix**: each pair's copy bandwidth directly (peer-to-peer where
  ``torch.cuda.can_device_access_peer`` says the pair has it: NVLink or PCIe P2P) and staged through
  pinned host memory (peer access off, what CUDA does without P2P), and each pair's latency (the
  median time of a 4-byte copy).

Without a GPU: :class:`~nbbench.results.ProbeError` "no GPU visible: …", one line.
"""

from __future__ import annotations

import statistics

from ...results import ProbeError, result_class

__all__ = ["copies", "need_gpu", "DEFAULT_BYTES", "DEFAULT_P2P_BYTES"]

DEFAULT_BYTES = 256 << 20
DEFAULT_P2P_BYTES = 64 << 20
_LAT_BYTES = 4


def _set(torch, i: int) -> None:
    f = getattr(torch.cuda, "set_device", None)
    if f is not None:
        f(i)


def _time_ms(torch, fn, iters: int, warmup: int = 2) -> list[float]:
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        out.append(a.elapsed_time(b))
    return out


def _rate(nbytes: int, times_ms: list[float]) -> tuple[float | None, list[float]]:
    rates = [nbytes / (t * 1e-3) for t in times_ms if t and t > 0]
    return (statistics.median(rates) if rates else None), rates


def need_gpu(torch=None):
    """torch, when it sees a GPU; else :class:`ProbeError` "no GPU visible: …" (one line)."""
    if torch is None:
        try:
            import torch
        except ImportError:
            raise ProbeError("no GPU visible: torch is not installed") from None
    if not torch.cuda.is_available():
        build = getattr(getattr(torch, "version", None), "cuda", None)
        why = "a CPU-only build of torch" if not build else "torch.cuda.is_available() is False"
        raise ProbeError(f"no GPU visible: {why} ({getattr(torch, '__version__', '?')}); the gpu check says why")
    return torch


def copies(torch=None, nbytes: int = DEFAULT_BYTES, p2p_bytes: int = DEFAULT_P2P_BYTES, iters: int = 10, matrix=True):
    """Host↔device pageable vs pinned and the GPU-to-GPU matrix, as a ``copies`` result."""
    torch = need_gpu(torch)
    n = int(torch.cuda.device_count())
    u8 = getattr(torch, "uint8", None)
    res = result_class("copies")(params={"bytes": nbytes, "p2p_bytes": p2p_bytes, "iters": iters})
    _set(torch, 0)
    dev = torch.empty(nbytes, dtype=u8, device="cuda:0")
    for mem in ("pageable", "pinned"):
        host = torch.empty(nbytes, dtype=u8, pin_memory=(mem == "pinned"))
        nb = mem == "pinned"
        for way, fn in (
            ("h2d", lambda h=host, d=dev: d.copy_(h, non_blocking=nb)),
            ("d2h", lambda h=host, d=dev: h.copy_(d, non_blocking=nb)),
        ):
            med, rates = _rate(nbytes, _time_ms(torch, fn, iters))
            res.metrics[f"{way}_{mem}_bytes_per_s"] = med
            res.samples[f"{way}_{mem}_bytes_per_s"] = rates
        del host
    for way in ("h2d", "d2h"):
        pin, page = res.metrics.get(f"{way}_pinned_bytes_per_s"), res.metrics.get(f"{way}_pageable_bytes_per_s")
        if pin and page:
            res.metrics[f"{way}_pinned_gain_pct"] = 100.0 * (pin / page - 1.0)
    dev = None  # freed before the matrix
    res.extra["gpus"] = n
    if matrix and n > 1:
        res.extra["matrix"] = _matrix(torch, n, p2p_bytes, iters, u8)
        direct = [v for row in res.extra["matrix"]["bw"] for v in row if v]
        if direct:
            res.metrics["p2p_min_bytes_per_s"] = min(direct)
            res.metrics["p2p_median_bytes_per_s"] = statistics.median(direct)
    elif n < 2:
        res.labels["matrix"] = "one GPU visible: no GPU-to-GPU matrix"
    res.labels["device"] = "cuda:0"
    res.labels["timing"] = f"median of {iters} copies after 2 warm-up, CUDA events"
    return res.finish("ok")


def _matrix(torch, n: int, nbytes: int, iters: int, u8) -> dict:
    can = getattr(torch.cuda, "can_device_access_peer", None)
    bw = [[None] * n for _ in range(n)]
    staged = [[None] * n for _ in range(n)]
    lat = [[None] * n for _ in range(n)]
    peer = [[None] * n for _ in range(n)]
    bufs = [torch.empty(nbytes, dtype=u8, device=f"cuda:{i}") for i in range(n)]
    small = [torch.empty(_LAT_BYTES, dtype=u8, device=f"cuda:{i}") for i in range(n)]
    bounce = torch.empty(nbytes, dtype=u8, pin_memory=True)
    for i in range(n):
        _set(torch, i)
        for j in range(n):
            if i == j:
                continue
            peer[i][j] = bool(can(i, j)) if can is not None else None
            bw[i][j] = _rate(nbytes, _time_ms(torch, lambda: bufs[j].copy_(bufs[i]), iters))[0]

            def through_host(i=i, j=j):
                bounce.copy_(bufs[i])  # blocking: GPU j's stream must not read the bounce buffer before it is full
                bufs[j].copy_(bounce, non_blocking=True)  # on GPU j's stream: the timing event is on GPU i's
                torch.cuda.synchronize(j)  # so the copy into j is done before the end event is recorded

            staged[i][j] = _rate(nbytes, _time_ms(torch, through_host, iters))[0]
            times = _time_ms(torch, lambda: small[j].copy_(small[i]), iters)
            lat[i][j] = statistics.median(times) * 1e3 if times else None  # µs
    return {"bw": bw, "bw_host": staged, "lat_us": lat, "peer": peer, "bytes": nbytes}
