"""The chain rule over a generated text, and the records of teacher forcing: plain records, no torch.

P(x_1 … x_T | prompt) = Π_t P(x_t | x_<t) (docs/what-it-teaches.md). chain_rule() reads it off a session's step
records, no model run. The records of one parallel pass over a whole text (teacher forcing, scoring a pasted
text, the comparison with stepwise decoding) are defined here too, so viz/ can import them without torch;
model/inside/teacher_forcing.py computes them.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from model.decoding.records import StepRecord, TokenInfo

LN2 = math.log(2)


# ---- part 1: the chain rule over a session's steps ------------------------------------------------------
@dataclass
class ChainLink:
    """One generated token's factor in the chain rule."""

    step: int  # 1-based step number (what a click sends back to go to that step)
    position: int  # index of the token in the sequence (prompt tokens come first)
    token: TokenInfo
    logprob_t1: float  # ln P(x_t | x_<t) under the model's own distribution (T = 1, no cut): what the model believes
    # ln of the token's probability in the distribution the draw used (after penalty, temperature and cuts).
    # None when that probability is 0: a token forced from outside the kept set (ln 0 = -inf, which JSON cannot hold).
    logprob_sampled: float | None
    cum_logprob_t1: float  # Σ logprob_t1 over steps 1..step = ln P(text so far | prompt)
    entropy_t1_bits: float  # entropy of the T = 1 distribution this token came from
    entropy_sampled_bits: float  # entropy of the distribution actually sampled from
    rank: int  # rank of the token at T = 1 (1 = most probable)
    forced: bool  # True when the user picked the token instead of the draw
    fork: bool  # entropy_t1_bits >= the record's fork_bits: a step where the text could easily have gone elsewhere


@dataclass
class ChainRecord:
    """The chain rule over every generated token of a session (the prompt is the condition, not scored)."""

    prompt_len: int  # tokens of the prompt
    links: list[ChainLink]  # one per generated token, in order
    logprob_t1: float  # ln P(generated text | prompt) = Σ logprob_t1 (nats; 0.0 for no tokens)
    logprob_sampled: float | None  # Σ logprob_sampled; None if any token had probability 0 under the sampled distribution
    mean_logprob_t1: float | None  # logprob_t1 / tokens (None for no tokens)
    perplexity: float | None  # exp(-mean_logprob_t1): the model was on average as unsure as a fair choice among this many
    mean_entropy_bits: float | None  # mean T = 1 entropy over the steps
    fork_bits: float  # threshold of a fork: mean + 1 standard deviation of this text's entropies (see chain_rule)

    @property
    def tokens(self) -> int:
        return len(self.links)

    @property
    def logprob_t1_bits(self) -> float:
        return self.logprob_t1 / LN2


def fork_threshold(entropies: list[float], floor_bits: float = 1.0) -> float:
    """Entropy (bits) from which a step counts as a fork: mean + 1 standard deviation of this text, at least `floor_bits`.

    Relative to the text, so the few steps where the model was far more unsure than usual stand out (a fixed
    threshold marks half of a free-prose text and none of a memorised one). The floor keeps a near-certain text
    from having forks at 0.3 bits.
    """
    if not entropies:
        return floor_bits
    spread = statistics.pstdev(entropies) if len(entropies) > 1 else 0.0
    return max(floor_bits, statistics.fmean(entropies) + spread)


def chain_rule(steps: list[StepRecord], prompt_len: int = 0) -> ChainRecord:
    """The chain-rule record of a session's steps (session.steps, session.prompt_len). No model run.

    Every number comes from the step's Distribution: chosen_logprob_t1, chosen_final_prob, entropy_t1_bits and
    entropy_final_bits. Perplexity is exp(-(1/T) Σ ln P(x_t | x_<t)) over the T generated tokens at T = 1.
    """
    entropies = [s.distribution.entropy_t1_bits for s in steps]
    fork_bits = fork_threshold(entropies)
    links, total, sampled_total = [], 0.0, 0.0
    for s in steps:
        d = s.distribution
        total += d.chosen_logprob_t1
        sampled = math.log(d.chosen_final_prob) if d.chosen_final_prob > 0 else None
        sampled_total = None if sampled is None or sampled_total is None else sampled_total + sampled
        links.append(ChainLink(
            step=s.step, position=s.position, token=d.chosen, logprob_t1=d.chosen_logprob_t1, logprob_sampled=sampled,
            cum_logprob_t1=total, entropy_t1_bits=d.entropy_t1_bits, entropy_sampled_bits=d.entropy_final_bits,
            rank=d.chosen_rank, forced=d.forced, fork=d.entropy_t1_bits >= fork_bits,
        ))
    n = len(links)
    mean = total / n if n else None
    return ChainRecord(
        prompt_len=prompt_len, links=links, logprob_t1=total, logprob_sampled=sampled_total,
        mean_logprob_t1=mean, perplexity=math.exp(-mean) if n else None,
        mean_entropy_bits=statistics.fmean(entropies) if n else None, fork_bits=fork_bits,
    )


# ---- part 2: one parallel pass over a whole text (teacher forcing) --------------------------------------
# Rank buckets of teacher forcing: top 1, top 10, top 100, beyond (top 1 shows where greedy decoding agrees).
# Score any text uses GLTR's own (Gehrmann et al. 2019): top 10 / 100 / 1,000 / beyond (GLTR_EDGES).
RANK_EDGES = (1, 10, 100)
GLTR_EDGES = (10, 100, 1000)


def rank_bucket(rank: int, edges: tuple[int, ...] = RANK_EDGES) -> int:
    """Index of the bucket a rank falls in: 0 for rank <= edges[0], ..., len(edges) for beyond the last edge."""
    return next((i for i, edge in enumerate(edges) if rank <= edge), len(edges))


@dataclass
class PositionScore:
    """How well the model, reading the true tokens before it, predicted the token at one position."""

    position: int  # index t >= 1 of the token predicted (from the logits of position t - 1)
    token: TokenInfo  # the token that actually follows
    prob: float  # P(x_t | x_<t) at T = 1, in [0, 1]
    logprob: float  # ln of prob
    rank: int  # rank of the actual token (1 = the model's top choice)
    top1: TokenInfo  # the model's most probable token here
    top1_prob: float
    differs: bool  # True when the actual token is not the model's top-1 (greedy would have written top1)
    cross_entropy_nats: float  # -ln P(x_t | x_<t): this position's training loss
    cross_entropy_bits: float
    entropy_bits: float  # entropy of the whole predicted distribution (T = 1); nan from an engine (it sends the top-1)
    bucket: int  # rank_bucket(rank, record's edges)
    in_prompt: bool  # the token is part of the prompt (the prefill kept no logits for these; this pass scores them)


@dataclass
class TeacherForcing:
    """One parallel forward pass over a whole token sequence: every next-token prediction at once."""

    tokens: list[TokenInfo]  # the whole sequence; position 0 is only read, never predicted
    positions: list[PositionScore]  # one per position t = 1 .. len(tokens) - 1
    prompt_len: int  # tokens 0 .. prompt_len - 1 are the prompt (0 for a pasted text: all of it is 'text')
    mean_loss_nats: float  # mean cross-entropy = the training loss on this text
    total_logprob: float  # Σ ln P(x_t | x_<t) over the scored positions (nats)
    perplexity: float  # exp(mean_loss_nats)
    forward_ms: float  # measured wall time of the one pass (the model call alone, not the scoring after it)
    threads: int  # torch threads the pass ran on
    edges: tuple[int, ...] = RANK_EDGES  # rank buckets of PositionScore.bucket
    on_engine: bool = False  # the pass was one engine request (forward_ms its wall time; threads 0: the engine's own)

    @property
    def mean_loss_bits(self) -> float:
        return self.mean_loss_nats / LN2

    @property
    def disagreements(self) -> int:
        """Positions where the actual token is not the model's top-1."""
        return sum(p.differs for p in self.positions)

    def bucket_counts(self) -> list[int]:
        """Tokens per rank bucket, in bucket order."""
        counts = [0] * (len(self.edges) + 1)
        for p in self.positions:
            counts[p.bucket] += 1
        return counts


@dataclass
class LogitDiff:
    """At one generated position: the parallel pass's logits against the stepwise cached decoding's (on an engine:
    its one request's log-probabilities against the step's, for the chosen token and the top-1)."""

    step: int  # the step whose candidates are compared (its token was chosen from these logits)
    position: int  # index of that step's token; the logits compared are those of position - 1
    max_abs_diff: float  # largest |parallel - stepwise| over the step's recorded candidates (top 20 and the chosen one)
    chosen_abs_diff: float  # the same for the chosen token alone
    same_top1: bool  # both passes' most probable candidate is the same token


@dataclass
class StepwiseComparison:
    """Teacher forcing against generation over the same tokens: equal logits, very different cost.

    Appending a token changes no earlier row (causal masking), so the one parallel pass and the stepwise decode
    with a cache compute the same logits; only the order of float operations differs.
    """

    diffs: list[LogitDiff]  # one per generated step
    max_abs_diff: float  # over every step's candidates
    next_max_abs_diff: float  # over the whole vocabulary, at the position after the last token (the session's next logits)
    parallel_ms: float  # the one pass over prompt + generated tokens
    prefill_ms: float  # the session's prompt pass
    steps_ms: list[float]  # each step's own forward pass, in order
    tokens: int  # prompt + generated
    threads: int  # torch threads of the parallel pass
    parallel_range: tuple[float, float] = (0.0, 0.0)  # the fastest and slowest timed run of the one pass, ms
    parallel_runs: int = 1  # timed runs of the one pass (after an untimed warm-up); parallel_ms is their median
    on_engine: bool = False  # an engine's model: the one pass is ONE request, the steps the engine's own requests,
    #                          and the differences are of log-probabilities (the engine sends no logits)

    @property
    def serial_ms(self) -> float:
        """Every generated token's own step: what generating them one at a time cost. Not the prefill: the prompt
        went through in one parallel pass too, so counting it would put parallel work on the serial side."""
        return sum(self.steps_ms)

    @property
    def conclusive(self) -> bool:
        """The one pass was faster than the serial steps in every timed run (model.decoding.timing's rule: at least 3 runs,
        its slowest below the other side). False: the page says the machine was too noisy to conclude.
        On an engine, the one request (not repeated: the engine's prefix cache is not read for it, but the box is
        shared) against the steps' requests."""
        if self.on_engine:
            return self.parallel_ms < self.serial_ms
        return self.parallel_runs >= 3 and self.parallel_range[1] < self.serial_ms

    @property
    def speedup(self) -> float:
        return self.serial_ms / self.parallel_ms if self.parallel_ms > 0 else math.inf
