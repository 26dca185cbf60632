"""Why this token: each earlier token's share in one logit, by integrated gradients and gradient x input (Captum).

The function explained is F(e) = the logit of one token (the one the text chose at a position, or any candidate)
after the context, as a function of the context's input embeddings e (n, d). Attribution is taken on the
embeddings, never on token ids (they are not continuous), and summed over the d dimensions: one number per token.

- Integrated gradients (Sundararajan et al. 2017): the gradient of F averaged along the straight path from a
  baseline b to e, times (e - b). Completeness: the attributions sum to F(e) - F(b), up to the integration's
  error (Gauss-Legendre points along the path; more points, smaller error). The baseline here is "an average
  token" at every position but the first, which is kept as it is (baseline_of says why).
- Gradient x input: the gradient at e times e, one point; it need not sum to anything.

Both are Captum's (captum.attr). The model is shared and read-only: nothing here changes its parameters' flags or
its mode; gradients are taken with respect to a copy of the input embeddings only (torch.autograd.grad), and every
forward-and-backward is a turn at the model's scheduler (its gradient_func below), the whole path in passes of a
bounded size. Attention is not attribution (Jain and Wallace 2019): the record carries the attention of the same
step beside the two, to be compared, not confused.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from model.decoding.core import computation
from model.decoding.passes import prefill
from model.decoding.scheduler import model_pass
from model.decoding.threads import one_core
from model.decoding.loading import LoadedModel
from model.decoding.records import TokenInfo
from model.errors import SessionError

STEPS = 64  # points along the path by default (Gauss-Legendre); the page offers POINTS
POINTS = (32, 64, 128, 256)  # more points, a smaller completeness gap on a rough path (and a longer run)
METHOD = "gausslegendre"  # Captum's default quadrature
BUDGET = 64 * 48  # points x context tokens, each forward and backward: 64 points at 48 tokens, ~10 s on one core
PASS_TOKENS = 48  # token positions per forward-and-backward pass (points x context): about one prefill chunk's work
TOLERANCE = 1e-3  # the completeness gap (logits) the page calls "complete"
CANDIDATES = 8  # the most probable tokens at the position, offered to be explained instead


@dataclass
class Attribution:
    """One logit explained: each context token's integrated gradient and gradient x input, beside the attention of
    the same step (the position before the one explained, reading the context).

    Arrays are float64 (n,) over the context's tokens, position 0 first.
    """

    tokens: list[TokenInfo]  # (n,) the context: the text before the position explained
    position: int  # the position explained (== n): its token is the one chosen there, or a candidate for it
    target: TokenInfo  # the token whose logit is explained
    chosen: TokenInfo | None  # the token the text has at `position` (None: the next one, not written yet)
    logit: float  # F(e): the target's logit after the context
    baseline_logit: float  # F(b): the same from the baseline (an average token everywhere but the first)
    prob: float  # the target's probability at T = 1, over the whole vocabulary, in [0, 1]
    rank: int  # its rank (1: the most probable)
    integrated: np.ndarray  # (n,) IG per token: the sum over its embedding's dimensions
    grad_input: np.ndarray  # (n,) gradient x input per token
    attention: np.ndarray  # (n,) the step's attention: the last context position's row, mean over layers and heads
    attention_last: np.ndarray  # (n,) the same row in the last layer only (mean over its heads)
    candidates: list[tuple[TokenInfo, float]]  # the CANDIDATES most probable tokens there, with their probability
    steps: int  # points along the path
    passes: int  # passes through the model's scheduler: the context's, the path's (forward and backward), the ends'
    rows_per_pass: int  # path points per pass
    ms: float  # wall time of everything, waits at the scheduler included

    @property
    def change(self) -> float:
        """F(e) - F(0): what the integrated gradients must add up to."""
        return self.logit - self.baseline_logit

    @property
    def delta(self) -> float:
        """Completeness error: sum of the integrated gradients minus the logit change (0 for an exact integral)."""
        return float(self.integrated.sum()) - self.change


class TurnGradients:
    """Captum's compute_gradients, each call (one forward and backward over a batch of the path's points) a turn at
    the model's scheduler with grad enabled for that pass only. Set as an attribution method's gradient_func: Captum
    calls it for every internal batch."""

    def __init__(self, model: torch.nn.Module):
        self.model = model
        self.passes = 0

    def __call__(self, forward_fn, inputs, target_ind=None, additional_forward_args=None):
        from captum._utils.gradient import compute_gradients

        with model_pass(self.model), torch.enable_grad():
            grads = compute_gradients(forward_fn, inputs, target_ind, additional_forward_args)
        self.passes += 1
        return grads


def explained_position(ids: list[int], prompt_len: int, position: int | None) -> int:
    """The position to explain: `position` if given, else the last generated token's (the step that chose it), else
    the next one. Refused outside [2, len(ids)]: the first token is kept on the path (baseline_of), so a
    context of one token has nothing to attribute."""
    if position is None:
        return len(ids) - 1 if len(ids) > prompt_len else len(ids)
    if not 2 <= position <= len(ids):
        raise SessionError("attr_position_range", position=position, low=2, high=len(ids))
    return position


def baseline_of(model, embeds: torch.Tensor) -> torch.Tensor:
    """The path's start for input embeddings `embeds` (1, n, d): the vocabulary's mean input embedding ("an average
    token", scaled as the model scales its embeddings: Gemma by sqrt(d)) at every position but the first, which
    keeps its own embedding and so gets no attribution.

    Why not zero: every layer begins with an RMSNorm, which maps a * x to nearly the same vector for any a above
    sqrt(eps / mean(x^2)), so F jumps within the first hundredth of a path from zero. Why the first token kept: it is
    where most heads park their attention (the attention sink); moved toward any other vector it switches that off
    abruptly. Measured on SmolLM2 ("The capital of France is", 101 points along the path): with the first token
    moved, the logit jumps from 17 to -4 and back within a tenth of the path and 64 points miss the change by 14
    logits; with it kept, the path is smooth and 64 points sum to the change within 1e-3 (tests/test_attribution.py).
    """
    table = model.get_input_embeddings()
    mean = table.weight.mean(0) * getattr(table, "embed_scale", 1.0)  # (d,)
    baseline = mean.detach().expand_as(embeds).clone()
    baseline[:, 0] = embeds[:, 0]
    return baseline


def logit_of(model, target: int):
    """F: input embeddings (B, n, d) -> (B,) the logit of `target` at the last position: the final hidden state times
    the LM head's row of `target` (and the model's final soft cap, if it has one), as the model computes it, without
    the other rows (Gemma's 262,144: most of a pass's work, forward and backward, for one number)."""
    row = model.get_output_embeddings().weight[target]  # (d,)
    cap = getattr(model.config, "final_logit_softcapping", None)

    def forward(embeds: torch.Tensor) -> torch.Tensor:
        hidden = model.model(inputs_embeds=embeds, use_cache=False).last_hidden_state[:, -1]  # (B, d), normed
        logit = hidden @ row
        return logit if cap is None else torch.tanh(logit / cap) * cap
    return forward


@computation
def compute(lm: LoadedModel, ids: list[int], position: int | None = None, target: int | None = None,
            prompt_len: int = 0, steps: int = STEPS) -> Attribution:
    """Each token of ids[:position]'s share in the logit of `target` at `position` (default: the token the text has
    there, or the most probable one for the next position), by integrated gradients (`steps` points from
    baseline_of's) and gradient x input, with the same step's attention and candidates. Every pass through the scheduler."""
    from captum.attr import InputXGradient, IntegratedGradients

    t0 = time.perf_counter()
    model, info = lm.model, lm.tokens.info
    position = explained_position(ids, prompt_len, position)
    context = ids[:position]
    if steps not in POINTS:
        raise SessionError("attr_points_invalid", points=steps, choices=", ".join(map(str, POINTS)))
    if len(context) * steps > BUDGET:
        raise SessionError("attr_too_long", n=len(context), points=steps, most=BUDGET // steps)
    done = prefill(model, context, keep=1, attentions=True, cache=False)  # logits and attention, as one pass gives
    with one_core():
        probs = torch.softmax(done.logits[-1].float(), -1)
        top = torch.topk(probs, CANDIDATES)
        chosen = ids[position] if position < len(ids) else None
        target = int(target if target is not None else chosen if chosen is not None else top.indices[0])
        if not 0 <= target < probs.shape[0]:
            raise SessionError("attr_target", target=target)
        rank = int((probs > probs[target]).sum()) + 1
        rows = torch.stack([a[0, :, -1, :] for a in done.attentions]).float()  # (layers, heads, n)
        # a lookup, no pass: the embedding module's output is what the first layer reads (Gemma's scale included)
        embeds = model.get_input_embeddings()(torch.tensor([context])).detach()  # (1, n, d)
    baseline = baseline_of(model, embeds)
    forward = logit_of(model, target)
    rows_per_pass = max(1, PASS_TOKENS // len(context))
    gradients = TurnGradients(model)
    ig = IntegratedGradients(forward)
    ig.gradient_func = gradients
    integrated = ig.attribute(embeds, baselines=baseline, n_steps=steps, method=METHOD,
                              internal_batch_size=rows_per_pass)
    gxi = InputXGradient(forward)
    gxi.gradient_func = gradients
    grad_input = gxi.attribute(embeds.clone().requires_grad_(True))
    with model_pass(model):  # both ends of the path in one pass: F(e) and F(b)
        ends = forward(torch.cat([embeds, baseline]))
    with one_core():
        return Attribution(
            tokens=[info(i) for i in context], position=position, target=info(target),
            chosen=None if chosen is None else info(chosen), logit=float(ends[0]), baseline_logit=float(ends[1]),
            prob=float(probs[target]), rank=rank,
            integrated=integrated[0].detach().sum(-1).double().numpy(),
            grad_input=grad_input[0].detach().sum(-1).double().numpy(),
            attention=rows.mean((0, 1)).double().numpy(), attention_last=rows[-1].mean(0).double().numpy(),
            candidates=[(info(int(i)), float(p)) for p, i in zip(top.values, top.indices)], steps=steps,
            passes=done.passes + gradients.passes + 1, rows_per_pass=rows_per_pass, ms=(time.perf_counter() - t0) * 1000)
