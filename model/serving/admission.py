"""How fast one client may open sessions: a class behind one school NAT all pressing Start in the same minute
gets in; one script cannot take every place on the server."""
from __future__ import annotations

import threading
import time

from model.errors import SessionError

CLASS = 80  # students in a class, and in a room (model/classroom/rooms.py): all may be behind one school's address
BURST = 90  # sessions one address may open at once: a class of 80 pressing Start in the same minute, its teacher,
#             and a few who reload the page
REFILL_S = 3.0  # then one more every REFILL_S seconds (20 a minute: late comers, reloads)
PER_ADDRESS = 90  # live sessions of one address at most (of MAX_SESSIONS: the rest stay for everyone else)


class OpeningLimit:
    """A token bucket per client address: `burst` openings at once, then one per `refill_s` seconds.

    Only opening a new session counts; a user starting again in their own session does not. Addresses are
    forgotten once their bucket is full again, so the table stays as small as the number of recent clients.
    """

    def __init__(self, burst: int = BURST, refill_s: float = REFILL_S, clock=time.monotonic):
        self.burst, self.refill_s, self.clock = burst, refill_s, clock
        self._buckets: dict[str, tuple[float, float]] = {}  # address: (tokens, when counted)
        self._lock = threading.Lock()

    def check(self, client: str | None) -> None:
        """SessionError if `client` could not open a session now (nothing is taken): asked before the work of one."""
        now = self.clock()
        with self._lock:
            tokens, then = self._buckets.get(client, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - then) / self.refill_s)
        if tokens < 1:
            raise SessionError("opening_too_fast", seconds=max(1, round((1 - tokens) * self.refill_s)))

    def admit(self, client: str | None) -> None:
        """Take one opening for `client`, or SessionError saying when to try again (nothing is taken then)."""
        now = self.clock()
        with self._lock:
            self._forget_full(now)
            tokens, then = self._buckets.get(client, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - then) / self.refill_s)
            if tokens < 1:
                self._buckets[client] = (tokens, now)
                raise SessionError("opening_too_fast", seconds=max(1, round((1 - tokens) * self.refill_s)))
            self._buckets[client] = (tokens - 1, now)

    def _forget_full(self, now: float) -> None:
        if len(self._buckets) < 1000:
            return
        self._buckets = {k: (n, t) for k, (n, t) in self._buckets.items()
                         if n + (now - t) / self.refill_s < self.burst}
