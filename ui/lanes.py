"""The web process's half of the scheduling policy, in one place: the lanes events queue in (how many of each run at
once), which lanes are a step and which are slow work, each session's and each address's share of the queue, and
whether a page asks for the next step's chart ahead. (The model's half, which pass runs next, is its scheduler:
model/decoding/scheduler.py. ui/events.py binds the lanes, ui/guard.py enforces the shares, ui/state.py asks the
AheadPolicy.)"""
from __future__ import annotations

import threading
import time

# Concurrency lanes. Many steps may wait at once: the scheduler runs them as one forward pass, one pass at a time.
MODEL_CONCURRENCY = 16  # requests that may wait for the scheduler's decode pass together (its batch size)
LANES = {
    "model": dict(concurrency_id="model", concurrency_limit=MODEL_CONCURRENCY),
    "views": dict(concurrency_id="views", concurrency_limit=1),  # re-drawing a chart: fast, one at a time
    "bundle": dict(concurrency_id="bundle", concurrency_limit=1),  # ~0.4 s: not in the way of the views
    "ahead": dict(concurrency_id="ahead", concurrency_limit=2),  # waits for the pass computed ahead
    "play": dict(concurrency_id="play", concurrency_limit=MODEL_CONCURRENCY),
    # a computation on a user's whole text (lens, beams, race, self-consistency, constraints, speculative): its
    # passes take turns at the model's scheduler after the class's steps; two at once share it pass by pass
    "runs": dict(concurrency_id="runs", concurrency_limit=2),
    "measure": dict(concurrency_id="measure", concurrency_limit=1),
    "import": dict(concurrency_id="import", concurrency_limit=2),  # a replay runs each text of a trace in chunks
    "lesson": dict(concurrency_id="lesson", concurrency_limit=2),  # a lesson upload: never behind a trace's replay
    # a lesson's step shown (Start, Next, Back, Resume; an interview card's lesson): its prompt started as Start
    # does, and its chart, which may be a whole-text run (a beam search, a vote): out of the steps' lane, as many
    # at once as it (a class pressing Next together: the tokens a step writes batched as Next token's are)
    "lesson_steps": dict(concurrency_id="lesson_steps", concurrency_limit=MODEL_CONCURRENCY),
    # a lesson question answered (Commit, Reveal): a measured one runs the model for seconds (made once for everyone
    # asking the same: model/classroom/shared.py), so a class pressing it at once never fills the steps' lane
    "reveal": dict(concurrency_id="reveal", concurrency_limit=2),
    "page": {},  # no server work worth queueing apart
}


# The lanes a button's wait is not said in: a step's own buttons answer within a fraction of a second, and the page's
# and Play's work no server queue holds up
QUIET_LANES = ("page", "play", "ahead")

# The queue's places, and who may take them. One address may be a whole class behind a school's NAT (80 students,
# README "Limits"), so its budgets are a class's; a session hash is invented at will by a script, so the share per
# hash only keeps one page from queueing clicks it has not seen answered, and every budget that protects the class
# counts per address (the connecting address; behind a proxy the one uvicorn's ProxyHeadersMiddleware takes from
# X-Forwarded-For, which it trusts only from FORWARDED_ALLOW_IPS: 127.0.0.1 and ::1 unless the operator says more).
QUEUE_SIZE = 400  # events waiting, for everybody (Gradio's max_size)
STEP_ROOM = 120  # of those, places only steps may take (Start, Next token, ...): a flood of anything else leaves them
WAITING_PER_SESSION = 8  # events of one session waiting in the queue at once (a page has 2-3; Play 1)
WAITING_PER_ADDRESS = 240  # events of one address waiting at once: a class of 80, three each
SLOW_PER_ADDRESS = 16  # slow events of one kind from one address, waiting or running (a fifth of a class at once)
# A whole-text run (lane `runs`: the lens, beams, the race, self-consistency, ...) holds one of the lane's two places
# for seconds: one address's runs are bounded tighter, so another address's run waits behind at most six of them.
# An import of the largest valid trace holds one of the import lane's two places for about 30 s: two per address,
# so another address's import waits behind about one pair of them, not eight (bench.import_wait --served).
# A lesson's steps are shown to a whole class at once (a teacher says "Next"): a class's worth per address.
SLOW_PER_ADDRESS_OF = {"runs": 6, "import": 2, "lesson_steps": 80}
STEP_LANES = ("model", "play", "ahead")  # a step and what the page asks with it (LANES above)
# every event that may run the model beyond one step: a session may have one of each kind waiting or running
SLOW_LANES = ("runs", "measure", "import", "lesson", "bundle", "lesson_steps", "reveal")


AHEAD_BUSY_SESSIONS = 4  # this many sessions shown a step within AHEAD_WINDOW_S: a class, the server is busy
AHEAD_WINDOW_S = 2.0


class AheadPolicy:
    """Whether a page should ask for the next step's chart ahead (next_chart, assets/js/ahead.js) after this step.

    Drawing ahead makes a presenter's next step show without a draw, but it is a second event per step: the
    queue, the inputs, the stream of messages, on the server's one core of Python. With a class stepping at once
    (AHEAD_BUSY_SESSIONS sessions shown a step within the last AHEAD_WINDOW_S) the pages are told not to ask, so
    a step is one event; a presenter alone, or with a few others, keeps it.
    """

    def __init__(self, busy_sessions: int = AHEAD_BUSY_SESSIONS, window_s: float = AHEAD_WINDOW_S):
        self.busy_sessions, self.window_s = busy_sessions, window_s
        self._last: dict[str, float] = {}  # session id -> when it was last shown a step
        self._lock = threading.Lock()

    def wanted(self, user: str | None, now: float | None = None) -> bool:
        """Note that `user` (a session id; None: not a page's) is shown a step now; True if the server is not busy."""
        now = time.monotonic() if now is None else now
        with self._lock:
            if user is not None:
                self._last[user] = now
            cutoff = now - self.window_s
            self._last = {k: at for k, at in self._last.items() if at >= cutoff}
            return len(self._last) < self.busy_sessions
