"""KV-cache accounting: bytes measured on the cache tensors, the formula that must agree with them, and the
calculator that applies the formula to any model's shape (pure: the page only shows its answer)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from model.errors import SessionError
from model.parse import shown, whole_number
from model.decoding.records import KVBytes, ModelInfo


def kv_cache_bytes(layers: int, kv_heads: int, head_dim: int, tokens: int, bytes_per_value: int, batch: int = 1) -> int:
    """2 (K and V) x layers x kv_heads x head_dim x tokens x bytes_per_value x batch."""
    return 2 * layers * kv_heads * head_dim * tokens * bytes_per_value * batch


def formula_bytes(info: ModelInfo, tokens: int, batch: int = 1) -> int:
    """The formula for a model, layer by layer: a sliding-window layer holds at most window - 1 tokens.

    Not the whole window: the token being run brings its own K and V to its pass, which sees the window's
    last window - 1 cached tokens and itself (transformers' DynamicSlidingWindowLayer; Gemma 3: 511 of 512).
    """
    windows = info.sliding_window or [None] * info.layers
    held = [min(tokens, w - 1) if w else tokens for w in windows]  # tokens each layer keeps
    return sum(kv_cache_bytes(1, info.kv_heads, info.head_dim, t, info.bytes_per_value, batch) for t in held)


def kv_bytes(cache, info: ModelInfo) -> KVBytes:
    """Measure a DynamicCache: numel x element_size summed over every layer's K and V tensors."""
    keys = sum(layer.keys.numel() * layer.keys.element_size() for layer in cache.layers if layer.keys is not None)
    values = sum(layer.values.numel() * layer.values.element_size() for layer in cache.layers if layer.values is not None)
    tokens = cache.get_seq_length()
    return KVBytes(measured=keys + values, formula=formula_bytes(info, tokens), keys=keys, values=values, tokens=tokens)



def kv_bytes_when(cache, info: ModelInfo, tokens: int) -> KVBytes:
    """kv_bytes() of the cache as it was when it had seen its first `tokens` tokens (at most what it has seen now).

    A layer holds every token it has seen up to its cap (a sliding window's), then its last `cap`: what it holds
    now, n, is min(seen, cap), so at `tokens` it held min(tokens, n). Equal to what kv_bytes() measured then.
    """
    def held(x):
        return 0 if x is None else x[..., : min(tokens, x.shape[-2]), :].numel() * x.element_size()

    keys = sum(held(layer.keys) for layer in cache.layers)
    values = sum(held(layer.values) for layer in cache.layers)
    return KVBytes(measured=keys + values, formula=formula_bytes(info, tokens), keys=keys, values=values, tokens=tokens)

# ---- the calculator: any model's cache from its shape, compared across attention layouts and models ----------
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2, "int8": 1}  # bytes per cached value
# name: (layers, query heads, KV heads, head size)
PRESETS = {"Llama-2-7B": (32, 32, 32, 128), "Llama-3-8B": (32, 32, 8, 128), "Llama-2-70B": (80, 64, 8, 128)}


class KVRow(NamedTuple):
    """One bar of the comparison: a layout of the calculator's shape, or a model's own shape.

    kind: "mha" (a KV head per query head), "gqa" (the KV heads given), "mqa" (one KV head) or "model";
    name: the model's name for "model" rows, else None. bytes: its cache at the calculator's tokens, type, batch.
    """

    kind: str
    name: str | None
    kv_heads: int
    bytes: int


@dataclass(frozen=True)
class KVCalculation:
    """The calculator's answer: the shape it used (a preset's, or the one typed), and bytes for it and others."""

    layers: int
    heads: int  # query heads
    kv_heads: int
    head_dim: int
    bytes: int  # the whole cache: 2 x layers x kv_heads x head_dim x tokens x bytes per value x batch
    rows: list[KVRow]  # mha, gqa, mqa of this shape, then the loaded model and every preset, in that order


def preset_shape(name: str, model: ModelInfo) -> tuple[int, int, int, int]:
    """(layers, query heads, KV heads, head size) of a preset or of the loaded model (by its name)."""
    if name in PRESETS:
        return PRESETS[name]
    if name == model.name:
        return model.layers, model.heads, model.kv_heads, model.head_dim
    raise SessionError("kv_preset_unknown", name=name, choices=[model.name, *PRESETS])


def kv_calculation(preset: str | None, model: ModelInfo, dtype: str, tokens, batch, layers=None, heads=None,
                   kv_heads=None, head_dim=None) -> KVCalculation:
    """The KV cache of a shape at `tokens` x `batch` in `dtype`, and how MHA, GQA, MQA and real models compare.

    preset: a PRESETS name or the loaded model's name (its shape replaces the four numbers given), or None to
    use layers, heads, kv_heads, head_dim as typed. Numbers may come as floats from a form (32.0), not as 32.5.
    Raises SessionError saying which value to fix.
    """
    if preset is not None:
        layers, heads, kv_heads, head_dim = preset_shape(preset, model)
    shape = dict(layers=layers, heads=heads, kv_heads=kv_heads, head_dim=head_dim, tokens=tokens, batch=batch)
    layers, heads, kv_heads, head_dim, tokens, batch = (_positive_field(name, v) for name, v in shape.items())
    if dtype not in DTYPE_BYTES:
        raise SessionError("kv_dtype_unknown", dtypes=list(DTYPE_BYTES), value=dtype)
    if kv_heads > heads or heads % kv_heads:
        raise SessionError("kv_heads_not_multiple")

    def size(layers: int, kv_heads: int, head_dim: int) -> int:
        return kv_cache_bytes(layers, kv_heads, head_dim, tokens, DTYPE_BYTES[dtype], batch)

    rows = [KVRow("mha", None, heads, size(layers, heads, head_dim)),
            KVRow("gqa", None, kv_heads, size(layers, kv_heads, head_dim)),
            KVRow("mqa", None, 1, size(layers, 1, head_dim))]
    for name in (model.name, *PRESETS):
        m_layers, _, m_kv_heads, m_head_dim = preset_shape(name, model)
        rows.append(KVRow("model", name, m_kv_heads, size(m_layers, m_kv_heads, m_head_dim)))
    return KVCalculation(layers, heads, kv_heads, head_dim, rows[1].bytes, rows)


def _positive_field(name: str, value) -> int:
    """value as an int >= 1 (a whole float such as 32.0 too: model.parse.whole_number), or SessionError naming the field."""
    number = whole_number(value, text=False)  # a number box's
    if number is None or number < 1:
        raise SessionError("kv_field_invalid", name=name, value=shown(value))
    return number
