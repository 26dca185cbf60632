"""The KV-cache calculator (model/decoding/kv.py): the formula's facts (what-it-teaches.md: Its size), its rows, its refusals."""
import pytest

from model.errors import SessionError
from model.decoding.kv import DTYPE_BYTES, PRESETS, KVRow, kv_cache_bytes, kv_calculation, preset_shape
from model.decoding.records import ModelInfo

GIB = 1 << 30
SMOLLM2 = ModelInfo(name="smollm2", layers=30, heads=9, kv_heads=3, head_dim=64, hidden=576, vocab=49152,
                    bytes_per_value=4, dtype="float32", context=8192, sliding_window=[None] * 30)


def calc(preset=None, dtype="float16", tokens=2048, batch=1, model=SMOLLM2, **shape):
    return kv_calculation(preset, model, dtype, tokens, batch, **shape)


@pytest.mark.unit
def test_llama_2_7b_at_2048_tokens_in_fp16_is_exactly_one_gib():
    result = calc("Llama-2-7B")
    assert (result.layers, result.heads, result.kv_heads, result.head_dim) == (32, 32, 32, 128)
    assert result.bytes == 1_073_741_824 == GIB


@pytest.mark.unit
def test_llama_3_8b_fits_8192_tokens_in_one_gib_four_times_less_per_token():
    assert calc("Llama-3-8B", tokens=8192).bytes == GIB
    assert calc("Llama-2-7B", tokens=1).bytes == 4 * calc("Llama-3-8B", tokens=1).bytes


@pytest.mark.unit
def test_smollm2_holds_46080_bytes_per_token_in_fp32_and_23040_in_bf16():
    assert calc("smollm2", dtype="float32", tokens=1).bytes == 46_080
    assert calc("smollm2", dtype="bfloat16", tokens=1).bytes == 23_040


@pytest.mark.model
def test_the_loaded_models_own_shape_and_row(lm):
    info = lm.info
    result = calc(info.name, dtype="float32", tokens=100, batch=2, model=info)
    assert (result.layers, result.heads, result.kv_heads, result.head_dim) == (30, 9, 3, 64)
    own = next(r for r in result.rows if r.kind == "model" and r.name == info.name)
    assert own == KVRow("model", info.name, 3, 46_080 * 100 * 2) and own.bytes == result.bytes
    assert preset_shape(info.name, info) == (info.layers, info.heads, info.kv_heads, info.head_dim)


@pytest.mark.unit
def test_rows_compare_mha_gqa_mqa_of_the_shape_then_every_model_at_the_same_tokens_type_and_batch():
    result = calc(None, dtype="int8", tokens=1000, batch=3, layers=4, heads=8, kv_heads=2, head_dim=16)
    size = lambda layers, kv, hd: kv_cache_bytes(layers, kv, hd, 1000, 1, 3)  # noqa: E731
    assert result.rows == [
        KVRow("mha", None, 8, size(4, 8, 16)),
        KVRow("gqa", None, 2, size(4, 2, 16)),
        KVRow("mqa", None, 1, size(4, 1, 16)),
        KVRow("model", "smollm2", 3, size(30, 3, 64)),
        *(KVRow("model", name, kv, size(layers, kv, hd)) for name, (layers, _, kv, hd) in PRESETS.items()),
    ]
    assert result.bytes == result.rows[1].bytes == 2 * 4 * 2 * 16 * 1000 * 1 * 3


@pytest.mark.unit
def test_a_preset_replaces_the_numbers_typed_and_none_keeps_them():
    assert calc("Llama-2-70B", layers=1, heads=1, kv_heads=1, head_dim=1).layers == 80
    typed = calc(None, layers=2.0, heads=4.0, kv_heads=4, head_dim=8, tokens=10.0)  # a form's numbers are floats
    assert (typed.layers, typed.heads, typed.kv_heads, typed.head_dim) == (2, 4, 4, 8)
    assert all(type(v) is int for v in (typed.layers, typed.bytes, typed.rows[0].kv_heads, typed.rows[0].bytes))  # whole numbers, not floats
    assert typed.bytes == kv_cache_bytes(2, 4, 8, 10, 2)


SHAPE = dict(layers=2, heads=4, kv_heads=2, head_dim=8)


@pytest.mark.unit
@pytest.mark.parametrize("field", ["layers", "heads", "kv_heads", "head_dim", "tokens", "batch"])
@pytest.mark.parametrize("value", [None, 0, -3, 2.5, float("nan"), float("inf"), True, "8"])
def test_every_number_must_be_a_whole_number_of_at_least_one(field, value):
    args = {**SHAPE, "tokens": 16, "batch": 1, field: value}
    with pytest.raises(SessionError, match=f"{field} must be a whole number >= 1") as err:
        kv_calculation(None, SMOLLM2, "float32", **args)
    assert err.value.key == "kv_field_invalid"


@pytest.mark.unit
def test_an_unknown_data_type_is_refused():
    with pytest.raises(SessionError, match="data type must be one of") as err:
        calc(None, dtype="float8", **SHAPE)
    assert err.value.params["dtypes"] == list(DTYPE_BYTES)


@pytest.mark.unit
@pytest.mark.parametrize("heads, kv_heads", [(4, 3), (4, 8), (9, 2)])
def test_query_heads_must_be_a_multiple_of_kv_heads(heads, kv_heads):
    with pytest.raises(SessionError, match="multiple of KV heads"):
        calc(None, layers=2, heads=heads, kv_heads=kv_heads, head_dim=8)


@pytest.mark.unit
def test_an_unknown_preset_is_refused_with_the_choices():
    with pytest.raises(SessionError, match="Unknown model shape 'GPT-5'") as err:
        calc("GPT-5")
    assert err.value.params["choices"] == ["smollm2", *PRESETS]
