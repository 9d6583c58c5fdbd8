"""The environment fingerprint as a result (kind ``env``), and its rows for people (:func:`env_rows`)."""

from __future__ import annotations

from ...limits.verdict import limits_summary
from ...units import format_bytes
from ..base import Result, register
from ..present.rule import SEP, Section

__all__ = ["EnvResult", "env_rows", "ENV_ROWS"]


def _cpus(c: dict) -> str:
    """'2 usable of 2 (affinity 2, cgroup quota none)'."""
    if not c:
        return ""
    u = c.get("usable")
    usable = f"{u:g}" if isinstance(u, (int, float)) and not isinstance(u, bool) else str(u)
    quota = c.get("cgroup_quota")
    quota = f"{quota:g} CPUs" if isinstance(quota, (int, float)) and not isinstance(quota, bool) else (quota or "none")
    return f"{usable} usable of {c.get('logical')} (affinity {c.get('affinity')}, cgroup quota {quota})"


def _mem(m: dict) -> str:
    """'23.5 GiB (cgroup limit none)'."""
    tot, lim = m.get("total_bytes"), m.get("cgroup_limit_bytes")
    total = format_bytes(tot, binary=True) if tot else "?"
    return f"{total} (cgroup limit {format_bytes(lim, binary=True) if lim else 'none'})"


def _limits(lim) -> str | None:
    """The container's limits in one line (:func:`nbbench.limits.verdict.limits_summary`); None before
    they were kept."""
    return limits_summary(lim) if lim else None


def _torch(t) -> str:
    """'2.13.0+cpu, CPU-only build' / '2.7.1+cu126, CUDA 12.6, cuDNN 90501'."""
    if not t:
        return "not installed"
    s = str(t.get("version"))
    if t.get("cuda_build"):
        s += f", CUDA {t['cuda_build']}"
    elif t.get("hip_build"):
        s += f", ROCm {t['hip_build']}"
    else:
        s += ", CPU-only build"
    if t.get("cudnn"):
        s += f", cuDNN {t['cudnn']}"
    return s


def _gpus(gs) -> str:
    out = []
    for g in gs or []:
        mem = g.get("memory_total_bytes")
        out.append(
            f"{g.get('name')}"
            + (f" {format_bytes(mem, True)}" if mem else "")
            + (f" (driver {g.get('driver')})" if g.get("driver") else "")
        )
    return ", ".join(out) or "none"


#: (label, getter over a fingerprint): the environment as people read it — ``nbbench env``,
#: the reports
ENV_ROWS = (
    ("host", lambda f: f.get("host")),
    ("OS", lambda f: f.get("os")),
    ("kernel", lambda f: f.get("kernel")),
    ("machine", lambda f: f.get("machine")),
    ("container", lambda f: f.get("container") or "none detected"),
    ("CPU", lambda f: f.get("cpu_model")),
    ("usable CPUs", lambda f: _cpus(f.get("cpus") or {})),
    ("memory", lambda f: _mem(f.get("memory") or {})),
    ("container limits", lambda f: _limits(f.get("limits"))),
    ("GPUs", lambda f: _gpus(f.get("gpus"))),
    (
        "Python",
        lambda f: " ".join(
            str(x) for x in ((f.get("python") or {}).get("version"), (f.get("python") or {}).get("implementation")) if x
        ),
    ),
    ("torch", lambda f: _torch(f.get("torch"))),
    (
        "packages",
        lambda f: (
            (f"{len(f['packages'])} installed, " if f.get("packages") else "")
            + f"sha256 {str(f.get('packages_sha256') or '')[:16]}"
        ),
    ),
    (
        "nbbench",
        lambda f: f"{f.get('nbbench')}" + (f" ({str(f.get('git_commit'))[:10]})" if f.get("git_commit") else ""),
    ),
    ("environment id", lambda f: f.get("id")),
)


def env_rows(fp: dict) -> list[tuple[str, str]]:
    """The fingerprint ``fp`` as (label, text) rows (:data:`ENV_ROWS`); a field an older
    fingerprint lacks is ''."""
    out = []
    for label, get in ENV_ROWS:
        try:
            v = get(fp)
        except Exception:  # noqa: BLE001 - an older fingerprint may lack a field
            v = None
        out.append((label, "" if v is None else str(v)))
    return out


@register("env")
class EnvResult(Result):
    """The fingerprint as a result (metrics: counts; extra: the fingerprint itself)."""

    SUMMARY = ("packages_count", "cpus_usable_count", "memory_total_bytes")

    @property
    def fingerprint(self) -> dict:
        return self.extra.get("fingerprint", {})

    def headline(self) -> str:
        fp = self.fingerprint
        return f"env {fp.get('host', '')} ({self.env_id or fp.get('id', '')})"

    def answer_line(self) -> str:
        """'2 CPUs usable · 23.5 GiB memory · no GPU · torch 2.13.0+cpu, CPU-only build'."""
        fp = self.fingerprint
        cpus = (fp.get("cpus") or {}).get("usable")
        mem = fp.get("memory") or {}
        limit = mem.get("cgroup_limit_bytes") or mem.get("total_bytes")
        gpus = fp.get("gpus") or []
        parts = [
            f"{cpus:g} CPUs usable" if isinstance(cpus, (int, float)) else "CPUs unknown",
            f"{format_bytes(limit, True)} memory" if limit else "memory unknown",
            f"{len(gpus)} GPU{'s' if len(gpus) != 1 else ''}" if gpus else "no GPU",
            f"torch {_torch(fp.get('torch'))}",
        ]
        return SEP.join(parts)

    def qualifiers(self) -> list[tuple[str, str]]:
        fp = self.fingerprint
        return [("", str(x)) for x in (fp.get("os"), fp.get("container")) if x]

    def sections(self) -> list[Section]:
        """The environment as a small table (open); the exact packages are for ``--export``."""
        return [
            Section(
                "environment",
                [list(r) for r in env_rows(self.fingerprint)],
                folded=False,
                align="ll",
                css="nbbench-env",
            )
        ]
