"""Self-consistency: N sampled answers to one question and the greedy one, written together (one forward pass per
step over all rows, sharing the prompt's KV cache), each answer pulled out by a stated rule and voted on.

Row 0 is greedy (T = 0); row i (1..N) samples under the page's settings with the seed seed + i - 1, so it draws
exactly the u's a plain DecodeSession with that seed draws (draw_u(seed + i - 1, position)): sample i is the text
that session would write. All rows share the prompt, so no padding is needed; a finished row is fed its end token
until the others finish (its outputs are ignored).
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, replace

import torch

from model.errors import SessionError
from model.decoding.loading import LoadedModel, end_ids
from model.parse import whole_in_range
from model.decoding.records import SamplingConfig
from model.decoding.passes import prefill
from model.decoding.scheduler import model_pass
from model.decoding.sampling import draw_u, inverse_cdf, run_stages
from model.decoding.core import computation

MAX_SAMPLES = 16  # rows besides the greedy one: bounds a pass's batch
MAX_NEW_TOKENS = 48  # tokens per answer: bounds the passes
ANSWER_CHARS = 40  # an answer longer than this (a first line) is cut: the vote's labels stay short
NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
SWEEP_TEMPERATURES = (0.3, 0.7, 1.0, 1.5)


def extract_answer(text: str) -> str:
    """The answer a vote counts: the first number in the text (an optional minus sign, digits, optional decimals),
    read after every comma is removed (so 1,000 is 1000, and 1,2 is 12); if there is none, the first non-empty
    line, trimmed, lower-cased, without the full stops and exclamation marks that end it (. 。 ! ！), cut to its
    first ANSWER_CHARS characters. The page states the same rule (ui/strings.py, sc_answer_rule)."""
    number = NUMBER.search(text.replace(",", ""))
    if number:
        return number.group()
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return line.lower().rstrip(".。!！")[:ANSWER_CHARS]


@dataclass
class Sample:
    """One row's answer."""

    seed: int | None  # the seed of its draws (None: the greedy row)
    tokens: list[int]  # generated ids (the end token included when it wrote one)
    text: str
    answer: str  # extract_answer(text)
    logprob: float  # natural log P(text | prompt) at T = 1: the sum of its tokens' log-probabilities
    ended: bool  # True: it wrote an end token; False: it ran out of tokens


@dataclass
class ConsistencyRun:
    """N samples and the greedy answer to one question, and the vote."""

    prompt_ids: list[int]
    config: SamplingConfig
    greedy: Sample
    samples: list[Sample]
    seconds: float  # wall time of the whole batched run
    passes: int  # forward passes (the prompt's one, then one per step over all rows)

    def votes(self, first: int | None = None) -> list[tuple[str, int]]:
        """(answer, count) over the first `first` samples (all by default), most votes first, ties by first seen."""
        counts: dict[str, int] = {}
        for s in self.samples[:first]:
            counts[s.answer] = counts.get(s.answer, 0) + 1
        return sorted(counts.items(), key=lambda item: -item[1])  # stable: ties keep their first-seen order

    @property
    def majority(self) -> str:
        return self.votes()[0][0]

    def running(self, answer: str) -> list[float]:
        """Share of the first k samples that gave `answer`, for k = 1..N: how the vote moves as N grows."""
        hits, out = 0, []
        for k, s in enumerate(self.samples, start=1):
            hits += s.answer == answer
            out.append(hits / k)
        return out


@computation
@torch.no_grad()
def self_consistency(lm: LoadedModel, prompt_ids: list[int], cfg: SamplingConfig, n: int = 8,
                     max_new_tokens: int = 24) -> ConsistencyRun:
    """The greedy answer and n sampled ones, one batched forward pass per step (each a turn at the model's scheduler)."""
    if not prompt_ids:
        raise SessionError("consistency_no_prompt")
    n = whole_in_range(n, 1, MAX_SAMPLES, "consistency_samples_range")
    steps = whole_in_range(max_new_tokens, 1, MAX_NEW_TOKENS, "consistency_tokens_range")
    configs = [SamplingConfig(temperature=0)] + [replace(cfg, seed=int(cfg.seed) + i).validate() for i in range(n)]
    eos, pad = end_ids(lm), (lm.tokenizer.eos_token_id or 0)
    prompt = [int(i) for i in prompt_ids]
    rows = len(configs)
    start = time.perf_counter()
    done = prefill(lm.model, prompt)
    cache, logits = done.cache, done.logits[-1:]  # (1, V)
    cache.batch_repeat_interleave(rows)  # every row shares the prompt's keys and values
    logits = logits.expand(rows, -1)  # (rows, V)
    generated = [[] for _ in range(rows)]
    logprob = [0.0] * rows
    done = [False] * rows
    passes = 1  # the prompt's prefill counts one (in chunks if it is long)
    for step in range(steps):
        position = len(prompt) + step
        feed = []
        for r in range(rows):
            if done[r]:
                feed.append(pad)
                continue
            context = torch.tensor([prompt + generated[r]])
            scores = run_stages(logits[r], context, configs[r])[-1][2]
            final = torch.softmax(scores, -1).reshape(-1)
            token = inverse_cdf(final, draw_u(configs[r].seed, position))
            logprob[r] += float(torch.log_softmax(logits[r].float(), -1)[token])
            generated[r].append(token)
            done[r] = token in eos
            feed.append(token)
        if all(done) or step == steps - 1:
            break
        with model_pass(lm.model, cores=False):
            logits = lm.model(input_ids=torch.tensor(feed).reshape(rows, 1), past_key_values=cache,
                              use_cache=True).logits[:, -1]  # (rows, V)
        passes += 1
    samples = []
    for r in range(rows):
        text = lm.tokenizer.decode(generated[r], skip_special_tokens=True)
        samples.append(Sample(None if r == 0 else configs[r].seed, generated[r], text, extract_answer(text),
                              logprob[r], done[r]))
    return ConsistencyRun(prompt, cfg, samples[0], samples[1:], time.perf_counter() - start, passes)


@computation
def temperature_sweep(lm: LoadedModel, prompt_ids: list[int], cfg: SamplingConfig, n: int = 8,
                      max_new_tokens: int = 24, temperatures=SWEEP_TEMPERATURES) -> list[ConsistencyRun]:
    """The same vote at several temperatures (the other settings and the seed held)."""
    return [self_consistency(lm, prompt_ids, replace(cfg, temperature=float(t)), n, max_new_tokens)
            for t in temperatures]
