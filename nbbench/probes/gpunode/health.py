"""GPU health under load, through NVML (:mod:`nbbench.nvml`): :func:`read_health`.

While a short load runs on every GPU (``load(seconds)``, a matmul loop: :func:`matmul_load`), NVML is
read every quarter second for what only load shows — the clocks event reasons (power cap,
thermal and hardware slowdown) and the PCIe link's generation and width against their maximum
(links train down when idle, so a low link is a fault only under load) — and an event set
registered before the load collects the Xid errors raised during it.  Then what load does not
change: ECC errors, row remapping (pending, failed; retired pages on GPUs before Ampere),
persistence and MIG mode, NVLink links down or with errors, the fabric manager's state on NVSwitch
systems, the power limit against its default.  Each reading is a finding — ``{"gpu", "check",
"status": ok | warn | fail | None (not judged), "message", "fix"}`` — what ``nvidia-smi -q`` and DCGM's
diagnostics read, with what a user or admin can do about it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from ...nvml import Nvml, get_nvml, is_na

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
_NVLINK_MAX = 18
_FABRIC = {1: "not started", 2: "in progress", 3: "completed"}


def _f(gpu, check, status, message, fix=""):
    return {"gpu": gpu, "check": check, "status": status, "message": message, "fix": fix}


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


def _power(nv, h):
    lim = nv.call("nvmlDeviceGetPowerManagementLimit", h)
    dflt = nv.call("nvmlDeviceGetPowerManagementDefaultLimit", h)
    return (None if is_na(lim) else lim / 1000.0), (None if is_na(dflt) else dflt / 1000.0)


def _static(i, nv, h) -> list[dict]:
    out = []
    unc = nv.call("nvmlDeviceGetTotalEccErrors", h, 1, 0)  # uncorrected, volatile (since the last reset)
    if not is_na(unc):
        out.append(
            _f(
                i,
                "ECC",
                "fail",
                f"{unc} uncorrected ECC error(s) since the last reset",
                "drain the node; reset the GPU (nvidia-smi -r); repeated: RMA",
            )
            if unc
            else _f(i, "ECC", "ok", "no uncorrected ECC error since the last reset")
        )
    rr = nv.call("nvmlDeviceGetRemappedRows", h)
    if not is_na(rr):
        corr, unc_rows, pending, failure = (int(x) for x in rr)
        rows = f"{corr} correctable and {unc_rows} uncorrectable row(s) remapped"
        if failure:
            out.append(_f(i, "row remapping", "fail", f"row remapping failed ({rows})", "the GPU needs RMA"))
        elif pending:
            out.append(
                _f(
                    i,
                    "row remapping",
                    "warn",
                    f"a row remap is pending ({rows})",
                    "reset the GPU (nvidia-smi -r) or reboot to apply it",
                )
            )
        else:
            out.append(_f(i, "row remapping", "ok", f"none pending ({rows})"))
    else:
        pend = nv.call("nvmlDeviceGetRetiredPagesPendingStatus", h)
        if not is_na(pend):
            out.append(
                _f(i, "retired pages", "warn", "a page retirement is pending", "reset the GPU or reboot")
                if pend
                else _f(i, "retired pages", "ok", "no page retirement pending")
            )
    pm = nv.call("nvmlDeviceGetPersistenceMode", h)
    if not is_na(pm):
        out.append(
            _f(i, "persistence mode", "ok", "on")
            if pm
            else _f(
                i,
                "persistence mode",
                "warn",
                "off: the driver unloads between jobs, each start pays its set-up",
                "nvidia-smi -pm 1, or run nvidia-persistenced (admin)",
            )
        )
    mig = nv.call("nvmlDeviceGetMigMode", h)
    if not is_na(mig):
        cur, pend = (int(mig[0]), int(mig[1])) if isinstance(mig, (list, tuple)) else (int(mig), int(mig))
        if cur:
            out.append(
                _f(
                    i,
                    "MIG",
                    "warn",
                    "MIG is on: a process sees one slice, collectives between slices "
                    "use no NVLink and NVML's utilisation and PCIe figures are N/A",
                    "nvidia-smi -mig 0 (admin) where jobs need whole GPUs",
                )
            )
        else:
            out.append(_f(i, "MIG", "ok", "off" + (" (a change is pending a reset)" if pend != cur else "")))
    out += _nvlink(i, nv, h)
    fab = nv.call("nvmlDeviceGetGpuFabricInfo", h)
    if not is_na(fab) and getattr(fab, "state", 0) in _FABRIC:
        st, status = fab.state, getattr(fab, "status", 0)
        if st == 3 and not status:
            out.append(_f(i, "fabric manager", "ok", "NVSwitch fabric registration completed"))
        else:
            out.append(
                _f(
                    i,
                    "fabric manager",
                    "fail",
                    f"NVSwitch fabric registration {_FABRIC[st]}" + (f" (status {status})" if status else ""),
                    "start the fabric manager (systemctl start nvidia-fabricmanager) with the driver's "
                    "version; until then CUDA fails or NVLink is unusable",
                )
            )
    lim, dflt = _power(nv, h)
    if lim is not None and dflt is not None:
        if lim < 0.95 * dflt:
            out.append(
                _f(
                    i,
                    "power limit",
                    "warn",
                    f"{lim:.0f} W, below the default {dflt:.0f} W: clocks drop under load",
                    f"nvidia-smi -pl {dflt:.0f} (admin)",
                )
            )
        else:
            out.append(_f(i, "power limit", "ok", f"{lim:.0f} W (default {dflt:.0f} W)"))
    return out


def _nvlink(i, nv, h) -> list[dict]:
    states = []
    for link in range(_NVLINK_MAX):
        st = nv.call("nvmlDeviceGetNvLinkState", h, link)
        if is_na(st):
            break
        states.append(int(st))
    if not states or not any(states):
        return []  # no NVLink (or none this GPU reports)
    out = []
    down = [k for k, s in enumerate(states) if not s]
    if down:
        out.append(
            _f(
                i,
                "NVLink",
                "fail",
                f"link(s) {', '.join(map(str, down))} down of {len(states)}",
                "check the NVLink bridge or baseboard; nvidia-smi nvlink -s; reset the GPU; persists: RMA",
            )
        )
    errs = {}
    for link, s in enumerate(states):
        if not s:
            continue
        for counter, name in ((0, "replay"), (1, "recovery"), (2, "CRC flit"), (3, "CRC data")):
            v = nv.call("nvmlDeviceGetNvLinkErrorCounter", h, link, counter)
            if not is_na(v) and v:
                errs[name] = errs.get(name, 0) + int(v)
    if errs:
        out.append(
            _f(
                i,
                "NVLink errors",
                "warn",
                "errors on active links: " + ", ".join(f"{n} {k}" for k, n in errs.items()),
                "nvidia-smi nvlink -e; errors that grow under load: reseat or RMA",
            )
        )
    elif not down:
        out.append(_f(i, "NVLink", "ok", f"{sum(states)} links up, no errors"))
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
