"""Result of the checkpoint probe (kind ``checkpoint``): torch.save / torch.load and DCP, cold and warm.

Metrics (base units): ``write_bytes_per_s`` (torch.save + fsync, the headline),
``read_bytes_per_s`` (torch.load, page cache emptied first: ``labels["cache_read"]``),
``read_warm_bytes_per_s``, ``dcp_write_bytes_per_s``, ``dcp_read_bytes_per_s`` (cold),
``dcp_read_warm_bytes_per_s``, ``load_mmap_first_tensor_s`` / ``load_mmap_all_s``
(``torch.load(mmap=True)``, warm), each rate's ``*_elapsed_s``, and ``state_bytes``,
``file_bytes``, ``dcp_bytes``, ``tensors_count`` (the seconds spent filling the state in memory:
``extra["build_s"]``).  Each figure's cache mode is
a label (``cache_read``, ``cache_read_warm``, ``cache_dcp_read``, ``cache_dcp_read_warm``,
``cache_mmap``); ``preset_source`` cites where an MLPerf preset's sizes come from.
"""

from __future__ import annotations

from ...units import format_bytes, format_metric
from ..base import Result, metric, register

__all__ = ["CheckpointResult"]


@register("checkpoint")
class CheckpointResult(Result):
    """One checkpoint save / load run."""

    SUMMARY = (
        "write_bytes_per_s",
        "read_bytes_per_s",
        "read_warm_bytes_per_s",
        "dcp_write_bytes_per_s",
        "dcp_read_bytes_per_s",
    )

    def headline(self) -> str:
        return f"checkpoint {self.params.get('model', '')} {self.params.get('path', '')}".strip()

    write_bytes_per_s = metric()

    read_bytes_per_s = metric()

    def answer(self) -> str:
        """The result in one sentence: how fast a checkpoint goes to storage and comes back."""
        m = self.metrics
        if self.status == "failed":
            return f"The checkpoint run failed: {self.reason}"
        if "ranks" in self.labels and self.extra.get("answer"):  # many ranks: what they got together
            return self.extra["answer"]
        size = m.get("file_bytes") or m.get("state_bytes")
        what = (
            f"the {format_bytes(size, binary=True)} {self.params.get('model', '')} checkpoint"
            if size
            else "the checkpoint"
        )
        if m.get("write_bytes_per_s") is None:
            return f"Nothing was saved: {self.reason or 'stopped before torch.save'}."

        def r(k):
            return format_metric(k, m[k])

        def took(k, *more):  # "(1.23 s, fsync'd)"; a figure missing from an older run is left out
            bits = ([f"{m[k]:.2f} s"] if isinstance(m.get(k), (int, float)) else []) + list(more)
            return f" ({', '.join(bits)})" if bits else ""

        durable = took("write_elapsed_s", "fsync'd")
        s = f"torch.save wrote {what} at {r('write_bytes_per_s')}{durable}"
        if m.get("read_bytes_per_s") is not None:
            cold = self.labels.get("cache_read", "buffered-cold")
            s += f"; torch.load read it back at {r('read_bytes_per_s')}{took('read_elapsed_s', cold)}"
            if m.get("read_warm_bytes_per_s") is not None:
                s += f" and {r('read_warm_bytes_per_s')} from the page cache"
        if m.get("dcp_write_bytes_per_s") is not None:
            s += f"; DCP: {r('dcp_write_bytes_per_s')} write"
            if m.get("dcp_read_bytes_per_s") is not None:
                s += f", {r('dcp_read_bytes_per_s')} read ({self.labels.get('cache_dcp_read', 'buffered-cold')})"
        if m.get("load_mmap_first_tensor_s") is not None and m.get("load_mmap_all_s") is not None:
            s += (
                f"; torch.load(mmap=True) gave the first tensor in {r('load_mmap_first_tensor_s')}"
                f", all in {r('load_mmap_all_s')}"
            )
        s += "."
        if self.status == "interrupted":
            s += f" Interrupted: {self.reason}."
        return s

    def story(self) -> list[str]:
        """What the figures above it do not say, once: what was saved, how long each step took
        and from which cache (the answer line has the rates; :meth:`answer` is the whole
        sentence, rates included, for a caller that wants one)."""
        m = self.metrics
        if self.status == "failed" or m.get("write_bytes_per_s") is None:
            return [self.answer()]
        if "ranks" in self.labels and self.extra.get("answer"):
            return []  # the ranked answer is said once by the view
        size = m.get("file_bytes") or m.get("state_bytes")
        what = (
            f"{format_bytes(size, binary=True)} {self.params.get('model', '')} checkpoint".strip()
            if size
            else "checkpoint"
        )

        def took(k):
            return f"{m[k]:.2f} s" if isinstance(m.get(k), (int, float)) else ""

        bits = [f"torch.save fsync'd in {took('write_elapsed_s')}" if took("write_elapsed_s") else "torch.save fsync'd"]
        if m.get("read_bytes_per_s") is not None:
            cold = self.labels.get("cache_read", "buffered-cold")
            bits.append(
                f"torch.load {cold}"
                + (f" in {took('read_elapsed_s')}" if took("read_elapsed_s") else "")
                + (", then from the page cache" if m.get("read_warm_bytes_per_s") is not None else "")
            )
        if m.get("dcp_read_bytes_per_s") is not None:
            bits.append(f"DCP read {self.labels.get('cache_dcp_read', 'buffered-cold')}")
        if m.get("load_mmap_first_tensor_s") is not None and m.get("load_mmap_all_s") is not None:
            bits.append(
                f"torch.load(mmap=True) gave the first tensor in "
                f"{format_metric('load_mmap_first_tensor_s', m['load_mmap_first_tensor_s'])}, all in "
                f"{format_metric('load_mmap_all_s', m['load_mmap_all_s'])}"
            )
        s = f"The {what}: " + "; ".join(bits) + "."
        if self.status == "interrupted":
            s += f" Interrupted: {self.reason}."
        return [s]
