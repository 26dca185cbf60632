"""Two models on one text (model/experiments/two_models.py) on the real SmolLM2-135M and Gemma 3 270M: the surprisal
per character sums to the text's log P from a full forward pass written here, in English and in Chinese (where
SmolLM2 writes a character as byte tokens); the characters get what the tokenizer's own offsets say they should;
each stretch where the models disagree is the exact sum of each one's tokens there; a greedy continuation is
`model.generate`'s; and the page's handlers give both, in both languages."""
import math
from types import SimpleNamespace

import plotly.graph_objects as go
import pytest
import torch

from model.decoding.core import core_of
from model.decoding.loading import available_models
from model.decoding.records import SamplingConfig
from model.decoding.session import DecodeSession
from model.errors import SessionError
from model.experiments.two_models import (MAX_CELLS, MAX_CHARS, char_of_byte, check_text, continue_text, installed_pair,
                                          read_by_each, read_text)
from viz.two_models import readings_html, two_models_chart

LN2 = math.log(2)
TEXTS = {"en": "The capital of France is Paris, and the capital of Italy is Rome.",
         "zh": "北京是中国的首都，上海是中国最大的城市。"}


# ---- no model --------------------------------------------------------------------------------------------------
@pytest.mark.unit
def test_bytes_belong_to_their_characters():
    assert char_of_byte("a北c").tolist() == [0, 1, 1, 1, 2]  # 北 is three bytes in UTF-8
    assert char_of_byte("😀b").tolist() == [0, 0, 0, 0, 1]


@pytest.mark.unit
@pytest.mark.parametrize("text,key", [("", "score_empty"), ("   ", "score_empty"), (None, "score_empty"),
                                      ("x" * (MAX_CHARS + 1), "score_too_long")])
def test_a_text_that_cannot_be_read_is_refused_with_a_reason(text, key):
    with pytest.raises(SessionError) as err:
        check_text(text)
    assert err.value.key == key and err.value.text("zh") != err.value.text("en")


# ---- both models -------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def gemma(load_once):
    if "gemma3-270m" not in available_models():
        pytest.fail("Gemma 3 270M is not installed: make run / make test install it (Makefile GEMMA)")
    return load_once("gemma3-270m")


@pytest.fixture(scope="module")
def both(lm, gemma):
    return [lm, gemma]


@torch.no_grad()
def forward_logprobs(lm, text: str) -> tuple[list[int], list[float]]:
    """The text's ids as a raw prompt (the tokenizer's own special tokens) and ln P of each id after the first,
    from one full forward pass with no cache, no chunks and no door."""
    ids = lm.tokenizer(text)["input_ids"]
    logp = lm.model(torch.tensor([ids])).logits[0].float().log_softmax(-1)  # (T, V)
    return ids, [float(logp[t - 1, ids[t]]) for t in range(1, len(ids))]


def offsets(lm, text: str) -> list[tuple[int, int]]:
    """Each text token's characters [c0, c1) by the fast tokenizer's own offset mapping (no special tokens)."""
    return [tuple(o) for o in lm.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]]


@pytest.fixture(scope="module", params=sorted(TEXTS))
def read(request, both):
    text = TEXTS[request.param]
    return SimpleNamespace(lang=request.param, text=text, readings=read_by_each([core_of(m) for m in both], text),
                           models=both)


@pytest.mark.model
def test_the_characters_sum_to_the_texts_log_p_in_each_model(read):
    for lm, reading in zip(read.models, read.readings.readings):
        ids, logps = forward_logprobs(lm, read.text)
        log_p = sum(logps)  # every id after the first: after <bos> on Gemma, after the first token on SmolLM2
        from_chars = -LN2 * float(reading.char_bits.sum())
        print(f"{read.lang} {lm.name}: {len(ids)} ids, log P {log_p:.5f} nats (forward), {from_chars:.5f} (characters), "
              f"|diff| {abs(log_p - from_chars):.1e}; {reading.bits_per_char:.3f} bits/char, ppl {reading.perplexity:.2f}")
        assert abs(from_chars - log_p) < 1e-3 * max(1.0, abs(log_p) / 100)
        assert abs(reading.logprob - from_chars) < 1e-9  # the spreading itself loses nothing
        assert reading.scored == len(ids) - 1
        assert reading.perplexity == pytest.approx(math.exp(-log_p / (len(ids) - 1)), rel=1e-4)


@pytest.mark.model
def test_what_each_model_scores_is_said_and_counted(read):
    smol, gem = read.readings.readings
    assert [tok.piece for tok in gem.start] == ["<bos>"] and gem.logprobs[0] is not None
    assert gem.characters_scored == len(read.text)  # after <bos>: every character
    assert smol.start == [] and smol.logprobs[0] is None and all(lp is not None for lp in smol.logprobs[1:])
    first_bytes, expected, at = smol.spans[0][1], 0.0, 0  # the characters' bytes outside SmolLM2's first token
    for ch in read.text:
        n = len(ch.encode())
        expected += (at + n - max(at, min(first_bytes, at + n))) / n
        at += n
    assert smol.characters_scored == pytest.approx(expected) and expected < len(read.text)
    assert smol.bits_per_char == pytest.approx(smol.bits / smol.characters_scored)
    if read.lang == "zh":  # SmolLM2 writes these characters as byte tokens: more tokens than characters
        assert len(smol.tokens) > len(read.text) >= len(gem.tokens)


@pytest.mark.model
def test_each_character_gets_what_the_tokenizers_offsets_say(read):
    """Where the tokenizer's own offsets settle it: a character whose tokens all lie inside it (a byte token of 北,
    a one-character token) gets their bits summed; a token of one-byte characters shares its bits evenly."""
    checked = 0
    for lm, reading in zip(read.models, read.readings.readings):
        _, logps = forward_logprobs(lm, read.text)
        lead = len(reading.start)
        bits = [None if j + lead == 0 else -logps[j + lead - 1] / LN2 for j in range(len(reading.tokens))]
        spans = offsets(lm, read.text)
        for c in range(len(read.text)):
            over = [j for j, (c0, c1) in enumerate(spans) if c0 <= c < c1]
            if any(bits[j] is None for j in over):
                continue
            if all(spans[j] == (c, c + 1) for j in over):  # only tokens inside this character
                assert reading.char_bits[c] == pytest.approx(sum(bits[j] for j in over), abs=1e-3), (lm.name, c)
                checked += 1
            elif all(read.text[c0:c1].isascii() for c0, c1 in (spans[j] for j in over)):
                share = sum(bits[j] / (spans[j][1] - spans[j][0]) for j in over)
                assert reading.char_bits[c] == pytest.approx(share, abs=1e-3), (lm.name, c)
                checked += 1
    assert checked >= len(read.text)  # most characters, in both models


@pytest.mark.model
def test_where_they_disagree_each_number_is_the_sum_of_that_models_own_tokens(read):
    found = read.readings.disagreements
    assert 1 <= len(found) <= 5 and sorted(found, key=lambda d: -abs(d.gap)) == found
    for d in found:
        assert read.text[d.start:d.end] == d.text
        for i, (lm, reading) in enumerate(zip(read.models, read.readings.readings)):
            _, logps = forward_logprobs(lm, read.text)
            lead = len(reading.start)
            inside = [j for j, (c0, c1) in enumerate(offsets(lm, read.text)) if d.start <= c0 and c1 <= d.end]
            straddling = [j for j, (c0, c1) in enumerate(offsets(lm, read.text))
                          if c0 < d.end and c1 > d.start and j not in inside]
            assert not straddling, (lm.name, d.text)  # both tokenizers cut at the stretch's two ends
            assert d.bits[i] == pytest.approx(sum(-logps[j + lead - 1] / LN2 for j in inside), abs=1e-3)


@pytest.mark.model
def test_a_text_past_gemmas_cells_is_refused_before_the_pass(gemma):
    limit = MAX_CELLS // gemma.info.vocab
    text = "1234567890" * (MAX_CHARS // 10)  # Gemma writes each digit as a token: 200 tokens and <bos>
    with pytest.raises(SessionError) as err:
        read_text(gemma, text)
    assert err.value.key == "score_too_many_tokens" and str(limit) in err.value.text("en")
    assert len(gemma.tokenizer(text)["input_ids"]) * gemma.info.vocab > MAX_CELLS


@pytest.fixture
def smollm2_passes(lm, monkeypatch):
    """The passes SmolLM2's weights run (in this process)."""
    passes, forward = [], lm.model.forward
    monkeypatch.setattr(lm.model, "forward", lambda *a, **k: passes.append(1) or forward(*a, **k))
    return passes


@pytest.mark.model
def test_a_text_too_long_for_gemma_is_refused_before_smollm2_reads_it(both, smollm2_passes):
    """Issue 46: SmolLM2 scored the text (22 s on a loaded machine) before Gemma's bound refused it."""
    text = "1234567890" * (MAX_CHARS // 10)  # 201 Gemma tokens: past its cells; SmolLM2 may read it
    with pytest.raises(SessionError) as err:
        read_by_each([core_of(m) for m in both], text)
    assert err.value.key == "score_too_many_tokens" and smollm2_passes == []


@pytest.mark.model
def test_a_prompt_gemma_refuses_is_refused_before_smollm2_continues_it(page, smollm2_passes):
    """Issue 46: a prompt only Gemma refuses (its own control token typed; plain text to SmolLM2) is refused
    before SmolLM2's session runs a pass (it continued the text first)."""
    import gradio as gr

    with pytest.raises(gr.Error) as err:
        continue_on(page, "two-bound", "Hello <start_of_turn>", 4, "en")
    assert "<start_of_turn>" in str(err.value.message) and smollm2_passes == []


@pytest.mark.model
@pytest.mark.parametrize("prompt", ["The capital of France is", "今天天气"])
def test_a_greedy_continuation_is_what_generate_writes(both, prompt):
    for lm in both:
        done = continue_text(DecodeSession(lm), prompt, SamplingConfig(temperature=0), 6)
        ids = lm.tokenizer(prompt)["input_ids"]
        with torch.no_grad():
            out = lm.model.generate(torch.tensor([ids]), max_new_tokens=6, do_sample=False)[0, len(ids):].tolist()
        assert [tok.id for tok in done.tokens] == out[:len(done.tokens)] and done.prompt_tokens == len(ids)


@pytest.mark.model
def test_a_sampled_continuation_is_a_sessions_own_and_repeats_with_its_seed(lm):
    cfg = SamplingConfig(temperature=0.9, top_p=0.95, seed=11)
    first, again = (continue_text(DecodeSession(lm), "Once upon a time", cfg, 8) for _ in range(2))
    alone = DecodeSession(lm)
    alone.start("Once upon a time")
    for _ in range(8):
        alone.step(cfg)
    assert [t.id for t in first.tokens] == [t.id for t in again.tokens] == alone.ids[alone.prompt_len:]
    with pytest.raises(SessionError) as err:
        continue_text(DecodeSession(lm), "Once", cfg, 0)
    assert err.value.key == "two_models_steps_range"


@pytest.mark.model
def test_the_figure_and_the_words_in_both_languages(read):
    for lang in ("en", "zh"):
        fig = go.Figure(two_models_chart(read.readings, lang))  # validated by plotly
        bars = [trace for trace in fig.data if trace.type == "bar"]
        assert len(bars) == 2 and len(fig.layout.shapes) == len(read.readings.disagreements)
        for bar, reading in zip(bars, read.readings.readings):
            assert list(bar.y) == pytest.approx(reading.char_bits.tolist())
        html = readings_html(read.readings, ["gemma3-270m"], lang)
        assert ("bits per character" in html) == (lang == "en") and ("每字符比特数" in html) == (lang == "zh")
        assert ("is not installed here" in html) == (lang == "en")


# ---- the page ----------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def page(lm, gemma):
    import app as app_module
    from model.classroom.rooms import Rooms
    from model.serving.sessions import ModelRegistry, SessionStore

    models = ModelRegistry("smollm2", {"smollm2": lm, "gemma3-270m": gemma}, by_language={"zh": "gemma3-270m"})
    app = app_module.App(models, SessionStore(), Rooms())
    demo = app_module.build(app, models.default)
    return SimpleNamespace(app=app, fns={fn.fn.__name__: fn for fn in demo.fns.values() if fn.fn is not None})


def continue_on(page, user: str, text, steps, lang: str, temperature: float = 0.0):
    """The page's Continue with both for `user`, at the page's default settings but `temperature`."""
    from tests.served import DEFAULTS

    settings = {**{k: v for k, v in DEFAULTS.items() if k not in ("lang", "layer", "head")}, "temperature": temperature}
    return page.fns["continue_both"].fn(SimpleNamespace(session_hash=user, client=None), text, steps,
                                        *settings.values(), lang, "two_models", 0, "mean")


@pytest.mark.model
def test_the_page_scores_and_continues_with_both_in_each_language(page):
    assert installed_pair() == (["smollm2", "gemma3-270m"], [])
    for lang in ("en", "zh"):
        html, carried, numbers = page.fns["score"].fn(TEXTS["zh"], lang)
        assert [m["model"] for m in numbers["models"]] == ["smollm2", "gemma3-270m"] and "tbt-two" in html
        for m in numbers["models"]:
            assert -LN2 * sum(m["char_bits"]) == pytest.approx(m["logprob"], abs=1e-9)
        assert ("(of “北”)" in html) == (lang == "en") and ("（属于“北”）" in html) == (lang == "zh")
        out = continue_on(page, f"two-{lang}", "The capital of France is", 4, lang)  # greedy: generate's (above)
        assert out.count('class="tbt-two-side"') == 2
        assert ("same seed" in out) == (lang == "en") and ("同一个种子" in out) == (lang == "zh")
    assert len(page.app.store) == 0  # each model's continuation ran in a session of its own, not kept


@pytest.mark.model
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_bad_input_is_refused_in_the_pages_language(page, lang):
    import gradio as gr

    lone = "\ud800"
    cases = [(lambda: page.fns["score"].fn(f"tea {lone} time", lang), "score_invalid_text", {}),
             (lambda: page.fns["score"].fn("", lang), "score_empty", {}),
             (lambda: continue_on(page, "bad", "Hello", 0, lang), "two_models_steps_range", dict(value=0, high=48)),
             (lambda: continue_on(page, "bad", "Hello", 2.5, lang), None, {}),
             (lambda: continue_on(page, "bad", f"tea {lone}", 2, lang), "prompt_invalid_text", {})]
    for call, key, params in cases:
        with pytest.raises(gr.Error) as err:
            call()
        said = str(err.value.message)
        if key:
            assert said == SessionError(key, **params).text(lang)
        assert ("Something went wrong" not in said) and (any("\u4e00" <= ch <= "\u9fff" for ch in said) == (lang == "zh"))


@pytest.mark.model
def test_with_one_model_installed_the_view_says_so_and_shows_the_other(page, monkeypatch):
    """Gemma's packages absent (as on a machine that installed SmolLM2 only): one sentence says so, SmolLM2 is shown."""
    import model.experiments.two_models as two_models

    monkeypatch.setattr(two_models, "available_models", lambda: ["smollm2"])
    for lang, said in (("en", "Gemma 3 270M is not installed here, so only SmolLM2-135M is shown."),
                       ("zh", "这里没有安装 Gemma 3 270M，所以只显示 SmolLM2-135M。")):
        html, carried, numbers = page.fns["score"].fn(TEXTS["en"], lang)
        assert said in html and [m["model"] for m in numbers["models"]] == ["smollm2"]
        assert numbers["disagreements"] == [] and carried.count('"type":"bar"') + carried.count('"type": "bar"') == 1
        out = continue_on(page, "one-model", "The capital of France is", 3, lang)
        assert said in out and out.count('class="tbt-two-side"') == 1
