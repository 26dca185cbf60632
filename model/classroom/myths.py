"""Interview myths tested live (issue 35): the reveal records of the questions that measure a wrong answer on this
machine instead of looking it up. Plain numbers out (ms, probabilities in [0, 1], natural-log probabilities); the
page says them (ui/views/lesson.py) and draws them (viz/lesson.py, viz/kv_cache.py).

  step_time       "with a KV cache each step is O(1)": the KV cache view's own measurement (measure_cache_timing,
                  through the session's whole-text runner, each pass a turn at the model's scheduler) at a few lengths,
                  a straight line fitted to the cached step's times, and a verdict by a stated rule (STEP_GROWTH)
  kept_count      "top-p keeps the top p percent of tokens": top-p's kept count against p x vocabulary
  beam_vs_sample  "beam search finds the best text": beam search's text against sampling's, each scored by one
                  forward pass (sum of log-probabilities), with their repeats
"""
from __future__ import annotations

import torch

from model.decoding.branches import repeated_ngrams
from model.decoding.passes import prefill
from model.decoding.timing import MIN_RUNS, default_lengths, measure_cache_timing, separated, Spread
from model.decoding.records import SamplingConfig
from model.strategies.beams import beam_search, sampled_continuation, summarize
from model.decoding.core import computation

STEP_LENGTHS = 4  # lengths measured by a step_time question: a lesson's reveal stays a few seconds
STEP_REPEATS = 3  # timed runs of each length (model.decoding.timing.MIN_RUNS: fewer cannot conclude)
STEP_BUDGET_S = 6.0  # runs after the first stop here (the KV view's Measure takes 4 s at 512 tokens)
STEP_GROWTH = 0.10  # "grows": the fitted time at the longest length at least 10 % above the fitted time at the shortest
NUCLEUS_SHOWN = 12  # tokens of top-p's kept set a reveal lists


# ---- step_time ---------------------------------------------------------------------------------------------
def step_lengths(tokens: int) -> list[int]:
    """The lengths a step_time question measures: STEP_LENGTHS, geometrically spaced up to `tokens`."""
    return default_lengths(tokens, STEP_LENGTHS)


def long_text(ids: list[int], tokens: int) -> list[int]:
    """The step's text repeated until it is `tokens` long: a cached step's cost depends on how many positions its
    attention reads, not on which tokens they hold, so a short prompt can be measured at a long length."""
    if not ids:
        raise ValueError("the step's text has no tokens")
    return (list(ids) * (tokens // len(ids) + 1))[:tokens]


def fitted_line(xs: list[int], ys: list[float]) -> tuple[float, float]:
    """(slope, intercept) of the least-squares line y = intercept + slope * x (numbers in, no torch)."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    return slope, my - slope * mx


# What a step_time question's measurement shows when the machine lets it, and what a guess is graded on when it
# does not: a cached step's attention still reads every cached key and value (docs/what-it-teaches.md, what the cache saves)
STEP_KNOWN = "grows"


def step_busy(short: Spread, long: Spread) -> str | None:
    """Why a step_time measurement could not conclude, or None: "few_runs" (fewer than MIN_RUNS runs at the shortest
    or the longest length fitted the time allowed: the machine was busy) or "overlap" (the two ends' runs overlapped:
    other work slowed some of them)."""
    if min(short.runs, long.runs) < MIN_RUNS:
        return "few_runs"
    return "overlap" if not short.high < long.low else None


def step_grade(guess: str | None, answer: str | None) -> tuple[bool | None, str]:
    """(right, what it was graded on) of a step_time guess: the measurement's verdict when it has one ("measured"),
    else the known answer, STEP_KNOWN ("known"): a committed guess is always graded, and a busy machine's
    measurement is never what grades it. right is None only without a guess."""
    graded_on = "measured" if answer is not None else "known"
    return (None if guess is None else guess == (answer if answer is not None else STEP_KNOWN)), graded_on


def step_verdict(fit_short: float, fit_long: float, short: Spread, long: Spread) -> str | None:
    """The rule a step_time reveal states: "grows" when the fitted line rises by at least STEP_GROWTH from the
    shortest length to the longest and every run at the longest was slower than every run at the shortest (the KV
    view's rule, timing.separated: at least three runs each, ranges apart); "same" when the fitted line rises by
    less than STEP_GROWTH, with at least three runs at each end; else None (too noisy to say on this machine now)."""
    rise = fit_long / fit_short - 1 if fit_short > 0 else float("inf")
    if rise >= STEP_GROWTH and separated(short, long):
        return "grows"
    if rise < STEP_GROWTH and min(short.runs, long.runs) >= 3:
        return "same"
    return None


def step_time_record(session, predict: dict, guess: str | None) -> dict:
    """A step_time question's reveal: the KV view's measurement of the step's text (repeated to predict["tokens"])
    at step_lengths(), the line fitted to the cached step's median ms, and the verdict (step_verdict).

    Keys: seq_len, cached_ms, full_ms (median ms per length), cached_range, full_range ((fastest, slowest) ms),
    runs, slope (ms per token), intercept (ms), fit_short, fit_long (the line at the shortest and longest length),
    separated (bool), growth (STEP_GROWTH), answer ("grows", "same" or None: the machine too busy to say), busy
    (step_busy's reason when answer is None), right and graded_on (step_grade: the known answer STEP_KNOWN, "known",
    grades a guess when the measurement cannot), tokens."""
    text = session.whole_text("engine_no_timing")
    tokens = predict["tokens"]
    ids, lengths = long_text(text.ids, tokens), step_lengths(tokens)
    timing = text.compute(measure_cache_timing, ids, lengths, STEP_REPEATS, STEP_BUDGET_S)
    slope, intercept = fitted_line(timing.seq_len, timing.cached_ms)
    short, long = (Spread(timing.cached_ms[i], *timing.cached_range[i], timing.runs[i]) for i in (0, -1))
    fit_short, fit_long = intercept + slope * lengths[0], intercept + slope * lengths[-1]
    answer = step_verdict(fit_short, fit_long, short, long)
    right, graded_on = step_grade(guess, answer)
    return {"kind": "step_time", "guess": guess, "right": right, "graded_on": graded_on, "known": STEP_KNOWN,
            "busy": None if answer is not None else step_busy(short, long), "answer": answer, "tokens": tokens, "seq_len": list(timing.seq_len), "cached_ms": list(timing.cached_ms),
            "full_ms": list(timing.full_ms), "cached_range": [list(r) for r in timing.cached_range],
            "full_range": [list(r) for r in timing.full_range], "runs": list(timing.runs), "slope": slope,
            "intercept": intercept, "fit_short": fit_short, "fit_long": fit_long,
            "separated": separated(short, long), "growth": STEP_GROWTH}


# ---- kept_count --------------------------------------------------------------------------------------------
def _top_p_seen(dist) -> tuple[int, str | None]:
    """(tokens top-p kept, the stage whose probabilities it cut: None for the T = 1 distribution)."""
    names = [s.name for s in dist.stages]
    at = names.index("top_p")
    return dist.stages[at].kept, names[at - 1] if at else None


def count_choices(session, cfg: SamplingConfig) -> list[int]:
    """A kept_count question's choices (token counts, ascending): the count top-p keeps at this step, p x the
    vocabulary (the wrong answer the lesson tests), the whole vocabulary, and one token."""
    kept, _ = _top_p_seen(session.preview(cfg))
    vocab = session.lm.info.vocab
    return sorted({kept, round(cfg.top_p * vocab), vocab, 1})


def kept_count_record(session, cfg: SamplingConfig, guess: str | None) -> dict:
    """A kept_count question's reveal. Keys: kept (tokens top-p keeps), p, vocab, myth (p x vocab, rounded), answer
    (str(kept)), nucleus: [(token display, its probability as top-p saw it, the running total)] for the first
    NUCLEUS_SHOWN kept tokens, most likely first; total (the kept set's probability: the first total to reach p)."""
    dist = session.preview(cfg)
    kept, before = _top_p_seen(dist)
    ranked = sorted(dist.candidates, key=lambda c: c.rank)[:kept]
    running, nucleus = 0.0, []
    for c in ranked:
        prob = c.stage_probs[before] if before else c.prob_t1
        running += prob
        nucleus.append((c.token.display, prob, running))
    vocab = session.lm.info.vocab
    return {"kind": "kept_count", "guess": guess, "right": None if guess is None else guess == str(kept),
            "answer": str(kept), "kept": kept, "p": cfg.top_p, "vocab": vocab, "myth": round(cfg.top_p * vocab),
            "nucleus": [list(n) for n in nucleus[:NUCLEUS_SHOWN]],
            "total": running if len(ranked) == kept else None}  # (past the record's candidates: not known here)


# ---- beam_vs_sample ----------------------------------------------------------------------------------------
@computation
@torch.no_grad()
def text_logprob(lm, prompt_ids: list[int], tokens: list[int]) -> float:
    """Natural log P of `tokens` after `prompt_ids` at T = 1: the sum of each token's log-probability, read from
    one forward pass over the whole text (in chunks of the scheduler's, each a turn)."""
    if not tokens:
        return 0.0
    done = prefill(lm.model, list(prompt_ids) + list(tokens), keep=len(tokens) + 1, cache=False)
    rows = torch.log_softmax(done.logits[:-1].float(), dim=-1)  # (len(tokens), vocab): the positions before each
    return float(rows[torch.arange(len(tokens)), torch.tensor(tokens)].sum())


def beam_vs_sample_record(session, predict: dict, cfg: SamplingConfig, guess: str | None) -> dict:
    """A beam_vs_sample question's reveal: beam search (predict["width"] beams, predict["tokens"] new tokens, length
    penalty 1, as the Beams view runs it) and the text the step's settings sample, from the step's prompt.

    Keys: texts: {"beam": ..., "sampled": ...}, each {text, tokens (ids), logprob (one forward pass), repeated
    (tokens inside a stretch of three or more that appeared earlier, as the Beams view marks them), ngrams (such
    stretches)}; answer: the one with the higher log P ("beam", "sampled", or "same" for equal texts); more_repeats:
    the one with more repeated tokens (or "same"); width, new_tokens."""
    text = session.whole_text()
    prompt = text.ids[: text.prompt_len]
    width, new_tokens = predict["width"], predict["tokens"]
    run = text.compute(beam_search, prompt, width, 1.0, new_tokens)
    sampled, _ = text.compute(sampled_continuation, prompt, cfg, new_tokens)
    texts = {}
    for name, tokens in (("beam", run.finished[0].tokens), ("sampled", sampled)):
        logprob = text.compute(text_logprob, prompt, tokens)
        summary = summarize(text.lm, name, 0, prompt, tokens, logprob)
        texts[name] = {"text": summary.text, "tokens": list(tokens), "logprob": logprob,
                       "repeated": summary.repeated_tokens,
                       "ngrams": len(repeated_ngrams(list(prompt) + list(tokens), len(prompt)))}
    beam, sample = texts["beam"], texts["sampled"]
    answer = "same" if beam["tokens"] == sample["tokens"] else "beam" if beam["logprob"] > sample["logprob"] \
        else "sampled"
    more = "same" if beam["repeated"] == sample["repeated"] else "beam" if beam["repeated"] > sample["repeated"] \
        else "sampled"
    return {"kind": "beam_vs_sample", "guess": guess, "right": None if guess is None else guess == answer,
            "answer": answer, "more_repeats": more, "texts": texts, "width": width, "new_tokens": new_tokens}
