"""What an outside probe of the running app found on the model side, each pinned by a test on the real model."""
import contextlib
import json
import math
import threading
import time

import pytest
import torch

from model.errors import MESSAGES, SessionError
from model.parse import parse_token_id, parse_whole
from model.decoding.records import ORDERS, SamplingConfig
from model.decoding.sampling import run_stages
from model.decoding.timing import measure_cache_timing
from model.decoding.trace import MAX_TRACE_BYTES, read_trace, replay, to_trace

REPEATING = "The cat sat on the mat. The cat sat on the mat. The cat"


@contextlib.contextmanager
def counted_passes(lm):
    """Counts every forward pass of the model for the block: `with counted_passes(lm) as n: ...; n[0]`."""
    n, forward = [0], lm.model.forward

    def counting(*args, **kwargs):
        n[0] += 1
        return forward(*args, **kwargs)

    lm.model.forward = counting
    try:
        yield n
    finally:
        del lm.model.forward  # the class's own method shows through again


# ---- 1. extreme settings inside their ranges --------------------------------------------------------------
EXTREMES = [
    dict(temperature=1e-300),
    dict(temperature=5e-324),  # the smallest positive float
    dict(temperature=100),
    dict(top_p=1e-12),
    dict(min_p=1.0),
    dict(repetition_penalty=0.1),
    dict(repetition_penalty=10),
    dict(temperature=5e-324, repetition_penalty=0.1),
    dict(temperature=100, repetition_penalty=10, top_k=1),
    dict(temperature=1e-300, top_k=3, top_p=1e-12, min_p=1.0, repetition_penalty=10),
    dict(temperature=100, top_p=1e-12, min_p=1.0, repetition_penalty=0.1),
]


@pytest.fixture  # one per test: each step with other settings after a Back keeps a branch (16 at most)
def repeating(lm):
    """A session whose text repeats, so that the repetition penalty has tokens to act on."""
    from model.decoding.session import DecodeSession

    s = DecodeSession(lm)
    s.start(REPEATING)
    return s


@pytest.mark.model
@pytest.mark.parametrize("order", list(ORDERS))
@pytest.mark.parametrize("settings", EXTREMES, ids=lambda d: ",".join(f"{k}={v}" for k, v in d.items()))
def test_extreme_settings_in_range_give_a_distribution(repeating, order, settings):
    cfg = SamplingConfig(order=order, **settings).validate()
    d = repeating.preview(cfg)
    chosen = d.chosen_candidate
    assert chosen.fate == "chosen" and chosen.final_prob > 0 and d.draw_cum_before is not None
    for c in d.candidates:
        assert all(math.isfinite(p) and 0 <= p <= 1 for p in c.stage_probs.values())
    assert math.isfinite(d.entropy_final_bits) and all(math.isfinite(s.entropy_bits) for s in d.stages)
    for name, active, scores in run_stages(repeating.next_logits, torch.tensor([repeating.ids]), cfg):
        p = torch.softmax(scores, -1).double()
        assert not torch.isnan(scores).any() and not (scores == math.inf).any(), name
        assert float(p.sum()) == pytest.approx(1.0, abs=1e-4), name  # float32 over 49,152 tokens
    step = repeating.step(cfg)
    assert step.token.id == chosen.token.id
    repeating.back()


@pytest.mark.model
@pytest.mark.parametrize("t", [1e-300, 5e-324, 1e-45])
def test_a_tiny_temperature_is_greedy(repeating, t):
    """The limit of softmax(z / T) as T -> 0 is the argmax, as at T = 0 (whose fate for the rest is 'greedy')."""
    tiny, greedy = repeating.preview(SamplingConfig(temperature=t)), repeating.preview(SamplingConfig(temperature=0))
    assert tiny.chosen.id == greedy.chosen.id and tiny.chosen_final_prob == 1.0
    assert [c.fate for c in tiny.candidates] == [c.fate for c in greedy.candidates]
    assert tiny.stages[1].kept == 1


@pytest.mark.model
def test_an_ordinary_temperature_is_unchanged_by_the_shift(repeating):
    """Subtracting the max logit before dividing by T changes no probability (softmax is shift-invariant)."""
    cfg = SamplingConfig(temperature=0.7, repetition_penalty=1.3, top_k=50)
    logits, ctx = repeating.next_logits, torch.tensor([repeating.ids])
    from transformers.generation.logits_process import RepetitionPenaltyLogitsProcessor, TemperatureLogitsWarper

    plain = TemperatureLogitsWarper(0.7)(ctx, RepetitionPenaltyLogitsProcessor(1.3)(ctx, logits.reshape(1, -1)))
    after_t = dict((n, s) for n, _, s in run_stages(logits, ctx, cfg))["temperature"]
    assert torch.allclose(torch.softmax(after_t, -1), torch.softmax(plain, -1), atol=1e-6)


@pytest.mark.unit
@pytest.mark.parametrize("penalty", [1e-300, 0.05, 0.0999, 10.5])
def test_a_repetition_penalty_outside_its_range_is_refused_by_key(penalty):
    with pytest.raises(SessionError) as err:
        SamplingConfig(repetition_penalty=penalty).validate()
    assert err.value.key == "repetition_penalty_bounds" and "0.1" in str(err.value)
    assert "0.1" in err.value.text("zh")


@pytest.mark.unit
@pytest.mark.parametrize("field", ["temperature", "top_p", "repetition_penalty", "seed"])
def test_an_int_past_floats_range_is_refused_not_crashed(field):
    """A trace file can hold an int of up to 4,300 digits; math.isfinite(10**400) raises OverflowError."""
    with pytest.raises(SessionError) as err:
        SamplingConfig(**{field: 10**400}).validate()
    assert err.value.key in ("setting_not_a_number", "seed_range")


@pytest.mark.model
def test_the_temperature_sweep_takes_a_tiny_temperature(repeating):
    s = repeating.sweep(SamplingConfig(top_p=0.9), [5e-324, 1e-300, 1.0, 100.0])
    assert s.nucleus_size[0] == s.nucleus_size[1] == 1 and all(math.isfinite(e) for e in s.entropy_bits)


# ---- 2. reading an uploaded trace's bytes ------------------------------------------------------------------
@pytest.mark.unit
@pytest.mark.parametrize(
    "raw, key",
    [
        (b"[" * 200_000 + b"]" * 200_000, "trace_too_deep"),
        (b'{"a": ' * 200_000 + b"1" + b"}" * 200_000, "trace_too_deep"),
        (b'{"steps": ' + b"7" * 5000 + b"}", "trace_number_too_long"),
        (b"\xff\xfe\x00garbage", "trace_not_text"),
        (b"this is not JSON {", "trace_not_json"),
        (b"", "trace_not_json"),
        (b"[1, 2, 3]", "trace_not_ours"),
        (b" " * (MAX_TRACE_BYTES + 1), "trace_too_large"),
    ],
    ids=["deep-list", "deep-dict", "long-int", "not-utf8", "not-json", "empty", "a-list", "too-large"],
)
def test_a_malformed_trace_file_is_refused_by_key(raw, key):
    with pytest.raises(SessionError) as err:
        read_trace(raw)
    assert err.value.key == key
    assert "trace" in str(err.value) and "Traceback" not in str(err.value)
    assert err.value.text("zh") != str(err.value)


@pytest.mark.model
def test_a_good_trace_file_reads_back(session):
    session.start("A short trace:")
    session.step(SamplingConfig(temperature=0))
    trace = to_trace(session)
    raw = json.dumps(trace).encode("utf-8")
    assert read_trace(raw) == json.loads(raw)
    assert read_trace(b"\xef\xbb\xbf" + raw) == json.loads(raw)  # a byte-order mark, as some editors save


# ---- 3. a trace is checked whole before any forward pass --------------------------------------------------
@pytest.fixture(scope="module")
def small_trace(lm):
    from model.decoding.session import DecodeSession

    s = DecodeSession(lm)
    s.start("A short trace:")
    for _ in range(3):
        s.step(SamplingConfig(temperature=0))
    return json.loads(json.dumps(to_trace(s)))


def _damaged(trace, change):
    t = json.loads(json.dumps(trace))
    change(t)
    return t


ROOM = 5  # steps a session in these tests holds after the trace's prompt


def _many_steps(t, n=98_002):
    t["steps"] = t["steps"][:1] * n


def _token(step, value):
    return lambda t: t["steps"][step]["distribution"]["chosen"].update(id=value)


END = 2  # <|im_end|>: SmolLM2-Instruct's end of text (checked in test_the_end_token_ends_the_text)


BAD_CLAIMS = {
    "too-many-steps": (_many_steps, "trace_too_many_steps"),
    "one-step-too-many": (lambda t: _many_steps(t, ROOM + 1), "trace_too_many_steps"),
    "token-past-vocab": (_token(2, 49152), "trace_token_out_of_vocab"),
    "token-negative": (_token(0, -1), "trace_token_out_of_vocab"),
    "token-huge": (_token(1, 10**30), "trace_token_out_of_vocab"),
    "steps-after-the-end": (_token(0, END), "trace_step_after_end"),  # and 2 steps after it
    "prompt-too-long": (lambda t: t.update(prompt="word " * 900), None),
    "bad-setting-late": (lambda t: t["steps"][2]["distribution"]["config"].update(top_p=0), None),
}


@pytest.mark.model
@pytest.mark.parametrize("case", list(BAD_CLAIMS))
def test_a_trace_claiming_too_much_costs_no_forward_pass(lm, small_trace, case):
    from model.decoding.session import DecodeSession

    change, key = BAD_CLAIMS[case]
    trace = _damaged(small_trace, change)
    target = DecodeSession(lm, max_tokens=len(small_trace["prompt_tokens"]) + ROOM)  # small: a failure runs fast
    with counted_passes(lm) as passes, pytest.raises(ValueError) as err:
        replay(target, trace)
    assert passes[0] == 0 and not target.started
    if key is not None:
        assert isinstance(err.value, SessionError) and err.value.key == key


@pytest.mark.model
def test_the_end_token_ends_the_text(lm):
    from model.decoding.session import DecodeSession

    assert END in DecodeSession(lm).eos_ids()


@pytest.mark.model
def test_a_trace_that_fits_exactly_still_replays(lm, small_trace):
    from model.decoding.session import DecodeSession

    target = DecodeSession(lm, max_tokens=len(small_trace["prompt_tokens"]) + 3)
    with counted_passes(lm) as passes:
        assert replay(target, small_trace) == 3
    assert passes[0] == 1 + 1  # the prompt's prefill, then the steps' tokens in one chunk (DecodeSession.follow)
    assert target.ids[target.prompt_len:] == [s["distribution"]["chosen"]["id"] for s in small_trace["steps"]]


# ---- round four, item 10: a trace's replay runs each text in chunks, not a pass per step --------------------
@pytest.mark.model
def test_the_largest_valid_trace_replays_in_about_80_passes_not_1024(lm):
    """The largest trace the bounds let through (16 texts, 1,024 steps, the session's 512 tokens each): each text
    through the model once, in chunks of PREFILL_CHUNK tokens. Before: a pass per step, 1,024 and the branches'
    prefills (about 212 s of one import slot here)."""
    from bench.import_wait import largest_trace
    from model.decoding.branches import MAX_BRANCHES
    from model.decoding.passes import PREFILL_CHUNK
    from model.decoding.session import MAX_TOKENS, DecodeSession
    from model.decoding.trace import MAX_TRACE_STEPS

    trace = largest_trace(lm)
    texts = [trace["steps"], *(b["steps"] for b in trace["branches"])]
    assert len(texts) == MAX_BRANCHES and sum(map(len, texts)) == MAX_TRACE_STEPS
    session = DecodeSession(lm)
    with counted_passes(lm) as passes:
        assert replay(session, trace, rewind=True) == MAX_TOKENS - len(trace["prompt_tokens"])
    # a text's prompt or prefix, then its steps, each in chunks: at most 512 / 128 + 1 passes a text
    assert passes[0] <= MAX_BRANCHES * (MAX_TOKENS // PREFILL_CHUNK + 1), passes[0]
    assert session.replay_left == len(trace["steps"]) and len(session.branches.kept) == len(trace["branches"])
    assert [s.token.id for s in session.branch_record(1).steps[-3:]] == [
        s["distribution"]["chosen"]["id"] for s in trace["branches"][0]["steps"][-3:]]


@pytest.mark.model
def test_a_text_run_in_chunks_has_the_records_its_steps_had(lm):
    """DecodeSession.follow (a replay's steps in chunks) makes the records step() makes one pass at a time: the
    same tokens, text, KV bytes, claims checked the same way, attention rows and logits to float rounding."""
    import numpy as np

    from model.decoding.session import DecodeSession

    stepped = DecodeSession(lm)
    stepped.start("The history of printing")
    claims = []
    for n in range(130):  # past one chunk (128): a chunk's boundary inside the text
        if n == 70:
            record = stepped.step(SamplingConfig(temperature=0.0), force_token=29299)  # forced by the user
        else:
            record = stepped.step(SamplingConfig(temperature=0.9, top_k=50, seed=n))
        claims.append((record.distribution.config, record.token.id, n == 70))
        if stepped.finished:
            break
    followed = DecodeSession(lm)
    followed.start("The history of printing")
    assert len(claims) == 130
    followed.follow(claims)  # (claims that do not reproduce: tests/test_truth.py, through replay)
    assert followed.ids == stepped.ids and followed.text == stepped.text
    for a, b in zip(stepped.steps, followed.steps, strict=True):
        assert (a.step, a.position, a.text, a.kv) == (b.step, b.position, b.text, b.kv)
        da, db = a.distribution, b.distribution
        assert (da.chosen.id, da.forced, da.marked_forced, da.u) == (db.chosen.id, db.forced, db.marked_forced, db.u)
        assert np.allclose([c.logit for c in da.candidates], [c.logit for c in db.candidates], atol=1e-3)
        assert a.attention.shape == b.attention.shape
        assert np.abs(a.attention.astype(np.float32) - b.attention.astype(np.float32)).max() < 2e-3
    assert torch.allclose(stepped.next_logits, followed.next_logits, atol=1e-3)
    assert [s.distribution.forced for s in followed.steps].count(True) == 1  # the user's forced token, no other


@pytest.mark.model
def test_a_text_run_in_chunks_changes_nothing_if_a_pass_fails(lm):
    from model.decoding.session import DecodeSession

    session = DecodeSession(lm)
    session.start("One two three")
    session.step(SamplingConfig(temperature=0.0))
    before = (list(session.ids), list(session.steps), session.next_logits)
    greedy = SamplingConfig(temperature=0.0)
    steps = [(greedy, 1000 + i, True) for i in range(200)]  # two chunks: the second one fails
    calls, forward = [0], lm.model.forward

    def failing(*args, **kwargs):
        calls[0] += 1
        if calls[0] == 2:
            raise RuntimeError("out of memory")
        return forward(*args, **kwargs)

    lm.model.forward = failing
    try:
        with pytest.raises(RuntimeError):
            session.follow(steps)
    finally:
        del lm.model.forward
    assert (session.ids, session.steps) == before[:2] and torch.equal(session.next_logits, before[2])
    session.step(greedy)  # its cache is as it was: the next step is the one a session that never failed takes
    ref = DecodeSession(lm)
    ref.start("One two three")
    ref.step(greedy)
    ref.step(greedy)
    assert session.ids == ref.ids and torch.allclose(session.next_logits, ref.next_logits, atol=1e-4)


# ---- 4. no added special token can be typed ---------------------------------------------------------------
def _special_texts(lm):
    texts = [t.content for t in lm.tokenizer.added_tokens_decoder.values() if t.special]
    assert len(texts) == 17
    return texts


@pytest.mark.model
@pytest.mark.parametrize("chat", [False, True])
def test_every_added_special_token_is_refused(lm, session, chat):
    for text in _special_texts(lm):
        with pytest.raises(SessionError) as err:
            session.encode_prompt(f"Look: {text} here", chat)
        assert err.value.key == "prompt_special_token" and text in str(err.value)


@pytest.mark.model
@pytest.mark.parametrize("chat", [False, True])
def test_text_with_angle_brackets_still_works(lm, session, chat):
    """Ordinary text with '<' and '>', and near misses of the special tokens, is taken as plain text."""
    specials = set(range(len(lm.tokenizer.added_tokens_decoder)))
    text = "if a < b and c > d: print('<html>') <file> <|im <repo_nam e> <file_sep < jupyter_code> <empty_output"
    ids = session.encode_prompt(text, chat)
    template = session.encode_prompt("x", chat)  # the chat template's own special tokens, none in raw mode
    assert sorted(i for i in ids if i in specials) == sorted(i for i in template if i in specials)
    assert text in lm.tokenizer.decode(ids)


# ---- 5. the cache timing lets others use the model between its passes ------------------------------------
@pytest.mark.model
def test_measuring_takes_the_models_scheduler_per_pass(lm):
    from model.decoding.records import SamplingConfig
    from model.decoding.scheduler import scheduler_of
    from model.decoding.session import DecodeSession

    ids = lm.tokenizer("The history of the printing press begins in the fifteenth century. " * 8)["input_ids"][:96]
    door, measuring, passes_unlocked = scheduler_of(lm.model), threading.Event(), []
    got_in = []
    stepper = DecodeSession(lm)
    stepper.start("Another student's text")
    forward = lm.model.forward

    def checked(*args, **kwargs):
        passes_unlocked.append(not door.held())
        return forward(*args, **kwargs)

    def other_user():  # another student's decode steps: they go first whenever they wait
        measuring.wait(10)
        while measuring.is_set():
            stepper.step(SamplingConfig(temperature=0))
            if measuring.is_set():
                got_in.append(time.perf_counter())
            stepper.back(1)  # (to the prompt: no pass)
            time.sleep(0.005)

    worker = threading.Thread(target=other_user)
    worker.start()
    lm.model.forward = checked
    try:
        measuring.set()
        timing = measure_cache_timing(lm, ids, [2, 24, 48, 96], repeats=3, budget_s=1.0)
    finally:
        measuring.clear()
        del lm.model.forward
        worker.join()
    assert len(timing.cached_ms) == 4 and all(t > 0 for t in timing.full_ms)
    assert passes_unlocked and not any(passes_unlocked)  # every pass ran holding the scheduler
    assert got_in  # and another thread ran between them


@pytest.mark.model
def test_measuring_without_a_lock_still_works(lm):
    ids = lm.tokenizer("One two three four five six seven eight nine ten.")["input_ids"]
    assert len(measure_cache_timing(lm, ids, [2, len(ids)], repeats=1).cached_ms) == 2


# ---- 6. parsing a typed whole number ----------------------------------------------------------------------
@pytest.mark.unit
@pytest.mark.parametrize("value, expected", [(0, 0), (49151, 49151), ("42", 42), (" 7 ", 7), ("007", 7), (5.0, 5),
                                             (-3, -3)])  # a negative id is derive()'s to refuse, naming the vocabulary
def test_a_token_id_is_parsed(value, expected):
    assert parse_token_id(value) == expected


@pytest.mark.unit
@pytest.mark.parametrize("value", ["²", "①", "٣", "１２", "-1", "1.5", "", " ", "1e3", "0x10", "9" * 5000, True, 1.5,
                                   math.nan, None, [1], "4 2"])
def test_a_token_id_that_is_not_ascii_digits_is_refused_by_key(value):
    with pytest.raises(SessionError) as err:
        parse_token_id(value)
    assert err.value.key == "forced_token_not_an_id"
    assert "token id" in str(err.value) and err.value.text("zh")
    assert len(str(err.value)) < 200  # a 5,000-digit paste is not echoed whole


@pytest.mark.unit
def test_the_forced_token_message_names_what_was_typed():
    with pytest.raises(SessionError, match="got '²'"):
        parse_token_id("²")


@pytest.mark.unit
@pytest.mark.parametrize("value, expected", [(3, 3), ("12", 12), (5.0, 5), (0.0, 0)])
def test_a_whole_number_is_parsed(value, expected):
    assert parse_whole(value, "forced_token_not_an_id") == expected


@pytest.mark.unit
@pytest.mark.parametrize("value", ["²", 2.5, math.inf, math.nan, -1, False, "1_000"])
def test_a_number_that_is_not_whole_is_refused_with_the_given_key(value):
    with pytest.raises(SessionError) as err:
        parse_whole(value, "forced_token_not_an_id")
    assert err.value.key == "forced_token_not_an_id"


@pytest.mark.unit
def test_every_new_key_has_both_languages():
    for key in ("repetition_penalty_bounds", "trace_too_large", "trace_not_text", "trace_not_json",
                "trace_too_deep", "trace_number_too_long", "trace_too_many_steps",
                "trace_token_out_of_vocab", "trace_step_after_end", "prompt_special_token", "forced_token_not_an_id"):
        en, zh = MESSAGES[key]
        assert en and zh and en != zh
