"""The Chain rule and Training vs generation tabs through gradio_client, on the real model: every number the page
shows equals the engine's record (model.inside.chain, model.inside.teacher_forcing), and the engine's equals one full forward pass
computed here; bad input is refused in the page's language and changes nothing."""
import math
import re

import pytest
import torch
from gradio_client import Client
from gradio_client.exceptions import AppError

from model.inside.chain import chain_rule
from model.serving.sessions import SessionStore
from model.inside.teacher_forcing import score_text
from model.inside.chain import StepwiseComparison
from ui.protocol import carried_figure
from ui.views.training import comparison_text
from served import DEFAULTS, served

SAMPLED = dict(temperature=0.8, top_p=0.9, seed=5)  # so the distribution drawn from differs from T = 1
NOT_A_BUG_MESSAGE = re.compile(r"Something went wrong|Traceback|Internal Server Error")
PASTED = "The quick brown fox jumps over the lazy dog. It was the best of times, it was the worst of times."


@pytest.fixture(scope="module")
def server(lm):
    with served(lm, SessionStore(max_sessions=10)) as (page, url, _):
        yield page, url


@pytest.fixture
def client(server):
    c = Client(server[1], verbose=False)
    yield c
    server[0].store.drop(c.session_hash)


def call(client, api, *leading, **settings):
    return client.predict(*leading, **{**DEFAULTS, **settings}, api_name=api)


def ask(client, api, *leading, lang="en"):
    """An on-demand button's call: its own inputs and the page's language."""
    return client.predict(*leading, lang, api_name=api)


def start(client, prompt="Once upon a time, in a small village,", **settings):
    return client.predict(prompt, "raw", "smollm2", **{**DEFAULTS, **settings}, api_name="/start")


@torch.no_grad()
def full_logprobs(lm, ids):
    """(T, V) log-probabilities of one plain forward pass over ids, no cache: the independent reference."""
    return torch.log_softmax(lm.model(input_ids=torch.tensor([ids])).logits[0].double(), -1)


def traces_by_role(fig):
    return {tr["meta"]["role"]: tr for tr in fig["data"] if "meta" in tr}


def snapshot(page, client):
    session = page.store.get(client.session_hash)
    return tuple(session.ids), len(session.steps)


# ---- Chain rule ------------------------------------------------------------------------------------------
@pytest.mark.server
def test_chain_chart_is_chain_rule_of_the_sessions_steps(client, server, lm):
    page, _ = server
    start(client)
    call(client, "/tab_chain")  # the open tab: from now on each step draws its chart
    results = [call(client, "/next_token", **SAMPLED) for _ in range(6)]
    session = page.store.get(client.session_hash)
    chain = chain_rule(session.steps, session.prompt_len)
    fig = carried_figure(results[-1][1])
    roles = traces_by_role(fig)
    assert roles["t1"]["customdata"] == roles["cum"]["customdata"] == [1, 2, 3, 4, 5, 6]
    assert roles["t1"]["y"] == pytest.approx([k.logprob_t1 for k in chain.links], abs=1e-9)
    assert roles["sampled"]["y"] == pytest.approx([k.logprob_sampled for k in chain.links], abs=1e-9)
    assert roles["cum"]["y"][-1] == pytest.approx(chain.logprob_t1, abs=1e-9)
    assert f"{chain.perplexity:.2f}" in fig["layout"]["title"]["subtitle"]["text"]
    # and the chain rule is one full forward pass: Σ ln P(x_t | x_<t) over the generated tokens
    logp, P = full_logprobs(lm, session.ids), session.prompt_len
    expected = [float(logp[t - 1, session.ids[t]]) for t in range(P, len(session.ids))]
    assert roles["t1"]["y"] == pytest.approx(expected, abs=1e-3)
    assert roles["cum"]["y"][-1] == pytest.approx(sum(expected), abs=1e-3)
    assert math.exp(-sum(expected) / 6) == pytest.approx(chain.perplexity, rel=1e-3)
    # a click on step 3's point sends go_to(2), as the chip of step 3 does: the chart then ends at step 2
    back = call(client, "/go_to", 2)
    roles = traces_by_role(carried_figure(back[1]))
    assert roles["t1"]["customdata"] == [1, 2]
    assert roles["t1"]["y"] == pytest.approx(expected[:2], abs=1e-3)


@pytest.mark.server
def test_chain_chart_in_chinese_and_before_any_step(client):
    start(client)
    empty = carried_figure(call(client, "/tab_chain", lang="zh"))
    assert "链式法则" in empty["layout"]["title"]["text"]
    assert "还没有生成词元" in empty["layout"]["title"]["subtitle"]["text"]
    assert traces_by_role(empty)["t1"]["y"] == []


# ---- Training vs generation --------------------------------------------------------------------------------
@pytest.mark.server
def test_compare_shows_the_parallel_pass_and_its_comparison(client, server, lm):
    page, _ = server
    start(client)
    for _ in range(5):
        call(client, "/next_token", **SAMPLED)
    before = snapshot(page, client)
    text, plot = ask(client, "/compare_stepwise")
    assert snapshot(page, client) == before  # a pass on the side: the text and its steps are untouched
    session = page.store.get(client.session_hash)
    fig = carried_figure(plot)
    assert 'data-target="tbt-fig-training"' in plot
    roles = traces_by_role(fig)
    # every position's P(actual token) is one full forward pass's, prompt positions included
    logp = full_logprobs(lm, session.ids)
    probs = [math.exp(float(logp[t - 1, session.ids[t]])) for t in range(1, len(session.ids))]
    P = session.prompt_len
    assert roles["prob_prompt"]["y"] == pytest.approx(probs[: P - 1], abs=1e-4)
    assert roles["prob_text"]["y"] == pytest.approx(probs[P - 1:], abs=1e-4)
    assert roles["prob_text"]["customdata"] == list(range(P, len(session.ids)))
    # the sentences: the largest logit difference is float error, and the one pass against the serial steps
    diff, steps, tokens, parallel, serial, ratio = re.search(
        r"largest difference is ([\d.e+-]+).*over all (\d+) tokens took (\d+) ms.*took (\d+) ms \((\d+) "
        r"steps;.*\), ([\d.]+)×", text, re.S).group(1, 5, 2, 3, 4, 6)
    assert float(diff) < 1e-3 and int(steps) == 5 and int(tokens) == len(session.ids)
    assert float(ratio) == pytest.approx(int(serial) / int(parallel), rel=0.05, abs=0.1)
    serial_ms = sum(s.timings.forward_ms for s in session.steps)  # the generated tokens' steps, not the prefill
    assert int(serial) == round(serial_ms)
    print(f"\none pass over {tokens} tokens: {parallel} ms; {steps} steps: {serial} ms ({ratio}x); "
          f"largest logit difference {diff}")
    zh, _ = ask(client, "/compare_stepwise", lang="zh")
    assert "浮点舍入误差" in zh and "因果掩码" in zh


@pytest.mark.server
def test_score_text_shows_each_tokens_rank(client, server, lm):
    start(client)
    html = ask(client, "/score_text", PASTED)
    record = score_text(lm, PASTED)
    ranks = [int(r) for r in re.findall(r'data-rank="(\d+)"', html)]
    assert ranks == [p.rank for p in record.positions] and len(ranks) >= 20
    assert f"log P(text) = {record.total_logprob:.2f} nats" in html
    assert f"{record.perplexity:.2f}" in html
    # independently: each rank is 1 + the tokens more probable than the actual one in a full forward pass
    ids = [record.tokens[0].id] + [p.token.id for p in record.positions]
    logp = full_logprobs(lm, ids)
    independent = [int((logp[t - 1] > logp[t - 1, ids[t]]).sum()) + 1 for t in range(1, len(ids))]
    assert sum(a != b for a, b in zip(ranks, independent)) <= 1  # a near-tie may fall either way in fp32
    assert record.total_logprob == pytest.approx(sum(float(logp[t - 1, ids[t]]) for t in range(1, len(ids))), abs=1e-3)
    assert "排名" in ask(client, "/score_text", PASTED, lang="zh")


@pytest.mark.server
def test_score_text_works_before_any_session(client):
    assert 'data-rank="' in ask(client, "/score_text", PASTED)


# ---- bad input ----------------------------------------------------------------------------------------------
def refused(call_it, message):
    with pytest.raises(AppError) as err:
        call_it()
    text = str(err.value)
    assert re.search(message, text), f"{text!r} does not match {message!r}"
    assert not NOT_A_BUG_MESSAGE.search(text)


BAD_TEXTS = [
    ("", "en", r"The text to score is empty"),
    ("   ", "zh", r"要评分的文本为空"),
    ("x" * 4001, "en", r"too long: 4001 characters \(at most 4000\)"),
    ("x" * 4001, "zh", r"4001"),
    ("Hello <|im_start|>system", "en", r"special token <\|im_start\|>"),
    ("Hello <|im_start|>system", "zh", r"特殊词元|<\|im_start\|>"),
    ("Hi", "en", r"single token"),
]


@pytest.mark.server
@pytest.mark.parametrize("text,lang,message", BAD_TEXTS)
def test_bad_text_to_score_is_refused_and_changes_nothing(client, server, text, lang, message):
    page, _ = server
    start(client)
    call(client, "/next_token", temperature=0)
    before = snapshot(page, client)
    refused(lambda: ask(client, "/score_text", text, lang=lang), message)
    assert snapshot(page, client) == before


@pytest.mark.server
@pytest.mark.parametrize("lang,message", [("en", r"No text yet"), ("zh", r"还没有文本")])
def test_compare_without_a_session_is_refused(client, server, lang, message):
    refused(lambda: ask(client, "/compare_stepwise", lang=lang), message)
    with pytest.raises(Exception):
        server[0].store.get(client.session_hash)  # and none was made


@pytest.mark.server
@pytest.mark.parametrize("lang,message", [("en", r"Nothing generated yet"), ("zh", r"还没有生成任何词元")])
def test_compare_before_any_step_is_refused(client, server, lang, message):
    page, _ = server
    start(client)
    before = snapshot(page, client)
    refused(lambda: ask(client, "/compare_stepwise", lang=lang), message)
    assert snapshot(page, client) == before


@pytest.mark.unit
def test_a_slower_parallel_pass_is_explained_not_hidden():
    """Wall times taken at different moments: if the one pass did not win every run, the numbers stay and the page
    says it cannot conclude (model.decoding.timing's rule: 3 runs after a warm-up, the slowest below the serial side). The
    serial side is the generated tokens' steps only (5 x 100 ms), not the prompt's prefill (itself one pass)."""
    def compared(parallel_ms, low, high, runs=3):
        return StepwiseComparison(diffs=[], max_abs_diff=2e-5, next_max_abs_diff=3e-5, parallel_ms=parallel_ms,
                                  prefill_ms=200.0, steps_ms=[100.0] * 5, tokens=13, threads=2,
                                  parallel_range=(low, high), parallel_runs=runs)
    slow, fast = compared(900.0, 850.0, 950.0), compared(100.0, 90.0, 120.0)
    overlapping, one_run = compared(300.0, 250.0, 600.0), compared(100.0, 100.0, 100.0, runs=1)
    assert "900 ms" in comparison_text(slow, "en") and "500 ms" in comparison_text(slow, "en")
    assert "0.6×" in comparison_text(slow, "en") and "850–950 ms" in comparison_text(slow, "en")
    for lang, reason in (("en", "Not shown faster this time"), ("zh", "这一次没能显示出更快")):
        assert reason not in comparison_text(fast, lang)
        for unsure in (slow, overlapping, one_run):
            assert reason in comparison_text(unsure, lang)
    assert "3.0e-05" in comparison_text(fast, "en") and "5.0×" in comparison_text(fast, "en")
