"""Measured step time with and without the KV cache, on the real default model."""
import math
from types import SimpleNamespace

import pytest
import torch
from transformers import DynamicCache

from model.records import SamplingConfig
from model.timing import _prefix, _rewindable_cache, default_lengths, measure_cache_timing

TEXT = "The history of the printing press begins in the fifteenth century, when movable type arrived. " * 9


@pytest.fixture(scope="module")
def ids(lm):
    ids = lm.tokenizer(TEXT)["input_ids"]
    assert len(ids) >= 150
    return ids[:150]


@pytest.mark.unit
@pytest.mark.parametrize("n", [1, 2, 3, 5, 12, 100, 511, 512])
def test_default_lengths_spread_up_to_the_current_length(n):
    lengths = default_lengths(n)
    assert lengths == sorted(set(lengths)) and 1 <= len(lengths) <= 8
    assert lengths[-1] == n and all(1 <= t <= n for t in lengths)
    if n >= 100:
        assert len(lengths) == 8 and lengths[0] == 2
        assert sum(lengths) <= 2.5 * n  # what keeps a measurement at 512 tokens short


@pytest.mark.unit
def test_no_tokens_no_lengths():
    assert default_lengths(0) == []


@pytest.mark.model
def test_lengths_are_honoured_and_times_positive(lm, ids):
    lengths = [40, 2, 150, 17]  # any order, returned as given
    timing = measure_cache_timing(lm, ids, lengths, repeats=1)
    assert timing.seq_len == lengths
    assert len(timing.cached_ms) == len(timing.full_ms) == len(lengths)
    assert all(math.isfinite(ms) and ms > 0 for ms in timing.cached_ms + timing.full_ms)


@pytest.mark.model
def test_recomputing_the_longest_prefix_is_slower_than_a_cached_step(lm, ids):
    timing = measure_cache_timing(lm, ids, [150], repeats=3, budget_s=60)
    assert timing.full_ms[-1] > 1.5 * timing.cached_ms[-1]  # 150 tokens against 1: about 4x on this CPU


@pytest.fixture(scope="module")
def prefilled(lm, ids):
    """A cache holding all of ids, and the logits of that one full pass (150, V)."""
    base = DynamicCache(config=lm.model.config)
    with torch.no_grad():
        logits = lm.model(torch.tensor([ids]), past_key_values=base, use_cache=True).logits[0]
    return base, logits


@pytest.mark.model
@pytest.mark.parametrize("tokens", [0, 1, 37, 149])
def test_a_cut_copy_of_the_cache_is_the_cache_of_that_prefix(lm, ids, prefilled, tokens):
    base, full = prefilled
    for _ in range(2):  # a step on the copy leaves the original as it was, so repeats are identical
        cut = _prefix(base, tokens)
        assert cut.get_seq_length() == tokens
        with torch.no_grad():
            step = lm.model(torch.tensor([[ids[tokens]]]), past_key_values=cut, use_cache=True).logits[0, -1]
        assert base.get_seq_length() == len(ids)
        assert torch.allclose(step, full[tokens], atol=1e-3, rtol=1e-4)


@pytest.mark.unit
def test_a_cut_copy_works_past_a_sliding_window():
    """Gemma 3 style: 5 of 6 layers see only the last `window` tokens; cutting back past the window still works."""
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    config = Gemma3TextConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=6,
                              num_attention_heads=4, num_key_value_heads=1, head_dim=8, sliding_window=4,
                              attn_implementation="eager")
    torch.manual_seed(0)
    model = Gemma3ForCausalLM(config).eval()
    ids = list(range(3, 13))  # 10 tokens: more than the window
    base = _rewindable_cache(model.config)
    with torch.no_grad():
        model(torch.tensor([ids]), past_key_values=base, use_cache=True)
        full = model(torch.tensor([ids]), use_cache=False).logits[0]  # (10, V)
        for tokens in (0, 2, 5, 9):
            step = model(torch.tensor([[ids[tokens]]]), past_key_values=_prefix(base, tokens), use_cache=True)
            assert torch.allclose(step.logits[0, -1], full[tokens], atol=1e-5)
    timing = measure_cache_timing(SimpleNamespace(model=model), ids, default_lengths(len(ids)), repeats=1)
    assert timing.seq_len == default_lengths(len(ids))


class CountingModel:
    """The real model, counting forward passes."""

    def __init__(self, model):
        self.model, self.config, self.calls = model, model.config, 0

    def __call__(self, **kwargs):
        self.calls += 1
        return self.model(**kwargs)


@pytest.mark.model
@pytest.mark.parametrize("budget_s, passes", [(0, 1 + 2 * 3), (60, 1 + 3 * 2 * 3)])
def test_repeats_stop_at_the_budget(lm, ids, budget_s, passes):
    counting = CountingModel(lm.model)
    timing = measure_cache_timing(SimpleNamespace(model=counting), ids, [3, 9, 27], repeats=3, budget_s=budget_s)
    assert counting.calls == passes  # a warm-up, then per length and run: one cached step and one full pass
    assert timing.seq_len == [3, 9, 27]


@pytest.mark.model
def test_measuring_leaves_the_session_alone(lm, session):
    session.start(TEXT[:200])
    session.step(SamplingConfig(temperature=0))
    ids, kv = list(session.ids), session.steps[-1].kv
    measure_cache_timing(lm, session.ids, default_lengths(len(session.ids)), repeats=1)
    assert session.ids == ids and session.backend.cache.get_seq_length() == len(ids) and session.steps[-1].kv == kv
    twin = type(session)(lm)
    twin.start(TEXT[:200])
    twin.step(SamplingConfig(temperature=0))
    assert session.step(SamplingConfig(temperature=0)).token == twin.step(SamplingConfig(temperature=0)).token


@pytest.mark.model
@pytest.mark.parametrize("lengths, repeats", [([0], 1), ([151], 1), ([2.5], 1), ([True], 1), ([2], 0)])
def test_bad_arguments_are_refused(lm, ids, lengths, repeats):
    with pytest.raises(ValueError):
        measure_cache_timing(lm, ids, lengths, repeats=repeats)
