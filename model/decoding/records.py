"""Plain records the decoder produces and viz/ draws: numbers, strings and numpy arrays, never torch."""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace

import numpy as np

from model.errors import SessionError

# Stage names, in the order Hugging Face generate() applies them.
STAGES_TRANSFORMERS = ("repetition_penalty", "temperature", "top_k", "top_p", "min_p")
# The other common order: temperature last, as llama.cpp's default chain does.
STAGES_TEMPERATURE_LAST = ("repetition_penalty", "top_k", "top_p", "min_p", "temperature")
ORDERS = {"transformers": STAGES_TRANSFORMERS, "temperature_last": STAGES_TEMPERATURE_LAST}

# A repeated token's logit z becomes z / penalty (z > 0) or z * penalty. Below 0.1 a gap of 20 between two logits
# is 200 (the repeated tokens win or lose outright), and 1e-300 makes a logit inf (NaN in the softmax).
REPETITION_PENALTY_RANGE = (0.1, 10.0)

# The fate of a candidate: drawn, kept in the final set, or removed by the named stage.
# "greedy" marks every token but the argmax when temperature is 0; "grammar", a token a constraint does not allow
# (model/strategies/constrain.py; only when one is set).
FATES = ("chosen", "kept", "top_k", "top_p", "min_p", "greedy", "grammar")


@dataclass(frozen=True)
class SamplingConfig:
    """The knobs of one step. Defaults are the plain distribution (T = 1, no cut)."""

    temperature: float = 1.0  # 0 means greedy (argmax); never divided by
    top_k: int = 0  # keep the k most probable; 0 = off
    top_p: float = 1.0  # nucleus: smallest set with cumulative probability >= p; 1 = off
    min_p: float = 0.0  # keep p >= min_p * p_max; 0 = off
    repetition_penalty: float = 1.0  # CTRL-style, on tokens already in the context; 1 = off; REPETITION_PENALTY_RANGE
    order: str = "transformers"  # "transformers" or "temperature_last"
    seed: int = 0  # the draw u at each position comes from (seed, position)

    def validate(self) -> "SamplingConfig":
        """Return self, or raise SessionError (a ValueError) naming the setting that is out of range."""
        def finite(name: str, value) -> float:
            try:
                number = float(value)  # an int past float's range (a trace file can hold one) is not finite either
            except (OverflowError, TypeError, ValueError):
                number = math.nan
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(number):
                raise SessionError("setting_not_a_number", name=name, value=value)
            return number

        if not 0 <= finite("temperature", self.temperature) <= 100:
            raise SessionError("temperature_range", value=self.temperature)
        if finite("top_k", self.top_k) != int(self.top_k) or self.top_k < 0:
            raise SessionError("top_k_range", value=self.top_k)
        if not 0 < finite("top_p", self.top_p) <= 1:
            raise SessionError("top_p_range", value=self.top_p)
        if not 0 <= finite("min_p", self.min_p) <= 1:
            raise SessionError("min_p_range", value=self.min_p)
        low, high = REPETITION_PENALTY_RANGE
        if not low <= finite("repetition_penalty", self.repetition_penalty) <= high:
            raise SessionError("repetition_penalty_bounds", low=low, high=high, value=self.repetition_penalty)
        if self.order not in ORDERS:
            raise SessionError("order_unknown", orders=sorted(ORDERS), value=self.order)
        if finite("seed", self.seed) != int(self.seed) or not 0 <= self.seed < 2**63:
            raise SessionError("seed_range", value=self.seed)
        return self

    @property
    def stages(self) -> tuple[str, ...]:
        return ORDERS[self.order]


# The settings' names in SamplingConfig's order: the page's inputs, the API's parameters and a lesson's or a trace's
# settings are these, read from the one place they are declared.
SETTING_NAMES = tuple(f.name for f in fields(SamplingConfig))


@dataclass
class TokenInfo:
    """One token as the model sees it and as the page shows it."""

    id: int
    piece: str  # raw vocabulary entry, e.g. "Ġthe" or "<0xE4>"
    display: str  # readable: "␣the", "↵", "<E4>" for a byte that is not a character on its own


# How a token kept from a speculative run was chosen (model/speed/speculative.py), in place of a plain step's draw.
SPEC_KINDS = ("accepted", "residual", "bonus")


@dataclass(frozen=True)
class SpecChoice:
    """What chose a token kept from a speculative run: the accept test or the residual draw, not a plain draw.

    Recomputed from the settings and seed when the step is taken (model/speculative.reproduce_choice), never
    taken on trust from a caller or a file.
    """

    kind: str  # one of SPEC_KINDS: "accepted" (the drafted token passed u < p), "residual" (drawn from
    # norm(max(0, p - q)) after the draft `rejected` failed its test), "bonus" (drawn from p with the plain u)
    u: float  # accepted: the acceptance draw (seed, position, 1); residual: the residual draw (seed, position, 2);
    # bonus: draw_u(seed, position), a plain step's u
    p: float  # accepted and bonus: the token's final probability p; residual: its probability in the residual
    rejected: int | None = None  # residual: the id of the draft rejected here
    rejected_p: float | None = None  # residual: that draft's p
    rejected_u: float | None = None  # residual: its acceptance draw, >= rejected_p


@dataclass
class Candidate:
    """One candidate for the next token, followed through the sampling stages."""

    token: TokenInfo
    logit: float  # raw model logit
    prob_t1: float  # softmax over the full vocabulary at T = 1, before any stage
    stage_probs: dict[str, float]  # probability after each stage (renormalised over what it kept)
    final_prob: float  # probability in the distribution the draw used
    fate: str  # one of FATES
    rank: int  # 1 = most probable at T = 1


@dataclass
class StageSummary:
    """What one stage did to the whole vocabulary."""

    name: str
    active: bool  # False when its setting is 'off' (it changed nothing)
    kept: int  # tokens still in the draw after it (not set to -inf; a probability may underflow to 0)
    removed: int  # tokens it removed (were kept before it)
    entropy_bits: float  # entropy of the distribution after it


@dataclass
class Distribution:
    """The next-token distribution at one position under one SamplingConfig (no model run needed)."""

    position: int  # index the next token will take in the sequence
    config: SamplingConfig
    candidates: list[Candidate]  # top-N by T = 1 probability, plus the chosen token if outside them
    stages: list[StageSummary]
    tail_mass_t1: float  # T = 1 probability of all tokens not in candidates
    tail_mass_final: float  # final probability of all tokens not in candidates
    entropy_t1_bits: float
    entropy_final_bits: float
    u: float  # the uniform draw in [0, 1) for this position and seed
    chosen: TokenInfo
    chosen_rank: int  # rank of the chosen token at T = 1 (1 = most probable)
    chosen_logprob_t1: float  # natural log of its T = 1 unfiltered probability
    chosen_final_prob: float
    draw_cum_before: float | None = None  # final probability of the kept tokens ahead of the chosen one in draw order
    # (most probable first, ties by id): a draw picks the chosen token when draw_cum_before <= u < that + its
    # probability. None when the chosen token was forced from outside the kept set.
    forced: bool = False  # True when the user picked the token instead of the draw
    speculative: SpecChoice | None = None  # kept from a speculative run: what chose it (the plain u did not)
    marked_forced: bool = False  # a trace said the model drew it, but its settings and seed draw another token:
    # recorded as forced (model/decoding/session.py, DecodeSession._claimed)

    @property
    def chosen_candidate(self) -> Candidate:
        return next(c for c in self.candidates if c.token.id == self.chosen.id)

    def with_chosen_t1(self, logprob: float, rank: int) -> "Distribution":
        """This distribution with the chosen token's T = 1 numbers given from elsewhere (an engine's own, for a token
        forced from outside the top N it sent: only it knows them). Of the same class (an engine's record too)."""
        return replace(self, chosen_logprob_t1=logprob, chosen_rank=rank,
                       candidates=[replace(c, prob_t1=math.exp(logprob), logit=logprob, rank=rank)
                                   if c.token.id == self.chosen.id else c for c in self.candidates])


@dataclass
class KVBytes:
    """Size of the KV cache after a forward pass."""

    measured: int  # bytes summed over the cache tensors (numel * element_size)
    formula: int  # 2 x layers x kv_heads x head_dim x tokens x bytes_per_value x batch (per layer window)
    keys: int  # measured bytes of the K tensors
    values: int  # measured bytes of the V tensors
    tokens: int  # sequence length held


@dataclass
class Timings:
    forward_ms: float
    sampling_ms: float = 0.0


@dataclass
class PrefillRecord:
    """The prompt: its tokens, the full causal attention block, the cache after prefill."""

    prompt: str
    chat: bool  # True: the model's chat template was applied
    tokens: list[TokenInfo]  # exactly the tokens the model sees
    attention: np.ndarray  # (layers, heads, P, P) float16, row i = query i; zero above the diagonal
    kv: KVBytes
    timings: Timings


@dataclass
class StepRecord:
    """One generated token: how it was chosen, how it attended, what the cache holds after it."""

    step: int  # 1-based count of generated tokens
    position: int  # index of this token in the sequence
    distribution: Distribution  # the candidates it was chosen from
    attention: np.ndarray  # (layers, heads, position + 1) float16: the new token's attention row
    kv: KVBytes
    timings: Timings
    text: str  # generated text so far, decoded (an unfinished multi-byte character held back)

    @property
    def token(self) -> TokenInfo:
        return self.distribution.chosen


@dataclass
class ModelInfo:
    """What the page states about the loaded model."""

    name: str
    layers: int
    heads: int  # query heads
    kv_heads: int  # query head h reads KV head h // (heads // kv_heads)
    head_dim: int
    hidden: int
    vocab: int
    bytes_per_value: int  # of the KV cache tensors (4 for float32)
    dtype: str
    context: int  # the model's context window (tokens)
    sliding_window: list[int | None] = field(default_factory=list)  # per layer: window size, or None = full causal

    @property
    def group_size(self) -> int:
        return self.heads // self.kv_heads

    def kv_head_of(self, head: int) -> int:
        return head // self.group_size


def attention_matrix(prefill: PrefillRecord, steps: list[StepRecord], layer: int, head: int | None) -> np.ndarray:
    """The (T, T) float32 attention of one layer and head (None = mean over heads) over prompt and steps.

    Row i is query position i, column j key position j; entries with j > i are exactly 0 (the causal mask).
    """
    pick = (lambda a: a.astype(np.float32).mean(axis=0)) if head is None else (lambda a: a[head].astype(np.float32))
    P = len(prefill.tokens)
    T = P + len(steps)
    out = np.zeros((T, T), dtype=np.float32)
    out[:P, :P] = pick(prefill.attention[layer])
    for s in steps:
        out[s.position, : s.position + 1] = pick(s.attention[layer])
    return out


@dataclass
class TemperatureSweep:
    """How one step's distribution changes with temperature (the other settings held)."""

    temperatures: list[float]
    entropy_bits: list[float]  # entropy of the final distribution at each temperature
    nucleus_size: list[int]  # tokens kept in the final distribution at each temperature
    top_p: float


@dataclass
class CacheTiming:
    """Measured time of one decode step with the KV cache against recomputing the whole prefix."""

    seq_len: list[int]  # tokens in the sequence when the step was taken
    cached_ms: list[float]  # one new token through the model with the cache (median of the runs)
    full_ms: list[float]  # the whole prefix through the model without a cache (median of the runs)
    cached_range: list[tuple[float, float]] = field(default_factory=list)  # per length: (fastest, slowest) run, ms
    full_range: list[tuple[float, float]] = field(default_factory=list)
    runs: list[int] = field(default_factory=list)  # per length: timed runs of each (after the untimed warm-up)

    @property
    def conclusive(self) -> list[bool]:
        """Per length: at least 3 runs of each, and the cached step was faster in every run than every recompute
        (the rule of model.decoding.timing.separated). False: the page says the machine was too noisy to conclude there."""
        return [n >= 3 and c[1] < f[0] for c, f, n in zip(self.cached_range, self.full_range, self.runs)]
