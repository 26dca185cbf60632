"""The records of a speculative run (model/speed/speculative.py): plain numbers and TokenInfo, never torch, for viz/."""
from __future__ import annotations

from dataclasses import dataclass

from model.decoding.records import SamplingConfig, TokenInfo


@dataclass
class DraftLookup:
    """What the prompt-lookup draft copied, and from where."""

    tokens: list[int]  # the drafted ids, at most k (empty: no earlier occurrence, this round is a plain step)
    ngram_size: int  # n of the n-gram that matched (0 when nothing matched)
    source_start: int | None  # index in the text of the first copied token (None when nothing matched)


@dataclass
class DraftCheck:
    """One drafted token checked against the target's distribution at its position."""

    position: int  # index the drafted token takes in the sequence if it is kept
    token: TokenInfo  # the drafted token
    p: float  # the target's final probability of it here (after the sampling settings), in [0, 1]
    u: float  # the acceptance draw in [0, 1), stream (seed, position, 1): the draft is kept iff u < p
    accepted: bool  # u < p: the draft is kept
    target_top: TokenInfo  # the target's most probable token here under the settings (greedy would take it)


@dataclass
class SpecRound:
    """One round: the drafts, the target's one forward pass over them, what it kept and what it put in."""

    round: int  # 1-based
    position: int  # index in the sequence of the first token this round adds
    lookup: DraftLookup  # how the draft was found
    drafted: list[TokenInfo]  # the k' <= k drafted tokens, in order
    checks: list[DraftCheck]  # drafts checked, up to and including the first rejected one; later drafts are not checked
    accepted: int  # drafts kept (the longest accepted prefix)
    rejected_at: int | None  # index in `drafted` of the first rejected draft; None when every draft was kept
    replacement: TokenInfo  # the target's own token: drawn from the residual at a rejection, else the bonus token
    replacement_kind: str  # "residual" (in place of the rejected draft) or "bonus" (after every draft was kept)
    replacement_u: float  # the draw that picked it: stream (seed, position, 2) for a residual, draw_u(seed, position) for a bonus
    replacement_p: float  # its probability in the distribution it was drawn from (the residual, or p)
    new_tokens: list[TokenInfo]  # what the round appended: the kept drafts and the replacement (cut at the end of text / length)
    pass_positions: int  # tokens the one forward pass ran: 1 (the last accepted token) + len(drafted)
    cropped: int  # cache entries removed after the pass: the drafts after the last kept one
    cache_tokens: int  # tokens in the KV cache after the round (the text minus its last token, which the next pass runs)
    forward_ms: float  # wall time of the forward pass
    round_ms: float  # wall time of the whole round: lookup, pass, checks, draw, crop
    # Running counts after this round, over the whole run so far:
    tokens_so_far: int  # tokens generated
    passes_so_far: int  # target forward passes (rounds)
    drafted_so_far: int  # drafted tokens checked or not, over all rounds so far
    accepted_so_far: int  # drafts kept, over all rounds so far

    @property
    def tokens_per_pass(self) -> float:
        """Tokens generated per target forward pass so far (plain decoding: exactly 1)."""
        return self.tokens_so_far / self.passes_so_far

    @property
    def passes_saved(self) -> int:
        """Forward passes plain decoding would have needed for these tokens, minus those taken."""
        return self.tokens_so_far - self.passes_so_far

    @property
    def acceptance_rate(self) -> float:
        """Kept drafts / drafted tokens so far, in [0, 1] (0 when nothing was drafted)."""
        return self.accepted_so_far / self.drafted_so_far if self.drafted_so_far else 0.0


@dataclass
class SpeculativeRun:
    """A whole speculative run: the settings, every round, and the totals."""

    prompt_ids: list[int]  # the text the run continued (the caller's own session's ids)
    draft_len: int  # k: tokens drafted per round at most
    max_ngram: int  # longest n-gram looked up (transformers' max_matching_ngram_size)
    config: SamplingConfig  # the target's sampling settings (temperature 0 = greedy)
    rounds: list[SpecRound]  # every round, in order; one target forward pass each
    generated: list[int]  # the generated ids, in order
    stopped: str  # "eos" (the model ended the text) or "length" (max_new_tokens reached)
    prefill_ms: float  # the prompt (all but its last token) into the cache in one pass
    text: str = ""  # the generated text, decoded

    @property
    def passes(self) -> int:
        return len(self.rounds)

    @property
    def tokens_per_pass(self) -> float:
        return len(self.generated) / self.passes if self.rounds else 0.0

    @property
    def passes_saved(self) -> int:
        return len(self.generated) - self.passes

    @property
    def acceptance_rate(self) -> float:
        drafted = sum(len(r.drafted) for r in self.rounds)
        return sum(r.accepted for r in self.rounds) / drafted if drafted else 0.0


@dataclass
class SpeedComparison:
    """Wall time per generated token: plain stepwise greedy against speculative greedy, same model and prompt."""

    label: str  # which text: "repeating" or "prose"
    prompt_tokens: int  # tokens of the prompt
    tokens: int  # generated by each (fewer than asked if the model ended the text)
    plain_ms_per_token: float  # one forward pass per token (decode only; both prefill all but the last prompt token)
    spec_ms_per_token: float  # speculative: wall ms of its rounds / tokens generated
    passes_plain: int  # forward passes of plain decoding (one per token)
    passes_spec: int  # forward passes of speculative decoding (one per round)
    acceptance_rate: float  # kept drafts / drafted tokens
    tokens_per_pass: float  # speculative
    same_output: bool  # True when both produced the same ids (they must, under greedy)
    draft_len: int  # k, drafted tokens per round at most
    threads: int  # torch threads during the measurement

    @property
    def plain_tokens_per_s(self) -> float:
        return 1000.0 / self.plain_ms_per_token

    @property
    def spec_tokens_per_s(self) -> float:
        return 1000.0 / self.spec_ms_per_token

    @property
    def speedup(self) -> float:
        return self.plain_ms_per_token / self.spec_ms_per_token
