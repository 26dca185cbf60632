"""What the views keep for a user between events (a search to step through, a run to keep, an exported file), in
one place: by (user, view), dropped together when the user's page leaves, and bounded like the sessions are."""
from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Any, Callable

from model.serving.sessions import IDLE_SECONDS, MAX_SESSIONS

_ANY = object()  # forget(): whatever the entry holds


class Stash:
    """Per-user values of the views, keyed by (user: the page's session id, name: the view's tab id).

    A user's values go all at once when their page leaves (`leave`, on the page's unload). A page that never says
    so (a script, a lost connection) is bounded the way its session is (model/serving/sessions.py): a user whose
    values were not read or written for `idle_seconds` is dropped, and past `max_users` users the least recently
    used is; both checked on every `put`. A value may come with a `cleanup` (an exported file's folder removed),
    run whenever the stash lets the value go (replaced, forgotten, left, timed out) but never when `take` hands it
    to the caller. Cleanups run outside the lock. Safe to call from any request thread.
    """

    def __init__(self, idle_seconds: float = IDLE_SECONDS, max_users: int = MAX_SESSIONS,
                 clock: Callable[[], float] = time.monotonic):
        self.idle_seconds = idle_seconds  # s without a read or write after which a user's values go
        self.max_users = max_users  # users held at most (the sessions' cap: each value was made from a session)
        self.clock = clock
        self._lock = threading.Lock()
        # user -> {name: (value, cleanup or None)}, least recently used user first
        self._users: OrderedDict[str, dict[str, tuple[Any, Callable[[], None] | None]]] = OrderedDict()
        self._used: dict[str, float] = {}  # user -> when their values were last read or written (clock s)

    def __len__(self) -> int:
        """How many users hold a value."""
        return len(self._users)

    def get(self, user: str, name: str, default=None):
        """The user's value for `name`, or `default`."""
        with self._lock:
            entries = self._touch(user, create=False)
            return entries[name][0] if entries is not None and name in entries else default

    def put(self, user: str, name: str, value, cleanup: Callable[[], None] | None = None) -> None:
        """Keep `value` for the user under `name` (the value it replaces is let go: its cleanup runs)."""
        with self._lock:
            gone = self._bound()
            entries = self._touch(user, create=True)
            old = entries.get(name)
            entries[name] = (value, cleanup)
            gone += [old] if old is not None else []
            gone += self._over_cap()
        _clean(gone)

    def take(self, user: str, name: str, default=None):
        """The user's value for `name`, removed: the caller has it now (its cleanup does not run)."""
        with self._lock:
            entries = self._touch(user, create=False)
            if entries is None or name not in entries:
                return default
            value, _ = entries.pop(name)
            self._forget_empty(user)
            return value

    def forget(self, user: str, name: str, only=_ANY) -> None:
        """Let the user's value for `name` go (only if it is `only`, when given), running its cleanup."""
        with self._lock:
            entries = self._users.get(user)
            if entries is None or name not in entries or (only is not _ANY and entries[name][0] != only):
                return
            gone = [entries.pop(name)]
            self._forget_empty(user)
        _clean(gone)

    def leave(self, user: str) -> None:
        """The user's page left: every value of theirs let go."""
        with self._lock:
            entries = self._users.pop(user, None)
            self._used.pop(user, None)
        _clean(list(entries.values()) if entries else [])

    # ---- inside the lock ---------------------------------------------------------------------------------
    def _touch(self, user: str, create: bool):
        entries = self._users.get(user)
        if entries is None and not create:
            return None
        if entries is None:
            entries = self._users[user] = {}
        self._users.move_to_end(user)
        self._used[user] = self.clock()
        return entries

    def _forget_empty(self, user: str) -> None:
        if not self._users.get(user, True):
            del self._users[user]
            self._used.pop(user, None)

    def _bound(self) -> list:
        """Users idle for idle_seconds, removed; their entries, to clean up."""
        now, gone = self.clock(), []
        for user in list(self._users):  # least recently used first
            if now - self._used[user] < self.idle_seconds:
                break
            gone += self._users.pop(user).values()
            del self._used[user]
        return gone

    def _over_cap(self) -> list:
        gone = []
        while len(self._users) > self.max_users:
            user, entries = self._users.popitem(last=False)
            del self._used[user]
            gone += entries.values()
        return gone


def _clean(entries: list) -> None:
    for _, cleanup in entries:
        if cleanup is not None:
            cleanup()
