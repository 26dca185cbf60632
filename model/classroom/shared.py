"""Measurements made once and shared: a lesson's measured question (a cached step's time, beam search against
sampling) depends only on the model, the machine and the text, so every student who asks it within a few minutes
gets the record the first one's run made, graded for their own guess (a room already shares its teacher's; this
shares it between students working alone). Plain records in and out; no words, no Gradio."""
from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Callable, Hashable

SHARE_S = 300.0  # a measurement is handed to whoever asks the same within five minutes of it
SHARED_MOST = 64  # measurements kept at once (the least recently made go first)


class _Made:
    """One measurement: under way (`done` not set), made (`value`), or failed (`failed`: the next asker makes it)."""

    def __init__(self):
        self.done = threading.Event()
        self.value = None
        self.failed = False
        self.at = 0.0


class SharedMeasurements:
    """`get(key, make)`: make()'s record for `key`, made once for everyone who asks within `keep_s` seconds.

    An asker who comes while the measurement is under way waits for it instead of running it again (a class
    pressing the same button at once runs it once). A measurement that fails is not kept: each asker's own call
    then says why (its session may be the reason), and the next one makes it again.
    """

    def __init__(self, keep_s: float = SHARE_S, most: int = SHARED_MOST, clock=time.monotonic):
        self.keep_s, self.most, self.clock = keep_s, most, clock
        self._made: OrderedDict[Hashable, _Made] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, make: Callable[[], object]):
        while True:
            with self._lock:
                self._forget_old()
                made = self._made.get(key)
                mine = made is None
                if mine:
                    made = self._made[key] = _Made()
                    self._forget_old()  # (never the one under way)
            if mine:
                return self._make(key, made, make)
            made.done.wait()
            if not made.failed:
                return made.value

    def _make(self, key, made: _Made, make):
        try:
            value = make()
        except BaseException:
            with self._lock:
                if self._made.get(key) is made:
                    del self._made[key]
            made.failed = True
            made.done.set()
            raise
        made.value, made.at = value, self.clock()
        made.done.set()
        return value

    def _forget_old(self) -> None:
        """Drop the measurements older than keep_s, and the oldest beyond `most` (never one under way)."""
        now = self.clock()
        for key, made in list(self._made.items()):
            if made.done.is_set() and now - made.at > self.keep_s:
                del self._made[key]
        while len(self._made) > self.most:
            key = next((k for k, m in self._made.items() if m.done.is_set()), None)
            if key is None:
                break
            del self._made[key]

    def __len__(self) -> int:
        return len(self._made)
