"""A sampler race: one text continued under two settings side by side, the same draw u at every step.

The draw at a position is fixed by (seed, position) (sampling.draw_u), so two settings with the same seed share u at
every step: the only difference between the two texts is the settings. While the two agree they are the same text,
and one forward pass serves both; from the first step where their tokens differ, each side runs its own.
Each side's text is what a plain DecodeSession stepped alone with its settings writes (tests/test_race.py).
"""
from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass, field

import torch

from model.decoding.batching import forward_one
from model.errors import SessionError
from model.decoding.loading import LoadedModel, end_ids
from model.decoding.records import SamplingConfig, TokenInfo
from model.decoding.sampling import derive
from model.decoding.passes import prefill
from model.decoding.scheduler import model_pass
from model.decoding.core import computation

RACE_MAX_STEPS = 64  # steps one race may take: bounds its passes (at most two per step)


@dataclass
class RaceStep:
    """One token of one side."""

    token: TokenInfo
    logprob_t1: float  # ln P of the token under the model's own distribution (T = 1, nothing cut)
    logprob_sampled: float  # ln P under the distribution this side drew from (its settings applied)
    entropy_t1_bits: float  # of the model's own distribution
    entropy_sampled_bits: float  # of the distribution this side drew from
    u: float  # the draw, the same on both sides at this step


@dataclass
class RaceSide:
    """The continuation under one side's settings."""

    config: SamplingConfig
    steps: list[RaceStep] = field(default_factory=list)
    ended: bool = False  # the side wrote an end-of-text token

    @property
    def ids(self) -> list[int]:
        return [s.token.id for s in self.steps]

    @property
    def logprob_t1(self) -> float:
        """ln P of the side's text under the model's own distribution."""
        return float(sum(s.logprob_t1 for s in self.steps))

    @property
    def logprob_sampled(self) -> float:
        """ln P of the side's text under the distributions it was drawn from."""
        return float(sum(s.logprob_sampled for s in self.steps))

    @property
    def mean_entropy_t1_bits(self) -> float:
        return sum(s.entropy_t1_bits for s in self.steps) / len(self.steps) if self.steps else 0.0


@dataclass
class Race:
    """Two sides from the same text. diverged_at: the 1-based step where their tokens first differ, or None."""

    prefix_len: int  # tokens of the text both sides continue
    a: RaceSide
    b: RaceSide
    diverged_at: int | None
    passes: int  # forward passes run (one per step while the sides agree, then one per side)
    ms: float  # wall time, passes and sampling


def _record(dist) -> RaceStep:
    p = dist.chosen_final_prob
    return RaceStep(token=dist.chosen, logprob_t1=dist.chosen_logprob_t1,
                    logprob_sampled=math.log(p) if p > 0 else -math.inf, entropy_t1_bits=dist.entropy_t1_bits,
                    entropy_sampled_bits=dist.entropy_final_bits, u=dist.u)


@computation
@torch.no_grad()
def race(lm: LoadedModel, ids: list[int], cfg_a: SamplingConfig, cfg_b: SamplingConfig, steps: int,
         max_tokens: int) -> Race:
    """Continue `ids` by up to `steps` tokens under cfg_a and under cfg_b, the two stepping together.

    A side that writes an end-of-text token stops; the other goes on. `max_tokens` bounds the text (a session's
    limit). Each pass is a turn at the model's scheduler, so other users' steps run between them.
    """
    cfg_a, cfg_b = cfg_a.validate(), cfg_b.validate()
    if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= RACE_MAX_STEPS:
        raise SessionError("race_steps_range", value=steps, high=RACE_MAX_STEPS)
    if not ids:
        raise SessionError("not_started")
    room = max_tokens - len(ids)
    if room < 1:
        raise SessionError("token_limit", limit=max_tokens)
    steps = min(steps, room)
    stop = end_ids(lm)
    t0 = time.perf_counter()
    done = prefill(lm.model, ids)  # the prefix, as a session's prefill
    cache, logits = done.cache, done.logits[-1].clone()
    passes = 1  # the prefix's prefill counts one (in chunks if it is long)
    sides = [RaceSide(cfg_a), RaceSide(cfg_b)]
    texts = [list(ids), list(ids)]  # each side's whole text
    state = [(cache, logits), None]  # side b shares side a's cache and logits until they diverge
    diverged_at = None
    for step in range(1, steps + 1):
        for i, side in enumerate(sides):
            if side.ended:
                continue
            cache_i, logits_i = state[i] if state[i] is not None else state[0]
            dist = derive(logits_i, torch.tensor([texts[i]]), side.config, len(texts[i]), lm.tokens)
            side.steps.append(_record(dist))
        a_tok = sides[0].steps[-1].token.id if not sides[0].ended else None
        b_tok = sides[1].steps[-1].token.id if not sides[1].ended else None
        if diverged_at is None and a_tok != b_tok:
            diverged_at = step
            state[1] = (copy.deepcopy(state[0][0]), state[0][1])  # from here each side has its own cache
        for i, side in enumerate(sides):
            if side.ended:
                continue
            token = side.steps[-1].token.id
            texts[i].append(token)
            side.ended = token in stop
        if step == steps:
            break
        for i, side in enumerate(sides):  # the chosen tokens through the model, for the next step's logits
            if side.ended or (i == 1 and diverged_at is None):
                continue
            cache_i = state[i][0]
            with model_pass(lm.model, cores=False):
                logits_i, _, _ = forward_one(lm.model, cache_i, texts[i][-1])
            state[i] = (cache_i, logits_i)
            passes += 1
        if all(side.ended for side in sides):
            break
    return Race(len(ids), sides[0], sides[1], diverged_at, passes, (time.perf_counter() - t0) * 1000)
