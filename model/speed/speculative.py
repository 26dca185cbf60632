"""Speculative decoding with prompt-lookup drafts, verified by the target model: one forward pass per round.

Each round the draft copies up to k tokens that followed an earlier occurrence of the text's last n-gram
(transformers' PromptLookupCandidateGenerator, whose choices lookup_draft() repeats exactly). The target runs
once over k + 1 positions: the last accepted token, not yet in the cache, and the k drafts. Position i's
final probabilities p (the SamplingConfig stages of model/decoding/sampling.py) check draft i: the draft is
deterministic, so q is one-hot and draft x is kept with probability min(1, p(x) / 1) = p(x), i.e. iff
u < p(x) for a seeded u. At the first rejection the target draws from the residual norm(max(0, p - q)),
which is p without x, renormalised; if every draft is kept, it draws one bonus token from p at the next
position. Under greedy settings (T = 0) p is one-hot, so a draft is kept iff it is the argmax, and the
output is the target's own greedy output (docs/what-it-teaches.md:
Speculative decoding).

Seeded draws, so a seed reproduces a run: the bonus token uses draw_u(seed, position), the same u as a
plain step there (a round without a draft is exactly a plain step); the acceptance check and the residual
draw have their own streams (seed, position, 1) and (seed, position, 2).
"""
from __future__ import annotations

import time

import numpy as np
import torch
from transformers import DynamicCache

from model.decoding.cache_surgery import crop_to, restore, snapshot
from model.decoding.passes import prefill
from model.decoding.scheduler import model_pass
from model.errors import SessionError
from model.decoding.loading import LoadedModel, end_ids
from model.parse import whole_in_range
from model.decoding.records import SPEC_KINDS, SamplingConfig, SpecChoice
from model.decoding.sampling import draw_u, inverse_cdf, run_stages
from model.speed.speculative_records import DraftCheck, DraftLookup, SpecRound, SpeculativeRun, SpeedComparison
from model.decoding.core import computation

__all__ = ["DraftCheck", "DraftLookup", "SpecRound", "SpeculativeRun", "SpeedComparison", "SpeculativeDecoder",
           "lookup_draft", "residual", "speculative_decode", "measure_speed", "speed_report", "plain_greedy", "GREEDY",
           "SPEED_TEXTS", "kept_choices", "reproduce_choice"]

MAX_DRAFT = 16  # drafted tokens per round
MAX_NGRAM = 8  # longest n-gram looked up
MAX_NEW_TOKENS = 512
ACCEPT_STREAM, RESIDUAL_STREAM = 1, 2  # the third seed word of the acceptance and residual draws


# ---- the draft -----------------------------------------------------------------------------------------
def lookup_draft(ids: list[int], k: int, max_ngram: int = 2, eos_ids: set[int] | frozenset = frozenset()) -> DraftLookup:
    """Prompt-lookup draft, as transformers' PromptLookupCandidateGenerator (5.x) chooses it.

    For n = min(max_ngram, len(ids) - 1) down to 1: the first occurrence, from the left, of the last n ids
    that has at least one token after it (the last n-gram itself has none); the draft is what follows it,
    at most k tokens and never past the end of the text, cut before the first end-of-text token. The first
    n that matches decides, even if its draft is then cut to nothing (the round is then a plain step).
    Not repeated: transformers' check of drafts against processors that forbid tokens (none in this app).
    """
    length = len(ids)
    seq = torch.tensor(ids)
    for n in range(min(max_ngram, length - 1), 0, -1):
        windows = seq.unfold(0, n, 1)  # (length - n + 1, n)
        hits = (windows == seq[-n:]).all(dim=1).nonzero().flatten().tolist()
        start = next((i + n for i in hits if i + n < length), None)
        if start is None:
            continue
        draft = ids[start : min(start + k, length)]
        cut = next((j for j, t in enumerate(draft) if t in eos_ids), len(draft))
        return DraftLookup(draft[:cut], n, start)
    return DraftLookup([], 0, None)


def residual(p: torch.Tensor, x: int) -> torch.Tensor:
    """norm(max(0, p - q)) for a one-hot q at x: p with x removed, renormalised. p: (V,) summing to 1.

    Only reached after x was rejected, which needs p(x) < 1, so something is left to renormalise.
    """
    r = p.clone()
    r[x] = 0.0
    return r / r.sum()


def final_probs(logits: torch.Tensor, context: list[int], cfg: SamplingConfig) -> torch.Tensor:
    """(V,) the final probabilities at one position under cfg: the stages of model/decoding/sampling.py, then softmax."""
    scores = run_stages(logits, torch.tensor([context]), cfg)[-1][2]
    return torch.softmax(scores, -1).reshape(-1)


def accept_u(seed: int, position: int) -> float:
    """The acceptance draw in [0, 1) for the draft at `position`: its own stream, apart from the token draws."""
    return float(np.random.default_rng([int(seed), int(position), ACCEPT_STREAM]).random())


def residual_u(seed: int, position: int) -> float:
    """The draw in [0, 1) from the residual at `position`, after a rejection there."""
    return float(np.random.default_rng([int(seed), int(position), RESIDUAL_STREAM]).random())


# ---- what chose each token, and checking it again -------------------------------------------------------
def kept_choices(run: "SpeculativeRun") -> list[SpecChoice]:
    """How each generated token of a run was chosen, in order: the accept test, the residual draw or the bonus draw."""
    out = []
    for r in run.rounds:
        for j, _ in enumerate(r.new_tokens):
            if j < r.accepted:
                check = r.checks[j]
                out.append(SpecChoice("accepted", check.u, check.p))
            elif r.replacement_kind == "residual":
                bad = r.checks[r.accepted]
                out.append(SpecChoice("residual", r.replacement_u, r.replacement_p, bad.token.id, bad.p, bad.u))
            else:
                out.append(SpecChoice("bonus", r.replacement_u, r.replacement_p))
    return out


def reproduce_choice(logits: torch.Tensor, ids: list[int], cfg: SamplingConfig, token: int,
                     claim: SpecChoice) -> SpecChoice | None:
    """The claim's kind checked again at the position after `ids`, with this position's own logits (V,) and the
    settings' seed: the SpecChoice with the numbers that really chose `token`, or None when they choose otherwise.

    accepted: accept_u < p(token). residual: the draft `claim.rejected` failed (accept_u >= its p) and the residual
    draw picks `token`. bonus: the plain draw_u picks `token` from p.
    """
    if claim.kind not in SPEC_KINDS:
        return None
    p = final_probs(logits, ids, cfg)
    at, seed = len(ids), cfg.seed
    if claim.kind == "accepted":
        u, px = accept_u(seed, at), float(p[token])
        return SpecChoice("accepted", u, px) if u < px else None
    if claim.kind == "bonus":
        u = draw_u(seed, at)
        return SpecChoice("bonus", u, float(p[token])) if inverse_cdf(p, u) == token else None
    x = claim.rejected
    if not isinstance(x, int) or isinstance(x, bool) or not 0 <= x < p.shape[0] or x == token:
        return None
    ux, px = accept_u(seed, at), float(p[x])
    if ux < px:  # the draft would have been kept: nothing was drawn from the residual here
        return None
    r = residual(p, x)
    u = residual_u(seed, at)
    return SpecChoice("residual", u, float(r[token]), x, px, ux) if inverse_cdf(r, u) == token else None


# ---- the engine ----------------------------------------------------------------------------------------
class SpeculativeDecoder:
    """Speculative decoding of one text on the shared, read-only model; the cache and ids belong to this object.

    The cache always holds the text minus its last token: each round's one pass runs that token and the drafts.
    Each pass is a turn at the model's scheduler, so the class's steps go between them.
    """

    def __init__(self, lm: LoadedModel, prompt_ids: list[int], cfg: SamplingConfig, draft_len: int = 4,
                 max_ngram: int = 2, max_new_tokens: int = 64):
        if not prompt_ids:
            raise SessionError("spec_no_prompt")
        cfg.validate()
        self.lm, self.cfg = lm, cfg
        self.k = whole_in_range(draft_len, 1, MAX_DRAFT, "spec_draft_len_range")
        self.max_ngram = whole_in_range(max_ngram, 1, MAX_NGRAM, "spec_ngram_range")
        self.max_new_tokens = whole_in_range(max_new_tokens, 1, MAX_NEW_TOKENS, "spec_new_tokens_range")
        self.prompt_ids = [int(i) for i in prompt_ids]
        self.ids = list(self.prompt_ids)
        self.rounds: list[SpecRound] = []
        self.eos_ids = end_ids(lm)
        t0 = time.perf_counter()
        self.cache = self._prefill(self.ids[:-1])
        self.prefill_ms = (time.perf_counter() - t0) * 1000

    @property
    def generated(self) -> list[int]:
        return self.ids[len(self.prompt_ids) :]

    @property
    def stopped(self) -> str | None:
        """"eos" when the model ended the text, "length" at max_new_tokens, None while it can go on."""
        if self.generated and self.generated[-1] in self.eos_ids:
            return "eos"
        return "length" if len(self.generated) >= self.max_new_tokens else None

    def _prefill(self, ids: list[int]) -> DynamicCache:
        """A new cache holding `ids` (passes.prefill: in chunks if long); empty for no ids."""
        return prefill(self.lm.model, ids).cache if ids else DynamicCache(config=self.lm.model.config)

    @torch.no_grad()
    def _forward(self, ids: list[int]) -> torch.Tensor:
        """ids through the target with the cache in one pass: logits (len(ids), V)."""
        with model_pass(self.lm.model, cores=False):  # 1 + k tokens: a second thread only spins
            out = self.lm.model(input_ids=torch.tensor([ids]), past_key_values=self.cache, use_cache=True)
        return out.logits[0]

    @torch.no_grad()
    def round(self, draft: list[int] | None = None) -> SpecRound:
        """One round: draft (by prompt lookup, or the `draft` given, for a lesson or a test), one pass, checks, crop."""
        if self.stopped:
            key = "spec_finished_eos" if self.stopped == "eos" else "spec_finished_length"
            raise SessionError(key, limit=self.max_new_tokens)
        t_round = time.perf_counter()
        budget = self.max_new_tokens - len(self.generated)
        if draft is None:
            lookup = lookup_draft(self.ids, self.k, self.max_ngram, self.eos_ids)
        else:
            vocab = self.lm.info.vocab
            if not all(isinstance(t, int) and 0 <= t < vocab for t in draft) or len(draft) > MAX_DRAFT:
                raise SessionError("spec_draft_invalid", vocab=vocab, limit=MAX_DRAFT)
            lookup = DraftLookup(list(draft), 0, None)
        drafts = lookup.tokens[: budget - 1]  # a draft that could not be kept within the budget is not checked
        L = len(self.ids)  # the first new token takes position L
        before = snapshot(self.cache)
        try:
            t0 = time.perf_counter()
            logits = self._forward([self.ids[-1]] + drafts)  # (1 + m, V): row i predicts position L + i
            forward_ms = (time.perf_counter() - t0) * 1000
            checks, new = [], []
            seed = self.cfg.seed
            for i in range(len(drafts) + 1):
                context = self.ids + drafts[:i]
                p = final_probs(logits[i], context, self.cfg)
                if i == len(drafts):  # every draft kept: the bonus token, drawn from p as a plain step would
                    u = draw_u(seed, L + i)
                    token = inverse_cdf(p, u)
                    kind, p_token = "bonus", float(p[token])
                    break
                x = drafts[i]
                u = accept_u(seed, L + i)
                px = float(p[x])
                ok = u < px  # min(1, p(x) / q(x)) with q(x) = 1
                checks.append(DraftCheck(L + i, self.lm.tokens.info(x), px, u, ok, self.lm.tokens.info(int(p.argmax()))))
                if not ok:
                    r = residual(p, x)
                    u = residual_u(seed, L + i)
                    token = inverse_cdf(r, u)
                    kind, p_token = "residual", float(r[token])
                    break
                new.append(x)
            accepted = len(new)
            new.append(token)
            new = _cut(new, budget, self.eos_ids)
            keep = L + len(new) - 1  # the cache holds the text minus its (new) last token
            cropped = self.cache.get_seq_length() - keep
            if not crop_to(self.cache, keep):  # a sliding-window layer past its window: run the text again
                self.cache = self._prefill((self.ids + new)[:keep])
        except BaseException:
            restore(self.cache, before)
            raise
        self.ids.extend(new)
        last = self.rounds[-1] if self.rounds else None
        info = self.lm.tokens.info
        record = SpecRound(
            round=len(self.rounds) + 1,
            position=L,
            lookup=lookup,
            drafted=[info(t) for t in drafts],
            checks=checks,
            accepted=accepted,
            rejected_at=accepted if accepted < len(drafts) else None,
            replacement=info(token),
            replacement_kind=kind,
            replacement_u=u,
            replacement_p=p_token,
            new_tokens=[info(t) for t in new],
            pass_positions=1 + len(drafts),
            cropped=cropped,
            cache_tokens=self.cache.get_seq_length(),
            forward_ms=forward_ms,
            round_ms=(time.perf_counter() - t_round) * 1000,
            tokens_so_far=(last.tokens_so_far if last else 0) + len(new),
            passes_so_far=len(self.rounds) + 1,
            drafted_so_far=(last.drafted_so_far if last else 0) + len(drafts),
            accepted_so_far=(last.accepted_so_far if last else 0) + accepted,
        )
        self.rounds.append(record)
        return record

    def run(self) -> SpeculativeRun:
        """Rounds until the text ends or max_new_tokens are generated; the whole run as a record."""
        while not self.stopped:
            self.round()
        return self.record()

    def record(self) -> SpeculativeRun:
        """The run so far as a record."""
        return SpeculativeRun(list(self.prompt_ids), self.k, self.max_ngram, self.cfg, list(self.rounds),
                              list(self.generated), self.stopped or "", self.prefill_ms,
                              self.lm.tokens.text(self.generated))


def _cut(new: list[int], budget: int, eos_ids: set[int]) -> list[int]:
    """The round's tokens cut to the budget left and after the first end-of-text token (as transformers does)."""
    new = new[:budget]
    end = next((j for j, t in enumerate(new) if t in eos_ids), None)
    return new if end is None else new[: end + 1]


@computation
def speculative_decode(lm: LoadedModel, prompt_ids: list[int], cfg: SamplingConfig, draft_len: int = 4,
                       max_ngram: int = 2, max_new_tokens: int = 64) -> SpeculativeRun:
    """A whole speculative run from a prompt's ids (one prefill, then one target pass per round)."""
    return SpeculativeDecoder(lm, prompt_ids, cfg, draft_len, max_ngram, max_new_tokens).run()


# ---- measuring it --------------------------------------------------------------------------------------
# Two texts of this app's own (never a user's): one that repeats itself, where prompt lookup pays, and free prose.
SPEED_TEXTS = {
    "repeating": (
        "def area_square(side):\n    return side * side\n\n\ndef area_rectangle(width, height):\n"
        "    return width * height\n\n\ndef area_triangle(base, height):\n    return base * height / 2\n\n\n"
        "def perimeter_square(side):\n    return 4 * side\n\n\ndef perimeter_rectangle(width, height):\n"
    ),
    "prose": "The old lighthouse keeper climbed the stairs every evening, and on the night of the storm he",
}
GREEDY = SamplingConfig(temperature=0.0)


@torch.no_grad()
def plain_greedy(lm: LoadedModel, prompt_ids: list[int], max_new_tokens: int) -> tuple[list[int], float, int]:
    """Plain stepwise greedy decoding, one pass per token: (generated ids, decode ms, passes).

    Set up as the speculative run is: all but the last prompt token prefilled (not timed), then each pass
    runs one token, so the two differ only in what each pass runs. Each pass is a turn at the model's scheduler.
    """
    eos = end_ids(lm)
    ids = list(prompt_ids)
    cache = prefill(lm.model, ids[:-1]).cache if len(ids) > 1 else DynamicCache(config=lm.model.config)
    t0, passes = time.perf_counter(), 0
    while len(ids) - len(prompt_ids) < max_new_tokens and (len(ids) == len(prompt_ids) or ids[-1] not in eos):
        with model_pass(lm.model, cores=False):
            logits = lm.model(input_ids=torch.tensor([[ids[-1]]]), past_key_values=cache, use_cache=True).logits[0, -1]
        ids.append(int(final_probs(logits, ids, GREEDY).argmax()))  # the same stages as the speculative checks
        passes += 1
    return ids[len(prompt_ids) :], (time.perf_counter() - t0) * 1000, passes


def measure_speed(lm: LoadedModel, prompt_ids: list[int], max_new_tokens: int, draft_len: int = 4,
                  max_ngram: int = 2, label: str = "") -> SpeedComparison:
    """Wall time per token of plain stepwise greedy against speculative greedy on the same prompt (decode only).

    Each pass is a turn at the model's scheduler, so other users' steps run between them; the times then include
    those waits too (a measurement taken in a busy class says so by its spread)."""
    plain, plain_ms, plain_passes = plain_greedy(lm, prompt_ids, max_new_tokens)
    dec = SpeculativeDecoder(lm, prompt_ids, GREEDY, draft_len, max_ngram, max_new_tokens)
    t0 = time.perf_counter()
    run = dec.run()
    spec_ms = (time.perf_counter() - t0) * 1000
    n = max(len(run.generated), 1)
    return SpeedComparison(label, len(prompt_ids), len(run.generated), plain_ms / max(len(plain), 1), spec_ms / n,
                           plain_passes, run.passes, run.acceptance_rate, run.tokens_per_pass,
                           plain == run.generated, draft_len, torch.get_num_threads())


def speed_report(lm: LoadedModel, max_new_tokens: int = 64, draft_len: int = 4) -> list[SpeedComparison]:
    """measure_speed on SPEED_TEXTS: a text that repeats itself (code) and free prose."""
    out = []
    for label, text in SPEED_TEXTS.items():
        ids = lm.tokenizer(text, add_special_tokens=True)["input_ids"]
        out.append(measure_speed(lm, list(ids), max_new_tokens, draft_len, label=label))
    return out
