"""Training vs generation on a model served by a real engine (vLLM): the whole text in ONE prompt_logprobs request.

Checked against the same model loaded here: the engine's log-probability of every token of a text equals one full
forward pass's log_softmax at that position, its ranks and top-1 equal the pass's where no near-tie makes them
float noise, and the Training view's record on the engine model equals its record on the local model. A fault
leaves the session as it was, with one keyed sentence.
"""
import math
import re
from dataclasses import replace

import pytest
import torch

from engine_server import REQUEST_S
from model.vllm.client import EngineClient, parse_prompt_logprobs
from model.decoding.records import SamplingConfig
from model.decoding.session import DecodeSession
from model.errors import SessionError
from model.inside.teacher_forcing import compare_stepwise, score_text
from served import DEFAULTS, served

TOLERANCE = 1e-3  # float32 engine against float32 here, different kernels and orders of summation
NEAR_TIE = 2e-3  # two log-probabilities closer than this may swap ranks by float noise alone
TEXTS = ["The capital of France is Paris. The capital of Germany is Berlin, and the capital of Italy is Rome.",
         "def fibonacci(n):\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + fibonacci(n - 2)\n",
         "我们今天学习自回归解码：模型每次只写一个词元。",
         "Once upon a time, a little fox lived at the edge of a dark forest, and every night it watched the stars."]


def vllm_answer(prompt_logprobs: list, top: dict[int, float]) -> dict:
    """A completions answer as vLLM 0.32 gives it (asked with the engine running: tests below)."""
    return {"choices": [{"prompt_logprobs": prompt_logprobs,
                         "logprobs": {"top_logprobs": [{f"token_id:{i}": lp for i, lp in top.items()}]}}]}


def entry(*rows: tuple[int, float, int]) -> dict:
    return {str(i): {"logprob": lp, "rank": rank, "decoded_token": "x"} for i, lp, rank in rows}


@pytest.mark.unit
def test_a_prompt_logprobs_answer_is_read_position_by_position():
    body = vllm_answer([None, entry((5, -2.5, 3), (9, -0.4, 1)), entry((7, -0.1, 1))], {3: -0.2, 4: -1.9})
    answer = parse_prompt_logprobs(body, [1, 5, 7], 12.5)
    assert answer.logprobs == (-2.5, -0.1) and answer.ranks == (3, 1)
    assert answer.top1_ids == (9, 7) and answer.top1_logprobs == (-0.4, -0.1)
    assert answer.next.ids == (3, 4) and answer.ms == 12.5
    for broken in ([entry((5, -2.5, 3))], [None, entry((9, -0.4, 1)), entry((7, -0.1, 1))], [None, None, None]):
        with pytest.raises(SessionError) as err:  # no None first; the token's own number missing; no entries
            parse_prompt_logprobs(vllm_answer(broken, {3: -0.2}), [1, 5, 7], 1.0)
        assert err.value.key == "engine_bad_answer"


@torch.no_grad()
def full_logprobs(lm, ids: list[int]) -> torch.Tensor:
    """(T, V) log-probabilities of one plain forward pass over ids here, no cache: the independent reference."""
    return torch.log_softmax(lm.model(input_ids=torch.tensor([ids])).logits[0].double(), -1)


def clear_of_ties(row: torch.Tensor, token: int) -> bool:
    """No other token's log-probability within NEAR_TIE of `token`'s: its rank is not float noise."""
    others = torch.cat([row[:token], row[token + 1:]])
    return bool((others - row[token]).abs().min() > NEAR_TIE)


@pytest.mark.engine
def test_the_engines_prompt_logprobs_equal_one_full_forward_pass(engine_lm, lm):
    largest, largest_top1, positions, ranked, request_ms = 0.0, 0.0, 0, 0, []
    for text in TEXTS:
        ids = lm.tokenizer(text)["input_ids"]
        answer = engine_lm.client.prompt_logprobs(ids)
        request_ms.append(answer.ms)
        logp = full_logprobs(lm, ids)
        assert answer.ids == tuple(ids) and len(answer.logprobs) == len(ids) - 1
        for t in range(1, len(ids)):
            row, token = logp[t - 1], ids[t]
            diff = abs(answer.logprobs[t - 1] - float(row[token]))
            largest, positions = max(largest, diff), positions + 1
            assert diff < TOLERANCE, (text, t, diff)
            top1 = int(row.argmax())
            largest_top1 = max(largest_top1, abs(answer.top1_logprobs[t - 1] - float(row[top1])))
            if clear_of_ties(row, token):
                assert answer.ranks[t - 1] == int((row > row[token]).sum()) + 1, (text, t)
                ranked += 1
            if clear_of_ties(row, top1):
                assert answer.top1_ids[t - 1] == top1, (text, t)
        # the top N after the whole text, as a step asks it, from the same request
        here = torch.tensor([float(logp[-1, i]) for i in answer.next.ids], dtype=torch.float64)
        assert float((here - torch.tensor(answer.next.logprobs, dtype=torch.float64)).abs().max()) < TOLERANCE
    assert largest_top1 < TOLERANCE
    print(f"\nlargest |engine - local| log-probability over {positions} positions of {len(TEXTS)} texts: "
          f"{largest:.2e} (top-1: {largest_top1:.2e}); ranks equal at {ranked} positions clear of ties; "
          f"one request each: {', '.join(f'{ms:.0f}' for ms in request_ms)} ms")


def greedy_session(model, prompt: str, steps: int) -> DecodeSession:
    session = DecodeSession(model)
    session.start(prompt)
    for _ in range(steps):
        if session.finished:
            break
        session.step(SamplingConfig(temperature=0))
    return session


@pytest.mark.engine
def test_the_training_record_on_the_engine_equals_the_local_models(engine_lm, lm):
    prompt = "The best way to learn a new language is"  # greedy: the same text on both (test_vllm.py)
    engine_session, local_session = greedy_session(engine_lm, prompt, 24), greedy_session(lm, prompt, 24)
    assert engine_session.ids == local_session.ids
    before = (list(engine_session.ids), len(engine_session.steps), engine_session.backend.top)
    on_engine, cmp = compare_stepwise(engine_session)
    local, _ = compare_stepwise(local_session)
    assert (list(engine_session.ids), len(engine_session.steps), engine_session.backend.top) == before
    assert on_engine.on_engine and not local.on_engine and cmp.on_engine
    assert [p.position for p in on_engine.positions] == [p.position for p in local.positions]
    assert [p.token.id for p in on_engine.positions] == [p.token.id for p in local.positions]
    assert [p.in_prompt for p in on_engine.positions] == [p.in_prompt for p in local.positions]
    assert [p.prob for p in on_engine.positions] == pytest.approx([p.prob for p in local.positions], abs=TOLERANCE)
    assert on_engine.mean_loss_nats == pytest.approx(local.mean_loss_nats, abs=TOLERANCE)
    assert on_engine.perplexity == pytest.approx(local.perplexity, rel=TOLERANCE)
    logp = full_logprobs(lm, local_session.ids)
    for e, l in zip(on_engine.positions, local.positions):
        if clear_of_ties(logp[e.position - 1], e.token.id):
            assert e.rank == l.rank, e.position
    # against the session's own steps: each step's record came from its own request
    assert len(cmp.diffs) == 24 and [d.position for d in cmp.diffs] == [s.position for s in engine_session.steps]
    for d, s in zip(cmp.diffs, engine_session.steps):
        assert d.chosen_abs_diff == pytest.approx(
            abs(on_engine.positions[s.position - 1].logprob - s.distribution.chosen_logprob_t1), abs=1e-12)
        assert d.same_top1  # greedy: each step chose its top-1, the request's top-1 at that position
    assert cmp.max_abs_diff < TOLERANCE and cmp.next_max_abs_diff < TOLERANCE
    assert cmp.steps_ms == [s.timings.forward_ms for s in engine_session.steps]
    assert cmp.parallel_ms == on_engine.forward_ms > 0 and cmp.parallel_runs == 1
    print(f"\n{cmp.tokens} tokens: one prompt_logprobs request {cmp.parallel_ms:.0f} ms; the {len(cmp.steps_ms)} "
          f"steps' requests {cmp.serial_ms:.0f} ms ({cmp.speedup:.1f}x); largest |request - steps| log-probability "
          f"{cmp.max_abs_diff:.2e}, after the last token {cmp.next_max_abs_diff:.2e}; mean cross-entropy engine "
          f"{on_engine.mean_loss_nats:.5f} local {local.mean_loss_nats:.5f} nats")
    # a pasted text: the same record on both models
    pasted = score_text(engine_lm, TEXTS[3])
    here = score_text(lm, TEXTS[3])
    assert [p.prob for p in pasted.positions] == pytest.approx([p.prob for p in here.positions], abs=TOLERANCE)
    assert pasted.total_logprob == pytest.approx(here.total_logprob, abs=TOLERANCE * len(here.positions))


@pytest.mark.engine
def test_an_engine_fault_leaves_the_session_as_it_was(engine_lm, engine):
    session = greedy_session(engine_lm, "Hello", 2)
    state = (list(session.ids), len(session.steps), session.backend.top)
    session.lm = replace(engine_lm, client=EngineClient(engine.url, "no-such-model", timeout=REQUEST_S))
    try:
        with pytest.raises(SessionError) as err:
            compare_stepwise(session)
        with pytest.raises(SessionError) as pasted:
            score_text(session.lm, "Any text at all")
    finally:
        session.lm = engine_lm
    assert err.value.key == pasted.value.key == "engine_model_unknown"
    assert err.value.text("zh") != str(err.value) and "no-such-model" in str(err.value)
    assert (session.ids, len(session.steps), session.backend.top) == state
    print("\nunknown model:", err.value)


@pytest.mark.engine
def test_the_training_view_on_the_engine_model_through_the_api(engine_lm, lm):
    from gradio_client import Client

    from model.serving.sessions import ModelRegistry, SessionStore
    from ui.protocol import carried_figure

    models = ModelRegistry("smollm2", {"smollm2": lm})
    models.add_engine(engine_lm)
    with served(models, SessionStore(max_sessions=4)) as (page, url, demo):
        client = Client(demo.local_url, verbose=False)
        settings = {**DEFAULTS, "temperature": 0.8, "seed": 3}
        client.predict("Once upon a time, in a small village,", "raw", engine_lm.name, **settings, api_name="/start")
        for _ in range(6):
            client.predict(**settings, api_name="/next_token")
        session = page.store.get(client.session_hash)
        before = list(session.ids)
        text, plot = client.predict("en", api_name="/compare_stepwise")
        assert session.ids == before
        diff, tokens, parallel, steps, serial = re.search(
            r"scored all (\d+) tokens.*difference is ([\d.e+-]+).*request took (\d+) ms; the (\d+) steps.*took (\d+) ms",
            text, re.S).group(2, 1, 3, 4, 5)
        assert float(diff) < TOLERANCE and int(tokens) == len(session.ids) and int(steps) == 6
        assert int(serial) == round(sum(s.timings.forward_ms for s in session.steps))
        logp = full_logprobs(lm, session.ids)  # the chart's bars: the local model's full pass, to TOLERANCE
        probs = [math.exp(float(logp[t - 1, session.ids[t]])) for t in range(1, len(session.ids))]
        roles = {tr["meta"]["role"]: tr for tr in carried_figure(plot)["data"] if "meta" in tr}
        P = session.prompt_len
        assert roles["prob_prompt"]["y"] + roles["prob_text"]["y"] == pytest.approx(probs, abs=TOLERANCE)
        assert "one request to the engine" in carried_figure(plot)["layout"]["title"]["subtitle"]["text"]
        assert roles["prob_text"]["customdata"] == list(range(P, len(session.ids)))
        zh, _ = client.predict("zh", api_name="/compare_stepwise")
        assert "一次请求" in zh and "浮点舍入误差" in zh
        html = client.predict("A fox jumped over the fence.", "en", api_name="/score_text")
        record = score_text(engine_lm, "A fox jumped over the fence.")
        assert re.findall(r'data-rank="(\d+)"', html) == [str(p.rank) for p in record.positions]
        print(f"\nthrough the page: {text}")
