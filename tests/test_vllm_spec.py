"""Speculative decoding read from a real vLLM (model/vllm/client.py EngineClient.speculative_completion,
model/vllm/speculative.py) and the Speculative decoding view on an engine's model.

The first tests need no engine: they parse a stream of the shape vLLM sends (recorded from vLLM 0.32 with
--per-request-spec-decode-metrics detailed). The rest start their own vLLM with n-gram speculation (the shared
`engine` has none): tests/engine_server.py spec_flags(K, LOOKUP_MAX, LOOKUP_MIN). TBT_TEST_SPEC_ENGINE=
"url|folder|pid" uses one started elsewhere with those flags.

Checked independently of the parser: every count against a replay of vLLM's n-gram proposer on the engine's own
output (vllm/v1/spec_decode/ngram_proposer.py: the longest n-gram of lookup_min..lookup_max tokens ending the text
that occurred before, its earliest occurrence, the k tokens after it), and the text against the local model's plain
greedy decoding of the same ids.
"""
import json
import os
import time

import httpx
import pytest
import torch

from engine_server import REQUEST_S, free_port, own_engine, spec_flags
from model.vllm.client import EngineClient, draft_marks, parse_spec_stream
from model.vllm.session import load_engine_model
from model.errors import SessionError
from model.speed.speculative import SPEED_TEXTS, plain_greedy

K, LOOKUP_MAX, LOOKUP_MIN = 4, 3, 1  # the engine's flags: 4 drafts per step, n-grams of 1 to 3 tokens
NEW = 40  # tokens per request


# ---- no engine: the stream as vLLM sends it ------------------------------------------------------------------
def piece(ids, finish=None):
    """One streamed piece: the step's tokens as return_tokens_as_token_ids gives them (logprobs 0)."""
    return {"choices": [{"index": 0, "text": "x" * len(ids), "finish_reason": finish,
                         "logprobs": {"tokens": [f"token_id:{i}" for i in ids], "token_logprobs": [0.0] * len(ids)}}]}


def usage(accepted, drafted, k=K):
    """The last event: usage, and vLLM's RequestSpecDecodeMetrics.to_dict() (per-step lists only when non-empty)."""
    hist = [0] * (k + 1)
    for a in accepted:
        hist[a] += 1
    spec = {"mean_acceptance_length": 1 + sum(accepted) / max(len(accepted), 1), "draft_acceptance_rate": 0.5,
            "acceptance_histogram": hist, "num_spec_steps": len(accepted), "num_accepted_draft_tokens": sum(accepted),
            "num_draft_tokens": sum(drafted), "num_spec_tokens": k}
    if accepted:
        spec.update(per_step_accepted=list(accepted), per_step_drafted=list(drafted))
    return {"choices": [], "usage": {"completion_tokens": 0}, "metrics": {"speculative_decoding": spec}}


@pytest.mark.unit
def test_the_stream_is_parsed_and_the_drafts_tokens_are_placed():
    # pieces: the prompt's token; a step that kept 2 drafts; one that kept none; a step without drafts (not
    # counted by vLLM); a step that kept 1
    events = [piece([10]), piece([11, 12, 13]), piece([14]), piece([15]), piece([16, 17], "length"),
              usage([2, 0, 1], [4, 4, 3])]
    run = parse_spec_stream(events, [1, 2, 3], 12.5)
    assert run.generated == tuple(range(10, 18)) and run.chunks == (1, 3, 1, 1, 2) and run.finish == "length"
    assert run.drafted == (4, 4, 3) and run.accepted == (2, 0, 1) and run.num_spec_tokens == K
    assert run.from_draft == (False, True, True, False, False, False, True, False)
    assert run.steps == 3 and run.tokens_per_pass == pytest.approx((3 + 1 + 2) / 3)
    assert run.acceptance_rate == pytest.approx(3 / 11) and run.passes == 5 and run.ms == 12.5


@pytest.mark.unit
def test_a_last_step_cut_at_the_length_a_merged_stream_and_an_engine_without_speculation():
    # the last step kept 3 drafts but only 2 tokens were left: vLLM does not shorten drafts to max_tokens
    assert draft_marks([1, 3, 2], [2, 3]) == (False, True, True, False, True, True)
    assert draft_marks([1, 3, 1], [2, 3]) == (False, True, True, False, True)  # cut to its first token
    assert draft_marks([1, 3, 3], [2, 2]) == (False, True, True, False, True, True, False)  # not cut: its own last
    assert draft_marks([1, 3, 2], [2, 2]) == (False, True, True, False, True, True)  # cut to its 2 drafts
    assert draft_marks([1, 3, 2, 1], [2, 2]) is None  # ... which only the last piece may be
    assert draft_marks([1, 4, 1], [2, 0]) is None  # two steps' pieces joined: they no longer line up
    assert draft_marks([1, 3], [2, 1]) is None  # a counted step without its piece
    assert draft_marks([2, 1], []) is None  # the prompt's pass writes one token
    assert draft_marks([1, 1, 1], []) == (False, False, False)  # speculation on, nothing ever matched
    plain = parse_spec_stream([piece([5]), piece([6], "length"), {"choices": [], "usage": {}}], [1], 3.0)
    assert not plain.speculating and plain.drafted is None and plain.from_draft is None and plain.steps == 0
    nothing = parse_spec_stream([piece([5]), piece([6]), usage([], [])], [1], 3.0)  # lists left out when empty
    assert nothing.speculating and nothing.accepted == () and nothing.from_draft == (False, False)
    summary = usage([1], [4])
    del summary["metrics"]["speculative_decoding"]["per_step_accepted"]  # --per-request-spec-decode-metrics summary
    assert not parse_spec_stream([piece([5]), piece([6, 7]), summary], [1], 3.0).speculating
    for bad in ([piece([5]), usage([3], [2])],  # accepted above drafted
                [{"choices": [{"text": "x", "logprobs": None}]}]):  # text without its token ids
        with pytest.raises(SessionError) as err:
            parse_spec_stream(bad, [1], 1.0)
        assert err.value.key == "engine_bad_answer"


@pytest.mark.unit
def test_the_streams_faults_are_keyed_and_back_off():
    def answer(request):
        body = json.loads(request.content)
        if body["model"] == "gone":
            return httpx.Response(404, json={"error": {"message": "The model `gone` does not exist."}})
        if body["model"] == "broken":  # vLLM reports a failure inside the stream
            return httpx.Response(200, text='data: {"error": {"message": "boom", "code": 500}}\n\ndata: [DONE]\n\n')
        return httpx.Response(200, text="".join(f"data: {json.dumps(e)}\n\n" for e in
                                                [piece([7]), piece([8, 9], "length"), usage([1], [2])]) + "data: [DONE]\n\n")

    transport = httpx.MockTransport(answer)
    assert EngineClient("http://e/v1", "m", transport=transport).speculative_completion([1], 3).from_draft == (
        False, True, False)
    for model, key in (("gone", "engine_model_unknown"), ("broken", "engine_error")):
        with pytest.raises(SessionError) as err:
            EngineClient("http://e/v1", model, transport=transport).speculative_completion([1], 3)
        assert err.value.key == key
    down = EngineClient(f"http://127.0.0.1:{free_port()}/v1", "m", timeout=2)
    with pytest.raises(SessionError) as err:
        down.speculative_completion([1], 3)
    assert err.value.key == "engine_down"
    asked, now = [], [0.0]

    def failing(request):
        asked.append(request)
        return httpx.Response(503, json={"error": {"message": "overloaded"}})

    busy = EngineClient("http://e/v1", "m", transport=httpx.MockTransport(failing), clock=lambda: now[0])
    for t in (0.0, 0.5, 1.5):  # refused at once, unasked, until the first pause (1 s) has passed
        now[0] = t
        with pytest.raises(SessionError) as err:
            busy.speculative_completion([1], 3)
        assert err.value.key == "engine_error"
    assert len(asked) == 2


@pytest.mark.unit
def test_the_figure_draws_the_counts_and_the_text_marks_the_drafts_tokens():
    from types import SimpleNamespace

    from model.decoding.records import TokenInfo
    from viz.speculative_engine import engine_spec_chart, engine_spec_html

    events = [piece([10]), piece([11, 12, 13]), piece([14]), piece([15]), piece([16, 17], "length"),
              usage([2, 0, 1], [4, 4, 3])]
    run = parse_spec_stream(events, [1, 2, 3], 12.5)
    local = SimpleNamespace(draft_len=2, rounds=[SimpleNamespace(drafted=[1, 2], accepted=2),
                                                 SimpleNamespace(drafted=[], accepted=0)])
    for lang, words in (("en", "per verifying pass"), ("zh", "每次验证")):
        fig = engine_spec_chart(run, "vllm:m", local, "smollm2", lang)
        roles = {tr["meta"]["role"]: tr for tr in fig["data"]}
        assert roles["engine_drafted"]["y"] == [4, 4, 3] and roles["engine_accepted"]["y"] == [2, 0, 1]
        assert roles["engine_drafted"]["x"] == [1, 2, 3]
        assert roles["local_drafted"]["y"] == [2, 0] and roles["local_accepted"]["y"] == [2, 0]
        title = fig["layout"]["title"]["text"]
        assert words in title and "2.00" in title  # (3+1+2)/3
        assert ("5 passes" if lang == "en" else "共 5 次计算") in title  # every pass: 5 pieces, 3 of them verifying
    alone = engine_spec_chart(run, "vllm:m", lang="en")
    assert {tr["meta"]["role"] for tr in alone["data"]} == {"engine_drafted", "engine_accepted"}
    tokens = [TokenInfo(i, "x", d) for i, d in zip(run.generated, ["a", "<b>", "c", "↵", "d", "e", "f", "g"])]
    text = engine_spec_html(tokens, run.from_draft, "en")
    assert text.count("tbt-spec-engine-draft") == sum(run.from_draft) == 3
    assert text.count("tbt-spec-engine-own") == 5 and "&lt;b&gt;" in text and "<b>" not in text
    assert "3 of 8 tokens came from accepted drafts" in text
    assert "joined the pieces" in engine_spec_html(tokens, None, "en")


# ---- the real engine ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def spec_engine():
    yield from own_engine("TBT_TEST_SPEC_ENGINE", spec_flags(K, LOOKUP_MAX, LOOKUP_MIN), "vllm-spec")


@pytest.fixture(scope="module")
def spec_lm(spec_engine):
    return load_engine_model(EngineClient(spec_engine.url, spec_engine.model, timeout=REQUEST_S), spec_engine.folder)


def propose(context: list[int], k: int = K, lo: int = LOOKUP_MIN, hi: int = LOOKUP_MAX) -> list[int]:
    """vLLM's n-gram draft, by brute force: for n = hi down to lo, the earliest earlier occurrence of the text's last
    n tokens (not the suffix itself); the up to k tokens after it, never past the end of the text."""
    total = len(context)
    for n in range(min(hi, total - 1), lo - 1, -1):
        tail = context[total - n:]
        for s in range(0, total - n):
            if context[s:s + n] == tail:
                return context[s + n:s + n + k]
    return []


def replay(prompt: list[int], out: list[int]):
    """The engine's run rebuilt from its output alone: per step with drafts (drafted, accepted visible in `out`),
    which tokens drafts wrote, and the pieces' sizes. The last step may have kept drafts past the end of `out`."""
    steps, marks, pieces, p = [], [False], [1], 1
    while p < len(out):
        draft = propose(prompt + out[:p])
        if not draft:
            marks.append(False)
            pieces.append(1)
            p += 1
            continue
        a = 0
        while a < len(draft) and p + a < len(out) and draft[a] == out[p + a]:
            a += 1
        written = min(a + 1, len(out) - p)
        steps.append((len(draft), a))
        marks += [True] * min(a, written) + [False] * (written - min(a, written))
        pieces.append(written)
        p += written
    return steps, marks, pieces


def merged(chunks, pieces) -> bool:
    """Whether the streamed pieces are the steps' pieces, some neighbours joined: vLLM's API server joins the
    outputs of steps it has not sent yet into one piece when it falls behind (a loaded machine)."""
    ends = {sum(pieces[:i + 1]) for i in range(len(pieces))}
    return all(sum(chunks[:i + 1]) in ends for i in range(len(chunks))) and sum(chunks) == sum(pieces)


def check_run(run, prompt):
    """The relations that must hold between the counts, the stream and the text; the overshoot of the last step."""
    out, n = list(run.generated), len(run.generated)
    assert run.speculating and run.num_spec_tokens == K and len(run.drafted) == len(run.accepted) >= 1
    assert all(0 <= a <= d <= K for a, d in zip(run.accepted, run.drafted))
    steps, marks, pieces = replay(prompt, out)
    # the same steps as the engine counted them, rebuilt from its text by vLLM's own lookup rule
    assert [d for d, _ in steps] == list(run.drafted)
    assert [a for _, a in steps[:-1]] == list(run.accepted[:-1]) and run.accepted[-1] >= steps[-1][1]
    # the stream: one piece per step, or (engine behind) neighbours joined, and then the marks are not guessed
    if tuple(pieces) == run.chunks:
        assert tuple(marks) == run.from_draft
    else:
        assert merged(run.chunks, pieces) and run.from_draft in (None, tuple(marks)), (run.chunks, pieces)
    # vLLM (scheduler.py update_from_output): the prompt's pass writes 1 token; a step with drafts writes
    # accepted + 1 and is counted; a step without drafts writes 1, uncounted; the last step is cut to what is left:
    #   n = 1 + uncounted + sum(accepted + 1) - overshoot, 0 <= overshoot <= accepted of the last step
    uncounted = len(pieces) - 1 - run.steps
    overshoot = 1 + uncounted + sum(a + 1 for a in run.accepted) - n
    assert uncounted >= 0 and 0 <= overshoot <= run.accepted[-1] and sum(run.chunks) == n
    # the drafts' tokens: every accepted draft, less those cut with the last step (its own token is cut first)
    assert sum(marks) == sum(run.accepted) - max(overshoot - 1, 0)
    return uncounted, overshoot


@pytest.mark.unit
def test_the_checks_take_a_stream_whose_pieces_the_engine_joined():
    # an engine's run made from its own replay: three steps with drafts of 4, three without
    prompt, out = [5, 6, 7, 8, 9, 5, 6], [7, 8, 9, 1, 2, 5, 6, 7, 8, 9, 3, 5, 6, 7, 8, 1]
    steps, marks, pieces = replay(prompt, out)
    assert pieces == [1, 3, 1, 1, 5, 1, 4] and steps == [(4, 2), (4, 4), (4, 3)]

    def run_of(chunks):
        at = [sum(chunks[:i]) for i in range(len(chunks) + 1)]
        events = [piece(out[a:b]) for a, b in zip(at, at[1:])] + [usage([2, 4, 3], [4, 4, 4])]
        return parse_spec_stream(events, prompt, 1.0)

    assert check_run(run_of(pieces), prompt) == (3, 0) and run_of(pieces).from_draft == tuple(marks)
    joined = run_of([1, 3, 2, 5, 1, 4])  # two one-token steps sent as one piece: the marks cannot be placed
    assert joined.from_draft is None and check_run(joined, prompt) == (3, 0)
    with pytest.raises(AssertionError):
        check_run(run_of([1, 2, 2, 1, 5, 1, 4]), prompt)  # a piece cut inside a step is no joining


@pytest.mark.engine
def test_the_engines_counts_are_consistent_and_replayed_by_its_lookup(spec_lm):
    for label in ("repeating", "prose"):
        prompt = spec_lm.tokenizer(SPEED_TEXTS[label])["input_ids"]
        run = spec_lm.client.speculative_completion(prompt, NEW)
        uncounted, overshoot = check_run(run, prompt)
        print(f"\n{label}: {len(run.generated)} tokens, {run.steps} verifying steps + {uncounted} without drafts, "
              f"drafted {list(run.drafted)}, accepted {list(run.accepted)} ({sum(run.accepted)}/{sum(run.drafted)}), "
              f"{run.tokens_per_pass:.2f} tokens per verifying pass, {len(run.chunks)} passes, marked "
              f"{sum(run.from_draft) if run.from_draft else '? (pieces joined)'} (the last step cut by {overshoot}), "
              f"{run.ms:.0f} ms")
        assert run.finish == "length" and len(run.generated) == NEW
        if label == "repeating":
            assert sum(run.accepted) > 0 and run.tokens_per_pass > 1.5  # the code repeats: drafts pay


@pytest.mark.engine
def test_speculation_writes_the_local_models_plain_greedy_text(spec_lm, lm):
    for label in ("repeating", "prose"):
        prompt = spec_lm.tokenizer(SPEED_TEXTS[label])["input_ids"]
        run = spec_lm.client.speculative_completion(prompt, NEW)
        plain, _, _ = plain_greedy(lm, prompt, NEW)
        with torch.no_grad():  # a near-tie (top-2 gap < 1e-4) may fall either way between the engine's floats and ours
            logits = lm.model(torch.tensor([prompt + plain])).logits[0, len(prompt) - 1:-1].float()
        top2 = logits.topk(2, dim=-1).values
        close = [i for i, gap in enumerate((top2[:, 0] - top2[:, 1]).tolist()) if gap < 1e-4]
        upto = close[0] + 1 if close else NEW
        agree = next((i for i, (a, b) in enumerate(zip(run.generated, plain)) if a != b), NEW)
        print(f"\n{label}: engine (speculating) and local plain greedy agree on {agree} of {NEW} tokens"
              + (f"; first local near-tie at {close[0]}" if close else "; no local near-tie"))
        assert list(run.generated[:upto]) == plain[:upto]


@pytest.mark.engine
def test_an_engine_fault_leaves_the_session_unchanged(spec_lm):
    from model.decoding.session import DecodeSession
    from model.vllm.speculative import engine_speculate

    session = DecodeSession(spec_lm)
    session.start("def area_square(side):\n    return side * side\n\n\ndef area_cube(side):\n")
    before = list(session.ids)
    comparison = engine_speculate(session, 8)
    assert comparison.engine.speculating and comparison.local is None and session.ids == before
    good = spec_lm.client
    for client, key in ((EngineClient(spec_lm.client.url, "not-served", timeout=REQUEST_S), "engine_model_unknown"),
                        (EngineClient(f"http://127.0.0.1:{free_port()}/v1", spec_lm.client.model, timeout=5), "engine_down")):
        session.lm.client = client
        try:
            with pytest.raises(SessionError) as err:
                engine_speculate(session, 8)
        finally:
            session.lm.client = good
        assert err.value.key == key and session.ids == before
        print(f"\n{key}: {err.value.text('en')} / {err.value.text('zh')}")


@pytest.mark.engine
def test_the_local_runs_bound_is_checked_before_the_engines_request(spec_lm, lm, monkeypatch):
    """Issue 46, every bound checked before the first pass: a draft length the local run refuses was refused only
    after the engine had written its whole continuation."""
    from model.decoding.core import core_of
    from model.decoding.session import DecodeSession
    from model.vllm.speculative import engine_speculate

    session = DecodeSession(spec_lm)
    session.start("def area_square(side):\n    return side * side\n")
    asked, real = [], spec_lm.client.speculative_completion
    monkeypatch.setattr(spec_lm.client, "speculative_completion", lambda *a, **k: asked.append(1) or real(*a, **k))
    with pytest.raises(SessionError) as err:
        engine_speculate(session, 8, core_of(lm), draft_len=99)
    assert err.value.key == "spec_draft_len_range" and asked == []


@pytest.mark.engine
def test_the_view_shows_the_engines_run_beside_the_local_one(spec_lm, lm):
    from gradio_client import Client

    from model.serving.sessions import ModelRegistry, SessionStore
    from served import DEFAULTS, served

    models = ModelRegistry("smollm2", {"smollm2": lm})
    models.add_engine(spec_lm)
    assert models.loaded_twin(spec_lm).lm is lm  # its core: the app's own run goes there
    settings = {**DEFAULTS, "temperature": 0.0}
    with served(models, SessionStore(max_sessions=2)) as (page, url, demo):
        a = Client(demo.local_url, verbose=False)
        a.predict(SPEED_TEXTS["repeating"], "raw", spec_lm.name, **settings, api_name="/start")
        session = page.store.get(a.session_hash)
        before = list(session.ids)
        t0 = time.perf_counter()
        summary, plot, marked, numbers = a.predict(4, 24, **settings, api_name="/speculative")
        print(f"\nthe view's request: {(time.perf_counter() - t0) * 1000:.0f} ms; {numbers['accepted_per_step']}")
        assert session.ids == before  # only read
        run_tokens = numbers["generated"]
        assert len(run_tokens) == 24 and numbers["speculating"] and numbers["num_spec_tokens"] == K
        assert numbers["local_model"] == "smollm2" and numbers["local_generated"] == run_tokens  # both greedy
        assert numbers["agree"] == numbers["compared"] == 24
        steps, marks, pieces = replay(before, run_tokens)
        assert numbers["drafted_per_step"] == [d for d, _ in steps]
        assert "verified drafts" in summary and "must write the same text" in summary
        if numbers["from_draft"] is None:  # the engine fell behind and joined pieces: the page says it cannot tell
            assert merged(numbers["chunks"], pieces) and tuple(numbers["chunks"]) != tuple(pieces)
            assert "joined the pieces of two steps" in marked and "passes in all" not in summary
        else:
            assert numbers["from_draft"] == marks and marked.count("tbt-spec-engine-draft") == sum(marks)
            assert f"it took {len(numbers['chunks'])} passes in all" in summary
        zh = a.predict(4, 24, **{**settings, "lang": "zh"}, api_name="/speculative")[0]
        assert "验证计算" in zh and "普通贪心解码一样" in zh
        with pytest.raises(Exception, match="not kept|不会保留"):
            a.predict(**settings, api_name="/speculative_keep")
        assert session.ids == before


@pytest.mark.engine
def test_the_engine_stopped_mid_session(spec_engine, spec_lm):
    """(last: it stops the module's engine, which it would stop at the module's end anyway) The engine stopped under a
    session: tests/test_vllm.py stopped_mid_session. An engine started elsewhere (TBT_TEST_SPEC_ENGINE) is left
    running: one of the test's own is started and stopped instead."""
    from engine_server import started_for_the_tests
    from test_vllm import stopped_mid_session

    if not os.environ.get("TBT_TEST_SPEC_ENGINE"):
        stopped_mid_session(spec_lm, spec_engine)
        return
    own = started_for_the_tests(log="vllm-stopped")
    try:
        stopped_mid_session(load_engine_model(EngineClient(own.url, own.model, timeout=REQUEST_S), own.folder), own)
    finally:
        own.stop()
