"""Heads by what they do: a measured score per attention head, on a text the page makes for it.

The text is a random token sequence of REPEAT_LENGTH tokens, drawn (seeded) from the model's own vocabulary, said
twice, after whatever a prompt starts with (Gemma's <bos>; SmolLM2 adds nothing). One pass with every layer's
attention (eager attention, as the model is loaded) gives three scores per (layer, head), each a mean of attention
weights, in [0, 1]:

- previous-token: attention from position i to i - 1, over every position after the first;
- induction (Olsson et al. 2022): from the k-th token of the second copy to the token right after the k-th token
  of the first copy (the head that finds the earlier occurrence of the current token and looks at what came next,
  so the model can copy it);
- sink (Xiao et al. 2023): attention to position 0, over every position after the first (a place to park
  attention that changes nothing: a no-op).

The same scores on a control text, the same length with no repetition, show the induction score is about the
repetition: on it the "induction" positions hold nothing to find.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from model.decoding.passes import prefill
from model.decoding.loading import LoadedModel
from model.decoding.records import TokenInfo
from model.decoding.core import computation

REPEAT_LENGTH = 40  # tokens in the random sequence (the text is twice this, plus a <bos> if the model adds one)
SEED = 0  # the random sequence's seed: the same text, and the same scores, every time
NAMED = 3  # heads named per kind


@dataclass
class HeadScores:
    """Three scores per (layer, head), from one pass over the repeated text (and one over the control text)."""

    tokens: list[TokenInfo]  # the repeated text: prefix + sequence + sequence
    prefix: int  # tokens before the first copy (1: Gemma's <bos>; 0: SmolLM2)
    length: int  # tokens in one copy
    previous: np.ndarray  # (layers, heads) float32: mean attention from i to i - 1
    induction: np.ndarray  # (layers, heads) float32: mean attention from the second copy to the token after the
    #                        earlier copy of the current token
    sink: np.ndarray  # (layers, heads) float32: mean attention to position 0
    control_induction: np.ndarray  # (layers, heads) float32: the induction score's positions on the control text
    ms: float  # wall time of both passes and the scores

    @property
    def kinds(self) -> dict[str, np.ndarray]:
        """The three scores by name, in the order the page shows them."""
        return {"previous": self.previous, "induction": self.induction, "sink": self.sink}

    def top(self, kind: str, n: int = NAMED) -> list[tuple[int, int, float]]:
        """The n heads of highest `kind` score: (layer, head, score), best first."""
        scores = self.kinds[kind]
        order = np.argsort(-scores, axis=None)[:n]
        return [(int(i // scores.shape[1]), int(i % scores.shape[1]), float(scores.flat[i])) for i in order]


def ordinary_ids(lm: LoadedModel) -> np.ndarray:
    """The vocabulary's ordinary tokens: every id the tokenizer has that is not an added or special token."""
    tok = lm.tokenizer
    added = set(tok.added_tokens_decoder) | set(tok.all_special_ids)
    return np.array([i for i in range(min(len(tok), lm.info.vocab)) if i not in added])


def repeated_text(lm: LoadedModel, length: int = REPEAT_LENGTH, seed: int = SEED,
                  repeat: bool = True) -> tuple[list[int], int]:
    """(ids, prefix): the prompt's own start (its <bos>, if any), then `length` distinct random ordinary tokens,
    then the same again (repeat) or `length` other distinct ones (the control text)."""
    prefix = list(lm.tokenizer("", add_special_tokens=True)["input_ids"])
    drawn = np.random.default_rng(seed).choice(ordinary_ids(lm), 2 * length, replace=False).tolist()
    first = drawn[:length]
    return prefix + first + (first if repeat else drawn[length:]), len(prefix)


def attention_stack(lm: LoadedModel, ids: list[int]) -> torch.Tensor:
    """(layers, heads, n, n) attention weights of one pass through the model's scheduler."""
    done = prefill(lm.model, ids, keep=1, attentions=True, cache=False)
    return torch.cat(done.attentions, 0).float()


def scores_of(att: torch.Tensor, prefix: int, length: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """previous, induction, sink ((layers, heads) each) of an attention stack over prefix + two copies."""
    n = att.shape[-1]
    i = torch.arange(1, n)
    previous = att[:, :, i, i - 1].mean(-1)
    second = torch.arange(prefix + length, prefix + 2 * length)  # the k-th token of the second copy
    induction = att[:, :, second, second - length + 1].mean(-1)  # -> the token after its earlier copy
    sink = att[:, :, 1:, 0].mean(-1)
    return previous.numpy(), induction.numpy(), sink.numpy()


@computation
@torch.no_grad()
def head_scores(lm: LoadedModel, length: int = REPEAT_LENGTH, seed: int = SEED) -> HeadScores:
    """The three scores of every head on the repeated text, and the induction score on the control text."""
    t0 = time.perf_counter()
    ids, prefix = repeated_text(lm, length, seed)
    previous, induction, sink = scores_of(attention_stack(lm, ids), prefix, length)
    control, _ = repeated_text(lm, length, seed, repeat=False)
    _, control_induction, _ = scores_of(attention_stack(lm, control), prefix, length)
    return HeadScores(tokens=[lm.tokens.info(i) for i in ids], prefix=prefix, length=length, previous=previous,
                      induction=induction, sink=sink, control_induction=control_induction,
                      ms=(time.perf_counter() - t0) * 1000)
