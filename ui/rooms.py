"""Rooms: a teacher's page mirrored, read-only, on the students' pages. No model passes: a room keeps only what
the teacher's page was last shown (its records and rendered chart), handed over by App.render's hook.

Only the teacher's session id writes a room; a student's page reads it by a code that is random (secrets) and
long enough not to be guessed. While the teacher's lesson asks a question, the room holds it and each follower's
guess (one per follower, counted, never named) until the teacher reveals the answer. A room closes when its teacher's page unloads, when the teacher closes it, or
after ROOM_IDLE_S without a teacher's render; rooms and followers are bounded.
"""
from __future__ import annotations

import re
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field

from model.records import PrefillRecord, StepRecord
from ui.strings import LANGS, Refusal

CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # 32 symbols, none read as another (no I/1, O/0)
CODE_LENGTH = 8  # 32**8 = 2**40 codes: at 20 open rooms, a guess finds one once in 5e10
MAX_ROOMS = 20
MAX_FOLLOWERS = 80  # per room: a large class
ROOM_IDLE_S = 45 * 60.0  # a room whose teacher has not moved for this long closes
CLOSED_KEPT = 500  # closed rooms remembered, so their followers are told it closed (not "no such room")


@dataclass
class Snapshot:
    """What the teacher's page shows: the records of its text (shared, never changed: a step appends a new
    record) and the open tab's chart as the page received it."""

    revision: int
    model: str
    prefill: PrefillRecord
    steps: list[StepRecord]
    ids: list[int]
    tab: str
    charts: dict[str, str]  # the teacher's open tab's chart (its figure carrier) in each language of the page
    finished: bool


@dataclass
class Question:
    """A lesson's predict-then-reveal question, as the followers see it: its words and its choices (label, value)
    in each language. A new key is a new question (its guesses start from none)."""

    key: str
    words: dict[str, str]
    choices: dict[str, list[tuple[str, str]]]
    open: bool = True  # False once the teacher revealed the answer

    def values(self) -> list[str]:
        return [value for _, value in next(iter(self.choices.values()))]


@dataclass
class Room:
    code: str
    teacher: str  # the teacher's session id: the only one that writes this room
    opened: float
    touched: float
    snapshot: Snapshot | None = None
    followers: set[str] = field(default_factory=set)
    question: Question | None = None
    guesses: dict[str, str] = field(default_factory=dict)  # follower -> the value they picked


class Rooms:
    """Every open room by code; who follows which. All of it under one lock, each call a few dict operations."""

    def __init__(self, clock=time.monotonic, max_rooms: int = MAX_ROOMS, max_followers: int = MAX_FOLLOWERS,
                 idle_s: float = ROOM_IDLE_S, langs=LANGS):
        self.clock, self.max_rooms, self.max_followers, self.idle_s = clock, max_rooms, max_followers, idle_s
        self.langs = langs
        self._rooms: dict[str, Room] = {}
        self._by_teacher: dict[str, str] = {}
        self._following: dict[str, str] = {}  # follower's session id -> code
        self._closed: OrderedDict[str, str] = OrderedDict()  # code -> why ("left", "closed", "idle")
        self._lock = threading.Lock()
        self._revision = 0

    # ---- the teacher ---------------------------------------------------------------------------------
    def open(self, teacher: str) -> str:
        """The teacher's room (a new one, or the one already open), by its code."""
        with self._lock:
            self._expire()
            if teacher in self._by_teacher:
                return self._by_teacher[teacher]
            if len(self._rooms) >= self.max_rooms:
                raise Refusal("room_full", limit=self.max_rooms)
            code = new_code()
            while code in self._rooms or code in self._closed:
                code = new_code()
            now = self.clock()
            self._rooms[code] = Room(code, teacher, now, now)
            self._by_teacher[teacher] = code
            return code

    def close(self, teacher: str, why: str = "closed") -> None:
        """The teacher's room closes (why: 'closed' by the button, 'left' when the page unloads)."""
        with self._lock:
            code = self._by_teacher.get(teacher)
            if code is not None:
                self._close(code, why)

    def room_of(self, teacher: str) -> str | None:
        with self._lock:
            return self._by_teacher.get(teacher)

    def on_render(self, user: str, session, view, outputs: list, draw) -> None:
        """App.render's hook: a teacher's page was just shown `outputs`; keep them for the followers, with the
        chart drawn again (`draw(lang)`, no model pass) in the page's other languages."""
        code = self._by_teacher.get(user)  # (a dict read: every user's render passes here)
        if code is None or not session.started:
            return
        charts = {view.lang: outputs[1], **{lang: draw(lang) for lang in self.langs if lang != view.lang}}
        with self._lock:
            room = self._rooms.get(code)
            if room is None:
                return
            if outputs[0] is None and room.snapshot is not None:  # only the chart was drawn again (a tab, a knob)
                steps, ids, prefill = room.snapshot.steps, room.snapshot.ids, room.snapshot.prefill
            else:
                steps, ids, prefill = list(session.steps), list(session.ids), session.prefill
            self._revision += 1
            room.snapshot = Snapshot(self._revision, session.lm.name, prefill, steps, ids, view.tab, charts,
                                     bool(steps) and session.finished)
            room.touched = self.clock()

    def ask(self, teacher: str, question: Question | None) -> None:
        """The teacher's lesson shows `question` (None: a step without one); its followers may guess until the
        reveal. The same question asked again keeps its guesses (the teacher went back to it)."""
        with self._lock:
            room = self._rooms.get(self._by_teacher.get(teacher))
            if room is None:
                return
            if question is None or room.question is None or room.question.key != question.key:
                room.guesses = {}
            room.question = question
            room.touched = self.clock()

    def reveal(self, teacher: str) -> None:
        """The teacher revealed the answer: no more guesses."""
        with self._lock:
            room = self._rooms.get(self._by_teacher.get(teacher))
            if room is not None and room.question is not None:
                room.question.open = False

    def tally(self, teacher: str) -> tuple[Question | None, dict[str, int], int]:
        """The question of the teacher's room, the count of each of its values (every value, zeros too) and the
        number of followers; Refusal('room_guess_no_room') without a room."""
        with self._lock:
            room = self._rooms.get(self._by_teacher.get(teacher))
            if room is None:
                raise Refusal("room_guess_no_room")
            if room.question is None:
                return None, {}, len(room.followers)
            counts = {value: 0 for value in room.question.values()}
            for value in room.guesses.values():
                counts[value] += 1
            return room.question, counts, len(room.followers)

    # ---- a follower ----------------------------------------------------------------------------------
    def join(self, follower: str, code) -> str:
        """Follow the room of `code` (typed by a student: case and spaces forgiven); a refusal naming why not."""
        code = normal_code(code)
        with self._lock:
            self._expire()
            if code in self._closed:
                raise Refusal("room_closed")
            room = self._rooms.get(code)
            if room is None:
                raise Refusal("room_unknown", code=code or "—")
            if room.teacher == follower:
                raise Refusal("room_own")
            if follower not in room.followers and len(room.followers) >= self.max_followers:
                raise Refusal("room_no_seats", limit=self.max_followers)
            self._leave(follower)
            room.followers.add(follower)
            self._following[follower] = code
            return code

    def guess(self, follower: str, value) -> str:
        """A follower's guess at the teacher's question (a later one replaces it); a refusal when there is no open
        question or `value` is not one of its choices."""
        with self._lock:
            room = self._rooms.get(self._following.get(follower))
            if room is None:
                raise Refusal("room_not_following")
            question = room.question
            if question is None:
                raise Refusal("room_guess_no_question")
            if not question.open:
                raise Refusal("room_guess_revealed")
            if value not in question.values():
                raise Refusal("room_guess_unknown")
            room.guesses[follower] = value
            return value

    def leave(self, follower: str) -> None:
        with self._lock:
            self._leave(follower)

    def state(self, follower: str) -> tuple[str, Snapshot | None, Question | None, str | None]:
        """(code, the teacher's last snapshot, the question asked, this follower's guess at it) of the room
        `follower` follows; Refusal('room_closed') once it closed, Refusal('room_not_following') if they follow
        none."""
        with self._lock:
            self._expire()
            code = self._following.get(follower)
            if code is None:
                raise Refusal("room_not_following")
            room = self._rooms.get(code)
            if room is None:
                self._following.pop(follower, None)
                raise Refusal("room_closed")
            return code, room.snapshot, room.question, room.guesses.get(follower)

    def followers(self, code: str) -> int:
        with self._lock:
            room = self._rooms.get(code)
            return len(room.followers) if room else 0

    def __len__(self) -> int:
        return len(self._rooms)

    # ---- inside the lock -----------------------------------------------------------------------------
    def _leave(self, follower: str) -> None:
        code = self._following.pop(follower, None)
        if code in self._rooms:
            self._rooms[code].followers.discard(follower)
            self._rooms[code].guesses.pop(follower, None)

    def _close(self, code: str, why: str) -> None:
        room = self._rooms.pop(code)
        self._by_teacher.pop(room.teacher, None)
        self._closed[code] = why
        while len(self._closed) > CLOSED_KEPT:
            self._closed.popitem(last=False)
        # its followers keep their entry in _following: their next look at the room tells them it closed

    def _expire(self) -> None:
        now = self.clock()
        for code in [c for c, r in self._rooms.items() if now - r.touched > self.idle_s]:
            self._close(code, "idle")


def new_code() -> str:
    """CODE_LENGTH symbols of CODE_ALPHABET, each from secrets (not random: a room's code is its only key)."""
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def normal_code(code) -> str:
    """A typed code as the registry keys it: upper case, without spaces or dashes; '' if it is not text."""
    return re.sub(r"[\s\-]", "", code).upper()[:64] if isinstance(code, str) else ""
