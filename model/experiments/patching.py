"""Activation patching (causal tracing, Meng et al. 2022): which layer and position carry the answer.

Two prompts that differ in one word ("The Eiffel Tower is in" / "The Colosseum is in") and have the same number of
tokens. The clean run (the first prompt) gives an answer token, say " Paris"; the corrupted run (the second) gives
it less probability. For each decoder layer l and position p, the corrupted run is run again with ONE vector
replaced: the residual stream entering layer l at position p (output_hidden_states index l) is set to the clean
run's. The grid is how much of the answer's probability that one vector brings back:

    effect[l, p] = (P_patched(answer) - P_corrupted(answer)) / (P_clean(answer) - P_corrupted(answer))

1 = the whole clean probability restored, 0 = nothing moved (negative: it went the other way). The vector is put
in by a forward pre-hook on decoder layer l, registered only while the pass holds the model's scheduler. The grid's
passes are batched a layer at a time: one pass of `positions` rows, row p patched at position p.
"""
from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass

import numpy as np
import torch

from model.decoding.scheduler import model_pass
from model.decoding.threads import one_core
from model.decoding.loading import LoadedModel
from model.decoding.records import TokenInfo
from model.decoding.session import encode_prompt
from model.errors import SessionError
from model.parse import one_token
from model.decoding.core import computation

PATCH_MAX_TOKENS = 16  # the longest prompt pair: a grid of layers x n passes of n tokens (SmolLM2: 30 x 16 x 16)
MIN_GAP = 0.01  # the clean and corrupted runs must give the answer probabilities at least this far apart
DEFAULT_CLEAN, DEFAULT_CORRUPTED = "The Eiffel Tower is in the city of", "The Colosseum is in the city of"


@dataclass
class PatchingGrid:
    """The effect of patching each (layer, position) of the corrupted run from the clean one.

    Row l is the residual stream entering decoder layer l (0 = the embeddings, layers - 1 = the last layer's
    input); column p is position p of both prompts.
    """

    clean: list[TokenInfo]  # (n,) the first prompt's tokens (the source of every patched vector)
    corrupted: list[TokenInfo]  # (n,) the second prompt's tokens (the run that is patched)
    answer: TokenInfo  # the token whose probability is measured at the last position
    clean_prob: float  # P(answer) after the clean prompt, in [0, 1] (over the whole vocabulary)
    corrupted_prob: float  # P(answer) after the corrupted prompt
    clean_top: TokenInfo  # the clean run's most probable next token
    corrupted_top: TokenInfo  # the corrupted run's most probable next token
    corrupted_top_prob: float  # its probability
    patched_prob: np.ndarray  # (layers, n) float32: P(answer) after the corrupted prompt with (l, p) patched
    ms: float  # wall time of every pass and reading (waits at the model's scheduler included)
    passes: int  # forward passes run (2 runs in one, then one batched pass per layer)

    @property
    def effect(self) -> np.ndarray:
        """(layers, n) float32: (patched - corrupted) / (clean - corrupted), 1 = the clean answer restored."""
        return (self.patched_prob - self.corrupted_prob) / (self.clean_prob - self.corrupted_prob)

    @property
    def layers(self) -> int:
        return self.patched_prob.shape[0]

    def strongest(self) -> tuple[int, int, float]:
        """(layer, position, effect) of the cell that restores the most."""
        effect = self.effect
        layer, position = np.unravel_index(int(np.argmax(effect)), effect.shape)
        return int(layer), int(position), float(effect[layer, position])


def encode_pair(lm: LoadedModel, clean_text: str, corrupted_text: str) -> tuple[list[int], list[int]]:
    """Both prompts as the model sees them (raw, as a prompt is tokenized: DecodeSession.encode_prompt), refused
    (naming which) for a prompt's own reasons, and together unless they have the same number of tokens."""
    pair = []
    for which, text in ((1, clean_text), (2, corrupted_text)):
        try:
            pair.append(encode_prompt(lm, text, chat=False, max_prompt_tokens=PATCH_MAX_TOKENS))
        except SessionError as err:
            raise SessionError("patch_prompt", which=which, reason=err) from None
    clean, corrupted = pair
    if len(clean) != len(corrupted):
        show = lambda ids: " | ".join(lm.tokens.info(i).display for i in ids)  # noqa: E731
        raise SessionError("patch_lengths", a=len(clean), b=len(corrupted), tokens_a=show(clean),
                           tokens_b=show(corrupted))
    return clean, corrupted


def answer_id(lm: LoadedModel, answer: str | None) -> int | None:
    """The answer typed on the page as one token id (model.parse.one_token); None for empty (the clean run's top
    token)."""
    if answer is None or answer == "":
        return None
    return one_token(lm, answer, "patch_answer_tokens", "patch_answer_invalid_text")


def decoder_layers(model: torch.nn.Module):
    """The decoder layers of a causal LM (SmolLM2's LlamaForCausalLM, Gemma3ForCausalLM): model.model.layers."""
    return model.model.layers


@contextlib.contextmanager
def residual_replaced(model: torch.nn.Module, layer: int, rows: list[tuple[int, int]], vectors: torch.Tensor):
    """For the block, decoder layer `layer` gets its input with row b's position p (rows[i] = (b, p)) replaced by
    vectors[i] ((len(rows), d)). Register it only inside the model's scheduler: the model is shared."""
    def pre_hook(module, args, kwargs):
        hidden = args[0] if args else kwargs["hidden_states"]  # (B, n, d)
        hidden = hidden.clone()
        for (b, p), v in zip(rows, vectors):
            hidden[b, p] = v
        if args:
            return (hidden, *args[1:]), kwargs
        return args, {**kwargs, "hidden_states": hidden}

    handle = decoder_layers(model)[layer].register_forward_pre_hook(pre_hook, with_kwargs=True)
    try:
        yield
    finally:
        handle.remove()


def answer_probs(logits: torch.Tensor, answer: int) -> torch.Tensor:
    """(B, V) last-position logits -> (B,) P(answer), normalised over the whole vocabulary."""
    return torch.softmax(logits.float(), -1)[:, answer]


@torch.no_grad()
def both_runs(lm: LoadedModel, clean: list[int], corrupted: list[int]):
    """The clean and corrupted prompts in one batched pass: (2, V) last-position logits and the clean run's
    residual stream entering every layer, (layers, n, d)."""
    layers = lm.model.config.num_hidden_layers
    with model_pass(lm.model):
        out = lm.model(input_ids=torch.tensor([clean, corrupted]), use_cache=False, logits_to_keep=1,
                       output_hidden_states=True)
    states = torch.stack([h[0] for h in out.hidden_states[:layers]])  # index l: the input of decoder layer l
    return out.logits[:, -1], states


@torch.no_grad()
def patched_logits(lm: LoadedModel, corrupted: list[int], layer: int, patches: list[list[int]],
                   source: torch.Tensor) -> torch.Tensor:
    """One batched pass of the corrupted prompt, row b with the positions patches[b] of layer `layer`'s input taken
    from `source` ((n, d): the clean run's residual stream entering that layer). Returns (B, V) last-position
    logits."""
    rows = [(b, p) for b, positions in enumerate(patches) for p in positions]
    vectors = source[[p for _, p in rows]]  # (len(rows), d)
    with model_pass(lm.model), residual_replaced(lm.model, layer, rows, vectors):
        out = lm.model(input_ids=torch.tensor([corrupted] * len(patches)), use_cache=False, logits_to_keep=1)
    return out.logits[:, -1]


@computation
@torch.no_grad()
def patching_grid(lm: LoadedModel, clean: list[int], corrupted: list[int], answer: int | None = None) -> PatchingGrid:
    """Every (layer, position) of the corrupted run patched from the clean run, one batched pass per layer; the
    answer is `answer` or, if None, the clean run's most probable next token. Refused when the two runs give the
    answer probabilities less than MIN_GAP apart: there would be nothing to restore."""
    t0 = time.perf_counter()
    n, info = len(clean), lm.tokens.info
    logits, states = both_runs(lm, clean, corrupted)
    with one_core():
        probs = torch.softmax(logits.float(), -1)  # (2, V)
    answer = int(probs[0].argmax()) if answer is None else answer
    clean_p, corrupted_p = float(probs[0, answer]), float(probs[1, answer])
    if abs(clean_p - corrupted_p) < MIN_GAP:
        raise SessionError("patch_no_gap", answer=info(answer).display, a=f"{clean_p:.1%}", b=f"{corrupted_p:.1%}")
    grid = np.zeros((states.shape[0], n), np.float32)
    for layer in range(states.shape[0]):
        row = patched_logits(lm, corrupted, layer, [[p] for p in range(n)], states[layer])
        with one_core():
            grid[layer] = answer_probs(row, answer).numpy()
    corrupted_top = int(probs[1].argmax())
    return PatchingGrid(
        clean=[info(i) for i in clean], corrupted=[info(i) for i in corrupted], answer=info(answer),
        clean_prob=clean_p, corrupted_prob=corrupted_p, clean_top=info(int(probs[0].argmax())),
        corrupted_top=info(corrupted_top), corrupted_top_prob=float(probs[1, corrupted_top]), patched_prob=grid,
        ms=(time.perf_counter() - t0) * 1000, passes=1 + states.shape[0])
