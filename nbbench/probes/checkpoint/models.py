"""What a checkpoint holds: the tensors of a model-like state dict, by name, shape and dtype.

:func:`plan` turns a model name and a size into a :class:`Plan` — the list of
:class:`TensorSpec` the checkpoint probe fills with random data — without importing
torch (the shapes are plain arithmetic, tested on their own):

* ``transformer`` (default): a generic decoder — token embeddings, per layer the
  attention's q/k/v/o projections, the MLP's gate/up/down projections and two norms,
  a final norm and the output head — sized to ``size`` (default 512 MiB): the hidden
  width ``h`` grows in steps of 64 with ``sqrt(h) / 2`` layers (32 at 4096, as Llama's 8B)
  while the layers hold at most half the parameters; the vocabulary (embeddings and
  output head) takes up the rest, as in small language models.  Weights bf16; with the optimizer
  (default) Adam's state in fp32:
  ``exp_avg``, ``exp_avg_sq`` and the fp32 master weights, as mixed-precision training
  saves it (12 bytes a parameter beside the weights' 2).
* ``resnet50``: torchvision's ResNet-50 — convolution weights, batch-norm weights,
  biases and buffers (running mean / var, ``num_batches_tracked``), the fc layer — in
  fp32 with SGD's momentum buffer per parameter; ``size`` widens or narrows every
  layer's channels (its own size, about 205 MB, when not given).
* ``llama3-8b``, ``llama3-70b``, ``llama3-405b``, ``llama3-1t``: the layer shapes of
  MLPerf Storage's checkpointing workloads (mlcommons/storage
  ``configs/dlio/workload/llama3_*.yaml``: layers, hidden, ffn, vocab, heads, kv heads;
  model fp16, optimizer fp32), and the size one process writes there: ``(Model GB +
  Optimizer GB) / processes`` from ``mlpstorage/config.py`` ``LLM_SIZE_BY_RANK`` and the
  CLOSED process count of ``LLM_ALLOWED_VALUES``, times ``scale``.  Its "GB" are GiB:
  parameters × 2 bytes (fp16) in GiB give its Model GB (8B: 8.03e9 × 2 B = 15.0 GiB;
  70B: 69.9e9 × 2 B = 130 GiB) and × 12 bytes its Optimizer GB.  One process holds a
  slice of every tensor (its rows, as ZeRO-3 shards each parameter and its optimizer
  state over the processes — a piece of a row where fewer than one row is left), cut so
  the file is that size; the tensor count and the tensors' relative sizes stay the model's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ...results import ProbeError
from ...units import format_bytes

__all__ = [
    "TensorSpec",
    "Plan",
    "plan",
    "MODELS",
    "PRESETS",
    "PRESET_SOURCE",
    "DEFAULT_SIZE",
    "decoder_params",
    "resnet50_params",
    "DTYPE_BYTES",
]

DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "int64": 8}
DEFAULT_SIZE = 512 << 20
GIB = 1 << 30

PRESET_SOURCE = (
    "mlcommons/storage mlpstorage/config.py LLM_SIZE_BY_RANK and LLM_ALLOWED_VALUES (commit 1d3bbf1c), "
    "configs/dlio/workload/llama3_{name}.yaml"
)


@dataclass(frozen=True)
class Preset:
    """One MLPerf Storage checkpointing workload: its layer shapes and per-process size."""

    layers: int
    hidden: int
    ffn: int
    vocab: int
    heads: int
    kv_heads: int
    model_gib: int  # LLM_SIZE_BY_RANK (Model GB, Optimizer GB): the whole checkpoint
    optimizer_gib: int
    processes: int  # LLM_ALLOWED_VALUES' CLOSED process count

    def per_process_bytes(self, optimizer: bool = True) -> float:
        return (self.model_gib + (self.optimizer_gib if optimizer else 0)) * GIB / self.processes


PRESETS: dict[str, Preset] = {
    "llama3-8b": Preset(32, 4096, 14336, 128256, 32, 8, 15, 90, 8),
    "llama3-70b": Preset(80, 8192, 28672, 128256, 128, 8, 130, 781, 64),
    "llama3-405b": Preset(126, 16384, 53248, 128256, 128, 8, 755, 4533, 512),
    "llama3-1t": Preset(128, 25872, 98304, 128256, 192, 32, 2571, 15426, 1024),
}
MODELS = ("transformer", "resnet50", *PRESETS)


@dataclass(frozen=True)
class TensorSpec:
    """One tensor of the state dict: ``path`` is its place in the nested dict."""

    path: tuple[str, ...]
    shape: tuple[int, ...]
    dtype: str

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.numel * DTYPE_BYTES[self.dtype]

    @property
    def name(self) -> str:
        return ".".join(self.path)


@dataclass
class Plan:
    """The tensors of one checkpoint, and how they were chosen (for the result's labels)."""

    model: str
    specs: list[TensorSpec]
    target_bytes: int
    shape_text: str
    dtypes_text: str
    size_text: str
    source: str | None = None
    extra: dict = field(default_factory=dict)

    @property
    def total_bytes(self) -> int:
        return sum(s.nbytes for s in self.specs)

    @property
    def count(self) -> int:
        return len(self.specs)


# ------------------------------------------------------------------- shapes
def decoder_params(layers: int, hidden: int, ffn: int, vocab: int, heads: int, kv_heads: int):
    """(name, shape) of a Llama-style decoder's parameters, in the order a model lists them."""
    kv = hidden * kv_heads // heads
    out = [("embed_tokens.weight", (vocab, hidden))]
    for i in range(layers):
        p = f"layers.{i}."
        out += [
            (p + "self_attn.q_proj.weight", (hidden, hidden)),
            (p + "self_attn.k_proj.weight", (kv, hidden)),
            (p + "self_attn.v_proj.weight", (kv, hidden)),
            (p + "self_attn.o_proj.weight", (hidden, hidden)),
            (p + "mlp.gate_proj.weight", (ffn, hidden)),
            (p + "mlp.up_proj.weight", (ffn, hidden)),
            (p + "mlp.down_proj.weight", (hidden, ffn)),
            (p + "input_layernorm.weight", (hidden,)),
            (p + "post_attention_layernorm.weight", (hidden,)),
        ]
    out += [("norm.weight", (hidden,)), ("lm_head.weight", (vocab, hidden))]
    return out


def resnet50_params(width: float = 1.0):
    """(name, shape, kind) of torchvision's ResNet-50, channels × ``width``; kind is ``param`` or
    ``buffer`` (batch norm's running statistics) or ``count`` (``num_batches_tracked``)."""

    def ch(c):
        return max(1, int(round(c * width)))

    out = []

    def conv(name, cout, cin, k):
        out.append((f"{name}.weight", (cout, cin, k, k), "param"))

    def bn(name, c):
        out.extend(
            [
                (f"{name}.weight", (c,), "param"),
                (f"{name}.bias", (c,), "param"),
                (f"{name}.running_mean", (c,), "buffer"),
                (f"{name}.running_var", (c,), "buffer"),
                (f"{name}.num_batches_tracked", (), "count"),
            ]
        )

    conv("conv1", ch(64), 3, 7)
    bn("bn1", ch(64))
    cin = ch(64)
    for li, (blocks, width_c) in enumerate(zip((3, 4, 6, 3), (64, 128, 256, 512)), start=1):
        w, cout = ch(width_c), ch(width_c * 4)
        for b in range(blocks):
            p = f"layer{li}.{b}"
            conv(f"{p}.conv1", w, cin, 1)
            bn(f"{p}.bn1", w)
            conv(f"{p}.conv2", w, w, 3)
            bn(f"{p}.bn2", w)
            conv(f"{p}.conv3", cout, w, 1)
            bn(f"{p}.bn3", cout)
            if b == 0:
                conv(f"{p}.downsample.0", cout, cin, 1)
                bn(f"{p}.downsample.1", cout)
            cin = cout
    out.append(("fc.weight", (1000, cin), "param"))
    out.append(("fc.bias", (1000,), "param"))
    return out


# ------------------------------------------------------------- state dicts
_ADAM = ("exp_avg", "exp_avg_sq", "master")


def _llm_specs(params, weight_dtype: str, optimizer: bool) -> list[TensorSpec]:
    specs = [TensorSpec(("model", n), s, weight_dtype) for n, s in params]
    if optimizer:
        for n, s in params:
            specs += [TensorSpec(("optimizer", "state", n, k), s, "float32") for k in _ADAM]
    return specs


def _resnet_specs(params, optimizer: bool) -> list[TensorSpec]:
    specs = [TensorSpec(("model", n), s, "int64" if kind == "count" else "float32") for n, s, kind in params]
    if optimizer:
        specs += [
            TensorSpec(("optimizer", "state", n, "momentum_buffer"), s, "float32")
            for n, s, kind in params
            if kind == "param"
        ]
    return specs


def _slice(shape: tuple[int, ...], d: float) -> tuple[int, ...]:
    """This process's part of a tensor split ``d`` ways: its rows, or a piece of one row."""
    if d <= 1 or not shape:
        return shape
    rows = shape[0]
    r = int(round(rows / d))
    if r >= 1:
        return (r, *shape[1:])
    return (max(1, int(round(math.prod(shape) / d))),)


def _bytes_per_param(optimizer: bool, weight_bytes: int = 2) -> int:
    return weight_bytes + (12 if optimizer else 0)


def _generic_dims(target: int, optimizer: bool) -> tuple[int, int, int, int]:
    """(layers, hidden, ffn, vocab) of the generic decoder whose state is about ``target`` bytes."""
    bpp = _bytes_per_param(optimizer)

    def dims(h):
        layers = max(2, int(round(math.sqrt(h) / 2)))
        ffn = 64 * math.ceil(8 * h / 3 / 64)
        return layers, ffn

    def layer_params(h):
        layers, ffn = dims(h)
        return layers * (4 * h * h + 3 * h * ffn + 2 * h) + h

    params = target / bpp
    h = 64
    while h < 16384 and layer_params(h + 64) <= params / 2:
        h += 64
    layers, ffn = dims(h)
    vocab = max(256, int((params - layer_params(h)) // (2 * h)))
    return layers, h, ffn, vocab


def plan(model: str = "transformer", size=None, scale: float = 1.0, optimizer: bool = True) -> Plan:
    """The tensors of a ``model``-like checkpoint of about ``size`` bytes (× ``scale``); see the module doc."""
    from ...units import parse_size

    if model not in MODELS:
        raise ProbeError(f"unknown model {model!r}: choose from {', '.join(MODELS)}")
    scale = float(scale)
    if not scale > 0 or math.isinf(scale):
        raise ProbeError(f"scale must be a positive number, not {scale!r}")
    try:
        size_b = None if size is None else parse_size(size)
    except ValueError as exc:
        raise ProbeError(str(exc)) from None
    opt_text = "optimizer fp32 (Adam: exp_avg, exp_avg_sq, master weights)" if optimizer else "no optimizer state"
    if model in PRESETS:
        if size_b is not None:
            raise ProbeError(
                f"{model} takes its size from MLPerf Storage (its per-process share); scale it with "
                "--scale (e.g. 0.01), not --size"
            )
        pr = PRESETS[model]
        params = decoder_params(pr.layers, pr.hidden, pr.ffn, pr.vocab, pr.heads, pr.kv_heads)
        target = pr.per_process_bytes(optimizer) * scale
        full = sum(math.prod(s) for _, s in params) * _bytes_per_param(optimizer)
        d = _split_for(params, target, optimizer, full)
        sliced = [(n, _slice(s, d)) for n, s in params]
        # the rounding of rows leaves the slices a little short: the embedding's rows take up the rest
        name, shape = sliced[0]
        if len(shape) == 2:
            short = target - sum(math.prod(s) for _, s in sliced) * _bytes_per_param(optimizer)
            sliced[0] = (name, (shape[0] + max(0, int(short // (shape[1] * _bytes_per_param(optimizer)))), shape[1]))
        gib = pr.model_gib + (pr.optimizer_gib if optimizer else 0)
        size_text = (
            f"MLPerf's {gib:,} GiB / {pr.processes} processes = "
            f"{format_bytes(pr.per_process_bytes(optimizer), binary=True)} per process"
            + (f" × scale {scale:g}" if scale != 1 else "")
            + f"; a 1/{d:,.1f} slice of each tensor"
        )
        return Plan(
            model,
            _llm_specs(sliced, "float16", optimizer),
            int(target),
            f"{pr.layers} layers, hidden {pr.hidden}, ffn {pr.ffn}, vocab {pr.vocab}, {pr.heads} heads, "
            f"{pr.kv_heads} kv heads",
            f"weights fp16, {opt_text}",
            size_text,
            PRESET_SOURCE.replace("{name}", model.split("-", 1)[1]),
            {"processes": pr.processes, "split": d},
        )
    if model == "resnet50":
        target = None if size_b is None else size_b * scale
        if target is None and scale != 1:
            target = sum(s.nbytes for s in _resnet_specs(resnet50_params(), optimizer)) * scale
        width = 1.0 if target is None else _resnet_width(target, optimizer)
        specs = _resnet_specs(resnet50_params(width), optimizer)
        opt = "SGD momentum fp32" if optimizer else "no optimizer state"
        return Plan(
            model,
            specs,
            int(target or sum(s.nbytes for s in specs)),
            f"ResNet-50 (torchvision), channels × {width:.3g}",
            f"weights and batch-norm buffers fp32, {opt}",
            "its own size" if target is None else f"{format_bytes(target, binary=True)} asked",
        )
    target = (DEFAULT_SIZE if size_b is None else size_b) * scale
    if target < 1024:
        raise ProbeError(f"a checkpoint of {int(target)} bytes is too small to be one: give --size 1M or more")
    layers, h, ffn, vocab = _generic_dims(int(target), optimizer)
    heads = max(1, h // 64)
    params = decoder_params(layers, h, ffn, vocab, heads, heads)
    return Plan(
        model,
        _llm_specs(params, "bfloat16", optimizer),
        int(target),
        f"{layers} layers, hidden {h}, ffn {ffn}, vocab {vocab}, {heads} heads",
        f"weights bf16, {opt_text}",
        f"{format_bytes(target, binary=True)} asked",
    )


def _split_for(params, target: float, optimizer: bool, full: float) -> float:
    """The ``d`` for which the slices of every tensor add up to ``target`` bytes (bisection on log d)."""
    bpp = _bytes_per_param(optimizer)
    if target >= full:
        return 1.0

    def total(d):
        return sum(math.prod(_slice(s, d)) for _, s in params) * bpp

    lo, hi = 0.0, math.log(full / max(target, 1.0)) + 20.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if total(math.exp(mid)) > target:
            lo = mid
        else:
            hi = mid
    return math.exp(hi)


def _resnet_width(target: float, optimizer: bool) -> float:
    def total(w):
        return sum(s.nbytes for s in _resnet_specs(resnet50_params(w), optimizer))

    lo, hi = 0.0, 64.0
    for _ in range(40):
        mid = (lo + hi) / 2
        if total(mid) > target:
            hi = mid
        else:
            lo = mid
    return max(lo, 0.01)
