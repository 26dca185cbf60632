"""The sampling pipeline over a batch: every row's stages, cuts, draw and record from one set of tensor operations.

sampling.derive() is the reference, one logit vector at a time; derive_batch() gives each row of a (B, V) batch
exactly the Distribution derive() gives it (tests/test_batch_sampling.py), as vLLM's Sampler works on the whole batch
at once (vllm/v1/sample/sampler.py: one pass of each stage over a (batch, vocab) tensor, each row's settings a column
of parameters) instead of request by request. The batcher (batcher.py) runs it once per decode pass for the
sessions that computed ahead, so a class's step costs one pipeline over the batch, not one per session.

Rows are grouped by which stages they run and how (the stage order, a constraint, greedy or a temperature, each
cut on or off): within a group every stage is one tensor operation over the group's rows, its settings read from
each row's own Hugging Face processor (sampling.stage_processor, so a setting means here what it means there), in the same
float32 / float64 arithmetic those processors use. The draw walks a sorted head of the final distribution, as
sampling.inverse_cdf does; a row whose landing is not clear of the head's cut takes inverse_cdf itself.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from model.errors import SessionError
from model.decoding.records import Distribution, SamplingConfig
from model.decoding.sampling import (GRAMMAR, TOP_N, greedy, stage_processor, candidate_records, draw_u, inverse_cdf,
                                     stage_names, stage_summaries)
from model.decoding.tokens import TokenDisplay
from model.decoding.threads import on_one_thread

HEAD = 256  # the draw's first sorted head, as inverse_cdf's


@dataclass(frozen=True)
class SampleRow:
    """What one row's record needs besides its logits: derive()'s other arguments."""

    context: list[int]  # the tokens so far (the repetition penalty's)
    cfg: SamplingConfig
    position: int  # index the next token will take
    tokens: TokenDisplay
    force_token: int | None = None  # the user's token instead of the draw
    allowed: torch.Tensor | None = None  # (V,) bool, a constraint's allowed tokens; None: no constraint
    top_n: int = TOP_N


def _plan(row: SampleRow) -> tuple:
    """The row's stages as (name, processor or None when off), in the order they run (sampling.stage_names)."""
    return tuple((name, None if name == GRAMMAR else stage_processor(name, row.cfg))
                 for name in stage_names(row.cfg, row.allowed is not None))


def _signature(plan: tuple, row: SampleRow) -> tuple:
    """Rows with one signature run the same tensor operations: the same stages, each off, greedy or its kind."""
    kinds = tuple((name, "on" if name == GRAMMAR else None if p is None else "greedy" if p is greedy else type(p).__name__)
                  for name, p in plan)
    return kinds, row.top_n


@on_one_thread
@torch.no_grad()
def derive_batch(logits: torch.Tensor, rows: list[SampleRow]) -> list[Distribution]:
    """derive(logits[i], rows[i]...) for every row i, computed over the batch: (B, V) logits, B rows, B records.

    Raises SessionError as derive() does for a row's settings out of range or a forced token outside the vocabulary.
    """
    batch, vocab = logits.shape
    if batch != len(rows):
        raise ValueError(f"derive_batch: {batch} rows of logits for {len(rows)} rows of settings")
    for row in rows:
        row.cfg.validate()
        token = row.force_token
        if token is not None and not (isinstance(token, int) and 0 <= token < vocab):
            raise SessionError("forced_token_invalid", vocab=vocab, token=token)
    plans = [_plan(row) for row in rows]
    groups: dict[tuple, list[int]] = {}
    for i, (plan, row) in enumerate(zip(plans, rows)):
        groups.setdefault(_signature(plan, row), []).append(i)
    out: list[Distribution | None] = [None] * batch
    raw = logits.float()  # (B, V)
    for members in groups.values():
        index = torch.tensor(members)
        dists = _derive_group(raw.index_select(0, index) if len(members) < batch else raw,
                              [rows[i] for i in members], [plans[i] for i in members])
        for i, dist in zip(members, dists):
            out[i] = dist
    return out


def _derive_group(raw: torch.Tensor, rows: list[SampleRow], plans: list[tuple]) -> list[Distribution]:
    """derive() for rows that run the same stages (raw: (G, V) float32)."""
    vocab = raw.shape[-1]
    names = [name for name, _ in plans[0]]
    actives = [name == GRAMMAR or p is not None for name, p in plans[0]]
    p_t1 = torch.softmax(raw, -1)  # (G, V), normalised over the full vocabulary
    entropy_t1 = _entropy_bits(p_t1)
    scores, probs, probs_after, kept, entropies = raw, None, [], [], []
    for s, (name, active) in enumerate(zip(names, actives)):
        if active:
            scores = _apply(name, [plan[s][1] for plan in plans], rows, scores)  # (G, V), a new tensor
            probs = torch.softmax(scores, -1)
        elif probs is None:  # an inactive stage leaves the distribution as it was: the first, the raw one's
            probs = p_t1
        probs_after.append(probs)
        kept.append((scores > float("-inf")).sum(-1).tolist() if active else None)
        entropies.append(_entropy_bits(probs) if active else None)
    final = probs_after[-1]
    u = [draw_u(row.cfg.seed, row.position) for row in rows]
    drawn, walked = _draw(final, u)
    chosen = [row.force_token if row.force_token is not None else token for row, token in zip(rows, drawn)]

    top_n = min(rows[0].top_n, vocab)
    top = torch.topk(p_t1, top_n).indices  # (G, N)
    chosen_t = torch.tensor(chosen).reshape(-1, 1)  # (G, 1)
    shown = torch.cat([top, chosen_t], 1)  # (G, N + 1): the top N, then the chosen token
    outside = (top != chosen_t).all(1).tolist()  # the chosen token is shown after the top N
    at_t1 = p_t1.gather(1, shown)  # (G, N + 1)
    # a top-N token's rank counts the top-N tokens more probable than it (every token more probable is among them);
    # a chosen token from outside, the whole vocabulary's
    ranks_top = ((at_t1[:, None, :top_n] > at_t1[:, :top_n, None]).sum(-1) + 1).tolist()  # (G, N)
    rank_outside = {g: int((p_t1[g] > at_t1[g, top_n]).sum()) + 1 for g, out in enumerate(outside) if out}
    per_stage = torch.stack([p.gather(1, shown) for p in probs_after], 1).tolist()  # (G, stages, N + 1)
    logits_shown, t1_shown = raw.gather(1, shown).tolist(), at_t1.tolist()
    final_shown = final.gather(1, shown)  # (G, N + 1)
    logprob = torch.log_softmax(raw, -1).gather(1, chosen_t)[:, 0].tolist()
    ahead = _mass_ahead(final, chosen_t, final_shown[:, top_n],
                        [None if row.force_token is not None else ids for row, ids in zip(rows, walked)])
    chosen_final = final_shown[:, top_n].tolist()

    out = []
    for g, row in enumerate(rows):
        ids = top[g].tolist() + ([chosen[g]] if outside[g] else [])
        width = len(ids)  # a row's sums below run over its own row, in derive()'s order: its numbers to the bit
        ranks = ranks_top[g] + ([rank_outside[g]] if outside[g] else [])
        candidates = candidate_records(ids, chosen[g], names, [column[:width] for column in per_stage[g]],
                                       logits_shown[g][:width], t1_shown[g][:width], ranks, row.tokens)
        summaries, entropy_final = stage_summaries(names, actives, [k and k[g] for k in kept],
                                                   [e and e[g] for e in entropies], vocab, entropy_t1[g])
        out.append(Distribution(
            position=row.position,
            config=row.cfg,
            candidates=candidates,
            stages=summaries,
            tail_mass_t1=max(0.0, 1.0 - float(at_t1[g, :width].sum())),
            tail_mass_final=max(0.0, 1.0 - float(final_shown[g, :width].sum())),
            entropy_t1_bits=entropy_t1[g],
            entropy_final_bits=entropy_final,
            u=u[g],
            chosen=row.tokens.info(chosen[g]),
            chosen_rank=ranks[ids.index(chosen[g])],
            chosen_logprob_t1=logprob[g],
            chosen_final_prob=chosen_final[g],
            draw_cum_before=ahead[g],
            forced=row.force_token is not None,
        ))
    return out


def _entropy_bits(probs: torch.Tensor) -> list[float]:
    """Each row's Shannon entropy in bits: sampling.entropy_bits of each row. Its terms over the group at once, their
    sum row by row: a (G, V) tensor's sum over its rows adds in another order than a (V,) vector's, which moves a
    12-bit entropy by 1e-6 in float32; a row's sum is then derive()'s, to the bit."""
    return [float(terms.sum()) / math.log(2) for terms in torch.special.entr(probs)]


def _column(values, dtype) -> torch.Tensor:
    """One setting per row as a (G, 1) column, for a stage over the group."""
    return torch.tensor(values, dtype=dtype).reshape(-1, 1)


def _apply(name: str, stages: list, rows: list[SampleRow], scores: torch.Tensor) -> torch.Tensor:
    """One stage over a group's (G, V) scores, each row with its own setting (read from its own processor): what
    the processor does to one row, in the same dtypes, so every row's numbers are the processor's."""
    vocab = scores.shape[-1]
    inf = float("-inf")
    first = stages[0]
    if name == GRAMMAR:  # PrefixConstrainedLogitsProcessor: a token outside the allowed set gets -inf
        allowed = torch.stack([row.allowed.reshape(-1) for row in rows])
        return scores.masked_fill(~allowed, inf)
    if name == "repetition_penalty":  # RepetitionPenaltyLogitsProcessor, as its own batched path (a token mask)
        longest = max(len(row.context) for row in rows)
        context = torch.full((len(rows), max(longest, 1)), vocab, dtype=torch.long)  # vocab: padding, dropped below
        for g, row in enumerate(rows):
            context[g, : len(row.context)] = torch.tensor(row.context, dtype=torch.long).clamp(max=vocab)
        seen = torch.zeros(len(rows), vocab + 1, dtype=torch.bool).scatter_(1, context, True)[:, :vocab]
        penalty = _column([stage.penalty for stage in stages], torch.float32)  # 1 / the setting, as the processor's
        return torch.where(seen, torch.where(scores < 0, scores * penalty, scores / penalty), scores)
    if first is greedy:  # T = 0: the argmax alone
        keep = scores.argmax(dim=-1, keepdim=True)
        return torch.full_like(scores, inf).scatter(-1, keep, scores.gather(-1, keep))
    if name == "temperature":  # sampling._ShiftedTemperature: max shifted to 0, divided in float64
        shifted = scores.double() - scores.max(dim=-1, keepdim=True).values.double()
        return (shifted / _column([stage.warper.temperature for stage in stages], torch.float64)).to(scores.dtype)
    if name == "top_k":  # TopKLogitsWarper: below each row's k-th largest score
        k = [min(stage.top_k, vocab) for stage in stages]
        kth = torch.topk(scores, max(k)).values.gather(1, _column(k, torch.long) - 1)  # (G, 1)
        return scores.masked_fill(scores < kth, inf)
    if name == "top_p":  # TopPLogitsWarper: the ascending tail whose cumulative probability stays <= 1 - p
        ascending, order = torch.sort(scores, descending=False)
        cumulative = ascending.softmax(dim=-1).cumsum(dim=-1)
        remove = cumulative <= _column([1 - stage.top_p for stage in stages], torch.float32)
        remove[..., -1:] = False  # min_tokens_to_keep = 1
        return scores.masked_fill(remove.scatter(1, order, remove), inf)
    if name == "min_p":  # MinPLogitsWarper: below min_p times the row's top probability
        probs = torch.softmax(scores, dim=-1)
        remove = probs < _column([stage.min_p for stage in stages], torch.float32) * probs.amax(dim=-1, keepdim=True)
        remove.scatter_(-1, torch.topk(probs, 1, dim=-1).indices, False)
        return scores.masked_fill(remove, inf)
    raise ValueError(f"no batched stage {name!r}")


def _draw(probs: torch.Tensor, u: list[float]) -> tuple[list[int], list[torch.Tensor | None]]:
    """inverse_cdf(probs[g], u[g]) for every row: one sorted head of HEAD tokens over the group (most probable first,
    ties by id), its running sums in float64; a row whose landing is not clear of the head's cut (a flat distribution
    and a u near 1) walks on with inverse_cdf itself. The same token either way (inverse_cdf's reasoning).

    Returns the tokens and, for each row drawn in the head, the ids walked past before its token (the kept tokens
    ahead of it in draw order: _mass_ahead's), else None.
    """
    vocab = probs.shape[-1]
    kept = torch.count_nonzero(probs, dim=-1)  # (G,) probabilities are >= 0: the kept tokens
    targets = [x * float(total) for x, total in zip(u, probs.double().sum(-1))]  # a row's sum: inverse_cdf's
    k = min(HEAD, vocab)
    vals, idx = torch.topk(probs, k)  # (G, k); a row with fewer kept tokens has zeros after them
    idx, by_id = torch.sort(idx)  # ascending ids, so the stable sort below breaks ties by id
    vals, order = torch.sort(vals.gather(1, by_id), descending=True, stable=True)
    idx = idx.gather(1, order)
    cum = torch.cumsum(vals.double(), 1)
    head = torch.clamp(kept, max=k)  # (G,) the tokens of the head that are kept
    landing = torch.searchsorted(cum, torch.tensor(targets, dtype=torch.float64).reshape(-1, 1), right=True)[:, 0]
    landing = torch.minimum(landing, head - 1)
    last = vals.gather(1, (head - 1).reshape(-1, 1))[:, 0]
    clear = (head == kept) | ((landing < head - 1) & (vals.gather(1, landing.reshape(-1, 1))[:, 0] > last))
    tokens, walked = [], []
    for g, (at, ok) in enumerate(zip(landing.tolist(), clear.tolist())):
        tokens.append(int(idx[g, at]) if ok else inverse_cdf(probs[g], u[g]))
        walked.append(idx[g, :at] if ok else None)
    return tokens, walked


def _mass_ahead(final: torch.Tensor, chosen: torch.Tensor, chosen_p: torch.Tensor,
                walked: list[torch.Tensor | None]) -> list[float | None]:
    """sampling._mass_ahead for every row: the final probability of the kept tokens ahead of the chosen one in draw
    order (more probable, or as probable with a smaller id); None for a chosen token outside the kept set.

    A token drawn in the head has them all before it there (walked[g]): their probabilities in id order, summed as
    _mass_ahead sums them, without a pass over the vocabulary. A forced token's are found in the whole row.
    """
    out = []
    for g, (row, q) in enumerate(zip(final, chosen_p.tolist())):
        if q <= 0:
            out.append(None)
            continue
        if walked[g] is not None:
            ahead = row[torch.sort(walked[g]).values]
        else:
            ids = torch.arange(row.shape[0])
            ahead = row[(row > q) | ((row == q) & (ids < chosen[g]))]
        out.append(float(ahead.double().sum()))
    return out
