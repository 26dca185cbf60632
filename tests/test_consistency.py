"""Self-consistency on the real model: every batched sample is the text a plain DecodeSession with its seed writes,
the greedy row is generate()'s greedy text, each log P is a full forward pass's sum, and the vote counts right."""
import pytest
import torch

from model.strategies.consistency import MAX_NEW_TOKENS, MAX_SAMPLES, ConsistencyRun, Sample, extract_answer, self_consistency
from model.errors import SessionError
from model.decoding.records import SamplingConfig
from model.decoding.session import DecodeSession

pytestmark = pytest.mark.model

QUESTION = "Question: what is 7 + 5?\nAnswer:"
CFG = SamplingConfig(temperature=1.0, top_p=0.95, seed=40)
N, TOKENS = 4, 8


@pytest.fixture(scope="module")
def run(lm):
    ids = list(lm.tokenizer(QUESTION)["input_ids"])
    return self_consistency(lm, ids, CFG, N, TOKENS)


def test_each_batched_sample_is_a_plain_session_with_its_seed(lm, run):
    assert [s.seed for s in run.samples] == [40, 41, 42, 43]
    for sample in run.samples:
        session = DecodeSession(lm)
        session.start(QUESTION)
        assert session.ids == run.prompt_ids
        cfg = SamplingConfig(temperature=1.0, top_p=0.95, seed=sample.seed)
        for _ in range(TOKENS):
            session.step(cfg)
            if session.finished:
                break
        assert session.ids[len(run.prompt_ids):] == sample.tokens, sample.seed


def test_greedy_row_is_generate_greedy(lm, run):
    out = lm.model.generate(torch.tensor([run.prompt_ids]), do_sample=False, max_new_tokens=TOKENS, top_k=None,
                            top_p=None, pad_token_id=lm.tokenizer.eos_token_id)
    assert run.greedy.tokens == out[0, len(run.prompt_ids):].tolist()


def test_log_p_is_a_full_forward_pass_sum(lm, run):
    for sample in [run.greedy, *run.samples]:
        ids = run.prompt_ids + sample.tokens
        logp = torch.log_softmax(lm.model(torch.tensor([ids])).logits[0].double(), -1)  # (T, V)
        P = len(run.prompt_ids)
        expected = sum(float(logp[P - 1 + i, tok]) for i, tok in enumerate(sample.tokens))
        assert sample.logprob == pytest.approx(expected, abs=1e-3)
    assert run.passes <= TOKENS


def test_bounds_are_refused(lm):
    for n, tokens, key in [(MAX_SAMPLES + 1, 4, "consistency_samples_range"), (0, 4, "consistency_samples_range"),
                           (2, MAX_NEW_TOKENS + 1, "consistency_tokens_range")]:
        with pytest.raises(SessionError) as err:
            self_consistency(lm, [1, 2], CFG, n, tokens)
        assert err.value.key == key and err.value.text("zh")
    with pytest.raises(SessionError) as err:
        self_consistency(lm, [], CFG, 2, 4)
    assert err.value.key == "consistency_no_prompt"


def test_answer_rule_and_vote():
    assert extract_answer(" 12.") == "12"
    assert extract_answer("It is 1,000 apples, or 7") == "1000"
    assert extract_answer("-3.5 degrees") == "-3.5"
    assert extract_answer("\n  Yes.\nBecause") == "yes"
    assert extract_answer("") == ""
    samples = [Sample(i, [], "", a, -1.0, True) for i, a in enumerate(["12", "13", "12", "7", "13", "12"])]
    run = ConsistencyRun([1], CFG, Sample(None, [], "", "13", -0.5, True), samples, 0.0, 1)
    assert run.votes() == [("12", 3), ("13", 2), ("7", 1)] and run.majority == "12"
    assert run.votes(2) == [("12", 1), ("13", 1)]  # a tie keeps the first seen first
    assert run.running("12") == [1.0, 0.5, 2 / 3, 0.5, 0.4, 0.5]
