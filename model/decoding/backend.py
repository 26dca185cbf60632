"""What a decode session runs on: a backend (the model's weights here, or an engine) that says what it can do.

One DecodeSession (session.py) keeps the text and its records and writes every change once (start, step, back,
branches, adopt); its backend makes the numbers: the logits after a text, and whatever else it can give. Each
backend declares that in its Capabilities, and the session and the views read them instead of asking which kind
of model this is:

    LocalBackend (here)                the weights in this process: a KV cache, attention rows, passes ahead
    EngineBackend (engine_session.py)  a serving engine asked for its top N log-probabilities, nothing else

A backend's state follows the session's text: every call below leaves it holding exactly the ids it was given
(or, if the call fails, what it held before).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch
from transformers import DynamicCache

from model.decoding.batch_sampling import SampleRow
from model.decoding.batcher import StepBatcher, forward_one
from model.decoding.door import Prefilled, attention_matrix, attention_rows, chunk_passes, door_of, prefill
from model.decoding.cache_surgery import crop_to, restore, snapshot
from model.decoding.kv import kv_bytes, kv_bytes_when
from model.decoding.loading import LoadedModel, end_ids
from model.decoding.lookahead import LookAhead
from model.decoding.records import Distribution, KVBytes, SamplingConfig
from model.decoding.sampling import derive


@dataclass(frozen=True)
class Capabilities:
    """What a backend gives beyond the next token's logits (which every backend gives)."""

    attention: bool  # attention weights with every pass: the prefill's matrix and each step's row
    cache_tensors: bool  # the KV cache's tensors are here: its bytes are measured, its timing can be taken
    runs_locally: bool  # the weights are here: views that run the model themselves (speculative, teacher) can
    prefetch: bool  # the next token's pass can run ahead while the page draws (a batcher to run it in)


class Backend(Protocol):
    """The calls a DecodeSession makes on its backend. `ids` is always the session's whole text (prompt + generated).

    logits are (V,) raw scores for the position after the text. When capabilities.prefetch is True the backend is
    also a LookAhead (lookahead.py): prefetch(ids, token, cfg), held(), and its prefetch_hits / prefetch_misses. When
    capabilities.runs_locally is True it also runs known tokens in chunks: follow(ids, start, each) (LocalBackend).
    """

    lm: object  # the model it runs (LoadedModel, or engine_session.EngineModel)
    capabilities: Capabilities
    batcher: StepBatcher | None  # shared passes of a local model on a server; None: run alone, or on an engine

    def eos_ids(self) -> set[int]:
        """The token ids that end a text."""

    def start(self, ids: list[int]) -> tuple[torch.Tensor, object, KVBytes, float]:
        """A new text, the prompt `ids`: (logits, attention (layers, heads, P, P) float16 or None, KV bytes, ms)."""

    def derive(self, logits: torch.Tensor, ids: list[int], cfg: SamplingConfig,
               force_token: int | None = None) -> Distribution:
        """The next token's Distribution after `ids` under cfg (sampling.derive, plus what this backend knows)."""

    def advance(self, ids: list[int], dist: Distribution) -> tuple[Distribution, torch.Tensor, object, KVBytes, float]:
        """dist's chosen token after `ids`: (the distribution as recorded, logits after it, its attention row
        (layers, heads, t) or None, KV bytes, ms of the pass that made it)."""

    def back(self, ids: list[int], keep: int, prompt_len: int, prompt_logits: torch.Tensor) -> torch.Tensor:
        """Cut back to ids[:keep] (at least the prompt): the logits after them."""

    def answers(self) -> list | None:
        """What a kept branch holds of this backend for the text (an engine's answers), or None: nothing."""

    def resume(self, ids: list[int], answers: list | None = None, keep: int = 1) -> torch.Tensor:
        """Hold `ids` from scratch (answers: a branch's, from answers()): (keep, V) logits after its last `keep` ids."""

    def adopt(self, other: "Backend") -> None:
        """Take over another backend's state (of the same kind, on the same model)."""


class LocalBackend(LookAhead):
    """The model's weights in this process: a DynamicCache of the text, one forward pass per token (shared with
    other sessions' passes through the batcher), attention rows, and the next pass run ahead (LookAhead)."""

    def __init__(self, lm: LoadedModel, batcher: StepBatcher | None = None):
        self.lm = lm
        self.batcher = batcher
        self.capabilities = Capabilities(attention=True, cache_tensors=True, runs_locally=True,
                                         prefetch=batcher is not None)
        self.cache: DynamicCache | None = None  # the text's keys and values; the pass ahead may be writing to it
        self._ahead = None  # LookAhead's pass held, or None
        self._taken = None  # the batcher's job whose result the cache holds last: its `dist`, if it has one
        self.prefetch_hits = 0  # prefetches a step used
        self.prefetch_misses = 0  # prefetches thrown away (another token, back, a new prompt, a failed pass)

    def eos_ids(self) -> set[int]:
        return end_ids(self.lm)

    @torch.no_grad()
    def start(self, ids):
        self.settle()  # before a turn at the model's door, which the prefetch's pass needs; kept if the prefill fails
        # Only the last position's logits are used: the lm head over every prompt position was 30 % of a
        # 338-token prefill (1.5 s -> 1.06 s here), and 530 MB for Gemma's 262k-token vocabulary.
        done = self._prefill(ids, keep=1, attentions=True)
        self.cache = done.cache
        return done.logits[-1].clone(), attention_matrix(done.attentions), kv_bytes(done.cache, self.lm.info), done.ms

    def derive(self, logits, ids, cfg, force_token=None):
        """sampling.derive(), unless the batch's sampler already derived it: the pass that made these logits (taken,
        or computed ahead) asked for the next position's Distribution under these settings (batcher.sample_batch),
        and it is derive()'s record (tests/test_batch_sampling.py). A forced token is always derived here."""
        ahead = self._ahead
        for job in (self._taken, ahead.job if ahead is not None else None):
            dist = job.dist if job is not None and job.result is not None and job.result[0] is logits else None
            if dist is not None and force_token is None and dist.position == len(ids) and dist.config == cfg:
                return dist
        return derive(logits, torch.tensor([ids]), cfg, len(ids), self.lm.tokens, force_token)

    def next_row(self, ids: list[int], token: int, cfg: SamplingConfig | None) -> SampleRow | None:
        """What the batch's sampler needs to derive the position after `token` (None: nothing to derive)."""
        return None if cfg is None else SampleRow([*ids, token], cfg, len(ids) + 1, self.lm.tokens)

    @torch.no_grad()
    def advance(self, ids, dist):
        """The chosen token's pass, or the one run ahead for it; a failure leaves the cache as it was."""
        result = self.settle(dist.chosen.id)  # a hit: the cache holds the chosen token already
        if result is None:
            before = snapshot(self.cache)
            try:
                result = self._forward_one(dist.chosen.id, self.next_row(ids, dist.chosen.id, dist.config))
            except BaseException:
                restore(self.cache, before)  # the forward may have appended to some layers before failing
                raise
        logits, row, forward_ms = result  # forward_ms: the pass that made this result, ahead or now
        return dist, logits, row, kv_bytes(self.cache, self.lm.info), forward_ms

    @torch.no_grad()
    def back(self, ids, keep, prompt_len, prompt_logits):
        """Crop the cache; nothing before the kept tokens is recomputed (but see below).

        Only the last kept token's logits must be found again: the prompt's are stored; for a generated token,
        that one token is run again on the cropped cache (same inputs, same result). A cache past a sliding
        window cannot be cropped: its window layers have dropped the oldest tokens, which the shorter text needs
        again. Then, and only then, the kept ids are prefilled again (_rebuild).
        """
        self.settle()
        before = snapshot(self.cache)
        if keep == prompt_len and crop_to(self.cache, keep):
            return prompt_logits
        if keep > prompt_len and crop_to(self.cache, keep - 1):
            try:
                return self._forward_one(ids[keep - 1])[0]
            except BaseException:
                restore(self.cache, before)
                raise
        return self._rebuild(ids[:keep])  # a new cache, set only if the prefill succeeds

    @torch.no_grad()
    def follow(self, ids, start, each):
        """ids[start:] after the cache (which holds ids[:start]) in chunks (door.chunk_passes: a turn at the door per
        PREFILL_CHUNK tokens), not a pass per token. For each position p from `start` on, in order and outside the
        door: each(logits after ids[:p + 1] (V,), its attention row (layers, heads, p + 1), KV bytes then, the ms of
        its chunk's pass over its positions). The cache then holds ids; if anything fails (each() too), what it
        held before. Every number is a one-token pass's, to float rounding (the same keys and values)."""
        self.settle()
        before = snapshot(self.cache)
        try:
            for begin, end, out, ms in chunk_passes(self.lm.model, ids, self.cache, start,
                                                    options=lambda b, e: dict(output_attentions=True)):
                for j, row in enumerate(attention_rows(out.attentions, begin, end)):
                    each(out.logits[0, j].clone(), row, kv_bytes_when(self.cache, self.lm.info, begin + j + 1),
                         ms / (end - begin))
        except BaseException:
            restore(self.cache, before)
            raise

    def answers(self):
        return None  # a branch keeps no cache: choosing it again prefills its ids once

    @torch.no_grad()
    def resume(self, ids, answers=None, keep=1):
        self.settle()
        done = self._prefill(ids, keep=keep)
        self.cache = done.cache  # set only if the prefill succeeded
        return done.logits.clone()

    def adopt(self, other: "LocalBackend") -> None:
        self.settle()
        other.settle()  # its cache becomes ours: nothing may still be writing into it
        self.cache = other.cache

    # ---- passes ----------------------------------------------------------------------------------------
    def _prefill(self, ids: list[int], keep: int = 1, attentions: bool = False) -> Prefilled:
        """ids into a new cache (door.prefill: in chunks, the class's decode steps first); sets nothing here."""
        return prefill(self.lm.model, ids, keep=keep, attentions=attentions)

    def _rebuild(self, ids: list[int]) -> torch.Tensor:
        """Recompute the cache of `ids` by a prefill; returns the logits after them (V,).

        Only for a cache that cannot be cut back (see cache_surgery.crop_to): a sliding-window layer past its window has
        dropped the tokens a shorter text needs, and nothing but running the model again brings them back.
        """
        done = self._prefill(ids, keep=1)
        self.cache = done.cache
        return done.logits[-1].clone()

    def _forward_one(self, token_id: int, sample: SampleRow | None = None):
        """One token through the model with the cache: (next logits (V,), attention row (layers, heads, t), ms).

        With a batcher, the pass is shared with other sessions' steps that arrive at the same time, and with
        `sample` its next position's distribution is derived with theirs (derive() then finds it).
        """
        if self.batcher is not None:
            self._taken = self.batcher.forward_job(self.cache, token_id, sample=sample)
            return self._taken.result
        with door_of(self.lm.model).step():  # alone: a decode step all the same
            return forward_one(self.lm.model, self.cache, token_id)
