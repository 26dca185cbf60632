"""The stepwise decoder on the real default model: parity with generate() and a full forward, and the session."""
import json

import numpy as np
import pytest
import torch

from model.decoding.kv import kv_cache_bytes
from model.decoding.records import SamplingConfig
from model.decoding.session import DecodeSession, SessionBusy, SessionError
from model.decoding.trace import replay, to_trace
from cores import sequence

GREEDY = SamplingConfig(temperature=0)
SAMPLED = SamplingConfig(temperature=0.9, top_k=40, top_p=0.95, min_p=0.02, repetition_penalty=1.1, seed=7)


@pytest.mark.model
@pytest.mark.parametrize(
    "prompt, chat",
    [
        ("Once upon a time, in a small village,", False),
        ("def fibonacci(n):", False),
        ("Write a haiku about the sea.", True),  # ends with <|im_end|> after 39 tokens
        ("Explain what a KV cache is.", True),
    ],
)
def test_greedy_steps_equal_generate(lm, session, prompt, chat):
    session.start(prompt, chat=chat)
    while len(session.steps) < 40 and not session.finished:
        session.step(GREEDY)
    prompt_ids = torch.tensor([session.ids[: session.prompt_len]])
    expected = lm.model.generate(prompt_ids, attention_mask=torch.ones_like(prompt_ids), do_sample=False, max_new_tokens=40)
    assert len(session.steps) >= 30
    assert session.ids[session.prompt_len :] == expected[0, session.prompt_len :].tolist()


@pytest.mark.model
def test_cached_step_logits_match_a_full_forward(lm, session):
    session.start("Once upon a time, in a small village,")
    step_logits = []
    for _ in range(12):
        step_logits.append(session.next_logits)
        session.step(SAMPLED)
    step_logits.append(session.next_logits)
    with torch.no_grad():
        full = lm.model(torch.tensor([session.ids])).logits[0]  # (T, V), no cache
    cached = torch.stack(step_logits)  # logits at positions P-1 .. T-1
    assert torch.allclose(cached, full[session.prompt_len - 1 :], atol=1e-3, rtol=1e-4)
    # what a record says the logit was is the model's logit at that position
    for r in session.steps:
        for c in r.distribution.candidates:
            assert c.logit == pytest.approx(float(full[r.position - 1, c.token.id]), abs=1e-3)


@pytest.mark.model
def test_chat_template_is_applied_and_shown(lm, session):
    p = session.start("Hi", chat=True)
    pieces = [t.piece for t in p.tokens]
    assert p.chat and "<|im_start|>" in pieces and pieces[-1] != "Hi"
    assert session.ids == lm.tokenizer.apply_chat_template([{"role": "user", "content": "Hi"}],
                                                           add_generation_prompt=True, tokenize=True)["input_ids"]
    raw = DecodeSession(lm).start("Hi")
    assert [t.piece for t in raw.tokens] == ["Hi"]


@pytest.mark.model
def test_same_seed_same_trace(lm):
    runs = []
    for _ in range(2):
        s = DecodeSession(lm)
        s.start("The best thing about teaching is")
        runs.append([s.step(SAMPLED).token.id for _ in range(10)])
    assert runs[0] == runs[1]
    other = DecodeSession(lm)
    other.start("The best thing about teaching is")
    assert [other.step(SamplingConfig(temperature=0.9, seed=8)).token.id for _ in range(10)] != runs[0]


@pytest.mark.model
def test_back_then_step_reproduces(session):
    session.start("My favourite colour is")
    records = [session.step(SAMPLED) for _ in range(6)]
    kv_before = session.steps[-1].kv
    session.back(3)
    assert len(session.steps) == 3 and len(session.ids) == session.prompt_len + 3
    assert sequence(session).cache.get_seq_length() == len(session.ids)
    again = [session.step(SAMPLED) for _ in range(3)]
    for old, new in zip(records[3:], again):
        assert new.token.id == old.token.id and new.distribution.u == old.distribution.u
        assert [c.final_prob for c in new.distribution.candidates] == [c.final_prob for c in old.distribution.candidates]
        assert np.array_equal(new.attention, old.attention)
    assert session.steps[-1].kv == kv_before
    session.back(6)  # all the way to the prompt: uses the stored prompt logits
    assert session.step(SAMPLED).token.id == records[0].token.id


@pytest.mark.model
def test_forcing_a_token_branches_the_text(session):
    session.start("The capital of France is")
    first = session.preview(GREEDY)
    assert first.chosen.display == "␣Paris"
    other = next(c for c in first.candidates if c.token.id != first.chosen.id)
    r = session.step(GREEDY, force_token=other.token.id)
    assert r.token.id == other.token.id and r.distribution.forced
    assert r.distribution.chosen_candidate.fate == "chosen"
    assert not session.text.startswith(" Paris")
    for _ in range(5):
        session.step(GREEDY)
    session.reset()
    assert session.step(GREEDY).token.display == "␣Paris"


@pytest.mark.model
def test_rederive_runs_no_model(lm, session, monkeypatch):
    session.start("Tea or coffee? I prefer")
    calls = []
    monkeypatch.setattr(lm.model, "forward", lambda *a, **k: calls.append(1))
    cold, hot = session.preview(SamplingConfig(temperature=0.3)), session.preview(SamplingConfig(temperature=1.8))
    assert calls == []
    assert cold.entropy_final_bits < hot.entropy_final_bits and cold.u == hot.u


@pytest.mark.model
def test_attention_rows_are_causal_and_sum_to_one(lm, session):
    info = lm.info
    p = session.start("Attention is all you need, they said")
    P = len(p.tokens)
    assert p.attention.shape == (info.layers, info.heads, P, P)
    block = p.attention.astype(np.float32)
    upper = np.triu(np.ones((P, P), dtype=bool), k=1)
    assert np.all(block[:, :, upper] == 0)  # exactly zero beyond the current position
    assert np.allclose(block.sum(-1), 1, atol=2e-3)
    for _ in range(4):
        r = session.step(SAMPLED)
        assert r.attention.shape == (info.layers, info.heads, r.position + 1)
        assert np.allclose(r.attention.astype(np.float32).sum(-1), 1, atol=2e-3)


@pytest.mark.model
def test_kv_bytes_measured_equal_formula_every_step(lm, session):
    p = session.start("Count with me: one, two,")
    per_token = kv_cache_bytes(30, 3, 64, 1, 4)
    assert per_token == 46_080  # docs/what-it-teaches.md: Its size, SmolLM2 in fp32
    assert p.kv.measured == p.kv.formula == per_token * len(p.tokens)
    for _ in range(8):
        r = session.step(SAMPLED)
        assert r.kv.measured == r.kv.formula == per_token * (r.position + 1)
        assert r.kv.keys == r.kv.values == r.kv.measured // 2
    session.back(4)
    assert session.steps[-1].kv.measured == per_token * len(session.ids)


@pytest.mark.unit
def test_kv_formula_reference_numbers():
    assert kv_cache_bytes(32, 32, 128, 2048, 2) == 1_073_741_824  # Llama-2-7B: 1 GiB
    assert kv_cache_bytes(32, 8, 128, 8192, 2) == 1_073_741_824  # Llama-3-8B GQA
    assert kv_cache_bytes(30, 3, 64, 1, 2) == 23_040


@pytest.mark.model
@pytest.mark.parametrize("prompt", ["你好，世界！今天天气很好。", "I love 🍕 and 🎉!"])
def test_multibyte_characters_decode(lm, session, prompt):
    session.start("Repeat exactly: " + prompt + "\nRepeat exactly: ")
    for tid in lm.tokenizer(prompt, add_special_tokens=False)["input_ids"]:
        r = session.step(GREEDY, force_token=tid)
        assert "\ufffd" not in r.text  # an unfinished character is held back, never shown broken
    assert session.text == prompt
    assert any(s.token.display.startswith("<") for s in session.steps)  # some tokens are bare bytes


def snapshot(s):
    return (list(s.ids), len(s.steps), sequence(s).cache.get_seq_length(), s.prefill.prompt if s.prefill else None,
            None if s._next_logits is None else float(s._next_logits.sum()))


@pytest.mark.model
@pytest.mark.parametrize(
    "action, message",
    [
        (lambda s: s.start(""), "empty"),
        (lambda s: s.start("   \n"), "empty"),
        (lambda s: s.start("word " * 2000), "too long"),
        (lambda s: s.start("hello " * 600), "too long: .* tokens"),
        (lambda s: s.start("hi \ud800"), "not valid text"),
        (lambda s: s.start("a <|im_end|> b"), "special token"),
        (lambda s: s.step(SamplingConfig(temperature=-1)), "temperature"),
        (lambda s: s.step(SamplingConfig(top_p=float("nan"))), "top_p"),
        (lambda s: s.step(SamplingConfig(top_k=-3)), "top_k"),
        (lambda s: s.step(GREEDY, force_token=10**6), "forced token"),
        (lambda s: s.step(GREEDY, force_token=-1), "forced token"),
        (lambda s: s.back(5), "only 2"),
        (lambda s: s.back(0), ">= 1"),
        (lambda s: s.go_to(9), "between 0 and 2"),
    ],
)
def test_bad_input_gives_a_message_and_changes_nothing(session, action, message):
    session.start("The weather today is")
    session.step(SAMPLED)
    session.step(SAMPLED)
    before = snapshot(session)
    with pytest.raises(SessionError, match=message):
        action(session)
    assert snapshot(session) == before
    session.step(SAMPLED)  # still usable


@pytest.mark.model
def test_not_started_session_refuses_politely(session):
    with pytest.raises(SessionError, match="start"):
        session.step(GREEDY)
    with pytest.raises(SessionError, match="start"):
        session.back(1)


@pytest.mark.model
def test_a_step_that_fails_midway_leaves_the_session_as_it_was(lm, session, monkeypatch):
    session.start("Fault injection test:")
    session.step(SAMPLED)
    before = snapshot(session)
    last = lm.model.model.layers[-1]
    seen = []  # each layer's cached length at the fault: the earlier layers have appended the new token already

    def broken(*a, **k):  # this one layer (not its class, which every layer shares) fails
        seen.append([layer.keys.shape[-2] for layer in sequence(session).cache.layers])
        raise RuntimeError("injected fault")

    monkeypatch.setattr(last, "forward", broken)
    with pytest.raises(RuntimeError, match="injected"):
        session.step(SAMPLED)
    monkeypatch.delattr(last, "forward")
    n = len(session.ids)
    assert seen == [[n + 1] * (len(seen[0]) - 1) + [n]]  # the fault came midway, with the cache half written
    assert snapshot(session) == before
    assert all(layer.keys.shape[-2] == len(session.ids) for layer in sequence(session).cache.layers)
    r = session.step(SAMPLED)
    assert r.kv.measured == r.kv.formula
    session.step(SAMPLED)
    before = snapshot(session)
    monkeypatch.setattr(last, "forward", broken)
    with pytest.raises(RuntimeError, match="injected"):
        session.back(1)  # going back re-runs the last kept token, which now fails
    monkeypatch.delattr(last, "forward")
    assert snapshot(session) == before
    assert session.step(SAMPLED).kv.measured == session.steps[-1].kv.formula


@pytest.mark.model
def test_one_step_at_a_time(session, held_elsewhere):
    """A second click while a step is under way (another thread holds the session) is refused, not interleaved."""
    session.start("Double click")
    with held_elsewhere(session):
        with pytest.raises(SessionBusy):
            session.step(GREEDY)
        with pytest.raises(SessionBusy):
            session.back(1)
        with pytest.raises(SessionBusy):
            with session.reading(timeout=0.05):  # a render waits for the step, then gives up politely
                pass
    assert len(session.steps) == 0
    session.step(GREEDY)  # free again


@pytest.mark.model
def test_trace_round_trip_replays_the_same_session(lm, session):
    session.start("A short story:", chat=False)
    session.step(SAMPLED)
    forced = session.preview(SAMPLED).candidates[3].token.id
    session.step(SAMPLED, force_token=forced)
    for _ in range(4):
        session.step(SAMPLED)
    trace = json.loads(json.dumps(to_trace(session)))
    assert trace["steps"][1]["distribution"]["forced"] is True
    other = DecodeSession(lm)
    assert replay(other, trace) == 6
    assert other.ids == session.ids and other.text == session.text
    assert [s.distribution.forced for s in other.steps] == [s.distribution.forced for s in session.steps]
    assert to_trace(other)["logprob_t1"] == pytest.approx(trace["logprob_t1"])


@pytest.mark.model
@pytest.mark.parametrize(
    "mangle, message",
    [
        (lambda t: {"hello": 1}, "not a Token by Token trace"),
        (lambda t: {**t, "version": 99}, "version"),
        (lambda t: {**t, "steps": "x"}, "damaged"),
        (lambda t: {**t, "steps": [{"distribution": {"config": {"temperature": -1}}}]}, "damaged at step 1"),
        (lambda t: {**t, "model": "gpt-9"}, "gpt-9"),
    ],
)
def test_malformed_trace_is_refused_and_changes_nothing(lm, session, mangle, message):
    session.start("Keep me")
    session.step(SAMPLED)
    trace = to_trace(session)
    other = DecodeSession(lm)
    other.start("Unrelated")
    before = snapshot(other)
    with pytest.raises(SessionError, match=message):
        replay(other, mangle(trace))
    assert snapshot(other) == before


@pytest.mark.model
def test_logprob_sums_the_unfiltered_t1_logprobs(lm, session):
    session.start("Two plus two equals")
    for _ in range(5):
        session.step(SamplingConfig(temperature=0.5, top_k=3, seed=1))
    with torch.no_grad():
        logp = torch.log_softmax(lm.model(torch.tensor([session.ids])).logits[0], -1)
    expected = sum(float(logp[i - 1, session.ids[i]]) for i in range(session.prompt_len, len(session.ids)))
    assert session.logprob_t1() == pytest.approx(expected, abs=1e-3)
