"""The sampling pipeline: Hugging Face's LogitsProcessor stages, every intermediate kept, and the draw.

derive() turns one logit vector into a Distribution record without running the model, so a slider
can re-draw a step at once.
"""
from __future__ import annotations

import math

import numpy as np
import torch
from transformers.generation.logits_process import (
    MinPLogitsWarper,
    RepetitionPenaltyLogitsProcessor,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

from model.errors import SessionError
from model.decoding.records import Candidate, Distribution, SamplingConfig, StageSummary, TemperatureSweep
from model.decoding.tokens import TokenDisplay
from model.decoding.threads import on_one_thread

TOP_N = 20  # candidates kept in a record


def draw_u(seed: int, position: int) -> float:
    """The uniform draw in [0, 1) for one position: fixed by (seed, position), so a trace is reproducible."""
    return float(np.random.default_rng([int(seed), int(position)]).random())


def stage_processor(name: str, cfg: SamplingConfig):
    """The processor for one stage, or None when its setting is 'off'."""
    if name == "repetition_penalty" and cfg.repetition_penalty != 1.0:
        return RepetitionPenaltyLogitsProcessor(penalty=float(cfg.repetition_penalty))
    if name == "temperature" and cfg.temperature == 0:
        return greedy
    if name == "temperature" and cfg.temperature != 1.0:
        return _ShiftedTemperature(float(cfg.temperature))
    if name == "top_k" and cfg.top_k > 0:
        return TopKLogitsWarper(top_k=int(cfg.top_k))
    if name == "top_p" and cfg.top_p < 1.0:
        return TopPLogitsWarper(top_p=float(cfg.top_p))
    if name == "min_p" and cfg.min_p > 0:
        return MinPLogitsWarper(min_p=float(cfg.min_p))
    return None


class _ShiftedTemperature:
    """Hugging Face's TemperatureLogitsWarper, on scores shifted so that their max is 0, in float64.

    softmax(z / T) = softmax((z - max z) / T), and every later cut works on that softmax (top-k on its order), so
    the shift changes no probability; only the scores after this stage, which no record keeps, move. It keeps
    a tiny T finite: z / 1e-300 overflows to +-inf (inf - inf is NaN in the softmax, and the draw finds no
    token), while (z - max z) / 1e-300 is 0 for the most probable tokens and -inf for the rest: greedy, the limit.
    float64, because 5e-324 as a float32 is 0, and 0 / 0 is NaN.
    """

    def __init__(self, temperature: float):
        self.warper = TemperatureLogitsWarper(temperature)

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        shifted = scores.double() - scores.max(dim=-1, keepdim=True).values.double()  # (1, V), max 0
        return self.warper(input_ids, shifted).to(scores.dtype)


def greedy(input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
    """T = 0: keep only the argmax (the limit of softmax(z / T) as T -> 0, without dividing by 0)."""
    keep = scores.argmax(dim=-1, keepdim=True)
    return torch.full_like(scores, -math.inf).scatter(-1, keep, scores.gather(-1, keep))


def entropy_bits(probs: torch.Tensor) -> float:
    """Shannon entropy in bits of a probability vector (zeros contribute nothing)."""
    return float(torch.special.entr(probs).sum()) / math.log(2)  # entr(p) = -p ln p, and 0 at p = 0


GRAMMAR = "grammar"  # the constraint stage's name (and its candidates' fate): only there when a constraint is set


def _grammar(allowed: torch.Tensor):
    """The constraint stage: every token outside `allowed` ((V,) bool) gets -inf, as transformers'
    PrefixConstrainedLogitsProcessor does with the ids prefix_allowed_tokens_fn returns (tests prove they agree)."""
    def stage(input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        return scores.masked_fill(~allowed.reshape(1, -1), -math.inf)
    return stage


def stage_names(cfg: SamplingConfig, constrained: bool = False) -> tuple[str, ...]:
    """The stages in the order they run: cfg's order, with the grammar stage right after the repetition penalty
    (where generate() puts its PrefixConstrainedLogitsProcessor: before every warper) when a constraint is set."""
    if not constrained:
        return cfg.stages
    names = list(cfg.stages)
    names.insert(names.index("repetition_penalty") + 1, GRAMMAR)
    return tuple(names)


def run_stages(logits: torch.Tensor, context_ids: torch.Tensor, cfg: SamplingConfig, allowed: torch.Tensor | None = None):
    """Apply the stages in cfg's order. Returns [(name, active, scores after it)], scores (1, V) float32.

    allowed: (V,) bool, the tokens a constraint allows (model/strategies/constrain.py); None (no constraint): no grammar stage.
    """
    scores = logits.float().reshape(1, -1)
    out = []
    for name in stage_names(cfg, allowed is not None):
        stage = _grammar(allowed) if name == GRAMMAR else stage_processor(name, cfg)
        if stage is not None:
            scores = stage(context_ids, scores)  # processors return new tensors, never edit in place
        out.append((name, stage is not None, scores))
    return out


def inverse_cdf(probs: torch.Tensor, u: float, head: int = 256) -> int:
    """Token drawn by u: walk the kept tokens from most to least probable (ties by id) until the sum passes u.

    Only the `head` most probable tokens are sorted; a walk that goes past them (a flat distribution, a high
    temperature, and a u near 1; on the teaching prompts' paths at T = 1, 9 draws of 576) sorts 8 times as many,
    and so on, instead of the whole vocabulary at once (a sort of 49k tokens, 5-15 ms here). The same token either way: the running sum of the
    first k in draw order is the same numbers whatever k, and a landing is only taken clear of the cut.
    """
    kept = int((probs > 0).sum())
    target = torch.tensor([u * float(probs.double().sum())], dtype=torch.float64)
    k = min(head, kept)
    while True:
        vals, idx = torch.topk(probs, k)
        idx, by_id = torch.sort(idx)  # ascending ids, so the stable sort below breaks ties by id
        vals, order = torch.sort(vals[by_id], descending=True, stable=True)
        idx = idx[order]
        cum = torch.cumsum(vals.double(), 0)
        i = min(int(torch.searchsorted(cum, target, right=True)), k - 1)
        if k == kept or (i < k - 1 and vals[i] > vals[-1]):  # landed clear of the cut: no tie outside can matter
            return int(idx[i])
        k = min(kept, k * 8)


def _mass_ahead(probs: torch.Tensor, token: int) -> float | None:
    """Final probability of the kept tokens ahead of `token` in draw order; None if `token` is not kept."""
    p = probs[token]
    if p <= 0:
        return None
    ids = torch.arange(probs.shape[0])
    ahead = (probs > p) | ((probs == p) & (ids < token))
    return float(probs[ahead].double().sum())


@on_one_thread
def derive(
    logits: torch.Tensor,
    context_ids: torch.Tensor,
    cfg: SamplingConfig,
    position: int,
    tokens: TokenDisplay,
    force_token: int | None = None,
    top_n: int = TOP_N,
    allowed: torch.Tensor | None = None,
) -> Distribution:
    """The Distribution for the next token: every stage, its cuts, the draw (or the forced token).

    logits: (V,) raw logits for `position`; context_ids: (1, t) the tokens so far (for the repetition penalty).
    allowed: (V,) bool, a constraint's allowed tokens (its own stage and fate, "grammar"); None: no constraint.
    """
    cfg.validate()
    vocab = logits.shape[-1]
    if force_token is not None and not (isinstance(force_token, int) and 0 <= force_token < vocab):
        raise SessionError("forced_token_invalid", vocab=vocab, token=force_token)
    raw = logits.float().reshape(-1)
    p_t1 = torch.softmax(raw, -1)  # normalised over the full vocabulary
    entropy_t1 = entropy_bits(p_t1)
    staged = run_stages(raw, context_ids, cfg, allowed)
    probs_after = []
    for _, active, scores in staged:  # an inactive stage leaves the distribution as it was
        probs_after.append(torch.softmax(scores, -1).reshape(-1) if active or not probs_after else probs_after[-1])
    final = probs_after[-1]
    u = draw_u(cfg.seed, position)
    chosen = force_token if force_token is not None else inverse_cdf(final, u)

    top = torch.topk(p_t1, min(top_n, vocab)).indices.tolist()
    ids = top if chosen in top else top + [chosen]
    shown = torch.tensor(ids)
    at_t1 = p_t1[shown]
    # Every token more probable than a top-N token is itself in the top N, so ranks can be counted here;
    # only a chosen token from outside the top N is counted against the whole vocabulary.
    ranks = [int((at_t1[:len(top)] > v).sum()) + 1 for v in at_t1[:len(top)]]
    if len(ids) > len(top):
        ranks.append(int((p_t1 > p_t1[chosen]).sum()) + 1)
    per_stage = torch.stack([p[shown] for p in probs_after]).tolist()  # (stages, candidates)
    names = [name for name, _, _ in staged]
    candidates = candidate_records(ids, chosen, names, per_stage, raw[shown].tolist(), at_t1.tolist(), ranks, tokens)
    summaries, entropy_final = stage_summaries(
        names, [active for _, active, _ in staged],
        [still_drawable(scores) if active else None for _, active, scores in staged],
        [entropy_bits(p) if active else None for (_, active, _), p in zip(staged, probs_after)], vocab, entropy_t1)
    return Distribution(
        position=position,
        config=cfg,
        candidates=candidates,
        stages=summaries,
        tail_mass_t1=max(0.0, 1.0 - float(p_t1[shown].sum())),
        tail_mass_final=max(0.0, 1.0 - float(final[shown].sum())),
        entropy_t1_bits=entropy_t1,
        entropy_final_bits=entropy_final,
        u=u,
        chosen=tokens.info(chosen),
        chosen_rank=ranks[ids.index(chosen)],
        chosen_logprob_t1=float(torch.log_softmax(raw, -1)[chosen]),
        chosen_final_prob=float(final[chosen]),
        draw_cum_before=_mass_ahead(final, chosen),
        forced=force_token is not None,
    )


def candidate_records(ids: list[int], chosen: int, names: list[str], per_stage: list[list[float]],
                      logits_shown: list[float], t1_shown: list[float], ranks: list[int], tokens: TokenDisplay,
                      ) -> list[Candidate]:
    """The shown candidates as records, from plain numbers: ids (top N by T = 1 probability, then the chosen token if
    outside them), per_stage[s][j] the probability of ids[j] after stage names[s], their raw logits, T = 1
    probabilities and ranks. A candidate's fate is the first stage that left it probability 0 (derive's and
    batch_sampling.derive_batch's records are made here, from their own numbers)."""
    candidates = []
    for j, i in enumerate(ids):
        column = [row[j] for row in per_stage]
        cut_by = next((name for name, q in zip(names, column) if q == 0), None)
        fate = "chosen" if i == chosen else ("kept" if cut_by is None else ("greedy" if cut_by == "temperature" else cut_by))
        candidates.append(
            Candidate(
                token=tokens.info(i),
                logit=logits_shown[j],
                prob_t1=t1_shown[j],
                stage_probs=dict(zip(names, column)),
                final_prob=column[-1],
                fate=fate,
                rank=ranks[j],
            )
        )
    return candidates


def stage_summaries(names: list[str], actives: list[bool], kept: list[int | None], entropies: list[float | None],
                    vocab: int, entropy_t1: float) -> tuple[list[StageSummary], float]:
    """Each stage's summary and the final entropy (bits), from plain numbers: kept[s] (still_drawable) and
    entropies[s] for an active stage (None for an inactive one, which leaves the previous stage's)."""
    summaries, kept_before, entropy_before = [], vocab, entropy_t1
    for name, active, drawable, entropy in zip(names, actives, kept, entropies):
        now = drawable if active else kept_before
        entropy = entropy if active else entropy_before
        summaries.append(StageSummary(name, active, now, kept_before - now, entropy))
        kept_before, entropy_before = now, entropy
    return summaries, entropy_before


def still_drawable(scores: torch.Tensor) -> int:
    """How many tokens a stage left in the draw: those whose score it did not set to -inf. Not `p > 0`: at a low
    temperature most probabilities underflow to 0 in float32 (at T = 0.1 a token 10 logits below the top has
    p ~ e^-100), which would read as if temperature had removed them; it removes none, top-k / top-p / min-p do."""
    return int((scores > float("-inf")).sum())


@on_one_thread
def temperature_sweep(
    logits: torch.Tensor, context_ids: torch.Tensor, cfg: SamplingConfig, temperatures: list[float]
) -> TemperatureSweep:
    """Entropy and kept-set size of the final distribution at each temperature, other settings held."""
    from dataclasses import replace

    entropy, size = [], []
    for t in temperatures:
        scores = run_stages(logits, context_ids, replace(cfg, temperature=float(t)))[-1][2]
        p = torch.softmax(scores, -1).reshape(-1)
        entropy.append(entropy_bits(p))
        size.append(still_drawable(scores))
    return TemperatureSweep([float(t) for t in temperatures], entropy, size, cfg.top_p)
