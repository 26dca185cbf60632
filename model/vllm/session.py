"""A model served by an engine (model/vllm/client.py), and the backend a DecodeSession runs on for it: no local model.

Each step asks the engine for the top N log-probabilities (T = 1, raw) after the exact token ids so far. The app's
own pipeline and seeded draw then run on those N (so a seed reproduces a session), with everything else, the
tail, unknown but for its total mass. A result that depends on that tail is marked `approximate`: see
tail_independent(). No attention weights and no cache tensors come back (EngineBackend's capabilities say so),
and the KV numbers are the formula's, from the model's config.json.
"""
from __future__ import annotations

import json
import logging
import math
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import torch

from model.decoding.backend import Capabilities, StepResult
from model.vllm.client import EngineClient, EngineTop
from model.errors import SessionError
from model.decoding.kv import DTYPE_BYTES, formula_bytes
from model.decoding.loading import ModelLoadError, model_info
from model.decoding.sampling import TOP_N, derive
from model.decoding.records import Distribution, KVBytes, ModelInfo, SamplingConfig
from model.decoding.tokens import TokenDisplay

log = logging.getLogger(__name__)
ENGINE_PREFIX = "vllm:"  # the picker's name of an engine model: "vllm:<the engine's model name>"
CERTAIN = 1e-6  # a tail below this is no tail: every result is exact


@dataclass
class EngineModel:
    """An engine's model, as a LoadedModel is to the local ones (name, tokenizer, info, tokens; no `model`).

    config_source says where the shape (layers, KV heads, head size, type) was read from, for the page.
    """

    name: str
    tokenizer: object
    info: ModelInfo
    tokens: TokenDisplay
    client: EngineClient
    eos_ids: set[int]
    config_source: str
    model: None = None  # nothing runs here
    engine: bool = field(default=True, init=False)
    # the engine's KV cache events, when the operator gave an address for them (app.py --engine-kv-events):
    # a model/vllm/kv_events.py KVEventSubscriber (snapshot()), else None
    kv_events: object | None = None
    # an EngineClient of an engine serving the same model with --logprobs-mode processed_logprobs, when the operator
    # named one (app.py --engine-processed-url; it may be `client` itself): the candidates chart then shows the
    # engine's own post-sampler distribution (model/vllm/processed.py), else None and nothing is asked
    processed: object | None = None

    def backend(self) -> "EngineBackend":
        """A new session's backend on this model: the engine asked (model/decoding/session.py backend_for)."""
        return EngineBackend(self)


def engine_model_name(served: str) -> str:
    """The picker's name of the model an engine serves as `served`: "vllm:<name>".

    A model served from a folder is named by its path: the page shows the folder's name only (no server paths).
    """
    return ENGINE_PREFIX + (Path(served).name if served.startswith("/") else served)


def load_engine_model(client: EngineClient, folder: Path) -> EngineModel:
    """The engine's model: its tokenizer and config.json from `folder` (the engine is sent token ids, so the app
    needs the same tokenizer), its context length from the engine's card when the engine says it."""
    from transformers import AutoConfig, AutoTokenizer, GenerationConfig

    folder = Path(folder).expanduser()
    if not (folder / "config.json").exists():
        raise ModelLoadError("model_folder_invalid", f"{folder} is not a Hugging Face model folder (no config.json).",
                             name=folder.name)
    config = AutoConfig.from_pretrained(folder)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    name = engine_model_name(client.model)
    dtype = str(json.loads((folder / "config.json").read_text()).get("torch_dtype") or "float32")
    info = replace(model_info(name, config), dtype=dtype, bytes_per_value=DTYPE_BYTES.get(dtype, 4))
    try:
        card = client.card()
        if card.context:  # the engine's own limit (vLLM's max_model_len) over the config's
            info = replace(info, context=int(card.context))
    except SessionError as err:  # down or not serving it yet: the app starts, and a user is told at Start
        log.warning("Engine model %s: %s", client.model, err)
    eos = {tokenizer.eos_token_id} - {None}
    try:
        ends = GenerationConfig.from_pretrained(folder).eos_token_id
        eos |= set(ends if isinstance(ends, list) else [ends]) - {None}
    except OSError:  # no generation_config.json
        pass
    return EngineModel(name, tokenizer, info, TokenDisplay(tokenizer), client, eos, f"config.json of {folder.name}")


@dataclass
class EngineDistribution(Distribution):
    """A Distribution built from an engine's top N: prob_t1 and tail_mass_t1 are the engine's own numbers
    (tail_mass_t1: what the record's candidates leave out, as for a local model; 1 - known_mass: what the engine did
    not send, less when N is larger than the record's candidates).

    approximate: True when the cuts or the draw depend on the tail the engine did not send (tail_independent).
    top_n: how many log-probabilities the engine sent; known_mass: their total T = 1 probability.
    """

    approximate: bool = False
    top_n: int = 0
    known_mass: float = 1.0


def tail_independent(top: EngineTop, cfg: SamplingConfig) -> bool:
    """Whether the pipeline on the N known tokens gives the full vocabulary's result (the tail all cut).

    Every tail token is at most as probable as the N-th known one, so: greedy keeps only the top token; top-k
    with k <= N keeps known ones only; min-p cuts the whole tail once (p_N / p_max)^(1/T) < min_p (T the
    temperature before it). A top-p while the tail is alive depends on it, and so does a draw that could have
    landed in it; a repetition penalty acts on raw logits, which the engine does not send.
    """
    if top.tail_mass < CERTAIN:
        return True
    if cfg.repetition_penalty != 1.0:
        return False
    temperature = 1.0
    for name in cfg.stages:
        if name == "temperature":
            if cfg.temperature == 0:
                return True
            temperature = cfg.temperature
        elif name == "top_k" and 0 < cfg.top_k <= len(top.ids):
            return True
        elif name == "min_p" and cfg.min_p > 0:
            if (top.logprobs[-1] - top.logprobs[0]) / temperature < math.log(cfg.min_p):
                return True
        elif name == "top_p" and cfg.top_p < 1.0:
            return False
    return False


def _logits(top: EngineTop, vocab: int) -> torch.Tensor:
    """(V,) scores for the pipeline: the known log-probabilities, every other token -inf (never cut in, never drawn)."""
    scores = torch.full((vocab,), -math.inf)
    scores[list(top.ids)] = torch.tensor(top.logprobs)
    return scores


class EngineBackend:
    """A DecodeSession's backend on an engine: the engine asked for its top N after each text (backend.Backend).

    Per position it keeps the engine's EngineTop (a few hundred bytes), so going back asks the engine nothing, and
    nor does choosing a branch again (a branch keeps its own: answers()). If the engine fails (down, slow, ...),
    the SessionError reaches the session, which is left as it was.
    """

    capabilities = Capabilities(attention=False,  # the engine sends no attention weights
                                cache_tensors=False,  # nor its cache tensors: KV bytes are the formula's
                                runs_locally=False,  # no weights here to run
                                prefetch=False)  # an engine batches its own users; nothing is computed ahead here

    def __init__(self, lm: EngineModel):
        self.lm = lm
        self.tops: list[EngineTop] = []  # the engine's answer after each prefix: prompt, then every step

    @property
    def top(self) -> EngineTop:
        """The engine's answer after the text so far."""
        return self.tops[-1]

    def _top_after(self, length: int) -> EngineTop:
        return self.tops[length - self.tops[0].length]  # tops[0] is the answer after the prompt

    def _kv(self, tokens: int) -> KVBytes:
        """The formula's bytes (measured 0: the engine's cache is not ours to measure)."""
        return KVBytes(measured=0, formula=formula_bytes(self.lm.info, tokens), keys=0, values=0, tokens=tokens)

    def _ask(self, ids: list[int], last_logprob: bool = False) -> tuple[EngineTop, float]:
        if len(ids) > self.lm.info.context:
            raise SessionError("engine_context", limit=self.lm.info.context)
        t0 = time.perf_counter()
        top = self.lm.client.next_token(ids, last_logprob)
        return top, (time.perf_counter() - t0) * 1000

    def eos_ids(self) -> set[int]:
        return self.lm.eos_ids

    def start(self, ids, cfg=None, ahead=None):
        """The engine's top N after the prompt (no attention)."""
        top, ms = self._ask(ids)
        self.tops = [top]
        return StepResult(_logits(top, self.lm.info.vocab), None, self._kv(len(ids)), ms)

    def derive(self, logits, ids, cfg, force_token=None) -> EngineDistribution:
        """The pipeline and draw on the N, then the engine's own T = 1 numbers put back in the record."""
        top = self._top_after(len(ids))
        # the record keeps TOP_N candidates (sampling.py, as a local model's); the cuts and the draw see all N
        dist = derive(logits, torch.tensor([ids]), cfg, len(ids), self.lm.tokens, force_token,
                      top_n=min(TOP_N, len(top.ids)))  # SessionError if cfg or the forced token is not valid
        known = dict(zip(top.ids, top.logprobs))
        candidates = [replace(c, prob_t1=math.exp(known[c.token.id]) if c.token.id in known else 0.0,
                              logit=known.get(c.token.id, -math.inf)) for c in dist.candidates]
        p = [math.exp(lp) for lp in top.logprobs]
        shown = sum(c.prob_t1 for c in candidates)
        # Entropy of the N, the tail counted as one lump: a lower bound (the tail may be spread over many tokens).
        entropy = -sum(q * math.log2(q) for q in [*p, top.tail_mass] if q > 0)
        chosen_lp = known.get(dist.chosen.id, math.nan)  # a forced token outside the N: filled in by the step
        fields = {k: getattr(dist, k) for k in Distribution.__dataclass_fields__}
        fields.update(candidates=candidates, tail_mass_t1=max(0.0, 1.0 - shown), entropy_t1_bits=entropy,
                      chosen_logprob_t1=chosen_lp)
        return EngineDistribution(**fields, approximate=not tail_independent(top, cfg), top_n=len(top.ids),
                                  known_mass=1.0 - top.tail_mass)

    def advance(self, ids, token, cfg=None, ahead=None):
        """The engine asked for the token's next answer: its logits, no attention, the formula's cache bytes, the
        request's ms, and for a token forced from outside the N the engine's own T = 1 numbers for it. A
        SessionError from the engine changes nothing."""
        outside = token not in self.top.ids  # forced from outside the N: ask the engine its number
        top, forward_ms = self._ask([*ids, token], last_logprob=outside)
        self.tops.append(top)
        return StepResult(_logits(top, self.lm.info.vocab), None, self._kv(len(ids) + 1), forward_ms,
                          chosen_t1=(top.last_logprob, top.last_rank) if outside else None)

    def back(self, ids, keep, cfg=None, ahead=None):
        """The engine's answers for the shorter text are kept: nothing is asked again."""
        del self.tops[keep - self.tops[0].length + 1:]
        return StepResult(_logits(self.top, self.lm.info.vocab), None, None, 0.0)

    def answers(self) -> list[EngineTop]:
        return list(self.tops)

    def resume(self, ids, answers=None, keep=1):
        """A branch's own answers (no engine call); without them, the engine asked after each of the last `keep`
        prefixes (the answers before those are not kept: only a text whose last `keep` ids follow its prompt can
        go back)."""
        if answers is None:
            answers = [self._ask(ids[:n])[0] for n in range(len(ids) - keep + 1, len(ids) + 1)]
        self.tops = list(answers)
        return torch.stack([_logits(top, self.lm.info.vocab) for top in self.tops[-keep:]])

    def adopt(self, other: "EngineBackend") -> None:
        self.tops = other.tops

    # an engine batches its own users: nothing is computed ahead here (capabilities.prefetch is False)
    def prefetch(self, ids, token, cfg=None) -> bool:
        return False

    def ahead(self, timeout):
        return None

    def held(self):
        return None

    def sibling(self) -> "EngineBackend":
        return EngineBackend(self.lm)

    def close(self) -> None:
        self.tops = []
