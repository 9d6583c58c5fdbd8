"""What load does not change, read through NVML for the health read (:mod:`.health`): ECC errors, row
remapping (retired pages on GPUs before Ampere), persistence and MIG mode, NVLink links down or with
errors, the fabric manager's state on NVSwitch systems, the power limit against its default.  Each a
finding ``{"gpu", "check", "status", "message", "fix"}`` (:func:`finding`).
"""

from __future__ import annotations

from ...nvml import is_na

__all__ = ["static_findings", "finding", "power_w"]

_NVLINK_MAX = 18
_FABRIC = {1: "not started", 2: "in progress", 3: "completed"}


def finding(gpu, check, status, message, fix=""):
    """One finding: GPU ``gpu`` (None: the node), what was read, ok / warn / fail / None (not judged), what it
    found, and what a user or admin can do about it."""
    return {"gpu": gpu, "check": check, "status": status, "message": message, "fix": fix}


def power_w(nv, h):
    """(the power limit, its default), in W (None where NVML cannot say)."""
    lim = nv.call("nvmlDeviceGetPowerManagementLimit", h)
    dflt = nv.call("nvmlDeviceGetPowerManagementDefaultLimit", h)
    return (None if is_na(lim) else lim / 1000.0), (None if is_na(dflt) else dflt / 1000.0)


def static_findings(i, nv, h) -> list[dict]:
    """GPU ``i``'s findings that load does not change (a reading NVML does not give is left out)."""
    out = []

    def add(check, status, message, fix=""):
        out.append(finding(i, check, status, message, fix))

    unc = nv.call("nvmlDeviceGetTotalEccErrors", h, 1, 0)  # uncorrected, volatile (since the last reset)
    if not is_na(unc) and unc:
        fix = "drain the node; reset the GPU (nvidia-smi -r); repeated: RMA"
        add("ECC", "fail", f"{unc} uncorrected ECC error(s) since the last reset", fix)
    elif not is_na(unc):
        add("ECC", "ok", "no uncorrected ECC error since the last reset")
    rr = nv.call("nvmlDeviceGetRemappedRows", h)
    if not is_na(rr):
        corr, unc_rows, pending, failure = (int(x) for x in rr)
        rows = f"{corr} correctable and {unc_rows} uncorrectable row(s) remapped"
        if failure:
            add("row remapping", "fail", f"row remapping failed ({rows})", "the GPU needs RMA")
        elif pending:
            add(
                "row remapping",
                "warn",
                f"a row remap is pending ({rows})",
                "reset the GPU (nvidia-smi -r) or reboot to apply it",
            )
        else:
            add("row remapping", "ok", f"none pending ({rows})")
    else:
        pend = nv.call("nvmlDeviceGetRetiredPagesPendingStatus", h)
        if not is_na(pend) and pend:
            add("retired pages", "warn", "a page retirement is pending", "reset the GPU or reboot")
        elif not is_na(pend):
            add("retired pages", "ok", "no page retirement pending")
    pm = nv.call("nvmlDeviceGetPersistenceMode", h)
    if not is_na(pm) and pm:
        add("persistence mode", "ok", "on")
    elif not is_na(pm):
        why = "off: the driver unloads between jobs, each start pays its set-up"
        add("persistence mode", "warn", why, "nvidia-smi -pm 1, or run nvidia-persistenced (admin)")
    mig = nv.call("nvmlDeviceGetMigMode", h)
    if not is_na(mig):
        cur, pend = (int(mig[0]), int(mig[1])) if isinstance(mig, (list, tuple)) else (int(mig), int(mig))
        if cur:
            why = (
                "MIG is on: a process sees one slice, collectives between slices use no NVLink and NVML's "
                "utilisation and PCIe figures are N/A"
            )
            add("MIG", "warn", why, "nvidia-smi -mig 0 (admin) where jobs need whole GPUs")
        else:
            add("MIG", "ok", "off" + (" (a change is pending a reset)" if pend != cur else ""))
    out += _nvlink(i, nv, h)
    fab = nv.call("nvmlDeviceGetGpuFabricInfo", h)
    if not is_na(fab) and getattr(fab, "state", 0) in _FABRIC:
        st, status = fab.state, getattr(fab, "status", 0)
        if st == 3 and not status:
            add("fabric manager", "ok", "NVSwitch fabric registration completed")
        else:
            fix = (
                "start the fabric manager (systemctl start nvidia-fabricmanager) with the driver's version; until "
                "then CUDA fails or NVLink is unusable"
            )
            state = f"NVSwitch fabric registration {_FABRIC[st]}" + (f" (status {status})" if status else "")
            add("fabric manager", "fail", state, fix)
    lim, dflt = power_w(nv, h)
    if lim is not None and dflt is not None and lim < 0.95 * dflt:
        why = f"{lim:.0f} W, below the default {dflt:.0f} W: clocks drop under load"
        add("power limit", "warn", why, f"nvidia-smi -pl {dflt:.0f} (admin)")
    elif lim is not None and dflt is not None:
        add("power limit", "ok", f"{lim:.0f} W (default {dflt:.0f} W)")
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
        fix = "check the NVLink bridge or baseboard; nvidia-smi nvlink -s; reset the GPU; persists: RMA"
        out.append(finding(i, "NVLink", "fail", f"link(s) {', '.join(map(str, down))} down of {len(states)}", fix))
    errs = {}
    for link, s in enumerate(states):
        if not s:
            continue
        for counter, name in ((0, "replay"), (1, "recovery"), (2, "CRC flit"), (3, "CRC data")):
            v = nv.call("nvmlDeviceGetNvLinkErrorCounter", h, link, counter)
            if not is_na(v) and v:
                errs[name] = errs.get(name, 0) + int(v)
    if errs:
        found = "errors on active links: " + ", ".join(f"{n} {k}" for k, n in errs.items())
        out.append(
            finding(
                i, "NVLink errors", "warn", found, "nvidia-smi nvlink -e; errors that grow under load: reseat or RMA"
            )
        )
    elif not down:
        out.append(finding(i, "NVLink", "ok", f"{sum(states)} links up, no errors"))
    return out
