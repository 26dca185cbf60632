"""One text held in the model's core: its KV cache, the passes that grow it or cut it back, and the pass run ahead.

A Sequence is the core's half of one user's session (core.py): the session keeps the records, the sequence keeps the
keys and values. Every call is given the session's whole text and leaves the cache holding exactly the ids it was
given (or, if the call fails, what it held before). Its decode steps go through the model's scheduler, batched with
other sequences' (scheduler.py); a prefill goes in chunks (passes.py).

Computing ahead: the next token under the current settings is known before the user asks for it (the draw is fixed
by seed and position), so its pass can run while the page draws (prefetch). The pass runs in the scheduler's worker
and appends to the cache; every call that touches the cache first settles it (settle): the step that chooses that
token takes its result, anything else cuts the cache back.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers import DynamicCache

from model.decoding.batch_sampling import SampleRow
from model.decoding.cache_surgery import crop_to, restore, snapshot
from model.decoding.kv import kv_bytes, kv_bytes_when
from model.decoding.loading import LoadedModel
from model.decoding.passes import Prefilled, attention_matrix, attention_rows, chunk_passes, prefill
from model.decoding.records import Distribution, KVBytes
from model.decoding.scheduler import DecodeJob, Scheduler

SETTLE_TIMEOUT_S = 120.0  # a pass ahead still queued after this is taken back (as a step's pass times out)


@dataclass(frozen=True)
class Ahead:
    """A pass computed ahead: `token` is being appended to a cache that held `ids` (`cached` of them)."""

    token: int
    ids: list[int]
    cached: int
    job: DecodeJob


@dataclass(frozen=True)
class Passed:
    """What one pass over a token gave: the logits after it, its attention row, the cache's bytes, its ms, and the
    next position's Distribution if the pass's sampler derived one (under the SampleRow it was given)."""

    logits: torch.Tensor  # (V,)
    row: object  # (layers, heads, t) float16 numpy
    kv: KVBytes
    ms: float
    dist: Distribution | None


class Sequence:
    """One text's KV cache in the core, with its pass computed ahead (see the module)."""

    def __init__(self, lm: LoadedModel, scheduler: Scheduler):
        self.lm = lm
        self.scheduler = scheduler
        self.cache: DynamicCache | None = None  # the text's keys and values; the pass ahead may be writing to it
        self._prompt: tuple[int, torch.Tensor] | None = None  # (its length, the logits after it) since start()
        self._ahead: Ahead | None = None
        self.prefetch_hits = 0  # passes ahead a step used
        self.prefetch_misses = 0  # passes ahead thrown away (another token, back, a new prompt, a failed pass)

    # ---- the text ------------------------------------------------------------------------------------------------
    @torch.no_grad()
    def start(self, ids: list[int]) -> tuple[torch.Tensor, object, KVBytes, float]:
        """A new text: (logits after it (V,), attention (layers, heads, P, P) float16, KV bytes, ms)."""
        self.settle()  # kept if the prefill fails
        # Only the last position's logits are used: the lm head over every prompt position was 30 % of a 338-token
        # prefill (1.5 s -> 1.06 s here), and 530 MB for Gemma's 262k-token vocabulary.
        done = self._prefill(ids, keep=1, attentions=True)
        self.cache, logits = done.cache, done.logits[-1].clone()
        self._prompt = (len(ids), logits)
        return logits, attention_matrix(done.attentions), kv_bytes(done.cache, self.lm.info), done.ms

    @torch.no_grad()
    def advance(self, ids: list[int], token: int, sample: SampleRow | None = None) -> Passed:
        """`token` after `ids`: its pass, or the one run ahead for it; a failure leaves the cache as it was. With
        `sample`, the next position's Distribution is derived with the pass's other rows (Passed.dist; after a pass run
        ahead, under the settings it was run ahead with: the caller checks them)."""
        ahead = self._ahead
        if self.settle(token) is not None:  # a hit: the cache holds the token already
            job = ahead.job
            logits, row, ms = job.result
            return Passed(logits, row, kv_bytes(self.cache, self.lm.info), ms, job.dist)  # under the prefetch's settings
        before = snapshot(self.cache)
        try:
            job = self.scheduler.run(self.cache, token, sample)
        except BaseException:
            restore(self.cache, before)  # the pass may have appended to some layers before failing
            raise
        logits, row, ms = job.result
        return Passed(logits, row, kv_bytes(self.cache, self.lm.info), ms, job.dist)

    @torch.no_grad()
    def back(self, ids: list[int], keep: int) -> torch.Tensor:
        """Cut back to ids[:keep]: the logits after them (V,). Nothing before the kept tokens is recomputed (but
        see below).

        Back to the prompt start() ran, its logits are kept. Otherwise the last kept token is run again on the
        cropped cache (same inputs, same result). A cache past a sliding window cannot be cropped: its window layers
        have dropped the oldest tokens, which the shorter text needs again. Then, and only then, the kept ids are
        prefilled again (_rebuild).
        """
        self.settle()
        before = snapshot(self.cache)
        if self._prompt is not None and keep == self._prompt[0] and crop_to(self.cache, keep):
            return self._prompt[1]
        if keep >= 1 and crop_to(self.cache, keep - 1):
            try:
                return self.scheduler.run(self.cache, ids[keep - 1]).result[0]
            except BaseException:
                restore(self.cache, before)
                raise
        return self._rebuild(ids[:keep])  # a new cache, set only if the prefill succeeds

    @torch.no_grad()
    def follow(self, ids: list[int], start: int) -> list[tuple]:
        """ids[start:] after the cache (which holds ids[:start]) in chunks (passes.chunk_passes: a turn per
        PREFILL_CHUNK tokens), not a pass per token. For each position p from `start` on, in order: (logits after
        ids[:p + 1] (V,), its attention row (layers, heads, p + 1), KV bytes then, the ms of its chunk's pass over its
        positions). The cache then holds ids; if anything fails, what it held before. Every number is a one-token
        pass's, to float rounding (the same keys and values)."""
        self.settle()
        before, out = snapshot(self.cache), []
        try:
            for begin, end, passed, ms in chunk_passes(self.lm.model, ids, self.cache, start,
                                                       options=lambda b, e: dict(output_attentions=True)):
                for j, row in enumerate(attention_rows(passed.attentions, begin, end)):
                    out.append((passed.logits[0, j].clone(), row,
                                kv_bytes_when(self.cache, self.lm.info, begin + j + 1), ms / (end - begin)))
        except BaseException:
            restore(self.cache, before)
            raise
        return out

    @torch.no_grad()
    def resume(self, ids: list[int], keep: int = 1) -> torch.Tensor:
        """Hold `ids` from scratch (one prefill): (keep, V) logits after its last `keep` ids."""
        self.settle()
        done = self._prefill(ids, keep=keep)
        self.cache, self._prompt = done.cache, None  # set only if the prefill succeeded
        return done.logits.clone()

    def adopt(self, other: "Sequence") -> None:
        """Take over another sequence's cache (a text rebuilt aside, then swapped in at once)."""
        self.settle()
        other.settle()  # its cache becomes ours: nothing may still be writing into it
        self.cache, self._prompt = other.cache, other._prompt

    def close(self) -> None:
        """The session is gone: its pass ahead taken back (or waited out), its cache let go."""
        self.settle()
        self.cache = self._prompt = None

    # ---- computing ahead -----------------------------------------------------------------------------------------
    def prefetch(self, ids: list[int], token: int, sample: SampleRow | None = None) -> bool:
        """Start the pass of `token` after `ids` (the text the cache holds) in the scheduler's worker; with `sample`,
        the pass's sampler also derives the next position's Distribution.

        False, doing nothing, when a pass of this token is already held (or another one is still running). A
        finished pass of another token (the settings changed since) is thrown away for the new one.
        """
        if self.cache is None:
            return False
        if self._ahead is not None:
            if self._ahead.token == token or not self._ahead.job.done.is_set():
                return False
            self.settle()  # a finished pass for a token no longer chosen: make room
        job = self.scheduler.submit(self.cache, token, sample)
        self._ahead = Ahead(token, list(ids), self.cache.get_seq_length(), job)
        return True

    def held(self) -> Ahead | None:
        """The pass computed ahead (running or done), or None."""
        return self._ahead

    def ahead(self, timeout: float) -> tuple[int, list[int], torch.Tensor, Distribution | None] | None:
        """Wait for the pass ahead (somebody needs it now: it no longer gathers others): (its token, the ids it
        followed, the logits after it, the next Distribution if it asked), or None (none held, it failed, or it is
        still queued after `timeout`). It stays held: the step that chooses its token takes it."""
        ahead = self._ahead
        if ahead is None:
            return None
        self.scheduler.hurry(ahead.job)
        if not ahead.job.done.wait(timeout) or ahead.job.error is not None:
            return None
        return ahead.token, ahead.ids, ahead.job.result[0], ahead.job.dist

    def settle(self, token: int | None = None) -> tuple | None:
        """End the pass ahead, waiting for it if it is needed or already running.

        Returns its (logits (V,), attention row, ms) if it ran `token` without error: the cache then holds that
        token. Otherwise None, the cache cut back to what it held before. No pass ahead is left either way.
        """
        ahead = self._ahead
        if ahead is None:
            return None
        if ahead.token != token and self.scheduler.cancel(ahead.job):
            ran = False  # not wanted and not started: taken back, no pass to wait for
        else:
            ran = self.scheduler.wait(ahead.job, SETTLE_TIMEOUT_S)  # False: still queued at the timeout, taken back
        self._ahead = None
        if ran and ahead.job.error is None and ahead.token == token:
            self.prefetch_hits += 1
            return ahead.job.result
        if not crop_to(self.cache, ahead.cached):  # a failed pass may have appended to some layers only
            try:
                self._rebuild(ahead.ids)  # the pass pushed a sliding-window layer's oldest token out
            except BaseException:
                self._ahead = ahead  # the cache still holds the pass: it stays held, for the next change to settle
                raise
        self.prefetch_misses += 1
        return None

    # ---- passes ------------------------------------------------------------------------------------------------------
    def _prefill(self, ids: list[int], keep: int = 1, attentions: bool = False) -> Prefilled:
        """ids into a new cache (passes.prefill: in chunks, the class's decode steps first); sets nothing here."""
        return prefill(self.lm.model, ids, keep=keep, attentions=attentions)

    def _rebuild(self, ids: list[int]) -> torch.Tensor:
        """Recompute the cache of `ids` by a prefill; returns the logits after them (V,).

        Only for a cache that cannot be cut back (see cache_surgery.crop_to): a sliding-window layer past its window
        has dropped the tokens a shorter text needs, and nothing but running the model again brings them back.
        """
        done = self._prefill(ids, keep=1)
        self.cache = done.cache  # (the prompt's logits, if kept, still hold: the prompt did not change)
        return done.logits[-1].clone()
