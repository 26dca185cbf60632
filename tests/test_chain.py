"""The chain rule and teacher forcing, checked against one full forward pass computed here, on the real model."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import pytest
import torch

from model.inside.chain import GLTR_EDGES, RANK_EDGES, chain_rule, rank_bucket
from model.errors import SessionError
from model.decoding.records import SamplingConfig
from model.decoding.session import DecodeSession
from model.inside.teacher_forcing import compare_stepwise, score_text, teacher_forcing
from viz.chain import BUCKET_COLORS, bucket_names, chain_chart, chain_figure, gltr_html, teacher_chart, teacher_figure

ROOT = Path(__file__).resolve().parents[1]
SAMPLED = SamplingConfig(temperature=0.8, top_p=0.9, seed=3)  # so the sampled distribution differs from T = 1
ATOL_LOGIT = 1e-3  # fp32, cached stepwise decoding vs one pass without a cache (seen here: about 5e-5)


@torch.no_grad()
def full_logits(lm, ids: list[int]) -> torch.Tensor:
    """(T, V) logits of one plain forward pass over ids, no cache: the reference every test compares with."""
    return lm.model(input_ids=torch.tensor([ids])).logits[0].float()


def nucleus_prob(logits: torch.Tensor, token: int, temperature: float, top_p: float) -> float:
    """The token's probability after temperature then top-p (the smallest set with cumulative mass >= top_p)."""
    q = torch.softmax(logits.double() / temperature, -1)
    vals, idx = torch.sort(q, descending=True)
    keep = idx[(torch.cumsum(vals, 0) - vals) < top_p]  # the mass before a kept token is below top_p
    kept = torch.zeros_like(q)
    kept[keep] = q[keep]
    return float(kept[token] / kept.sum())


@pytest.fixture(scope="module")
def sampled(lm):
    """A raw-prompt session with 12 tokens drawn at T = 0.8, top-p = 0.9."""
    s = DecodeSession(lm)
    s.start("The old lighthouse keeper opened the door and", chat=False)
    for _ in range(12):
        s.step(SAMPLED)
    return s


# ---- part 1: the chain rule ------------------------------------------------------------------------------

@pytest.mark.model
def test_chain_rule_sum_equals_one_full_forward_pass(lm, sampled):
    chain = chain_rule(sampled.steps, sampled.prompt_len)
    logits = full_logits(lm, sampled.ids)
    logp = torch.log_softmax(logits.double(), -1)
    P = sampled.prompt_len
    expected = [float(logp[t - 1, sampled.ids[t]]) for t in range(P, len(sampled.ids))]
    assert len(chain.links) == len(expected) == 12
    assert chain.logprob_t1 == pytest.approx(sum(expected), abs=1e-3)
    assert [k.cum_logprob_t1 for k in chain.links] == pytest.approx(list(np.cumsum(expected)), abs=1e-3)
    assert chain.perplexity == pytest.approx(math.exp(-sum(expected) / len(expected)), rel=1e-4)
    entropy = [float(-(logp[t - 1].exp() * logp[t - 1]).sum() / math.log(2)) for t in range(P, len(sampled.ids))]
    assert [k.entropy_t1_bits for k in chain.links] == pytest.approx(entropy, abs=1e-3)
    assert chain.mean_entropy_bits == pytest.approx(float(np.mean(entropy)), abs=1e-3)
    # What the draw used: temperature 0.8 then top-p 0.9 on the same logits, renormalised
    drawn = [math.log(nucleus_prob(logits[t - 1], sampled.ids[t], 0.8, 0.9)) for t in range(P, len(sampled.ids))]
    assert [k.logprob_sampled for k in chain.links] == pytest.approx(drawn, abs=1e-3)
    assert chain.logprob_sampled == pytest.approx(sum(drawn), abs=1e-3)
    assert max(abs(a - b) for a, b in zip(drawn, expected)) > 0.05  # the two distributions really differ
    assert [k.step for k in chain.links] == list(range(1, 13))
    assert [k.position for k in chain.links] == list(range(P, P + 12))


@pytest.mark.model
def test_forks_are_the_steps_with_entropy_above_mean_plus_one_sd(sampled):
    chain = chain_rule(sampled.steps, sampled.prompt_len)
    h = np.array([s.distribution.entropy_t1_bits for s in sampled.steps])
    threshold = max(1.0, h.mean() + h.std())
    assert chain.fork_bits == pytest.approx(threshold)
    assert [k.fork for k in chain.links] == list(h >= threshold)
    assert chain.links[int(h.argmax())].fork and not chain.links[int(h.argmin())].fork


@pytest.mark.model
def test_forced_token_outside_the_kept_set_has_no_sampled_logprob(lm):
    s = DecodeSession(lm)
    s.start("One, two, three,", chat=False)
    greedy_top1 = SamplingConfig(top_k=1)
    s.step(greedy_top1)
    far = sorted(s.preview(greedy_top1).candidates, key=lambda c: c.rank)[9].token.id  # rank 10: cut by top-k = 1
    s.step(greedy_top1, force_token=far)
    chain = chain_rule(s.steps, s.prompt_len)
    first, forced = chain.links
    assert first.logprob_sampled == pytest.approx(0.0, abs=1e-9) and not first.forced  # the only kept token: P = 1
    assert forced.forced and forced.logprob_sampled is None and chain.logprob_sampled is None
    logp = torch.log_softmax(full_logits(lm, s.ids).double(), -1)
    assert forced.logprob_t1 == pytest.approx(float(logp[-2, far]), abs=1e-3)  # the model's belief is still finite
    spec = chain_chart(chain, "en")
    outside = next(tr for tr in spec["data"] if tr["meta"]["role"] == "outside")
    assert outside["x"] == [2] and outside["customdata"] == [2]
    assert next(tr for tr in spec["data"] if tr["meta"]["role"] == "sampled")["y"][1] is None


@pytest.mark.unit
def test_an_empty_chain_has_no_perplexity():
    chain = chain_rule([], 5)
    assert chain.links == [] and chain.logprob_t1 == 0.0 and chain.perplexity is None
    for lang in ("en", "zh"):
        go.Figure(json.loads(chain_figure(chain, lang).to_json()))


@pytest.mark.model
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_chain_chart_draws_the_records_numbers_with_the_step_on_every_point(sampled, lang):
    chain = chain_rule(sampled.steps, sampled.prompt_len)
    spec = chain_chart(chain, lang)
    go.Figure(json.loads(chain_figure(chain, lang).to_json()))  # every property valid
    by_role = {tr["meta"]["role"]: tr for tr in spec["data"]}
    assert by_role["t1"]["y"] == [k.logprob_t1 for k in chain.links]
    assert by_role["sampled"]["y"] == [k.logprob_sampled for k in chain.links]
    assert by_role["cum"]["y"][-1] == chain.logprob_t1
    assert by_role["entropy"]["y"] == [k.entropy_t1_bits for k in chain.links]
    assert by_role["fork"]["x"] == [k.step for k in chain.links if k.fork]
    for tr in spec["data"]:  # a click anywhere names the step
        assert tr["customdata"] == tr["x"], tr["meta"]
    assert f"{chain.perplexity:.2f}" in spec["layout"]["title"]["subtitle"]["text"]
    assert "exp(" in spec["layout"]["title"]["subtitle"]["text"]
    assert spec["layout"]["xaxis2"]["matches"] == "x"  # the entropy timeline shares the steps' axis
    other = chain_chart(chain, "zh" if lang == "en" else "en")
    assert other["layout"]["title"]["text"] != spec["layout"]["title"]["text"]


# ---- part 2: teacher forcing against stepwise decoding ----------------------------------------------------

@pytest.mark.model
@pytest.mark.parametrize("chat", [False, True])
def test_one_parallel_pass_equals_the_stepwise_cached_logits(lm, chat):
    s = DecodeSession(lm)
    s.start("Name three colours of the rainbow.", chat=chat)
    for _ in range(8):
        s.step(SAMPLED)
    record, cmp = compare_stepwise(s)
    logits = full_logits(lm, s.ids)
    seen = 0.0
    for step in s.steps:
        ids = [c.token.id for c in step.distribution.candidates]
        stepwise = torch.tensor([c.logit for c in step.distribution.candidates])
        assert torch.allclose(logits[step.position - 1, ids], stepwise, atol=ATOL_LOGIT), step.step
        seen = max(seen, float((logits[step.position - 1, ids] - stepwise).abs().max()))
    assert torch.allclose(logits[-1], s.next_logits, atol=ATOL_LOGIT)
    assert len(cmp.diffs) == 8 and all(d.same_top1 for d in cmp.diffs)
    assert cmp.max_abs_diff <= ATOL_LOGIT and cmp.next_max_abs_diff <= ATOL_LOGIT
    assert cmp.max_abs_diff == pytest.approx(seen, abs=1e-5)  # both model calls: the same pass, the same numbers
    # The prompt's own positions are scored too: every position after the first
    assert [p.position for p in record.positions] == list(range(1, len(s.ids)))
    assert sum(p.in_prompt for p in record.positions) == s.prompt_len - 1
    print(f"\nchat={chat}: max |logit diff| {cmp.max_abs_diff:.2e} on candidates, {cmp.next_max_abs_diff:.2e} next")


@pytest.mark.model
def test_comparison_finds_a_logit_that_differs(lm):
    s = DecodeSession(lm)
    s.start("Once upon a time", chat=False)
    s.step(SAMPLED)
    s.step(SAMPLED)
    s.steps[1].distribution.candidates[3].logit += 0.5  # as if stepwise decoding had computed something else
    _, cmp = compare_stepwise(s)
    assert cmp.diffs[1].max_abs_diff == pytest.approx(0.5, abs=1e-3) and cmp.diffs[0].max_abs_diff < ATOL_LOGIT


@pytest.mark.model
def test_teacher_forcing_argmax_rank_and_cross_entropy_equal_an_independent_computation(lm, sampled):
    record, cmp = compare_stepwise(sampled)
    ids = sampled.ids
    logits = full_logits(lm, ids)[:-1]
    targets = torch.tensor(ids[1:])
    ce = torch.nn.functional.cross_entropy(logits.double(), targets, reduction="none")
    order = torch.argsort(logits, dim=-1, descending=True)
    ranks = [int((order[i] == targets[i]).nonzero()) + 1 for i in range(len(targets))]
    assert [p.rank for p in record.positions] == ranks
    assert [p.top1.id for p in record.positions] == logits.argmax(-1).tolist()
    assert [p.differs for p in record.positions] == [r != 1 for r in ranks]
    assert [p.cross_entropy_nats for p in record.positions] == pytest.approx(ce.tolist(), abs=1e-3)
    assert record.mean_loss_nats == pytest.approx(float(ce.mean()), abs=1e-4)
    assert record.perplexity == pytest.approx(math.exp(float(ce.mean())), rel=1e-4)
    assert [p.bucket for p in record.positions] == [rank_bucket(r) for r in ranks]
    # Timing: the one pass, on every core, warmed up and repeated, against each generated token's own pass (like with
    # like: the prefill is itself one parallel pass, so it is not on the serial side; issue 20 item 11)
    assert cmp.parallel_ms > 0 and cmp.threads == (os.cpu_count() or 1)
    assert cmp.serial_ms == pytest.approx(sum(s.timings.forward_ms for s in sampled.steps))
    assert cmp.parallel_runs == 3 and cmp.parallel_range[0] <= cmp.parallel_ms <= cmp.parallel_range[1]


@pytest.mark.model
def test_the_pass_holds_the_models_scheduler(lm):
    from model.decoding.scheduler import scheduler_of

    door, calls = scheduler_of(lm.model), []
    hook = lm.model.register_forward_pre_hook(lambda module, args: calls.append(door.held()))
    try:
        teacher_forcing(lm, lm.tokenizer("Hello there, world")["input_ids"])
    finally:
        hook.remove()
    assert calls == [True] and not door.held()
    with pytest.raises(SessionError) as err:
        teacher_forcing(lm, [1])
    assert err.value.key == "teacher_too_short"


# ---- scoring a pasted text (GLTR) ---------------------------------------------------------------------------

TEXT = "The quick brown fox jumps over the lazy dog. <b>Bold</b> & more\nA second line."


@pytest.mark.model
def test_score_text_equals_a_full_forward_pass(lm):
    record = score_text(lm, TEXT)
    ids = lm.tokenizer(TEXT)["input_ids"]
    logp = torch.log_softmax(full_logits(lm, ids).double(), -1)[:-1]
    lp = logp.gather(1, torch.tensor(ids[1:])[:, None])[:, 0]
    order = torch.argsort(logp, dim=-1, descending=True)
    ranks = [int((order[i] == ids[i + 1]).nonzero()) + 1 for i in range(len(ids) - 1)]
    assert [t.id for t in record.tokens] == ids and record.prompt_len == 0
    assert [p.prob for p in record.positions] == pytest.approx(lp.exp().tolist(), abs=1e-4)  # fp32, other thread count
    assert [p.rank for p in record.positions] == ranks
    assert record.total_logprob == pytest.approx(float(lp.sum()), abs=1e-3)
    assert record.perplexity == pytest.approx(math.exp(-float(lp.mean())), rel=1e-4)
    edges = [(1, 0), (2, 1), (10, 1), (11, 2), (100, 2), (101, 3)]
    assert [rank_bucket(r) for r, _ in edges] == [b for _, b in edges] and RANK_EDGES == (1, 10, 100)
    assert score_text(lm, TEXT, edges=GLTR_EDGES).bucket_counts()[0] == sum(r <= 10 for r in ranks)


@pytest.mark.model
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_score_text_uses_gltrs_own_buckets_and_says_so(lm, lang):
    """Issue 20 item 10: the page names GLTR, so it colours by GLTR's top 10 / 100 / 1,000 / beyond."""
    record = score_text(lm, TEXT)
    assert record.edges == GLTR_EDGES == (10, 100, 1000)
    assert [p.bucket for p in record.positions] == [rank_bucket(p.rank, GLTR_EDGES) for p in record.positions]
    page = gltr_html(record, lang)
    assert all(name in page for name in bucket_names(GLTR_EDGES, lang)) and "1,000" in page
    assert bucket_names(GLTR_EDGES, "en") == ["top 10", "top 100", "top 1,000", "beyond 1,000"]


@pytest.mark.model
@pytest.mark.parametrize("text, kwargs, key", [
    ("", {}, "score_empty"),
    ("   \n ", {}, "score_empty"),
    ("a" * 5000, {}, "score_too_long"),
    ("Hello <|im_start|> there", {}, "score_special_token"),
    ("one two three four five six seven", {"max_tokens": 4}, "score_too_many_tokens"),
    ("Hello", {}, "score_too_short"),
])
def test_score_text_refuses_what_a_prompt_refuses_with_its_own_key(lm, text, kwargs, key):
    with pytest.raises(SessionError) as err:
        score_text(lm, text, **kwargs)
    assert err.value.key == key
    assert "text" in str(err.value) and err.value.text("zh") != str(err.value)


@pytest.mark.model
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_gltr_html_shades_each_token_by_its_bucket_and_escapes_it(lm, lang):
    record = score_text(lm, TEXT)
    page = gltr_html(record, lang)
    for b, n in enumerate(record.bucket_counts()):
        assert page.count(f'class="tbt-gltr tbt-gltr-b{b}"') == n
        assert page.count(f"background:{BUCKET_COLORS[b]};") >= n + 1  # its tokens and its legend key
    assert "<b>" not in page.replace("<br>", "") and "&lt;" in page and "&amp;" in page
    assert page.count("<br>") >= 2  # the newline token breaks the line (and the legend's own line)
    assert all(name in page for name in bucket_names(record.edges, lang))
    assert f'lang="{lang}"' in page and f"{record.perplexity:.2f}" in page


@pytest.mark.model
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_teacher_chart_draws_the_records_numbers(lm, sampled, lang):
    record, cmp = compare_stepwise(sampled)
    spec = teacher_chart(record, lang, cmp)
    go.Figure(json.loads(teacher_figure(record, lang, cmp).to_json()))
    by_role = {tr["meta"]["role"]: tr for tr in spec["data"] if "meta" in tr}
    prompt, text = by_role["prob_prompt"], by_role["prob_text"]
    assert prompt["x"] + text["x"] == [p.position for p in record.positions]
    assert prompt["y"] + text["y"] == [p.prob for p in record.positions]
    assert by_role["ce_prompt"]["y"] + by_role["ce_text"]["y"] == [p.cross_entropy_nats for p in record.positions]
    assert by_role["top1"]["x"] == [p.position for p in record.positions if p.differs]
    assert by_role["top1"]["y"] == [p.top1_prob for p in record.positions if p.differs]
    assert by_role["mean_loss"]["y"] == [record.mean_loss_nats] * 2
    for tr in by_role.values():
        if tr["meta"]["role"] != "mean_loss":
            assert tr["customdata"] == tr["x"]
    subtitle = spec["layout"]["title"]["subtitle"]["text"]
    assert f"{cmp.serial_ms:.0f}" in subtitle and f"{cmp.parallel_ms:.0f}" in subtitle
    go.Figure(json.loads(teacher_figure(score_text(lm, TEXT), lang).to_json()))  # a pasted text: no prompt, no steps


@pytest.mark.unit
def test_viz_chain_never_imports_torch_or_gradio():
    code = ("import sys, viz.chain; bad = [m for m in sys.modules if m.split('.')[0] in ('torch', 'transformers', 'gradio')];"
            "print(bad); sys.exit(1 if bad else 0)")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
