"""Computing ahead: the local backend's protocol with the step batcher for the forward pass of the next token.

The next token under the current settings is known before the user asks for it (the draw is fixed by seed and
position), so a server session can prefetch its forward pass while the page draws (DecodeSession.prefetch picks the
token, LocalBackend runs it). The pass runs in the batcher's worker and appends to the cache without the session
lock; every change that touches the cache first settles it (settle): the step that chooses that token takes its
result, anything else cuts the cache back.
"""
from __future__ import annotations

from dataclasses import dataclass

from model.decoding.batcher import StepBatcher, _Job
from model.decoding.cache_surgery import crop_to

SETTLE_TIMEOUT_S = 120.0  # a prefetch still queued after this is taken back (as a step's forward times out)


@dataclass
class Ahead:
    """A forward pass computed ahead: `token` is being appended to a cache that held `ids` (`cached` of them)."""

    token: int
    ids: list[int]
    cached: int
    job: _Job
    batcher: StepBatcher

    def wait(self, timeout: float) -> bool:
        """Wait for the pass (somebody needs it now: it no longer gathers others); True if it finished without
        error (its logits are then `logits`)."""
        self.batcher.hurry(self.job)
        return self.job.done.wait(timeout) and self.job.error is None

    @property
    def logits(self):
        """(V,) logits after `token`, once the pass finished."""
        return self.job.result[0]


class LookAhead:
    """The prefetch half of LocalBackend (a mixin: it works on the backend's batcher and cache).

    It keeps `_ahead` (the pass held, or None), `_taken` (the job whose result the cache holds last) and
    prefetch_hits / prefetch_misses, all set by the backend's __init__, and uses its _rebuild() when a cache cannot
    be cut back and its next_row() for the distribution a pass asks for.
    """

    _ahead: Ahead | None

    def held(self) -> Ahead | None:
        """The pass computed ahead (running or done), or None."""
        return self._ahead

    def prefetch(self, ids: list[int], token: int, cfg=None) -> bool:
        """Start the forward pass of `token` after `ids` (the text the cache holds) in the batcher's worker; with
        `cfg` (a SamplingConfig), the batch's sampler also derives the next position's Distribution under it.

        False, doing nothing, when a prefetch of this token is already held (or another one is still running).
        A finished prefetch of another token (the settings changed since) is thrown away for the new one. The
        caller holds the session; the pass runs without it, so renders never wait for it.
        """
        if self._ahead is not None:
            if self._ahead.token == token or not self._ahead.job.done.is_set():
                return False
            self.settle()  # a finished pass for a token no longer chosen: make room
        job = self.batcher.submit(self.cache, token, self.next_row(ids, token, cfg))
        self._ahead = Ahead(token, list(ids), self.cache.get_seq_length(), job, self.batcher)
        return True

    def settle(self, token: int | None = None) -> tuple | None:
        """End the prefetch (the session lock held), waiting for its pass if it is needed or already running.

        Returns its (logits (V,), attention row, ms) if it ran `token` without error: the cache then holds
        that token. Otherwise None, the cache cut back to what it held before. No prefetch is left either way.
        """
        ahead = self._ahead
        if ahead is None:
            return None
        if ahead.token != token and self.batcher.cancel(ahead.job):
            ran = False  # not wanted and not started: taken back, no pass to wait for
        else:
            ran = self.batcher.wait(ahead.job, SETTLE_TIMEOUT_S)  # False: still queued at the timeout, taken back
        self._ahead = None
        if ran and ahead.job.error is None and ahead.token == token:
            self.prefetch_hits += 1
            self._taken = ahead.job  # its distribution, if it has one, is the next step's (LocalBackend.derive)
            return ahead.job.result
        if not crop_to(self.cache, ahead.cached):  # a failed pass may have appended to some layers only
            try:
                self._rebuild(ahead.ids)  # the pass pushed a sliding-window layer's oldest token out
            except BaseException:
                self._ahead = ahead  # the cache still holds the pass: it stays held, for the next change to settle
                raise
        self.prefetch_misses += 1
        return None
