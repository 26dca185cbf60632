"""Before and after the sampler, from the engine: the engine's own post-sampler distribution beside the app's.

An engine started with `--logprobs-mode processed_logprobs` (vLLM 0.32, vllm/v1/sample/sampler.py) returns the
log-probabilities its sampler draws from, taken after its stages in one fixed order:

    repetition penalty (with frequency and presence, 0 here) -> temperature -> min-p -> top-k -> top-p

(Sampler.apply_logits_processors: the penalties; Sampler.sample: the temperature, then the argmax-invariant logits
processors, of which min-p is the built-in one, then TopKTopPSampler: apply_top_k_top_p, top-k before top-p, and
log_softmax of what is left: a cut token is -inf). Below a temperature of 1e-5 the request is greedy: the sampler
returns log_softmax of the penalised logits, before temperature and every cut. (On the CPU build the cuts are
apply_top_k_top_p_pytorch: its Triton "doesn't include CPU backend", so HAS_TRITON is False.)

Every stage means what transformers' processor of the same name means (the app's stages, model/decoding/sampling.py):
the repetition penalty is CTRL's (z / p for z > 0, else z * p) on every token of the prompt and the output, which
here is the whole text, as transformers' is on every id of the context; top-k keeps the ties of the k-th score in
both (`score < k-th` is cut); top-p cuts the ascending cumulative mass `<= 1 - p`, keeping at least one, in both;
min-p cuts `p < min_p * p_max` in both. So the two can differ only by the ORDER of the stages (the app lets a
teacher choose it), by T = 0, or by the app's own numbers being approximate (an engine model's tail unknown).
compare_processed() says which, with the largest difference where they can mean the same.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from model.vllm.client import EngineProcessed, processed_settings
from model.decoding.records import Distribution, SamplingConfig

# vLLM's order of the stages a setting turns on (the penalty is first in the app's every order, as in vLLM's)
ENGINE_ORDER = ("repetition_penalty", "temperature", "min_p", "top_k", "top_p")
GREEDY_BELOW = 1e-5  # vLLM's _SAMPLING_EPS: a temperature below it is its greedy path
# Two stages whose order does not change the result: top-k's ranks do not move with temperature or with min-p's cut,
# and min-p's ratio p / p_max does not move when top-k renormalises (the most probable token is always kept).
COMMUTE = {frozenset(("temperature", "top_k")), frozenset(("min_p", "top_k"))}
TOLERANCE = 1e-3  # probability: agreement, for two float32 runs of one model (their logits agree to about 1e-4)


def engine_settings(cfg: SamplingConfig) -> dict:
    """A session's settings as the engine's request carries them (vLLM means each as the app does)."""
    return processed_settings(cfg.temperature, cfg.top_k, cfg.top_p, cfg.min_p, cfg.repetition_penalty)


def active_stages(cfg: SamplingConfig) -> tuple[str, ...]:
    """The stages these settings turn on, in the app's order for them (a temperature of 1 changes nothing)."""
    on = {"repetition_penalty": cfg.repetition_penalty != 1.0, "temperature": cfg.temperature != 1.0,
          "top_k": cfg.top_k > 0, "top_p": cfg.top_p < 1.0, "min_p": cfg.min_p > 0}
    return tuple(name for name in cfg.stages if on[name])


def why_different(cfg: SamplingConfig, approximate: bool = False) -> str | None:
    """Why the engine's processed distribution cannot be the app's for these settings, as a key, else None.

    "greedy": T = 0 (below 1e-5 for vLLM): the app keeps the top token alone; the engine sends its distribution
    after the penalty only. "order": two stages that do not commute (temperature with top-p or min-p, min-p with
    top-p, top-k with top-p) run in the other order in the app's chosen order. "approximate": the app's numbers
    on an engine model depend on the tokens past the top N that the engine did not send.
    """
    if cfg.temperature < GREEDY_BELOW:
        return "greedy"
    on = active_stages(cfg)
    engine = [name for name in ENGINE_ORDER if name in on]
    for i, a in enumerate(on):
        for b in on[i + 1:]:
            if engine.index(a) > engine.index(b) and frozenset((a, b)) not in COMMUTE:
                return "order"
    return "approximate" if approximate else None


@dataclass(frozen=True)
class ProcessedComparison:
    """The app's post-sampler distribution (a Distribution record) beside the engine's (an EngineProcessed).

    tokens: (token id, the app's final probability, the engine's) for the record's candidates the engine told
    about (kept, or cut: 0); every candidate when the engine's kept set is complete. max_diff: the largest
    |difference| over them (probability). only_app / only_engine: the ids among them that one side kept and the
    other cut. app_kept: how many tokens the app's last stage left; engine_kept: how many the engine kept, None
    when more than it sent (only its top). kept_agree: no token kept by one side only, and the two counts equal when
    both are known. reason: why_different()'s key, or None when the settings mean the same in both.
    """

    tokens: tuple[tuple[int, float, float], ...]
    max_diff: float
    only_app: tuple[int, ...]
    only_engine: tuple[int, ...]
    app_kept: int | None
    engine_kept: int | None
    kept_agree: bool
    reason: str | None

    @property
    def agree(self) -> bool:
        """The settings mean the same, the kept sets agree and every shared probability is within TOLERANCE."""
        return self.reason is None and self.kept_agree and self.max_diff <= TOLERANCE

    def engine_probs(self) -> dict[int, float]:
        """token id -> the engine's post-sampler probability, for the chart."""
        return {i: q for i, _, q in self.tokens}


def compare_processed(dist: Distribution, engine: EngineProcessed) -> ProcessedComparison:
    """Compare the session's record of a step (its candidates' final probabilities) with the engine's processed
    log-probabilities after the same text under the same settings. Pure: numbers in, numbers out."""
    kept = dict(zip(engine.ids, (math.exp(lp) for lp in engine.logprobs)))
    told = set(kept) | set(engine.cut)
    tokens = tuple((c.token.id, float(c.final_prob), kept.get(c.token.id, 0.0)) for c in dist.candidates
                   if engine.complete or c.token.id in told)
    only_app = tuple(i for i, p, q in tokens if p > 0 and q == 0)
    only_engine = tuple(i for i, p, q in tokens if p == 0 and q > 0)
    app_kept = dist.stages[-1].kept if dist.stages else None
    engine_kept = len(engine.ids) if engine.complete else None
    counts_agree = app_kept is None or engine_kept is None or app_kept == engine_kept
    if engine_kept is None and app_kept is not None and app_kept < len(engine.ids):  # the engine kept more than the app
        counts_agree = False
    return ProcessedComparison(
        tokens=tokens,
        max_diff=max((abs(p - q) for _, p, q in tokens), default=0.0),
        only_app=only_app, only_engine=only_engine, app_kept=app_kept, engine_kept=engine_kept,
        kept_agree=not only_app and not only_engine and counts_agree,
        reason=why_different(dist.config, bool(getattr(dist, "approximate", False))),
    )


def processed_beside(lm, ids: list[int], dist: Distribution) -> ProcessedComparison | None:
    """The engine's post-sampler distribution for the step `dist` records (after ids[:dist.position], under
    dist.config), compared with it; None, asking nothing, when `lm` has no processed-logprob engine (a local model,
    or an engine model the operator gave no --engine-processed-url). A fault is the engine's keyed SessionError;
    nothing of the session is read but its ids, nothing is written."""
    client = getattr(lm, "processed", None)
    if client is None:
        return None
    engine = client.processed_next(list(ids[:dist.position]), engine_settings(dist.config))
    return compare_processed(dist, engine)
