"""GPU health under load, through NVML (:mod:`nbbench.nvml`): :func:`read_health`.

While a short load runs on every GPU (``load(seconds)``, a matmul loop: :func:`matmul_load`), NVML is
read every quarter second for what only load shows — the clocks event reasons (power cap,
thermal and hardware slowdown) and the PCIe link's generation and width against their maximum
(links train down when idle, so a low link is a fault only under load) — and an event set
registered before the load collects the Xid errors raised during it.  Then what load does not
change: ECC errors, row remapping (pending, failed; retired pages on GPUs before Ampere),
persistence and MIG mode, NVLink links down or with errors, the fabric manager's state on NVSwitch
systems, the power limit against its default (:mod:`.readings`).  Each reading is a finding — ``{"gpu", "check",
"status": ok | warn | fail | None (not judged), "message", "fix"}`` — what ``nvidia-smi -q`` and DCGM's
diagnostics read, with what a user or admin can do about it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from ...nvml import Nvml, get_nvml, is_na
from .readings import finding as _f
from .readings import power_w as _power
from .readings import static_findings as _static

__all__ = ["read_health", "matmul_load", "as_verdicts", "REASONS", "XID_WORDS"]

#: clocks event reasons (nvml.h nvmlClocksEventReason*): bit -> (name, status under load, fix)
REASONS = {
    0x4: (
        "power cap",
        "warn",
        "at the default power limit this is the card at its TDP under heavy load; "
        "below it, raise the limit (nvidia-smi -pl, admin)",
    ),
    0x8: (
        "hardware slowdown",
        "fail",
        "power brake or overheating signalled by the board: check cooling and "
        "power supply (nvidia-smi -q -d PERFORMANCE); drain the node if it persists",
    ),
    0x20: ("software thermal slowdown", "warn", "the GPU is near its temperature limit: check airflow and fans"),
    0x40: ("hardware thermal slowdown", "fail", "the GPU overheated: check cooling; drain the node if it persists"),
    0x80: ("power brake", "fail", "the system asserted power brake: check the power supply and the BMC's log"),
}
#: Xid numbers worth a word (NVIDIA's Xid catalogue)
XID_WORDS = {
    13: "graphics engine exception",
    31: "GPU memory page fault",
    43: "GPU stopped processing",
    48: "double-bit ECC error",
    63: "ECC page retirement or row remap recorded",
    64: "ECC page retirement or row remap failed",
    74: "NVLink error",
    79: "GPU fell off the bus",
    92: "high single-bit ECC error rate",
    94: "contained ECC error",
    95: "uncontained ECC error",
    119: "GSP RPC timeout",
    120: "GSP error",
}
_XID_EVENT = 0x8  # nvmlEventTypeXidCriticalError


def read_health(
    nv: Nvml | None = None, load: Callable[[float], None] | None = None, seconds: float = 5.0, interval: float = 0.25
) -> dict:
    """``{"findings": [...], "loaded": bool, "gpus": n}`` (see the module doc).  ``load``: runs the
    load for ``seconds`` (None: nothing runs, so the link and clocks are not judged)."""
    nv = nv if nv is not None else get_nvml()
    ok = nv.init()
    if ok is not True:
        return {
            "findings": [_f(None, "GPU health", None, f"no GPU visible: {ok.reason}", ok.hint)],
            "loaded": False,
            "gpus": 0,
        }
    handles = nv.handles()
    if not handles:
        return {
            "findings": [_f(None, "GPU health", None, "no GPU visible: NVML lists none")],
            "loaded": False,
            "gpus": 0,
        }
    events = _watch_xid(nv, handles)
    samples = [[] for _ in handles]
    loaded = False
    if load is not None:
        loaded = True
        done = threading.Event()
        err: list = []

        def work():
            try:
                load(seconds)
            except Exception as exc:  # noqa: BLE001 - a failed load is said, never raised
                err.append(exc)
            finally:
                done.set()

        t = threading.Thread(target=work, name="nbbench-gpu-load", daemon=True)
        t.start()
        time.sleep(min(interval * 2, seconds / 4))  # past the ramp
        while not done.is_set():
            for i, h in enumerate(handles):
                samples[i].append(_under_load(nv, h))
            done.wait(interval)
        t.join()
        if err:
            loaded = False
            samples = [[] for _ in handles]
            load_error = f"{type(err[0]).__name__}: {err[0]}"
        else:
            load_error = None
    findings = []
    for i, h in enumerate(handles):
        findings += _judge_load(i, samples[i], loaded and bool(samples[i]), nv, h)
        findings += _static(i, nv, h)
    findings += _xids(nv, events, handles)
    out = {"findings": findings, "loaded": loaded, "gpus": len(handles)}
    if load is not None and not loaded:
        out["load_error"] = load_error
        findings.append(_f(None, "load", "warn", f"the load failed ({load_error}): clocks and links not judged"))
    return out


def _under_load(nv, h) -> dict:
    reasons = nv.call("nvmlDeviceGetCurrentClocksEventReasons", h)
    if is_na(reasons):
        reasons = nv.call("nvmlDeviceGetCurrentClocksThrottleReasons", h)
    return {
        "reasons": None if is_na(reasons) else int(reasons),
        "gen": _num(nv.call("nvmlDeviceGetCurrPcieLinkGeneration", h)),
        "width": _num(nv.call("nvmlDeviceGetCurrPcieLinkWidth", h)),
    }


def _num(v):
    return None if is_na(v) else int(v)


def _judge_load(i, samples, loaded, nv, h) -> list[dict]:
    if not loaded:
        why = "no reading under load (links train down and clocks drop at idle): not judged"
        return [_f(i, "clocks under load", None, why), _f(i, "PCIe link under load", None, why)]
    out = []
    seen = 0
    for s in samples:
        seen |= s["reasons"] or 0
    bad = [(bit, REASONS[bit]) for bit in REASONS if seen & bit]
    if all(s["reasons"] is None for s in samples):
        out.append(_f(i, "clocks under load", None, "NVML does not report clocks event reasons here"))
    elif not bad:
        out.append(_f(i, "clocks under load", "ok", "no power cap, thermal or hardware slowdown under load"))
    for _bit, (name, status, fix) in bad:
        extra = ""
        if name == "power cap":
            lim, dflt = _power(nv, h)
            if lim is not None and dflt is not None:
                extra = f" (power limit {lim:.0f} W, default {dflt:.0f} W)"
        out.append(_f(i, "clocks under load", status, f"clocks held down by {name} under load{extra}", fix))
    gmax, wmax = (
        _num(nv.call("nvmlDeviceGetMaxPcieLinkGeneration", h)),
        _num(nv.call("nvmlDeviceGetMaxPcieLinkWidth", h)),
    )
    gens = [s["gen"] for s in samples if s["gen"]]
    widths = [s["width"] for s in samples if s["width"]]
    if not gens or not widths or not gmax or not wmax:
        out.append(_f(i, "PCIe link under load", None, "NVML does not report the PCIe link here (MIG, a VM)"))
        return out
    g, w = max(gens), max(widths)  # the best it trained to while loaded: a passing dip is no fault
    now = f"Gen{g} x{w} under load, maximum Gen{gmax} x{wmax}"
    if g >= gmax and w >= wmax:
        out.append(_f(i, "PCIe link under load", "ok", now))
    else:
        ratio = (g * w) / (gmax * wmax)
        fix = (
            "reseat the card or riser, check the slot's lanes and generation in the BIOS, then "
            "nvidia-smi -q -d PCIE under load; host↔device copies run at a fraction of their speed meanwhile"
        )
        out.append(_f(i, "PCIe link under load", "fail" if ratio <= 0.25 or w < wmax else "warn", now, fix))
    return out


def _watch_xid(nv, handles):
    es = nv.call("nvmlEventSetCreate")
    if is_na(es):
        return None
    for h in handles:
        nv.call("nvmlDeviceRegisterEvents", h, _XID_EVENT, es)
    return es


def _xids(nv, es, handles) -> list[dict]:
    if es is None:
        return [_f(None, "Xid during the run", None, "NVML cannot watch Xid events here")]
    seen = []
    for _ in range(256):
        ev = nv.call("nvmlEventSetWait_v2", es, 0)
        if is_na(ev):
            ev = nv.call("nvmlEventSetWait", es, 0) if "not in this" in ev.reason else ev
        if is_na(ev):
            break
        seen.append(ev)
    nv.call("nvmlEventSetFree", es)
    if not seen:
        return [_f(None, "Xid during the run", "ok", "no Xid error during the run")]
    out = []
    for ev in seen:
        xid = int(getattr(ev, "eventData", 0))
        gpu = next((k for k, h in enumerate(handles) if h is getattr(ev, "device", None)), None)
        word = XID_WORDS.get(xid, "see NVIDIA's Xid catalogue")
        out.append(
            _f(
                gpu,
                "Xid during the run",
                "fail",
                f"Xid {xid} ({word}) during the run",
                "read dmesg on the host; 48, 79, 95: drain the node and reset or RMA the GPU",
            )
        )
    return out


def matmul_load(torch=None):
    """A load for :func:`read_health`: bf16 matmuls on every visible GPU at once for ``seconds``."""
    if torch is None:
        import torch

    def run(seconds: float) -> None:
        n = torch.cuda.device_count()
        if not n:
            raise RuntimeError("no GPU visible")
        mats = []
        for d in range(n):
            a = torch.randn(4096, 4096, device=f"cuda:{d}", dtype=torch.bfloat16)
            mats.append((a, a.clone()))
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            for a, b in mats:
                for _ in range(8):
                    a @ b
            for d in range(n):
                torch.cuda.synchronize(d)

    return run


def as_verdicts(health: dict) -> list[dict]:
    """The judged findings as the GPU check's verdicts (``{"check", "status", "message"}``, the fix in the
    message); findings not judged (status None) stay in ``extra["health"]`` only."""
    out = []
    for f in health.get("findings") or []:
        if f.get("status") is None:
            continue
        where = f" [{f['gpu']}]" if f.get("gpu") is not None else ""
        msg = f["message"] + (f": fix: {f['fix']}" if f.get("fix") and f["status"] != "ok" else "")
        out.append({"check": f"health: {f['check']}{where}", "status": f["status"], "message": msg})
    return out
