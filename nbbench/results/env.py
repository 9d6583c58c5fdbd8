"""The environment fingerprint as a result (kind ``env``)."""

from __future__ import annotations

from . import advice
from .base import Result, register

__all__ = ["EnvResult"]

@register("env")
class EnvResult(Result):
    """The fingerprint as a result (metrics: counts; extra: the fingerprint itself)."""

    SUMMARY = ("packages_count", "cpus_usable_count", "memory_total_bytes")

    def headline(self) -> str:
        fp = self.extra.get("fingerprint", {})
        return f"env {fp.get('host', '')} ({self.env_id or fp.get('id', '')})"

    def text_table(self) -> str:
        fp = self.extra.get("fingerprint", {})
        lines = [self.headline()]
        for k in ("os", "kernel", "machine", "container", "cpu_model", "cpus", "memory", "python",
                  "torch", "gpus", "packages_sha256", "nbbench", "git_commit"):
            lines.append(f"  {k:<16} {fp.get(k)}")
        lines.append(f"  {'packages':<16} {len(fp.get('packages', []))} installed")
        lines += [f"  {a}" for a in self.advice_lines()]   # how to export them, worded by the front end
        return "\n".join(lines)


    def _repr_html_(self) -> str:
        import html

        fp = self.extra.get("fingerprint", {})
        rows = "".join(
            f"<tr><td style='text-align:left'><b>{html.escape(k)}</b></td>"
            f"<td style='text-align:left'><code>{html.escape(str(fp.get(k)))}</code></td></tr>"
            for k in ("host", "os", "kernel", "machine", "container", "cpu_model", "cpus", "memory",
                      "python", "torch", "gpus", "packages_sha256", "nbbench", "git_commit"))
        n = len(fp.get("packages", []))
        tail = "".join(" — " + advice.word_html(a, self.wording) for a in self.advice)
        return (f"<div class='nbbench-result'><b>{html.escape(self.headline())}</b><table>{rows}</table>"
                f"<div style='font-size:90%'>{n} packages installed{tail}</div></div>")
