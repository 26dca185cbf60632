"""Beam search (model/strategies/beams.py) against transformers' own: the finished beams and their scores equal
generate(num_beams=B, num_return_sequences=B, do_sample=False, length_penalty=..., max_new_tokens=...) on SmolLM2 and
Gemma 3 270M, greedy is B = 1, and the sampled text is what Next token writes with the same settings."""
import pytest
import torch

from model.strategies.beams import beam_search, compare_texts, sampled_continuation
from model.decoding.loading import available_models
from model.decoding.records import SamplingConfig
from model.decoding.session import DecodeSession

pytestmark = pytest.mark.model

PROMPTS = ["The capital of France is", "Once upon a time, in a small village,", "def fibonacci(n):"]
CASES = [(2, 1.0, 10), (4, 0.0, 8), (4, -1.0, 8)]  # (B, length penalty, max new tokens)
SAMPLED = SamplingConfig(temperature=0.9, top_k=40, top_p=0.95, seed=7)


def generate_beams(lm, ids, width, penalty, new_tokens):
    """transformers' answer: (generated ids of each returned beam, its sequences_score), best first."""
    out = lm.model.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                            num_beams=width, num_return_sequences=width, do_sample=False, length_penalty=penalty,
                            max_new_tokens=new_tokens, output_scores=True, return_dict_in_generate=True)
    lengths = (out.beam_indices != -1).sum(1).tolist()  # generated tokens of each (the rest is padding)
    return [(out.sequences[i, len(ids): len(ids) + n].tolist(), float(out.sequences_scores[i]))
            for i, n in enumerate(lengths)]


def generate_greedy(lm, ids, new_tokens):
    out = lm.model.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                            do_sample=False, num_beams=1, max_new_tokens=new_tokens, output_scores=True,
                            return_dict_in_generate=True)
    tokens = out.sequences[0, len(ids):].tolist()
    logprob = sum(float(torch.log_softmax(s[0], -1)[t]) for s, t in zip(out.scores, tokens))
    return tokens, logprob


@pytest.fixture(scope="module", params=["smollm2", "gemma3-270m"])
def model(request, lm, load_once):
    if request.param == "smollm2":
        return lm
    if request.param not in available_models():
        pytest.skip("Gemma 3 270M is not installed")
    return load_once(request.param)


@pytest.mark.parametrize("width,penalty,new_tokens", CASES)
def test_finished_beams_and_scores_equal_generate(model, width, penalty, new_tokens):
    for prompt in PROMPTS:
        ids = model.tokenizer(prompt)["input_ids"]
        run = beam_search(model, ids, width, penalty, new_tokens)
        expected = generate_beams(model, ids, width, penalty, new_tokens)
        assert [h.tokens for h in run.finished] == [tokens for tokens, _ in expected], prompt
        for h, (tokens, score) in zip(run.finished, expected):
            assert h.score == pytest.approx(score, rel=1e-5, abs=1e-4), prompt
            # the score is log P / length ** penalty, log P the sum of the tokens' log p
            assert h.score == pytest.approx(h.logprob / h.length ** penalty, abs=1e-5)


def test_greedy_is_one_beam(model):
    for prompt in PROMPTS:
        ids = model.tokenizer(prompt)["input_ids"]
        run = beam_search(model, ids, 1, 1.0, 12)
        tokens, logprob = generate_greedy(model, ids, 12)
        assert run.finished[0].tokens == tokens
        assert run.finished[0].logprob == pytest.approx(logprob, abs=1e-4)


def test_every_step_keeps_b_beams_from_the_k_best(lm):
    """Each step looks at K = 2B candidates (one end token) in score order; the B best that did not end are the next
    step's live beams, slots 0..B-1 in that order; each candidate's score is its parent's plus its own log p."""
    ids = lm.tokenizer(PROMPTS[1])["input_ids"]
    run = beam_search(lm, ids, 3, 1.0, 8)
    assert run.eos_ids == [2] and len(run.steps) == 8 and run.stopped == "limit"
    for i, step in enumerate(run.steps):
        scores = [c.score for c in step.candidates]
        assert len(scores) == 6 and scores == sorted(scores, reverse=True)
        kept = [c for c in step.candidates if c.fate == "kept"]
        if i < len(run.steps) - 1:
            assert [c.slot for c in kept] == [0, 1, 2]
            assert [c.rank for c in kept] == sorted(c.rank for c in step.candidates if not c.ended)[:3]
            nxt = run.steps[i + 1]
            assert [seq for seq, _ in nxt.live] == [step.live[c.parent][0] + [c.token] for c in kept]
        for c in step.candidates:
            assert c.score == pytest.approx(step.live[c.parent][1] + c.logprob, abs=1e-4)
    assert len(run.steps[0].live) == 1  # the first step extends the prompt alone


def test_sampled_text_is_what_next_token_writes(lm):
    session = DecodeSession(lm)
    session.start(PROMPTS[0])
    tokens, logprob = sampled_continuation(lm, session.ids, SAMPLED, 8)
    for _ in range(len(tokens)):
        session.step(SAMPLED)
    assert session.ids[session.prompt_len:] == tokens
    assert session.logprob_t1() == pytest.approx(logprob, abs=1e-4)


def test_compare_texts_marks_repeats(lm):
    ids = lm.tokenizer("one two three, one two three, one two three,")["input_ids"]
    run = beam_search(lm, ids, 2, 1.0, 12)
    greedy = beam_search(lm, ids, 1, 1.0, 12)
    rows = compare_texts(lm, run, greedy, sampled_continuation(lm, ids, SAMPLED, 12))
    assert [r.kind for r in rows] == ["beam", "beam", "greedy", "sampled"]
    assert rows[2].repeated_tokens > 0  # the model goes on with the pattern: its 3-grams are in the prompt
    assert all(len(r.repeated) == len(r.tokens) == len(r.displays) for r in rows)
