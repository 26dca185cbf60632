"""Training versus generation: one parallel forward pass scores every position of a text (teacher forcing).

Generation is serial: step t needs the token chosen at step t - 1. Training is not: every input is a true token,
so one pass over the whole text gives the next-token distribution at every position at once
(docs/what-it-teaches.md: Training versus generation). Here: that pass over any token ids, its comparison
with a session's stepwise cached decoding (same logits up to float error, far less time), and scoring a pasted
text GLTR-style. Records: model/inside/chain.py.

On an engine's model the pass is ONE completions request with prompt_logprobs (EngineClient.prompt_logprobs):
each token's log-probability and rank and the top-1 beside it, the same TeacherForcing record (no entropy: the
engine sends no whole distribution), compared with the session's steps, each of them its own request.
"""
from __future__ import annotations

import math
import os
from typing import NamedTuple

import torch

from model.inside.chain import GLTR_EDGES, RANK_EDGES, LogitDiff, PositionScore, StepwiseComparison, TeacherForcing, rank_bucket
from model.errors import SessionError
from model.decoding.loading import LoadedModel
from model.decoding.passes import PREFILL_CHUNK, prefill
from model.vllm.client import EnginePromptLogprobs
from model.vllm.session import EngineModel
from model.decoding.session import MAX_PROMPT_TOKENS, DecodeSession, encode_prompt
from model.decoding.timing import spread
from model.decoding.core import computation

LN2 = math.log(2)
# A pasted text is refused for the same reasons as a prompt; the words say 'text', since nothing continues it.
_TEXT_REFUSALS = {"prompt_empty": "score_empty", "prompt_too_long": "score_too_long",
                  "prompt_invalid_text": "score_invalid_text", "prompt_special_token": "score_special_token",
                  "prompt_too_many_tokens": "score_too_many_tokens"}


class ParallelPass(NamedTuple):
    """The logits of one forward pass over a whole sequence."""

    logits: torch.Tensor  # (T, V) float32: row t is the distribution of the token at t + 1
    ms: float  # wall time of the passes (waiting for a turn not counted)
    threads: int  # torch threads it ran on


@torch.no_grad()
def parallel_pass(lm: LoadedModel, ids: list[int], chunk: int = PREFILL_CHUNK) -> ParallelPass:
    """ids through the model in parallel, logits kept for every position, on every core.

    Each pass is a turn at the model's scheduler (passes.prefill): a text longer than `chunk` goes in chunks with the
    cache between them, so the class's steps go between them; chunk=len(ids) keeps it ONE pass (the Training
    view times that pass).
    """
    if len(ids) < 2:
        raise SessionError("teacher_too_short", n=len(ids))
    done = prefill(lm.model, ids, keep=len(ids), chunk=chunk, cache=False)  # as training: no cache kept
    return ParallelPass(done.logits.float(), done.ms, os.cpu_count() or 1)


@torch.no_grad()
def score_positions(lm: LoadedModel, ids: list[int], run: ParallelPass, prompt_len: int = 0,
                    edges: tuple[int, ...] = RANK_EDGES) -> TeacherForcing:
    """The TeacherForcing record of one pass: per position t >= 1, how the model predicted ids[t] from ids[:t]."""
    logits = run.logits[:-1]  # (T - 1, V): the last row predicts a token not in the text
    target = torch.tensor(ids[1:])  # (T - 1,)
    logp = torch.log_softmax(logits, -1)  # normalised over the full vocabulary
    probs = logp.exp()
    lp = logp.gather(1, target[:, None])[:, 0]  # (T - 1,) ln P(x_t | x_<t)
    p = probs.gather(1, target[:, None])  # (T - 1, 1)
    ranks = ((probs > p).sum(1) + 1).tolist()  # as derive() counts a rank: tokens strictly more probable, plus one
    top1_p, top1 = probs.max(1)
    entropy = (torch.special.entr(probs).sum(1) / LN2).tolist()  # bits
    return _record(lm, ids, lp.tolist(), ranks, top1.tolist(), top1_p.tolist(), entropy, prompt_len, edges,
                   run.ms, run.threads)


def _record(lm, ids: list[int], logprobs: list[float], ranks: list[int], top1: list[int], top1_p: list[float],
            entropy: list[float], prompt_len: int, edges: tuple[int, ...], ms: float, threads: int,
            on_engine: bool = False) -> TeacherForcing:
    """The TeacherForcing record from per-position numbers (index t - 1 for position t): ln P of the actual token,
    its rank, the top-1 token and its probability, the distribution's entropy in bits."""
    positions = []
    for i, (token, rank) in enumerate(zip(ids[1:], ranks)):
        positions.append(PositionScore(
            position=i + 1, token=lm.tokens.info(token), prob=math.exp(logprobs[i]), logprob=logprobs[i], rank=rank,
            top1=lm.tokens.info(top1[i]), top1_prob=top1_p[i], differs=top1[i] != token,
            cross_entropy_nats=-logprobs[i], cross_entropy_bits=-logprobs[i] / LN2, entropy_bits=entropy[i],
            bucket=rank_bucket(rank, edges), in_prompt=i + 1 < prompt_len,
        ))
    total = sum(logprobs)
    loss = -total / len(logprobs)
    return TeacherForcing(
        tokens=[lm.tokens.info(i) for i in ids], positions=positions, prompt_len=prompt_len, mean_loss_nats=loss,
        total_logprob=total, perplexity=math.exp(loss), forward_ms=ms, threads=threads, edges=tuple(edges),
        on_engine=on_engine,
    )


def engine_pass(lm: EngineModel, ids: list[int]) -> EnginePromptLogprobs:
    """ids scored by the model's engine in one request; the engine's faults are its keyed SessionErrors."""
    if len(ids) < 2:
        raise SessionError("teacher_too_short", n=len(ids))
    if len(ids) > lm.info.context:  # as a step is refused (EngineBackend); at the limit the engine says so itself
        raise SessionError("engine_context", limit=lm.info.context)
    return lm.client.prompt_logprobs(ids)


def engine_positions(lm: EngineModel, answer: EnginePromptLogprobs, prompt_len: int = 0,
                     edges: tuple[int, ...] = RANK_EDGES) -> TeacherForcing:
    """The TeacherForcing record of one engine request: the engine's own log-probabilities and ranks (entropy nan:
    the engine sends the top-1, not the distribution; threads 0: the engine's, not known here)."""
    return _record(lm, list(answer.ids), list(answer.logprobs), list(answer.ranks), list(answer.top1_ids),
                   [math.exp(lp) for lp in answer.top1_logprobs], [math.nan] * len(answer.logprobs), prompt_len,
                   edges, answer.ms, 0, on_engine=True)


@computation
def teacher_forcing(lm: LoadedModel | EngineModel, ids: list[int], prompt_len: int = 0,
                    edges: tuple[int, ...] = RANK_EDGES) -> TeacherForcing:
    """Every position of `ids` scored in parallel (on an engine's model: in one request); tokens before
    `prompt_len` are marked in_prompt."""
    if isinstance(lm, EngineModel):
        return engine_positions(lm, engine_pass(lm, ids), prompt_len, edges)
    return score_positions(lm, ids, parallel_pass(lm, ids), prompt_len, edges)


def session_teacher_forcing(session: DecodeSession) -> TeacherForcing:
    """A session's text scored in one pass: its local model's through whole_text (the model's core, one core), or one
    request to its engine."""
    if session.capabilities.runs_locally:
        text = session.whole_text()
        return text.run(teacher_forcing, text.prompt_len)
    with session.reading():
        session._require_started()
        ids, prompt_len = list(session.ids), session.prompt_len
    return teacher_forcing(session.lm, ids, prompt_len)


PARALLEL_RUNS = 3  # timed runs of the one pass, after a warm-up; the median is shown with its range


class ParallelRuns(NamedTuple):
    """What compare_stepwise asks of the model's core: the one pass over a text, timed."""

    record: TeacherForcing  # the median run's teacher-forcing record
    timed: object  # timing.Spread of the runs' ms (median, fastest, slowest, runs)
    rows: list[list[float]]  # per asked position, the pass's logits at the asked token ids
    last: torch.Tensor  # (V,) the pass's logits after the last token
    threads: int


@computation
@torch.no_grad()
def parallel_runs(lm: LoadedModel, ids: list[int], prompt_len: int,
                  asked: list[tuple[int, list[int]]]) -> ParallelRuns:
    """ONE pass over `ids`, as training runs it (the Training view times it; at most a session's 512 tokens): an
    untimed warm-up (a first pass of a new length runs slow), then PARALLEL_RUNS timed; its turn still lets the
    waiting decode steps go before it. The median run's record, and its logits at each asked (position, token ids)."""
    parallel_pass(lm, ids, chunk=len(ids))
    runs = [parallel_pass(lm, ids, chunk=len(ids)) for _ in range(PARALLEL_RUNS)]
    timed = spread([r.ms for r in runs])
    run = min(runs, key=lambda r: abs(r.ms - timed.median))  # the median run (3 runs): its logits and its time
    rows = [run.logits[position - 1, torch.tensor(tokens)].tolist() for position, tokens in asked]
    return ParallelRuns(score_positions(lm, ids, run, prompt_len), timed, rows, run.logits[-1].clone(), run.threads)


def compare_stepwise(session: DecodeSession) -> tuple[TeacherForcing, StepwiseComparison]:
    """One parallel pass over a session's prompt and generated tokens, against the steps that generated them.

    Returns the pass's teacher-forcing record (the prompt's own positions included: the prefill kept only its
    last position's logits) and the comparison: at each step, the largest |logit difference| over the step's
    recorded candidates (Candidate.logit, raw model logits) and on the chosen token; over the whole vocabulary at
    the position after the last token; and the measured time of the one pass (an untimed warm-up, then the median
    of PARALLEL_RUNS with their range) against the generated tokens' own steps (not the prefill, itself one pass).
    The pass runs in the model's core (parallel_runs). On an engine's model: compare_on_engine.
    """
    if not session.capabilities.runs_locally:
        return compare_on_engine(session)
    with session.reading():  # the ids, steps and next logits that belong together
        text = session.whole_text()
        steps, prefill_ms, next_logits = list(session.steps), session.prefill.timings.forward_ms, session.next_logits
    asked = [(s.position, [c.token.id for c in s.distribution.candidates]) for s in steps]
    done = text.run(parallel_runs, text.prompt_len, asked)
    diffs = []
    for s, row in zip(steps, done.rows):
        cands = s.distribution.candidates
        parallel = torch.tensor(row, dtype=torch.float64)  # the logits the step's token was chosen from
        stepwise = torch.tensor([c.logit for c in cands], dtype=torch.float64)
        gaps = (parallel - stepwise).abs()
        chosen = next(i for i, c in enumerate(cands) if c.token.id == s.token.id)
        diffs.append(LogitDiff(step=s.step, position=s.position, max_abs_diff=float(gaps.max()),
                               chosen_abs_diff=float(gaps[chosen]),
                               same_top1=int(parallel.argmax()) == int(stepwise.argmax())))
    comparison = StepwiseComparison(
        diffs=diffs, max_abs_diff=max((d.max_abs_diff for d in diffs), default=0.0),
        next_max_abs_diff=float((done.last - next_logits.float()).abs().max()), parallel_ms=done.timed.median,
        prefill_ms=prefill_ms, steps_ms=[s.timings.forward_ms for s in steps], tokens=len(text.ids),
        threads=done.threads, parallel_range=(done.timed.low, done.timed.high), parallel_runs=done.timed.runs,
    )
    return done.record, comparison


def compare_on_engine(session: DecodeSession) -> tuple[TeacherForcing, StepwiseComparison]:
    """compare_stepwise on an engine's model: ONE prompt_logprobs request over the session's text against its steps.

    Each step's record holds the engine's log-probabilities from its own request (Candidate.logit: the engine
    sends no logits). Per step: the largest |difference| over the chosen token and the request's top-1 (where the
    step's candidates hold it); after the last token, over the engine's top N against the session's last answer.
    Times: the one request's wall time against the steps' requests (their recorded forward_ms), one run each:
    repeating the request would measure the engine again, not the steps. The session is only read.
    """
    with session.reading():
        session._require_started()
        ids, steps, prompt_len = list(session.ids), list(session.steps), session.prompt_len
        prefill_ms, next_logprobs = session.prefill.timings.forward_ms, session.next_logits  # (V,) -inf: not sent
    answer = engine_pass(session.lm, ids)
    record = engine_positions(session.lm, answer, prompt_len)
    diffs = []
    for s in steps:
        t = s.position - 1  # the request's index of the step's position
        known = {c.token.id: c.logit for c in s.distribution.candidates if math.isfinite(c.logit)}
        known[s.token.id] = s.distribution.chosen_logprob_t1  # a forced token outside the N: the step asked for it
        chosen = abs(answer.logprobs[t] - known[s.token.id])
        gaps = [chosen] + ([abs(answer.top1_logprobs[t] - known[answer.top1_ids[t]])]
                           if answer.top1_ids[t] in known else [])
        stepwise_top1 = max(known, key=lambda i: (known[i], -i))
        diffs.append(LogitDiff(step=s.step, position=s.position, max_abs_diff=max(gaps), chosen_abs_diff=chosen,
                               same_top1=stepwise_top1 == answer.top1_ids[t]))
    after = [abs(lp - float(next_logprobs[i])) for i, lp in zip(answer.next.ids, answer.next.logprobs)
             if math.isfinite(float(next_logprobs[i]))]
    comparison = StepwiseComparison(
        diffs=diffs, max_abs_diff=max((d.max_abs_diff for d in diffs), default=0.0),
        next_max_abs_diff=max(after, default=0.0), parallel_ms=answer.ms, prefill_ms=prefill_ms,
        steps_ms=[s.timings.forward_ms for s in steps], tokens=len(ids), threads=0,
        parallel_range=(answer.ms, answer.ms), parallel_runs=1, on_engine=True,
    )
    return record, comparison


@computation
def score_text(lm: LoadedModel | EngineModel, text: str, max_tokens: int = MAX_PROMPT_TOKENS,
               edges: tuple[int, ...] = GLTR_EDGES) -> TeacherForcing:
    """Score a pasted text (raw, no chat template) as GLTR does: each token's rank and probability, in one pass,
    bucketed by GLTR's own edges (top 10 / 100 / 1,000 / beyond) unless `edges` says otherwise.

    It is tokenized exactly as a raw prompt is (DecodeSession.encode_prompt: the same limits, special tokens
    refused), and refused with a SessionError keyed score_*; the first token has nothing before it to predict it
    from, so a text needs at least two tokens.
    """
    return teacher_forcing(lm, scored_ids(lm, text, max_tokens), prompt_len=0, edges=edges)


def scored_ids(lm: LoadedModel | EngineModel, text: str, max_tokens: int = MAX_PROMPT_TOKENS) -> list[int]:
    """The ids score_text would score `text` as, or its refusal (keyed score_*), with no pass: a caller scoring one
    text on several models checks it on each before the first pass."""
    try:
        ids = encode_prompt(lm, text, chat=False, max_prompt_tokens=max_tokens)
    except SessionError as err:
        if err.key not in _TEXT_REFUSALS:
            raise
        key = _TEXT_REFUSALS[err.key]  # the same reason, said of a text
        raise SessionError(key, **err.params) from None
    if len(ids) < 2:
        raise SessionError("score_too_short", n=len(ids))
    return ids
