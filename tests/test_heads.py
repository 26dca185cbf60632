"""Heads by what they do (model/experiments/heads.py): the scores are the formula on the model's own attention
weights (a pass run here, outside the scheduler, with loops written here), the text is what the page says it is, and the
induction heads the page names score high on the repeated text and low on the control text. SmolLM2 and Gemma."""
import numpy as np
import pytest
import torch

from model.decoding.scheduler import scheduler_of
from model.decoding.loading import available_models
from model.experiments.heads import NAMED, head_scores, ordinary_ids, repeated_text

pytestmark = pytest.mark.model


@pytest.fixture(scope="module", params=["smollm2", "gemma3-270m"])
def model(request, lm, load_once):
    if request.param == "smollm2":
        return lm
    if "gemma3-270m" not in available_models():
        pytest.fail("Gemma 3 270M is not installed: make run / make test install it (Makefile GEMMA)")
    return load_once("gemma3-270m")


@pytest.fixture(scope="module")
def scored(model):
    turns = scheduler_of(model.model).turns
    scores = head_scores(model)
    return scores, scheduler_of(model.model).turns - turns


def test_the_text_is_a_random_sequence_said_twice(model):
    ids, prefix = repeated_text(model, 40, seed=0)
    assert ids == repeated_text(model, 40, seed=0)[0]  # seeded: the same text every time
    assert ids[:prefix] == model.tokenizer("", add_special_tokens=True)["input_ids"]  # the prompt's own start
    first, second = ids[prefix:prefix + 40], ids[prefix + 40:]
    assert first == second and len(set(first)) == 40  # no token twice within a copy: one earlier occurrence each
    special = set(model.tokenizer.all_special_ids) | set(model.tokenizer.added_tokens_decoder)
    assert not special & set(first) and set(first) <= set(ordinary_ids(model).tolist())
    control, _ = repeated_text(model, 40, seed=0, repeat=False)
    assert control[:prefix + 40] == ids[:prefix + 40] and not set(control[prefix + 40:]) & set(first)


def test_the_scores_are_the_formula_on_the_models_own_attention(model, scored):
    scores, passes = scored
    assert passes == 2  # the repeated text and the control text, each one pass, a turn at the scheduler
    ids = [tok.id for tok in scores.tokens]
    with torch.no_grad():
        att = model.model(input_ids=torch.tensor([ids]), output_attentions=True).attentions  # eager: weights come back
    n, p, length = len(ids), scores.prefix, scores.length
    for layer, head in [(0, 0), *[(lh[0], lh[1]) for lh in scores.top("induction", 2)]]:
        a = att[layer][0, head].double()
        previous = sum(float(a[i, i - 1]) for i in range(1, n)) / (n - 1)
        induction = sum(float(a[p + length + k, p + k + 1]) for k in range(length)) / length
        sink = sum(float(a[i, 0]) for i in range(1, n)) / (n - 1)
        assert scores.previous[layer, head] == pytest.approx(previous, abs=1e-4)
        assert scores.induction[layer, head] == pytest.approx(induction, abs=1e-4)
        assert scores.sink[layer, head] == pytest.approx(sink, abs=1e-4)
    assert np.all((scores.previous >= 0) & (scores.previous <= 1 + 1e-6))


def test_the_named_induction_heads_score_high_on_repetition_and_low_without_it(model, scored):
    scores, _ = scored
    named = scores.top("induction")
    assert len(named) == NAMED
    for layer, head, score in named:
        control = float(scores.control_induction[layer, head])
        print(f"{model.name}: induction head L{layer} H{head}: {score:.3f} repeated, {control:.3f} control")
        assert score > 0.3 and control < 0.05
    print(model.name, "previous-token", [(l, h, round(s, 3)) for l, h, s in scores.top("previous")],
          "sink", [(l, h, round(s, 3)) for l, h, s in scores.top("sink")])
    # the other kinds the page names are clear too: a previous-token head mostly on i - 1, a sink almost all on 0
    assert scores.top("previous")[0][2] > 0.5 and scores.top("sink")[0][2] > 0.9
