"""Computing ahead: a DecodeSession's protocol with the step batcher for the forward pass of its next token.

The next token under the current settings is known before the user asks for it (the draw is fixed by seed and
position), so a server session can prefetch() its forward pass while the page draws. The pass runs in the
batcher's worker and appends to the cache without the session lock; every change that touches the cache first
settles it (_settle): the step that chooses that token takes its result, anything else cuts the cache back.
"""
from __future__ import annotations

from dataclasses import dataclass

from .batcher import _Job
from .cache_surgery import crop_to
from .records import Distribution, SamplingConfig

SETTLE_TIMEOUT_S = 120.0  # a prefetch still queued after this is taken back (as a step's forward times out)


@dataclass
class _Ahead:
    """A forward pass computed ahead: `token` is being appended to a cache that held `cached` tokens before."""

    token: int
    cached: int
    job: _Job


class LookAhead:
    """The prefetch half of DecodeSession (a mixin: it works on the session's own state).

    It uses the session's lock (_lock, reading()), batcher, cache (_cache), ids, _replay, preview(), _derive()
    and _rebuild(), and keeps `_ahead` (the pass held, or None) and prefetch_hits / prefetch_misses, all three
    set by the session's __init__.
    """

    _ahead: _Ahead | None

    @property
    def prefetched(self) -> int | None:
        """The token id whose forward pass is being (or has been) computed ahead, or None."""
        ahead = self._ahead
        return ahead.token if ahead else None

    def prefetch(self, cfg: SamplingConfig) -> bool:
        """Start the forward pass of the token step(cfg) would choose (replay_next()'s, during a play-back).

        Returns at once: True if a pass was started. False, doing nothing, without a batcher (nothing else to
        overlap with), when the session is busy, not started, finished or full, when cfg is invalid, and when
        a prefetch of this token is already held (or another one is still running). A finished prefetch of
        another token (the settings changed since) is thrown away for the new one.
        The pass runs in the batcher's worker without the session lock: renders never wait for it.
        """
        if self.batcher is None or not self._lock.acquire(blocking=False):
            return False
        try:
            if not self.started or self.finished or len(self.ids) >= self.max_tokens:
                return False
            try:
                token = self._replay[0][1] if self._replay else self.preview(cfg).chosen.id
            except (ValueError, TypeError, AttributeError):  # not valid settings (SessionError is a ValueError)
                return False
            if self._ahead is not None:
                if self._ahead.token == token or not self._ahead.job.done.is_set():
                    return False
                self._settle()  # a finished pass for a token no longer chosen: make room
            cached = self._cache.get_seq_length()
            self._ahead = _Ahead(token, cached, self.batcher.submit(self._cache, token))
            return True
        finally:
            self._lock.release()

    def preview_ahead(self, cfg: SamplingConfig, timeout: float = 10.0) -> tuple[list[int], Distribution] | None:
        """What the next step(cfg) will show: (the ids then, the next distribution), from the prefetched pass.

        Holds the session only to look (a Next token meanwhile must not find it busy): it waits for the pass,
        and derives from the pass's own logits, without it. None when nothing is computed ahead for these
        settings (or a trace plays back), the pass failed or was taken back, or the session changed. The
        answer is remembered, so that the step then derives nothing.
        """
        with self.reading():
            ahead = self._ahead
            if ahead is None or self._replay or self.preview(cfg).chosen.id != ahead.token:
                return None
        if not ahead.job.done.wait(timeout):
            return None
        with self.reading():
            if self._ahead is not ahead or ahead.job.error is not None:
                return None
            ids = [*self.ids, ahead.token]
        return ids, self._derive(ahead.job.result[0], ids, cfg)

    def _settle(self, token: int | None = None) -> tuple | None:
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
            return ahead.job.result
        if not crop_to(self._cache, ahead.cached):  # a failed pass may have appended to some layers only
            try:
                self._rebuild(ahead.cached)  # the pass pushed a sliding-window layer's oldest token out
            except BaseException:
                self._ahead = ahead  # the cache still holds the pass: it stays held, for the next change to settle
                raise
        self.prefetch_misses += 1
        return None
