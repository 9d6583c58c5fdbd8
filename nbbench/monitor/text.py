"""One-line status of a monitor record, for terminals and plot titles."""

from __future__ import annotations

from ..units import format_bytes, format_many, format_si

__all__ = ["format_status"]


def _gpu_indices(rec: dict) -> list[int]:
    out = []
    for k in rec:
        if k.startswith("gpu") and k.endswith(".mem_used_bytes"):
            idx = k[3 : k.index(".")]
            if idx.isdigit():
                out.append(int(idx))
    return sorted(out)


def format_status(rec: dict | None, t0: float | None = None, max_gpus: int = 4) -> str:
    """``'12.3 s  tree 0.98 cores read() 2.00 MB/s write() 40.0 MB/s  machine CPU 45%  throttled  48%
    PSI cpu 12% io 3%  GPU0 87% 12.1 GiB  disk R 320 MB/s W 0 B/s  net rx …'``; '' without a record.
    The throttling and PSI figures only where measured and above zero."""
    if not rec:
        return ""
    parts = []
    if t0 is not None:
        parts.append(f"{rec['t'] - t0:6.1f} s")
    # the monitored tree first (in cores, as its answer says it), then the machine's, labelled
    proc = rec.get("proc.cpu_pct")
    if proc is not None:
        tree = f"tree {proc / 100:4.2f} cores"
        calls = [rec.get("proc.read_syscall_bytes_per_s"), rec.get("proc.write_syscall_bytes_per_s")]
        if any(calls):  # its read() / write() calls, in one prefix, when it moved any bytes
            r, w = format_many([c or 0 for c in calls], "B/s")
            tree += f" read() {r} write() {w}"
        parts.append(tree)
    cpu = rec.get("cpu.util_pct")
    if cpu is not None:
        parts.append(f"machine CPU {cpu:3.0f}%")
    thr = rec.get("stall.cpu_throttled_pct")
    if thr:  # measured stalls, where there were any: throttling by the quota, PSI waits
        parts.append(f"throttled {thr:3.0f}%")
    waits = [(r, rec.get(f"stall.psi_{r}_some_pct")) for r in ("cpu", "io", "memory")]
    waits = [f"{r} {v:.0f}%" for r, v in waits if v is not None and v >= 1]
    if waits:
        parts.append("PSI " + " ".join(waits))
    gpus = _gpu_indices(rec)
    for i in gpus[:max_gpus]:
        u = rec.get(f"gpu{i}.util_pct")
        mem = rec.get(f"gpu{i}.mem_used_bytes")
        txt = f"GPU{i} " + ("  -" if u is None else f"{u:3.0f}%")
        if mem is not None:
            txt += " " + format_bytes(mem, binary=True)
        parts.append(txt)
    if len(gpus) > max_gpus:
        parts.append(f"+{len(gpus) - max_gpus} GPUs")
    r = rec.get("disk.read_bytes_per_s")
    w = rec.get("disk.write_bytes_per_s")
    if r is not None or w is not None:
        parts.append(f"disk R {format_si(r or 0, 'B/s')} W {format_si(w or 0, 'B/s')}")
    rx = rec.get("net.rx_bytes_per_s")
    tx = rec.get("net.tx_bytes_per_s")
    if rx is not None or tx is not None:
        parts.append(f"net rx {format_si(rx or 0, 'B/s')} tx {format_si(tx or 0, 'B/s')}")
    return "  ".join(parts)
