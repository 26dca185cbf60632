"""The class as the sampler: every student's device draws the next token from the teacher's distribution.

A round is the teacher's next-token distribution under the teacher's settings (the temperature possibly set
for the round), made by the app's own pipeline (sampling.run_stages, then a softmax over the full vocabulary, as
derive() does) and drawn by the app's own draw (sampling.inverse_cdf) with each student's own u in [0, 1).
The round keeps the students' tokens; the wall compares their counts with what p expects:

  bins      the BINS most probable tokens of the round's p, then "every other token" (one bin)
  expected  n * p(bin), n the number of draws
  chi2      sum over bins of (count - expected)^2 / expected, over the bins with expected > 0
  tv        total variation distance: (1/2) sum over bins of |count / n - p(bin)|, in [0, 1]
  p-value   the share of SIMULATED classes (n draws from p, MC_CLASSES of them, seeded) whose chi2 is at least
            the class's: exact in the limit, and honest for a class of 30 where the chi-square approximation
            (expected counts below 5) is not. chi2_sf (the approximation) is kept for large n and the tests.
No words here: the page says them (ui/class_play.py), viz/class_sampler.py draws them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np
import torch

from model.errors import SessionError
from model.decoding.records import SamplingConfig
from model.decoding.sampling import inverse_cdf, run_stages

BINS = 8  # tokens of their own on the wall; the rest share one bin
MC_CLASSES = 2000  # simulated classes behind a p-value
MAX_DRAWS = 400  # draws one round keeps (a class of 80, a few each at most)
OTHER = -1  # the bin of every token outside the BINS most probable


def final_probs(logits: torch.Tensor, ids: list[int], cfg: SamplingConfig) -> torch.Tensor:
    """(V,) float32 the distribution a step of the app draws from: the stages in cfg's order, then a softmax over
    the whole vocabulary (sampling.derive's `final`)."""
    scores = run_stages(logits.float().reshape(-1), torch.tensor([ids]), cfg.validate())[-1][2]
    return torch.softmax(scores, -1).reshape(-1)


def valid_u(u) -> float:
    """A device's random number as a draw's u: a finite number in [0, 1), else SessionError("class_draw_bad_u")."""
    if isinstance(u, bool) or not isinstance(u, (int, float)) or not math.isfinite(u) or not 0 <= u < 1:
        raise SessionError("class_draw_bad_u", value=str(u)[:20])
    return float(u)


@dataclass
class DrawRound:
    """One round of class draws: p at the teacher's step, and the tokens drawn so far (one per student).

    probs: (V,) the final distribution (kept only while the round is the room's current one: see `close`);
    top: the BINS most probable token ids with their p; temperature: the round's T; draws: student -> token id.
    """

    temperature: float
    position: int
    top: list[tuple[int, float]]  # (token id, p), most probable first
    probs: torch.Tensor | None
    draws: dict[str, tuple[int, float]] = field(default_factory=dict)  # student -> (token id, u)
    limit: int = MAX_DRAWS  # draws the round takes

    @classmethod
    def open(cls, logits: torch.Tensor, ids: list[int], cfg: SamplingConfig, temperature: float | None = None,
             bins: int = BINS, limit: int = MAX_DRAWS) -> "DrawRound":
        """A round at the step after `ids`, under cfg with its temperature replaced by `temperature` (if given)."""
        if temperature is not None:
            cfg = replace(cfg, temperature=float(temperature))
        probs = final_probs(logits, ids, cfg)
        vals, idx = torch.topk(probs, min(bins, probs.shape[0]))
        top = [(int(i), float(v)) for i, v in zip(idx, vals) if v > 0]
        return cls(float(cfg.temperature), len(ids), top, probs, limit=limit)

    @classmethod
    def at_session(cls, session, cfg: SamplingConfig, temperature: float | None = None) -> "DrawRound":
        """A round at a session's next step (its logits and text read together, as one state)."""
        with session.reading():
            logits, ids = session.next_logits, list(session.ids)
        return cls.open(logits, ids, cfg, temperature)

    def draw(self, student: str, u: float) -> int:
        """This student's token, drawn by the app's draw with their u; a student draws once a round (their
        first token stays), and a round takes `limit` at most."""
        if self.probs is None:
            raise SessionError("class_draw_closed")
        if student in self.draws:
            return self.draws[student][0]
        if len(self.draws) >= self.limit:
            raise SessionError("class_draw_full", limit=self.limit)
        token = inverse_cdf(self.probs, valid_u(u))
        self.draws[student] = (token, float(u))
        return token

    def close(self) -> None:
        """Keep the tally, free the distribution (a vocabulary of floats): the round takes no more draws."""
        self.probs = None

    def tokens(self) -> list[int]:
        return [token for token, _ in self.draws.values()]

    def tally(self) -> "Tally":
        return tally(self.tokens(), self.top)


@dataclass
class Tally:
    """The class's draws against p, bin by bin (the top tokens, then OTHER), and how far apart they are."""

    ids: list[int]  # each bin's token id; OTHER for the last
    probs: list[float]  # p of each bin (sums to 1)
    counts: list[int]  # the class's draws in each bin
    n: int
    expected: list[float]  # n * p
    chi2: float
    tv: float  # total variation distance between the class's shares and p, over the bins
    dof: int  # bins with p > 0, minus 1
    p_value: float  # share of MC_CLASSES simulated classes with chi2 >= this one (1.0 when n = 0)


def tally(tokens: list[int], top: list[tuple[int, float]]) -> Tally:
    """The draws `tokens` binned by `top` ((id, p) of the top tokens; the rest of p is the OTHER bin)."""
    ids = [i for i, _ in top]
    probs = [p for _, p in top]
    rest = max(0.0, 1.0 - sum(probs))
    ids.append(OTHER)
    probs.append(rest)
    place = {token: k for k, token in enumerate(ids[:-1])}
    counts = [0] * len(ids)
    for token in tokens:
        counts[place.get(token, len(ids) - 1)] += 1
    n = len(tokens)
    return Tally(ids, probs, counts, n, [n * p for p in probs], chi_square(counts, probs), total_variation(counts, probs),
                 max(0, sum(p > 0 for p in probs) - 1), simulated_p_value(counts, probs))


def chi_square(counts: list[int], probs: list[float]) -> float:
    """Pearson's statistic sum (count - n p)^2 / (n p) over the bins with p > 0 (a count in a bin of p = 0 cannot
    come from p: inf)."""
    n = sum(counts)
    if n == 0:
        return 0.0
    total = 0.0
    for c, p in zip(counts, probs):
        if p > 0:
            total += (c - n * p) ** 2 / (n * p)
        elif c > 0:
            return math.inf
    return total


def total_variation(counts: list[int], probs: list[float]) -> float:
    """(1/2) sum |count / n - p|: the probability mass that would have to move to turn the class's shares into p."""
    n = sum(counts)
    if n == 0:
        return 0.0
    return 0.5 * sum(abs(c / n - p) for c, p in zip(counts, probs))


def simulated_p_value(counts: list[int], probs: list[float], classes: int = MC_CLASSES, seed: int = 0) -> float:
    """The share of `classes` simulated classes (each n draws from probs, numpy's multinomial, seeded) whose
    chi-square is at least the class's, counting the class itself ((k + 1) / (classes + 1), never 0)."""
    n = sum(counts)
    if n == 0:
        return 1.0
    p = np.asarray(probs, dtype=np.float64)
    p = p / p.sum()
    observed = chi_square(counts, list(p))
    live = p > 0
    sims = np.random.default_rng(seed).multinomial(n, p, size=classes)[:, live]  # (classes, bins with p > 0)
    expected = n * p[live]
    stats = ((sims - expected) ** 2 / expected).sum(axis=1)
    at_least = int((stats >= observed - 1e-9).sum())
    return (at_least + 1) / (classes + 1)


def chi2_sf(x: float, dof: int) -> float:
    """P(X >= x) for X chi-square with `dof` degrees of freedom: the regularized upper incomplete gamma
    Q(dof / 2, x / 2) (torch.special.gammaincc)."""
    if dof <= 0:
        return 1.0
    return float(torch.special.gammaincc(torch.tensor(dof / 2, dtype=torch.float64),
                                         torch.tensor(x / 2, dtype=torch.float64)))


def fresh_u() -> float:
    """A u in [0, 1) for a student whose page sent none (53 random bits from secrets, as a float64 holds them)."""
    import secrets
    return secrets.randbits(53) / 2 ** 53
