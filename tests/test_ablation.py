"""Switching a part of the model off (model/experiments/ablation.py), on the real models, against independent
computations: a zeroed head, attention or MLP against a full forward pass with the matching columns of o_proj (or
the whole o_proj, or down_proj) set to zero, a copy of the model's weights changed in the test; a mean-ablated head
against a hook written here; the KL and the movers against the formula; the part switched back on against the
numbers before, exactly; another session stepping during an ablation against its own full forward pass."""
import copy
import threading

import pytest
import torch

from model.decoding.loading import available_models
from model.decoding.records import SamplingConfig
from model.decoding.sampling import derive
from model.decoding.session import DecodeSession
from model.errors import SessionError
from model.experiments.ablation import ABLATION_MAX_STEPS, Part, ablate, both_ways

pytestmark = pytest.mark.model

TEXT = "The capital of France is Paris. The capital of Germany is Berlin. The capital of Italy is"


@pytest.fixture(scope="module")
def gemma(load_once):
    if "gemma3-270m" not in available_models():
        pytest.skip("gemma3-270m is not installed")
    return load_once("gemma3-270m")


def _ids(lm):
    return lm.tokenizer.encode(TEXT)


@torch.no_grad()
def _full_last(model, ids) -> torch.Tensor:
    """The last position's logits of one full forward pass, no cache: (V,)."""
    return model(input_ids=torch.tensor([ids]), use_cache=False).logits[0, -1].float()


@torch.no_grad()
def _zeroed_copy(lm, part: Part):
    """A copy of the model whose weights write nothing for `part`: a head's columns of o_proj (the head's output
    is multiplied by them and nothing else), a layer's whole o_proj, or its MLP's down_proj, set to zero."""
    model = copy.deepcopy(lm.model)
    layer = model.model.layers[part.layer]
    if part.kind == "head":
        width = lm.info.head_dim
        assert layer.self_attn.o_proj.bias is None  # else a zero head would still add its share of the bias
        layer.self_attn.o_proj.weight[:, part.head * width:(part.head + 1) * width] = 0
    elif part.kind == "attention":
        assert layer.self_attn.o_proj.bias is None
        layer.self_attn.o_proj.weight.zero_()
    else:
        assert layer.mlp.down_proj.bias is None
        layer.mlp.down_proj.weight.zero_()
    return model


def _hooks(lm) -> list:
    """The ablation's hooks on the modules it hooks (transformers adds output-capturing hooks of its own)."""
    return [fn for layer in lm.model.model.layers for d in
            (layer.mlp._forward_hooks, layer.self_attn._forward_hooks, layer.self_attn.o_proj._forward_pre_hooks)
            for fn in d.values() if fn.__module__ == "model.experiments.ablation"]


@pytest.mark.parametrize("part", [Part("head", 3, 2), Part("attention", 5), Part("mlp", 7)], ids=str)
def test_zero_ablation_is_the_model_with_its_weights_zeroed(lm, part):
    ids = _ids(lm)
    on, off, mean = both_ways(lm, ids, part, "zero")
    assert mean is None
    reference = _full_last(_zeroed_copy(lm, part), ids)
    clean = _full_last(lm.model, ids)
    assert torch.allclose(on.logits[-1].float(), clean, atol=1e-4)
    assert (reference - clean).abs().max() > 1e-2  # the part matters here: the test can tell on from off
    diff = float((off.logits[-1].float() - reference).abs().max())
    assert diff < 1e-4, diff


def test_zero_head_on_gemma(gemma):
    part = Part("head", 6, 1)
    ids = _ids(gemma)
    _, off, _ = both_ways(gemma, ids, part, "zero")
    reference = _full_last(_zeroed_copy(gemma, part), ids)
    assert (reference - _full_last(gemma.model, ids)).abs().max() > 1e-2
    assert torch.allclose(off.logits[-1].float(), reference, atol=1e-3)


@torch.no_grad()
def test_mean_ablated_head_against_a_hook_written_here(lm):
    layer, head, width = 4, 5, lm.info.head_dim
    ids = _ids(lm)
    o_proj = lm.model.model.layers[layer].self_attn.o_proj
    seen = []
    h = o_proj.register_forward_pre_hook(lambda m, a: seen.append(a[0][0, :, head * width:(head + 1) * width].clone()))
    try:
        _full_last(lm.model, ids)
    finally:
        h.remove()
    mean = seen[0].mean(0)  # (head_dim,): the head's output averaged over the text's positions

    def replace(m, a):
        x = a[0].clone()
        x[..., head * width:(head + 1) * width] = mean
        return (x,)

    h = o_proj.register_forward_pre_hook(replace)
    try:
        reference = _full_last(lm.model, ids)
    finally:
        h.remove()
    _, off, got_mean = both_ways(lm, ids, Part("head", layer, head), "mean")
    assert torch.allclose(got_mean, mean, atol=1e-5)
    assert (reference - _full_last(lm.model, ids)).abs().max() > 1e-3
    assert torch.allclose(off.logits[-1].float(), reference, atol=1e-4)


def test_record_kl_and_movers_follow_the_formula_and_switching_back_restores(lm):
    ids = _ids(lm)
    part = Part("mlp", 2)
    before = _full_last(lm.model, ids)
    record = ablate(lm, ids, part, "zero", SamplingConfig(seed=3), steps=4)
    after_back_on = _full_last(lm.model, ids)
    assert torch.equal(before, after_back_on)  # switched back on: exactly the numbers before
    assert _hooks(lm) == []  # and no hook left behind
    off = _full_last(_zeroed_copy(lm, part), ids)
    p, q = torch.softmax(before.double(), -1), torch.softmax(off.double(), -1)
    kl = float((p * (p.log() - q.log())).nan_to_num().sum())
    assert record.kl_nats == pytest.approx(kl, rel=1e-3, abs=1e-6)
    assert record.kl_nats > 0.01
    rose = torch.topk(q - p, 5).indices.tolist()
    assert [m.token.id for m in record.rose][:3] == rose[:3]
    assert [m.token.id for m in record.fell][0] == int(torch.argmax(p - q))
    for m in record.shown:
        assert m.before == pytest.approx(float(p[m.token.id]), abs=1e-5)
        assert m.after == pytest.approx(float(q[m.token.id]), abs=1e-5)


def test_continuations_against_full_passes(lm):
    """Each side's tokens: drawn by the session's own pipeline (derive, the same seed) from a full forward pass
    of the text so far, of the model as it is (on) and of the zeroed copy (off)."""
    ids = _ids(lm)
    part, cfg, steps = Part("attention", 1), SamplingConfig(temperature=0.8, seed=11), 5
    record = ablate(lm, ids, part, "zero", cfg, steps)
    for model, got in ((lm.model, record.on), (_zeroed_copy(lm, part), record.off)):
        text = list(ids)
        for token in got:
            dist = derive(_full_last(model, text), torch.tensor([text]), cfg, len(text), lm.tokens)
            assert dist.chosen.id == token.id
            text.append(token.id)
    assert record.differ_at is not None  # this part changes the text: the two sides are told apart


def test_another_session_steps_unchanged_during_an_ablation(lm):
    """The model is shared: a session stepping (and computing ahead, as a server's) while this run's hooks come and
    go sees the numbers of a full forward pass of its own text, to float error."""
    other = DecodeSession(lm, ahead=True)
    other.start("Once upon a time, in a small village,")
    running = threading.Event()
    done = threading.Event()

    def ablation_run():
        running.set()
        try:
            for _ in range(3):
                ablate(lm, _ids(lm), Part("mlp", 0), "zero", SamplingConfig(), steps=6)
        finally:
            done.set()

    worker = threading.Thread(target=ablation_run)
    worker.start()
    running.wait(10)
    during, seen = 0, []
    cfg = SamplingConfig(temperature=0)
    while not done.is_set() and len(other.ids) < 40:
        other.step(cfg)
        during += not done.is_set()
        seen.append((list(other.ids), other.next_logits.float()))
    worker.join()
    # the references once the run is over: a pass here, outside the scheduler, would meet the run's hooks
    worst = max(float((logits - _full_last(lm.model, ids)).abs().max()) for ids, logits in seen)
    assert during >= 3  # the other session's steps ran while the ablation did
    assert worst < 1e-3, worst  # zeroing layer 0's MLP moves logits by whole units: none reached this session


@pytest.mark.parametrize("kwargs, key", [
    (dict(part=Part("head", 30, 0)), "ablation_layer_range"),
    (dict(part=Part("head", 0, 9)), "ablation_head_range"),
    (dict(part=Part("neuron", 0)), "ablation_part_invalid"),
    (dict(method="half"), "ablation_method_invalid"),
    (dict(steps=ABLATION_MAX_STEPS + 1), "ablation_steps_range"),
])
def test_refusals(lm, kwargs, key):
    args = dict(part=Part("mlp", 0), method="mean", steps=4) | kwargs
    with pytest.raises(SessionError) as err:
        ablate(lm, _ids(lm), args["part"], args["method"], SamplingConfig(), args["steps"])
    assert err.value.key == key


def test_the_default_part_changes_the_answer_on_each_languages_first_text(lm, gemma):
    """Issue 47: Switch off's default (layer 3's head 0) changed nothing on the page's first text (KL 0.000). The
    default now is a part whose switching off changes the most probable next token on each language's first text,
    on the model that language's page starts on: the answer read from a full forward pass with the part on and one
    with the part's output replaced by its mean, by a hook written here."""
    from ui.controls import FIRST_PROMPT
    from ui.views.ablation import DEFAULT_PART

    for model, text in ((lm, FIRST_PROMPT["en"]), (gemma, FIRST_PROMPT["zh"])):
        ids = model.tokenizer.encode(text)
        mlp = model.model.model.layers[DEFAULT_PART.layer].mlp
        assert DEFAULT_PART.kind == "mlp"
        outputs = []
        handle = mlp.register_forward_hook(lambda module, args, out: outputs.append(out.detach()))
        try:
            before = _full_last(model.model, ids)
        finally:
            handle.remove()
        mean = outputs[0][0].float().mean(dim=0)  # (hidden,): the part's output averaged over the text
        handle = mlp.register_forward_hook(lambda module, args, out: mean.to(out.dtype).expand_as(out))
        try:
            after = _full_last(model.model, ids)
        finally:
            handle.remove()
        p, q = torch.log_softmax(before, -1), torch.log_softmax(after, -1)
        kl = float((p.exp() * (p - q)).sum())
        assert int(before.argmax()) != int(after.argmax()) and kl > 1.0, (model.name, text, kl)
        record = ablate(model, ids, DEFAULT_PART, "mean", SamplingConfig(temperature=0.0), 1, 64)
        assert abs(record.kl_nats - kl) < 1e-3 * max(1.0, kl), (record.kl_nats, kl)  # the view's own number agrees
