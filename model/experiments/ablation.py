"""Switch part of the model off: one attention head, a layer's whole attention, or a layer's MLP, on one user's text.

Ablation (docs/what-it-teaches.md, "Switching a part off"): the part's output is replaced, and the change in the
next-token distribution is measured. Two replacements:

- mean (the default): the part's output at every position becomes its mean over the text, from a pass with the part
  on. The layers after it still get a vector of the size they were trained on; only what the part says about *this*
  position is gone.
- zero: the part's output becomes 0. Simpler, but a residual stream missing a whole term is off the distribution the
  later layers saw in training, so part of the change measures that shift rather than what the part contributed.

A head's output is its slice of the attention output before o_proj (the input of o_proj: heads x head_dim, head h
at h*head_dim); a layer's attention is self_attn's output, its MLP is mlp's output (before any post-norm Gemma
applies). The model is shared by every user: the hooks that switch the part off are installed only while this run
holds the model's scheduler for one of its passes (passes.prefill's `inside`, model_pass), and removed in a `finally`, so
no other session's pass, batched or alone, ever runs with them.

The continuation runs the whole text again with the part off (its cache depends on the ablation: none of the
session's cache is reused), then steps `steps` tokens under the page's settings and seed, beside the same
continuation with the part on: the same u at every step, so the only difference is the part.
"""
from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass

import torch

from model.decoding.batching import forward_one
from model.decoding.passes import prefill
from model.decoding.scheduler import model_pass
from model.decoding.loading import LoadedModel, end_ids
from model.decoding.records import SamplingConfig, TokenInfo
from model.decoding.sampling import derive
from model.errors import SessionError
from model.decoding.core import computation

PARTS = ("head", "attention", "mlp")  # what can be switched off
METHODS = ("mean", "zero")  # mean first: the default (the module docstring says why)
ABLATION_MAX_STEPS = 32  # tokens a continuation may take: two passes each (part on, part off)
SHOWN = 10  # the most probable tokens before and after, each
MOVERS = 5  # the tokens that rose most, and those that fell most


@dataclass(frozen=True)
class Part:
    """A part of the model: `kind` one of PARTS, `layer` 0-based, `head` (a query head) only for kind "head"."""

    kind: str
    layer: int
    head: int | None = None

    def check(self, lm: LoadedModel) -> "Part":
        """Return self, or refuse a part this model does not have."""
        info = lm.info
        if self.kind not in PARTS:
            raise SessionError("ablation_part_invalid", value=self.kind)
        if isinstance(self.layer, bool) or not isinstance(self.layer, int) or not 0 <= self.layer < info.layers:
            raise SessionError("ablation_layer_range", value=self.layer, high=info.layers - 1, model=info.name)
        if self.kind == "head" and (isinstance(self.head, bool) or not isinstance(self.head, int)
                                    or not 0 <= self.head < info.heads):
            raise SessionError("ablation_head_range", value=self.head, high=info.heads - 1, model=info.name)
        return self


@contextlib.contextmanager
def hooked(model: torch.nn.Module, part: Part, change):
    """For the block, `part`'s output x (1, T, d_part) goes through change(x) -> a new x, or None to leave it.

    Only inside a pass that holds the model's scheduler (the model is shared). The hook is removed in a finally.
    """
    layer = model.model.layers[part.layer]
    if part.kind == "head":
        width = model.config.head_dim if getattr(model.config, "head_dim", None) else \
            model.config.hidden_size // model.config.num_attention_heads
        lo, hi = part.head * width, (part.head + 1) * width

        def pre(module, args):  # o_proj's input: (1, T, heads * head_dim), head h at [h * head_dim, (h+1) * head_dim)
            new = change(args[0][..., lo:hi])
            if new is None:
                return None
            x = args[0].clone()
            x[..., lo:hi] = new
            return (x, *args[1:])

        handle = layer.self_attn.o_proj.register_forward_pre_hook(pre)
    elif part.kind == "attention":
        def post(module, args, out):  # (attention output (1, T, d), weights)
            new = change(out[0])
            return None if new is None else (new, *out[1:])

        handle = layer.self_attn.register_forward_hook(post)
    else:
        def post(module, args, out):  # (1, T, d)
            return change(out)

        handle = layer.mlp.register_forward_hook(post)
    try:
        yield
    finally:
        handle.remove()


def switched_off(model: torch.nn.Module, part: Part, mean: torch.Tensor | None):
    """A context (for a pass's `inside`) in which `part` outputs `mean` (d_part,) at every position, or 0 if None."""
    def change(x):
        return torch.zeros_like(x) if mean is None else mean.to(x.dtype).expand_as(x).clone()
    return hooked(model, part, change)


class _Sum:
    """The part's output summed over positions, across the passes of a chunked prefill (for its mean)."""

    def __init__(self):
        self.total, self.count = None, 0

    def add(self, x):  # (1, T, d_part); returns None: the output is left as it is
        s = x[0].double().sum(0)
        self.total = s if self.total is None else self.total + s
        self.count += x.shape[1]
        return None

    @property
    def mean(self) -> torch.Tensor:
        return (self.total / self.count).float()  # (d_part,)


@dataclass
class Moved:
    """One token's probability (T = 1, over the whole vocabulary) with the part on and off."""

    token: TokenInfo
    before: float  # part on, in [0, 1]
    after: float  # part off


@dataclass
class Ablation:
    """What switching `part` off changed, at the end of one text."""

    part: Part
    method: str  # "mean" or "zero"
    positions: int  # tokens of the text (the mean is over these)
    shown: list[Moved]  # the SHOWN most probable before, then those of after not among them
    rose: list[Moved]  # the MOVERS tokens whose probability rose most (after - before, largest first)
    fell: list[Moved]  # the MOVERS tokens whose probability fell most
    kl_nats: float  # KL(before || after) over the whole vocabulary, in nats
    max_abs_logit_change: float  # the largest |logit after - logit before|
    on: list[TokenInfo]  # the continuation with the part on (the page's settings and seed)
    off: list[TokenInfo]  # the same with the part off: the same u at every step
    on_ended: bool
    off_ended: bool
    differ_at: int | None  # the 1-based step where the two continuations first differ, or None
    ms: float  # wall time, passes (waits for a turn included) and readings
    passes: int


def _moved(lm, ids, p, q) -> list[Moved]:
    return [Moved(lm.tokens.info(i), float(p[i]), float(q[i])) for i in ids]


@torch.no_grad()
def both_ways(lm: LoadedModel, ids: list[int], part: Part, method: str):
    """The text `ids` through the model with `part` on, then again with it off: (on, off, mean), two
    passes.Prefilled (a cache each, the last position's logits) and the mean the part was replaced by (None: zero)."""
    model = lm.model
    total = _Sum()
    on = prefill(model, ids, inside=lambda: hooked(model, part, total.add))  # part on, its output summed
    mean = total.mean if method == "mean" else None
    off = prefill(model, ids, inside=lambda: switched_off(model, part, mean))  # the whole text again, part off
    return on, off, mean


@torch.no_grad()
def _continue(lm: LoadedModel, ids: list[int], cache, logits: torch.Tensor, cfg: SamplingConfig, steps: int,
              inside) -> tuple[list[TokenInfo], bool, int]:
    """`steps` tokens after `ids` from its prefill (`cache`, `logits` (V,)), each pass with `inside()` held:
    (tokens, ended, passes)."""
    stop, text, out, passes = end_ids(lm), list(ids), [], 0
    for step in range(steps):
        dist = derive(logits, torch.tensor([text]), cfg, len(text), lm.tokens)
        out.append(dist.chosen)
        text.append(dist.chosen.id)
        if dist.chosen.id in stop:
            return out, True, passes
        if step < steps - 1:
            with model_pass(lm.model, cores=False), inside():
                logits, _, _ = forward_one(lm.model, cache, text[-1])
            passes += 1
    return out, False, passes


@computation
@torch.no_grad()
def ablate(lm: LoadedModel, ids: list[int], part: Part, method: str = "mean", cfg: SamplingConfig | None = None,
           steps: int = 8, max_tokens: int | None = None) -> Ablation:
    """Switch `part` off (`method`: "mean" or "zero") on the text `ids`: the next-token distribution before and
    after, and `steps` tokens continued both ways under `cfg` (its seed: the same u on both sides), bounded by
    `max_tokens` (the session's limit). Every pass is a turn at the model's scheduler; the part's hooks live only
    inside this run's passes."""
    part = part.check(lm)
    if method not in METHODS:
        raise SessionError("ablation_method_invalid", value=method)
    if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= ABLATION_MAX_STEPS:
        raise SessionError("ablation_steps_range", value=steps, high=ABLATION_MAX_STEPS)
    if not ids:
        raise SessionError("not_started")
    cfg = (cfg or SamplingConfig()).validate()
    limit = max_tokens if max_tokens is not None else len(ids) + steps
    if limit - len(ids) < 1:
        raise SessionError("token_limit", limit=limit)
    steps = min(steps, limit - len(ids))
    model = lm.model
    t0 = time.perf_counter()
    on, off, mean = both_ways(lm, ids, part, method)
    passes = on.passes + off.passes
    before, after = on.logits[-1].float(), off.logits[-1].float()  # (V,)
    logp, logq = torch.log_softmax(before.double(), -1), torch.log_softmax(after.double(), -1)
    p, q = logp.exp(), logq.exp()
    kl = float((p * (logp - logq)).sum())
    shown = torch.topk(p, SHOWN).indices.tolist()
    shown += [i for i in torch.topk(q, SHOWN).indices.tolist() if i not in shown]
    change = q - p
    rose = torch.topk(change, MOVERS).indices.tolist()
    fell = torch.topk(-change, MOVERS).indices.tolist()
    on_text, on_ended, n_on = _continue(lm, ids, on.cache, before, cfg, steps, contextlib.nullcontext)
    off_text, off_ended, n_off = _continue(lm, ids, off.cache, after, cfg, steps,
                                           lambda: switched_off(model, part, mean))
    differ = next((i + 1 for i, (a, b) in enumerate(zip(on_text, off_text)) if a.id != b.id),
                  None if len(on_text) == len(off_text) else min(len(on_text), len(off_text)) + 1)
    return Ablation(part=part, method=method, positions=len(ids), shown=_moved(lm, shown, p, q),
                    rose=_moved(lm, rose, p, q), fell=_moved(lm, fell, p, q), kl_nats=kl,
                    max_abs_logit_change=float((after - before).abs().max()), on=on_text, off=off_text,
                    on_ended=on_ended, off_ended=off_ended, differ_at=differ, ms=(time.perf_counter() - t0) * 1000,
                    passes=passes + n_on + n_off)
