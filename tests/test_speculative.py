"""Speculative decoding on the real model: greedy parity with transformers, one pass per round, the accept rule."""
from dataclasses import replace

import numpy as np
import pytest
import torch
from transformers.generation.candidate_generator import PromptLookupCandidateGenerator

from model.errors import SessionError
from model.decoding.records import SamplingConfig
from model.speed.speculative import (GREEDY, SPEED_TEXTS, SpeculativeDecoder, lookup_draft, residual, speculative_decode)

PROMPTS = {
    "code": SPEED_TEXTS["repeating"],
    "list": "Shopping list:\n1. apples\n2. bread\n3. milk\n4. apples\n5. bread\n6.",
    "prose": "The history of the bicycle begins in the early nineteenth century, when",
}
N = 20


def ids_of(lm, text):
    return list(lm.tokenizer(text)["input_ids"])


# ---- the draft: the same choices as transformers' PromptLookupCandidateGenerator ------------------------
@pytest.mark.unit
def test_lookup_draft_matches_transformers_choices():
    rng = np.random.default_rng(7)
    cases = 0
    for _ in range(400):
        ids = rng.integers(0, 5, size=int(rng.integers(1, 30))).tolist()  # a small alphabet: many repeats; 2 = eos
        k, n = int(rng.integers(1, 6)), int(rng.integers(1, 4))
        gen = PromptLookupCandidateGenerator(eos_token_id=torch.tensor([2]), num_output_tokens=k,
                                             max_matching_ngram_size=n, max_length=10_000)
        out, _ = gen.get_candidates(torch.tensor([ids]))
        expected = out[0, len(ids):].tolist()
        assert lookup_draft(ids, k, n, {2}).tokens == expected, (ids, k, n)
        cases += bool(expected)
    assert cases > 100  # most cases drafted something: the comparison is not all empty drafts


@pytest.mark.unit
def test_lookup_draft_takes_the_longest_ngram_and_its_first_occurrence():
    # last 2-gram (7, 8) occurs at 0 and 4: the first (leftmost) occurrence's continuation is copied
    ids = [7, 8, 1, 2, 7, 8, 3, 4, 9, 7, 8]
    d = lookup_draft(ids, 3, max_ngram=2)
    assert (d.tokens, d.ngram_size, d.source_start) == ([1, 2, 7], 2, 2)
    assert lookup_draft([5, 6, 7], 3).tokens == []  # nothing repeats: no draft


# ---- greedy: the target's own output ------------------------------------------------------------------
@pytest.mark.model
@pytest.mark.parametrize("name", list(PROMPTS))
def test_greedy_equals_plain_greedy_and_transformers_prompt_lookup(lm, name):
    ids = ids_of(lm, PROMPTS[name])
    k = 4
    run = speculative_decode(lm, ids, GREEDY, draft_len=k, max_new_tokens=N)
    x = torch.tensor([ids])
    plain = lm.model.generate(x, do_sample=False, max_new_tokens=N)[0, len(ids):].tolist()
    lookup = lm.model.generate(x, do_sample=False, prompt_lookup_num_tokens=k, max_new_tokens=N)[0, len(ids):].tolist()
    assert run.generated == plain
    assert run.generated == lookup
    assert sum(len(r.new_tokens) for r in run.rounds) == len(run.generated)
    if name == "code":  # the text repeats itself: drafts are kept, fewer passes than tokens
        assert run.passes < len(run.generated) and run.acceptance_rate > 0


@pytest.mark.model
def test_one_forward_pass_per_round(lm, monkeypatch):
    ids = ids_of(lm, PROMPTS["code"])
    calls = []
    forward = lm.model.forward

    def counting(*args, **kwargs):
        calls.append(tuple(kwargs["input_ids"].shape))
        return forward(*args, **kwargs)

    monkeypatch.setattr(lm.model, "forward", counting)
    dec = SpeculativeDecoder(lm, ids, GREEDY, draft_len=4, max_new_tokens=N)
    assert calls == [(1, len(ids) - 1)]  # the prefill: all but the last prompt token
    run = dec.run()
    rounds = calls[1:]
    assert len(rounds) == run.passes
    assert rounds == [(1, 1 + len(r.drafted)) for r in run.rounds]  # the last accepted token + the drafts
    assert any(len(r.drafted) > 1 for r in run.rounds)
    assert run.rounds[-1].passes_so_far == run.passes and run.rounds[-1].tokens_so_far == len(run.generated)


@pytest.mark.model
@pytest.mark.parametrize("j", [0, 2, 4])
def test_accepted_count_on_a_draft_right_for_exactly_j_tokens(lm, j):
    ids = ids_of(lm, PROMPTS["prose"])
    k = 4
    greedy = lm.model.generate(torch.tensor([ids]), do_sample=False, max_new_tokens=k + 1)[0, len(ids):].tolist()
    draft = list(greedy[:k])
    if j < k:
        draft[j] = (greedy[j] + 1) % lm.info.vocab  # wrong from position j on
    dec = SpeculativeDecoder(lm, ids, GREEDY, draft_len=k, max_new_tokens=k + 1)
    r = dec.round(draft)
    assert r.accepted == j
    assert [c.accepted for c in r.checks] == [True] * j + ([False] if j < k else [])  # no check after a rejection
    assert r.rejected_at == (j if j < k else None)
    assert r.replacement.id == greedy[j]  # the target's own token in place of the wrong one, or the bonus
    assert r.replacement_kind == ("residual" if j < k else "bonus")
    assert [t.id for t in r.new_tokens] == greedy[: j + 1]
    assert r.cropped == k - j and r.cache_tokens == len(ids) + j  # the cache holds the text minus its last token
    assert dec.cache.get_seq_length() == len(dec.ids) - 1


# ---- sampling: accept iff u < p(x), the residual otherwise --------------------------------------------
def _independent_p(lm, seq, position, cfg):
    """p at `position` from a full forward without a cache, the stages written out here by hand."""
    z = lm.model(input_ids=torch.tensor([seq[:position]])).logits[0, -1].double()
    seen = torch.tensor(sorted(set(seq[:position])))
    z[seen] = torch.where(z[seen] > 0, z[seen] / cfg.repetition_penalty, z[seen] * cfg.repetition_penalty)
    z = z / cfg.temperature
    z[z < torch.topk(z, cfg.top_k).values[-1]] = -torch.inf
    return torch.softmax(z, -1)


@pytest.mark.model
def test_sampling_decisions_follow_u_below_p(lm):
    ids = ids_of(lm, PROMPTS["list"])
    cfg = SamplingConfig(temperature=0.9, top_k=40, repetition_penalty=1.1)
    kept = rejected = bonus = 0
    for seed in range(4):
        dec = SpeculativeDecoder(lm, ids, replace(cfg, seed=seed), draft_len=4, max_new_tokens=10)
        while not dec.stopped:
            before = list(dec.ids)
            r = dec.round()
            seq = before + [t.id for t in r.drafted]
            for c in r.checks:
                p = _independent_p(lm, seq, c.position, cfg)
                u = float(np.random.default_rng([seed, c.position, 1]).random())
                assert c.u == u
                assert c.p == pytest.approx(float(p[c.token.id]), abs=1e-4)
                assert c.accepted == (u < float(p[c.token.id]))
                kept += c.accepted
            if r.replacement_kind == "residual":
                rejected += 1
                x, pos = r.drafted[r.rejected_at].id, r.position + r.rejected_at
                p = _independent_p(lm, seq, pos, cfg)
                res = p.clone()
                res[x] = 0
                res /= res.sum()
                assert r.replacement.id != x and res[r.replacement.id] > 0
                assert r.replacement_p == pytest.approx(float(res[r.replacement.id]), abs=1e-4)
                assert r.replacement_u == float(np.random.default_rng([seed, pos, 2]).random())
            else:
                bonus += 1
            assert dec.ids == before + [t.id for t in r.new_tokens]
    assert kept and rejected and bonus  # every branch was taken at least once


@pytest.mark.model
def test_residual_is_normalised_and_zero_at_the_draft(lm):
    ids = ids_of(lm, PROMPTS["prose"])
    logits = lm.model(input_ids=torch.tensor([ids])).logits[0, -1]
    p = torch.softmax(logits / 0.8, -1)
    x = int(p.argmax())
    r = residual(p, x)
    assert r[x] == 0
    assert float(r.double().sum()) == pytest.approx(1.0, abs=1e-6)
    others = torch.arange(p.shape[0]) != x
    assert torch.allclose(r[others], p[others] / (1 - p[x]), rtol=1e-4, atol=1e-9)


@pytest.mark.model
def test_a_seed_reproduces_a_run(lm):
    ids = ids_of(lm, PROMPTS["list"])
    cfg = SamplingConfig(temperature=1.0, seed=11)
    a = speculative_decode(lm, ids, cfg, max_new_tokens=8)
    b = speculative_decode(lm, ids, cfg, max_new_tokens=8)
    assert a.generated == b.generated and [r.accepted for r in a.rounds] == [r.accepted for r in b.rounds]


@pytest.mark.model
def test_refusals_are_keyed(lm):
    with pytest.raises(SessionError) as err:
        SpeculativeDecoder(lm, [1, 2], GREEDY, draft_len=0)
    assert err.value.key == "spec_draft_len_range"
    with pytest.raises(SessionError) as err:
        SpeculativeDecoder(lm, [], GREEDY)
    assert err.value.key == "spec_no_prompt"
    dec = SpeculativeDecoder(lm, [1, 2], GREEDY, max_new_tokens=1)
    dec.round()
    with pytest.raises(SessionError) as err:
        dec.round()
    assert err.value.key in ("spec_finished_length", "spec_finished_eos")


@pytest.mark.model
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_round_chart_draws_every_draft_and_replacement(lm, lang):
    import plotly.graph_objects as go

    from viz.speculative import speculative_chart

    run = speculative_decode(lm, ids_of(lm, PROMPTS["code"]), GREEDY, draft_len=4, max_new_tokens=12)
    spec = speculative_chart(run, "SmolLM2-135M", lang)
    go.Figure(**spec)  # validated
    cells = {tr["meta"]["role"]: len(tr["y"]) for tr in spec["data"] if tr.get("meta", {}).get("role") in
             ("accepted", "rejected", "unchecked", "residual", "bonus", "own")}
    assert cells["accepted"] == sum(r.accepted for r in run.rounds)
    assert cells["rejected"] == sum(r.rejected_at is not None for r in run.rounds)
    assert cells["residual"] + cells["bonus"] + cells["own"] == run.passes  # one target token per round
    assert cells["accepted"] + cells["rejected"] + cells["unchecked"] == sum(len(r.drafted) for r in run.rounds)


@pytest.mark.unit
def test_the_page_says_the_draft_copies_from_the_first_earlier_occurrence():
    """Issue 20 item 10: lookup_draft (and transformers) take the first occurrence from the left, not the last."""
    from ui.strings import PAGE

    en, zh = PAGE["explain_speculative"]
    assert "first place" in en and "previous time" not in en
    assert "第一次出现" in zh and "上一次出现" not in zh
    assert lookup_draft([5, 1, 7, 5, 1, 8, 5, 1], k=1).tokens == [7]  # the first "5 1" is followed by 7, the last by 8
