"""The logit lens and the sampler race on the real models (SmolLM2-135M and Gemma 3 270M), each number against an
independent reference: the lens against the model's own logits and against every decoder layer's output caught by a
forward hook and put through a norm and an unembedding written out here; each side of a race against a plain
DecodeSession stepped alone with its settings and seed."""
import math
from dataclasses import replace

import pytest
import torch

from model.errors import SessionError
from model.inside.lens import (LENS_MAX_CELLS, LENS_MAX_TOKENS, LENS_WINDOW, MAX_PINS, lens_column, lens_positions,
                               logit_lens, pin_ids, pinned_probs)
from model.decoding.loading import available_models
from model.strategies.race import RACE_MAX_STEPS, race
from model.decoding.records import SamplingConfig
from model.decoding.session import DecodeSession

pytestmark = pytest.mark.model

TEXT = ("The history of the printing press begins in the fifteenth century, when movable type arrived in Mainz. "
        "Within fifty years presses were at work in more than two hundred cities, and printers had turned out "
        "millions of books: bibles, grammars, calendars and pamphlets, most of them in Latin, which scholars across "
        "Europe could read.")
MODELS = ["smollm2", "gemma3-270m"]


@pytest.fixture(scope="module", params=MODELS)
def model(request, lm, load_once):
    if request.param == "smollm2":
        return lm
    if request.param not in available_models():
        pytest.skip(f"{request.param} is not installed")
    return load_once(request.param)


def _rms_norm(norm, x: torch.Tensor) -> torch.Tensor:
    """The final RMSNorm written out: Llama scales by w, Gemma by (1 + w), both computed in float32."""
    x = x.float()
    eps = getattr(norm, "variance_epsilon", getattr(norm, "eps", None))
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    w = norm.weight.float()
    return y * (1.0 + w) if type(norm).__name__.startswith("Gemma") else y * w


@torch.no_grad()
def _hooked_readings(lm, ids):
    """Every layer's output caught by forward hooks (the embeddings, each decoder layer), then the final norm and
    the unembedding by hand: (layers + 1) x (T, V) probabilities, and the model's own logits (T, V)."""
    caught = []
    inner = lm.model.model
    handles = [inner.embed_tokens.register_forward_hook(lambda m, a, out: caught.append(out[0]))]
    for layer in inner.layers:
        handles.append(layer.register_forward_hook(
            lambda m, a, out: caught.append((out[0] if isinstance(out, tuple) else out)[0])))
    try:
        logits = lm.model(input_ids=torch.tensor([ids]), use_cache=False).logits[0].float()
    finally:
        for h in handles:
            h.remove()
    unembed = lm.model.lm_head.weight.float()  # (V, d); SmolLM2 and Gemma tie it to the embeddings
    layer_logits = [_rms_norm(inner.norm, h) @ unembed.T for h in caught]
    return [torch.softmax(x, -1) for x in layer_logits], logits, layer_logits


def test_lens_last_layer_is_the_model_output_and_every_layer_matches_hooks(model):
    ids = model.tokenizer(TEXT)["input_ids"][:64]
    lens = logit_lens(model, ids)
    readings, logits, layer_logits = _hooked_readings(model, ids)
    n, start = len(ids), max(0, len(ids) - lens_positions(model, LENS_WINDOW))
    assert lens.top_prob.shape == (model.model.config.num_hidden_layers + 1, n - start)
    assert lens.start == start and [t.id for t in lens.tokens] == ids[start:]
    # the last row IS the model's output: the lens's final logits against out.logits, and the final top token
    assert lens.final_max_abs_diff < 1e-4, lens.final_max_abs_diff
    final_probs = torch.softmax(logits[start:], -1)
    assert lens.top_ids[-1].tolist() == final_probs.argmax(-1).tolist()
    assert abs(lens.top_prob[-1] - final_probs.max(-1).values.numpy()).max() < 1e-5
    # the targets: the text's next tokens, then the final layer's top token at the last position
    assert [t.id for t in lens.targets] == ids[start + 1:] + [int(final_probs[-1].argmax())]
    assert lens.target_is_next == [True] * (n - start - 1) + [False]
    target = torch.tensor([t.id for t in lens.targets])
    worst_p = 0.0
    for layer, probs in enumerate(readings):
        probs = probs[start:]
        p = probs.gather(1, target[:, None])[:, 0]
        worst_p = max(worst_p, float((torch.tensor(lens.target_prob[layer]) - p).abs().max()))
        assert abs(lens.top_prob[layer] - probs.max(-1).values.numpy()).max() < 1e-4, layer
        # the top token agrees wherever the hooked reading's top two are not a float-error tie
        top2 = probs.topk(2, -1).values
        clear = (top2[:, 0] - top2[:, 1]) > 1e-4
        assert (torch.tensor(lens.top_ids[layer])[clear] == probs.argmax(-1)[clear]).all(), layer
        # the rank on logits: a probability that underflows to 0 in float32 (layer 0 reads far from any token)
        # would stop counting the tokens above the target (rank 5,375 where it is 48,780 once)
        x = layer_logits[layer][start:]
        ranks = (x > x.gather(1, target[:, None])).sum(1) + 1
        assert (abs(torch.tensor(lens.target_rank[layer]) - ranks) <= 1).all(), layer
    assert worst_p < 1e-4, worst_p
    print(f"\n{model.name}: final lens vs logits max |diff| {lens.final_max_abs_diff:.2e}; every layer vs hooks: "
          f"max |p diff| {worst_p:.2e}; {n} tokens, {lens.ms:.0f} ms")


def test_the_readings_are_bounded_by_positions_layers_and_vocabulary(model):
    """positions x (layers + 1) x vocabulary stays within LENS_MAX_CELLS: SmolLM2's whole window, Gemma's 15."""
    layers = model.model.config.num_hidden_layers + 1
    shown = lens_positions(model, LENS_WINDOW)
    assert shown * layers * model.info.vocab <= LENS_MAX_CELLS < (shown + 1) * layers * model.info.vocab or \
        shown == LENS_WINDOW
    assert shown == {"smollm2": LENS_WINDOW, "gemma3-270m": 15}[model.name]
    ids = model.tokenizer(TEXT)["input_ids"][:40]
    lens = logit_lens(model, ids)
    assert len(lens.tokens) == min(shown, 40) and lens.asked == LENS_WINDOW


def test_lens_a_shorter_window_reads_the_same_cells(lm):
    ids = lm.tokenizer(TEXT)["input_ids"][:30]
    full, short = logit_lens(lm, ids), logit_lens(lm, ids, window=10)
    assert short.start == 20 and short.top_prob.shape[1] == 10
    assert (short.top_ids == full.top_ids[:, -10:]).all()
    assert abs(short.target_prob - full.target_prob[:, -10:]).max() < 1e-5


def test_lens_bounds_are_refused_plainly(lm):
    ids = lm.tokenizer(TEXT)["input_ids"][:8]
    for window in (0, LENS_WINDOW + 1, 2.5, True):
        with pytest.raises(SessionError) as err:
            logit_lens(lm, ids, window=window)
        assert err.value.key == "lens_window_range" and "1" in err.value.text("zh")
    with pytest.raises(SessionError) as err:
        logit_lens(lm, [1] * (LENS_MAX_TOKENS + 1))
    assert err.value.key == "lens_too_long"


# ---- the race ----------------------------------------------------------------------------------------------------
A = SamplingConfig(temperature=1.0, seed=11)
B = SamplingConfig(temperature=0.7, top_p=0.9, seed=11)


def _solo(lm, prompt, cfg, n, before=()):
    """A plain session, stepped alone: `before` (settings) first, then n steps with cfg (stopping at the end)."""
    s = DecodeSession(lm)
    s.start(prompt)
    for c in before:
        s.step(c)
    taken = []
    for _ in range(n):
        if s.finished:
            break
        taken.append(s.step(cfg))
    return s, taken


@pytest.mark.parametrize("cfg_a,cfg_b", [(A, B), (replace(A, temperature=1.3, top_k=50),
                                                   replace(A, temperature=1.3, top_k=50, order="temperature_last"))])
def test_race_sides_are_solo_sessions(model, cfg_a, cfg_b):
    prompt, n = "Once upon a time, in a small village,", 24
    s = DecodeSession(model)
    s.start(prompt)
    result = race(model, s.ids, cfg_a, cfg_b, n, s.max_tokens)
    for side, cfg in ((result.a, cfg_a), (result.b, cfg_b)):
        _, taken = _solo(model, prompt, cfg, n)
        assert side.ids == [r.token.id for r in taken]
        for mine, theirs in zip(side.steps, taken):
            d = theirs.distribution
            assert mine.u == d.u
            assert abs(mine.logprob_t1 - d.chosen_logprob_t1) < 1e-5
            assert abs(mine.logprob_sampled - math.log(d.chosen_final_prob)) < 1e-5
            assert abs(mine.entropy_t1_bits - d.entropy_t1_bits) < 1e-5
            assert abs(mine.entropy_sampled_bits - d.entropy_final_bits) < 1e-5
    # the first step where the tokens differ, and one pass per step until then
    split = next((i + 1 for i, (x, y) in enumerate(zip(result.a.ids, result.b.ids)) if x != y), None)
    assert result.diverged_at == split
    if split is not None:
        assert result.a.ids[:split - 1] == result.b.ids[:split - 1]
    print(f"\n{model.name} {cfg_a.order}/{cfg_b.order}: diverged at {result.diverged_at}, {result.passes} passes, "
          f"{result.ms:.0f} ms; A log P {result.a.logprob_t1:.2f}, B {result.b.logprob_t1:.2f}")


def test_race_from_a_text_with_steps_continues_it(lm):
    prompt = "def fibonacci(n):"
    s, _ = _solo(lm, prompt, A, 0, before=[A] * 5)
    result = race(lm, s.ids, A, replace(A, temperature=0), 12, s.max_tokens)
    solo, taken = _solo(lm, prompt, A, 12, before=[A] * 5)
    assert result.a.ids == [r.token.id for r in taken]
    greedy, taken = _solo(lm, prompt, replace(A, temperature=0), 12, before=[A] * 5)
    assert result.b.ids == [r.token.id for r in taken]


def test_same_settings_never_diverge_and_take_one_pass_per_step(lm):
    ids = lm.tokenizer("The capital of France is")["input_ids"]
    result = race(lm, ids, A, A, 10, 512)
    assert result.diverged_at is None and result.a.ids == result.b.ids and result.passes == len(result.a.ids)


def test_race_bounds_are_refused_plainly(lm):
    ids = lm.tokenizer("The capital of France is")["input_ids"]
    for steps in (0, RACE_MAX_STEPS + 1, 3.0, True):
        with pytest.raises(SessionError) as err:
            race(lm, ids, A, B, steps, 512)
        assert err.value.key == "race_steps_range"
    with pytest.raises(SessionError) as err:
        race(lm, ids, A, replace(B, top_p=0), 4, 512)
    assert err.value.key == "top_p_range"
    with pytest.raises(SessionError) as err:
        race(lm, ids, A, B, 4, len(ids))
    assert err.value.key == "token_limit"
    short = race(lm, ids, A, B, 10, len(ids) + 3)  # the room left, not more
    assert len(short.a.steps) == 3 and len(short.b.steps) == 3


@torch.no_grad()
def test_commitment_strip_against_output_hidden_states(lm):
    """The commitment strip recomputed from one full pass with output_hidden_states, the final norm written out here
    and the LM head's weights: per position, the first layer from which the next token is every later layer's top
    token; and, for a generated token, the token its step's own u draws from that layer's softmax (T = 1, nothing
    cut), walking the tokens from most to least probable (ties by id)."""
    session = DecodeSession(lm)
    session.start("The capital of France is Paris. The capital of Germany is")
    cfg = SamplingConfig(seed=5)  # T = 1, no cut: the distribution drawn from is the softmax itself
    for _ in range(8):
        session.step(cfg)
    text = session.whole_text()
    lens = text.run(logit_lens, LENS_WINDOW, text.settings)
    ids, start = text.ids, lens.start
    states = lm.model(input_ids=torch.tensor([ids]), output_hidden_states=True, use_cache=False).hidden_states
    unembed = lm.model.lm_head.weight.float()
    layers = len(states) - 1
    logits = [(_rms_norm(lm.model.model.norm, h[0]) if r < layers else h[0].float()) @ unembed.T
              for r, h in enumerate(states)]  # (layers + 1) x (T, V); the last state is already normed
    u_of = {s.position: s.distribution.u for s in session.steps}
    checked = 0
    for c in range(len(ids) - start - 1):
        p, target = start + c, ids[start + c + 1]
        tops = [int(row[p].argmax()) for row in logits]
        first = -1
        for r in range(layers, -1, -1):
            if tops[r] != target:
                break
            first = r
        assert lens.committed[c] == first, (c, first)
        if target not in [s.token.id for s in session.steps] or p + 1 not in u_of or first < 0:
            continue
        probs = torch.softmax(logits[first][p].double(), -1)
        order = sorted(range(probs.shape[0]), key=lambda i: (-float(probs[i]), i))[:2000]
        cum, drawn = 0.0, None
        for i in order:
            cum += float(probs[i])
            if cum > u_of[p + 1]:
                drawn = i
                break
        assert lens.drawn_at_commit[c] == (drawn == target), (c, first, drawn, target)
        checked += 1
    assert checked >= 3  # generated tokens that committed: their draws were checked
    assert 0 <= lens.committed[-1] <= lens.layers and lens.drawn_at_commit[-1] is None  # the last: the final top


@torch.no_grad()
def test_pinned_tokens_against_output_hidden_states(lm):
    """The pinned tokens' probabilities at a position, read from the lens's kept hidden states, against one full pass
    with output_hidden_states=True, the final norm written out here and the LM head's weights; the last layer's
    against the softmax of the model's own logits."""
    ids = lm.tokenizer("The capital of France is Paris. The capital of Germany is")["input_ids"]
    lens = logit_lens(lm, ids, 12)
    pins = pin_ids(lm, " Paris, Berlin,, London, Paris")  # an empty entry skipped, a repeat kept once
    assert pins == [lm.tokenizer(w, add_special_tokens=False)["input_ids"][0] for w in (" Paris", " Berlin", " London")]
    out = lm.model(input_ids=torch.tensor([ids]), output_hidden_states=True, use_cache=False)
    states, unembed = out.hidden_states, lm.model.lm_head.weight.float()
    layers = len(states) - 1
    worst = 0.0
    for position in (len(ids) - 1, len(ids) - 5, lens.start):
        column = lens_column(lens, position)
        mine = pinned_probs(lm, lens, pins, column)  # (layers + 1, 3)
        assert mine.shape == (layers + 1, 3)
        for r, h in enumerate(states):
            x = h[0, position]
            logits = (_rms_norm(lm.model.model.norm, x) if r < layers else x.float()) @ unembed.T
            theirs = torch.softmax(logits, -1)[pins]
            worst = max(worst, float((torch.tensor(mine[r]) - theirs).abs().max()))
        final = torch.softmax(out.logits[0, position].float(), -1)[pins]
        assert (torch.tensor(mine[-1]) - final).abs().max() < 1e-5, position
    assert worst < 1e-5, worst
    last = pinned_probs(lm, lens, pins, len(lens.tokens) - 1)
    assert last[-1, 1] > last[-1, 0] and last[-1, 1] > last[-1, 2]  # " Berlin" after "...of Germany is"
    print(f"\npinned tokens vs output_hidden_states: max |p diff| {worst:.2e}")


def test_a_bad_pin_is_refused_naming_it_in_both_languages(lm):
    ids = lm.tokenizer("The capital of France is")["input_ids"]
    lens = logit_lens(lm, ids, 4)
    before = lens.hidden.clone()
    with pytest.raises(SessionError) as err:
        pin_ids(lm, " Paris, Parisian nights")
    assert err.value.key == "lens_pin_tokens" and err.value.params["n"] == "3"
    assert "' Parisian nights'" in err.value.text("en") and "3 tokens" in err.value.text("en")  # as typed
    assert "␣Paris | ian | ␣nights" in err.value.text("en") and "␣Paris | ian | ␣nights" in err.value.text("zh")
    assert "词元" in err.value.text("zh")
    for text, key in ((",".join(f" {w}" for w in "abcdefghij"[:MAX_PINS + 1]), "lens_pins_too_many"),
                      ("x" * 401, "lens_pins_too_long"), (" Paris, \ud800", "lens_pin_invalid_text")):
        with pytest.raises(SessionError) as err:
            pin_ids(lm, text)
        assert err.value.key == key and err.value.text("zh") != err.value.text("en")
    for position in (lens.start - 1, lens.start + 4, "3", True):
        with pytest.raises(SessionError) as err:
            lens_column(lens, position)
        assert err.value.key == "lens_position_range"
    assert torch.equal(lens.hidden, before) and pin_ids(lm, "") == []
