"""The sampling stages on hand-made logits, against docs/what-it-teaches.md (the stages) and transformers."""
import math

import numpy as np
import pytest
import torch
from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

from model.decoding.records import SamplingConfig, TokenInfo
from model.decoding.sampling import derive, draw_u, inverse_cdf, temperature_sweep

pytestmark = pytest.mark.unit


class Ids:
    """Token display for hand-made vocabularies: the id as text."""

    def info(self, i):
        return TokenInfo(int(i), f"t{i}", f"t{i}")


CTX = torch.tensor([[0]])


def dist(logits, **cfg):
    return derive(torch.tensor(logits, dtype=torch.float32), CTX, SamplingConfig(**cfg), position=3, tokens=Ids())


def kept(d):
    return {c.token.id for c in d.candidates if c.final_prob > 0}


def test_order_example_from_facts():
    # logits [3, 2, 1], top-p 0.8, T 0.5: temperature first keeps {0}; temperature last keeps {0, 1}.
    first = dist([3.0, 2.0, 1.0], temperature=0.5, top_p=0.8, order="transformers")
    last = dist([3.0, 2.0, 1.0], temperature=0.5, top_p=0.8, order="temperature_last")
    assert kept(first) == {0}
    assert kept(last) == {0, 1}
    after_t = [c.stage_probs["temperature"] for c in first.candidates]
    assert np.allclose(after_t, [0.867, 0.117, 0.016], atol=1e-3)
    before_cut = [c.stage_probs["min_p"] for c in last.candidates]  # min_p off: top-p's result, temperature not yet
    assert np.allclose([c.stage_probs["top_k"] for c in last.candidates], [0.665, 0.245, 0.090], atol=1e-3)
    assert np.allclose(before_cut, [0.731, 0.269, 0.0], atol=1e-3)
    assert [c.fate for c in first.candidates][1:] == ["top_p", "top_p"]


def test_top_k_keeps_k():
    d = dist([5.0, 4.0, 3.0, 2.0, 1.0, 0.0], top_k=3)
    assert kept(d) == {0, 1, 2}
    assert {c.fate for c in d.candidates if c.token.id >= 3} == {"top_k"}
    assert d.stages[2].name == "top_k" and d.stages[2].removed == 3 and d.stages[2].kept == 3


def test_top_p_keeps_smallest_set_reaching_p():
    logits = np.log([0.5, 0.3, 0.15, 0.05])
    assert kept(dist(logits, top_p=0.5)) == {0}  # 0.5 alone reaches 0.5
    assert kept(dist(logits, top_p=0.6)) == {0, 1}  # 0.8 is the first sum >= 0.6
    assert kept(dist(logits, top_p=0.9)) == {0, 1, 2}
    assert kept(dist(logits, top_p=1e-6)) == {0}  # at least one token


def test_min_p_relative_to_the_top():
    logits = np.log([0.5, 0.3, 0.15, 0.05])
    d = dist(logits, min_p=0.25)  # threshold 0.125: 0.05 goes
    assert kept(d) == {0, 1, 2}
    assert [c.fate for c in d.candidates if c.token.id == 3] == ["min_p"]


def test_temperature_zero_is_greedy_and_never_divides():
    d = dist([1.0, 3.0, 2.0], temperature=0, seed=123)
    assert d.chosen.id == 1 and d.chosen_final_prob == 1.0
    assert kept(d) == {1}
    assert {c.fate for c in d.candidates if c.token.id != 1} == {"greedy"}


def test_repetition_penalty_divides_positive_multiplies_negative():
    logits = torch.tensor([2.0, -1.0, 0.5])
    d = derive(logits, torch.tensor([[0, 1]]), SamplingConfig(repetition_penalty=2.0), 2, Ids())
    after = torch.log(torch.tensor([c.stage_probs["repetition_penalty"] for c in sorted(d.candidates, key=lambda c: c.token.id)]))
    expected = torch.log_softmax(torch.tensor([1.0, -2.0, 0.5]), -1)
    assert torch.allclose(after, expected, atol=1e-5)


def test_probabilities_normalised_over_full_vocabulary():
    logits = torch.zeros(1000)
    logits[:5] = 5.0
    d = derive(logits, CTX, SamplingConfig(temperature=0), 0, Ids(), top_n=5)  # greedy: the draw is among the 5
    full = torch.softmax(logits, -1)[:5]
    assert np.allclose([c.prob_t1 for c in d.candidates[:5]], full.numpy(), atol=1e-6)
    assert math.isclose(d.tail_mass_t1, 1 - float(full.sum()), abs_tol=1e-5)  # the other 995 tokens
    assert d.tail_mass_t1 > 0.03


@pytest.mark.parametrize(
    "settings",
    [
        dict(temperature=0.7, top_k=50, top_p=0.9, min_p=0.05, repetition_penalty=1.3),
        dict(temperature=1.5, top_p=0.95),
        dict(temperature=0.4, top_k=5),
        dict(min_p=0.1, repetition_penalty=0.8),
    ],
)
def test_final_distribution_equals_generates_own_processors(settings):
    """Build the processor list exactly as model.generate() does and compare the final distribution."""
    tiny = LlamaForCausalLM(LlamaConfig(vocab_size=300, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                        num_attention_heads=2, num_key_value_heads=1))
    gen = GenerationConfig(do_sample=True, **settings)
    processors = tiny._get_logits_processor(generation_config=gen, input_ids_seq_length=4, logits_processor=None,
                                            prefix_allowed_tokens_fn=None, encoder_input_ids=None)
    torch.manual_seed(1)
    logits = torch.randn(300) * 4
    context = torch.tensor([[3, 7, 7, 250]])
    expected = torch.softmax(processors(context, logits.reshape(1, -1).clone()), -1).reshape(-1)
    d = derive(logits, context, SamplingConfig(**settings), 4, Ids(), top_n=300)
    got = torch.zeros(300)
    for c in d.candidates:
        got[c.token.id] = c.final_prob
    assert torch.allclose(got, expected, atol=1e-6)
    assert d.chosen_final_prob > 0


def naive_inverse_cdf(probs, u):
    order = sorted((i for i in range(len(probs)) if probs[i] > 0), key=lambda i: (-float(probs[i]), i))
    total, acc = float(probs.double().sum()), 0.0
    for i in order:
        acc += float(probs[i])
        if acc > u * total:
            return i
    return order[-1]


def test_inverse_cdf_matches_a_plain_walk():
    rng = np.random.default_rng(0)
    for trial in range(40):
        probs = torch.softmax(torch.tensor(rng.normal(size=2000) * rng.uniform(0.1, 5)), -1).float()
        if trial % 3 == 0:
            probs[::2] = probs[1::2]  # ties everywhere
        for u in rng.uniform(size=10):
            assert inverse_cdf(probs, float(u), head=64) == naive_inverse_cdf(probs, float(u))


def test_draw_u_depends_on_seed_and_position_only():
    assert draw_u(7, 12) == draw_u(7, 12)
    assert draw_u(7, 12) != draw_u(7, 13) and draw_u(7, 12) != draw_u(8, 12)
    assert 0 <= draw_u(0, 0) < 1


def test_two_settings_on_one_step_share_one_u_and_the_draw_follows_it():
    logits = torch.tensor([2.0, 1.5, 1.0, 0.5])
    a = derive(logits, CTX, SamplingConfig(temperature=1.0, seed=3), 9, Ids())
    b = derive(logits, CTX, SamplingConfig(temperature=0.2, seed=3), 9, Ids())
    assert a.u == b.u
    order = sorted(a.candidates, key=lambda c: (-c.final_prob, c.token.id))
    cum = np.cumsum([c.final_prob for c in order])
    assert a.chosen.id == order[int(np.searchsorted(cum, a.u, side="right"))].token.id
    for d in (a, b):
        assert d.draw_cum_before <= d.u < d.draw_cum_before + d.chosen_final_prob


def test_forced_token_outside_the_kept_set_has_no_place_in_the_draw():
    d = derive(torch.tensor([5.0, 1.0, 0.0]), CTX, SamplingConfig(top_k=1), 2, Ids(), force_token=2)
    assert d.forced and d.chosen.id == 2 and d.chosen_final_prob == 0 and d.draw_cum_before is None


@pytest.mark.parametrize(
    "bad, name",
    [
        (dict(temperature=-0.1), "temperature"),
        (dict(temperature=float("nan")), "temperature"),
        (dict(top_p=0.0), "top_p"),
        (dict(top_p=1.5), "top_p"),
        (dict(top_k=-1), "top_k"),
        (dict(top_k=2.5), "top_k"),
        (dict(min_p=float("inf")), "min_p"),
        (dict(repetition_penalty=0), "repetition_penalty"),
        (dict(order="llama"), "order"),
        (dict(seed=-1), "seed"),
    ],
)
def test_settings_out_of_range_name_the_setting(bad, name):
    with pytest.raises(ValueError, match=name):
        SamplingConfig(**bad).validate()


def test_temperature_sweep_flattens():
    logits = torch.tensor([4.0, 2.0, 1.0, 0.0, -1.0])
    s = temperature_sweep(logits, CTX, SamplingConfig(top_p=0.9), [0.3, 1.0, 2.0])
    assert s.entropy_bits[0] < s.entropy_bits[1] < s.entropy_bits[2]
    assert s.nucleus_size[0] <= s.nucleus_size[1] <= s.nucleus_size[2]
    assert s.nucleus_size[0] == 1


def test_a_low_temperature_removes_no_token_though_probabilities_underflow():
    # 2,000 logits from 0 down to -40: at T = 0.1 most probabilities underflow to 0 in float32, yet temperature
    # removes nothing (issue 22: the Temperature tab read ~1,000 "tokens that can still be drawn" at T = 0.1).
    logits = torch.linspace(0.0, -40.0, 2000)
    low = SamplingConfig(temperature=0.1)
    p = torch.softmax(logits / 0.1, -1)
    assert int((p > 0).sum()) < 2000  # the underflow the old count read as removal
    d = derive(logits, CTX, low, 0, Ids())
    assert [s.kept for s in d.stages if s.name == "temperature"] == [2000]
    assert temperature_sweep(logits, CTX, low, [0.1, 1.0]).nucleus_size == [2000, 2000]
    # the cuts still count as cuts: top-k 7 leaves 7, top-p at T = 0.1 leaves the few that carry 0.9
    assert temperature_sweep(logits, CTX, SamplingConfig(top_k=7), [0.1]).nucleus_size == [7]
    assert temperature_sweep(logits, CTX, SamplingConfig(top_p=0.9), [0.1]).nucleus_size[0] < 20
    assert temperature_sweep(logits, CTX, SamplingConfig(temperature=0), [0.0]).nucleus_size == [1]


def test_a_draw_past_the_head_sorts_a_few_heads_not_the_whole_vocabulary(monkeypatch):
    """A flat distribution and a u near 1 walk past the sorted head: the next try sorts 8 times as many, not the
    whole vocabulary (a sort of 49k tokens was 5-15 ms of a classroom's step), and draws the same token."""
    rng = np.random.default_rng(1)
    probs = torch.softmax(torch.tensor(rng.normal(size=49152) * 0.5), -1).float()
    sizes = []
    topk = torch.topk

    def counting_topk(t, k, *args, **kwargs):
        sizes.append(k)
        return topk(t, k, *args, **kwargs)

    for u in (0.003, 0.02, 0.2):  # past the head of 256 (about u x 49152 tokens in): not the whole vocabulary
        expected = naive_inverse_cdf(probs, u)
        sizes.clear()
        monkeypatch.setattr(torch, "topk", counting_topk)
        got = inverse_cdf(probs, u, head=256)
        monkeypatch.setattr(torch, "topk", topk)
        assert got == expected
        assert sizes[0] == 256 and max(sizes) <= 16384
